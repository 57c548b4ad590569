"""The `vocabulary($head)` guard: an LM head onto a vocabulary, not a classifier (`adopter.engine.vocabulary`)."""

from __future__ import annotations

import pytest

from adopter.dsl.types import Architecture, Binding, Ctor, Expr, Init, Kwarg, Span
from adopter.engine.bindings import InitIndex
from adopter.engine.vocabulary import names_vocabulary, projects_to_vocabulary

SPAN = Span(0, 0, 0, 1)


@pytest.mark.parametrize("text", ["config.vocab_size", "vocab_size", "n_vocab", "len(self.vocab)", "nVocab",
                                  "num_tokens", "self.n_tokens", "ntoken", "tokenizer.vocab_size"])
def test_sizes_that_name_a_vocabulary(text: str) -> None:
    assert names_vocabulary(text)


@pytest.mark.parametrize("text", ["config.num_labels", "num_classes", "n_token_types", "token_dim", "hidden_size",
                                  "2 * dim", "self.num_heads"])
def test_sizes_that_do_not(text: str) -> None:
    assert not names_vocabulary(text)


def _index(*bindings: Binding) -> InitIndex:
    arch = Architecture("M", (), Init((), bindings, SPAN), None, SPAN)
    return InitIndex.of(arch)


def test_the_size_of_an_embedding_table_is_a_vocabulary() -> None:
    emb = Binding("tok", Ctor("torch.nn.Embedding", (Expr("n"), Expr("d"))), SPAN)
    head = Binding("head", Ctor("torch.nn.Linear", (Expr("d"), Expr("n"))), SPAN)
    by_keyword = Binding("head", Ctor("torch.nn.Linear", (Expr("d"),), (Kwarg("out_features", Expr("n")),)), SPAN)
    other = Binding("fc", Ctor("torch.nn.Linear", (Expr("d"), Expr("k"))), SPAN)
    index = _index(emb, head, other)
    assert projects_to_vocabulary(head, index) and projects_to_vocabulary(by_keyword, index)
    assert not projects_to_vocabulary(other, index)
    assert not projects_to_vocabulary(head, _index(head))  # no embedding table of that size
    assert not projects_to_vocabulary(None, index)
