"""The `vocabulary($head)` guard: a Linear that projects onto a vocabulary (an LM head, not a classifier).

Family 16 is about language-model heads: the logits over a vocabulary go into a cross-entropy, and a fused
linear cross-entropy saves materialising them (tokens x vocabulary floats). A classifier's Linear into
cross-entropy (`num_labels` outputs) gains nothing. Model code says which it is in two ways:

- the output size names a vocabulary or a token count: `config.vocab_size`, `vocab_size`, `n_vocab`,
  `num_tokens`, `ntoken`, `len(self.vocab)` (a word of a name, split at `_`, `.` and case changes, starts
  with `vocab`, or the name ends in a count of tokens: `ntoken(s)`, `num_tokens`, `n_tokens`);
- the output size is the number of embeddings of an `nn.Embedding` of the same module (`self.tok_emb =
  nn.Embedding(n, d)` and `self.head = nn.Linear(d, n)`): the head scores every token of the input table;
- the output size is the row count of an embedding table's weight (`nn.Linear(emb_weights.size(1),
  emb_weights.size(0))`, BERT's original prediction head, which then ties `decoder.weight = emb_weights`;
  `self.wte.weight.shape[0]`): a word of the table's name starts with `emb`, or it is a `wte`/`tok_emb` weight.
"""

from __future__ import annotations

import re

from adopter.dsl.types import Binding, Ctor, Expr, Value
from adopter.engine.bindings import InitIndex, norm_text

LINEARS = ("torch.nn.Linear", "torch.nn.LazyLinear")
EMBEDDINGS = ("torch.nn.Embedding",)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_NTOKENS = frozenset({"ntoken", "ntokens"})  # a count of tokens in one word
_TOKENS = frozenset({"token", "tokens"})
_COUNT = frozenset({"n", "num", "nb", "number"})  # `num_tokens`, `n_tokens`: not `token_dim`, `n_token_types`


def names_vocabulary(text: str) -> bool:
    """Whether a size expression names a vocabulary or a token count (see the module doc)."""
    for part in re.split(r"[^A-Za-z0-9_]+", text):
        words = [w.lower() for w in _WORD.findall(part)]
        if any(w.startswith("vocab") for w in words):
            return True
        if words and (words[-1] in _NTOKENS or (words[-1] in _TOKENS and len(words) >= 2 and words[-2] in _COUNT)):
            return True
    return False


def out_features(ctor: Ctor) -> Value | None:
    """The output size a Linear is built with (second positional argument or `out_features=`)."""
    if len(ctor.args) >= 2:
        return ctor.args[1]
    for k in ctor.kwargs:
        if k.name == "out_features":
            return k.value
    return None


def embedding_sizes(init: InitIndex) -> set[str]:
    """The normalised `num_embeddings` texts of the module's `nn.Embedding` layers."""
    sizes: set[str] = set()
    for bindings in init.by_attr.values():
        for b in bindings:
            if isinstance(b.value, Ctor) and b.value.callee in EMBEDDINGS:
                first = b.value.args[0] if b.value.args else next(
                    (k.value for k in b.value.kwargs if k.name == "num_embeddings"), None)
                if isinstance(first, Expr):
                    sizes.add(norm_text(first.text))
    return sizes


def projects_to_vocabulary(layer: Binding | Ctor | None, init: InitIndex) -> bool:
    """Whether the Linear `layer` builds (a binding's, or a container item's constructor: the last Linear of
    a head `nn.Sequential(norm, nn.Linear(dim, num_tokens))`) projects onto a vocabulary (see the module doc)."""
    ctor = layer.value if isinstance(layer, Binding) else layer
    if not isinstance(ctor, Ctor):
        return False
    size = out_features(ctor)
    if not isinstance(size, Expr):
        return False
    return (names_vocabulary(size.text) or embedding_rows(size.text)
            or norm_text(size.text) in embedding_sizes(init))


_ROWS = re.compile(r"(?P<table>[A-Za-z_][\w.]*?)\s*(\.size\(\s*0\s*\)|\.size\(\s*\)\s*\[\s*0\s*\]|\.shape\s*\[\s*0\s*\])")
_TABLES = frozenset({"wte"})  # GPT-2's token table; `tok_emb`, `word_embeddings` pass by their words


def embedding_rows(text: str) -> bool:
    """Whether a size expression is the row count of an embedding table's weight (see the module doc)."""
    m = _ROWS.fullmatch(text.strip())
    if m is None:
        return False
    parts = m.group("table").split(".")
    if any(p in _TABLES for p in parts):
        return True
    words = [w.lower() for p in parts for w in _WORD.findall(p)]
    return any(w.startswith("emb") for w in words)
