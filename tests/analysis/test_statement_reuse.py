"""The symbol and class tables of a document's next analysis built from the last one's statement readings
(`adopter.analysis.names.statement_reuse`): only the top-level statements an edit changed are read again, and
after every edit of a sequence (a class renamed, a base changed, an import added, renamed and removed that a
forward resolves, a function redefined, a statement moved, a class deleted and restored, ...) the tables, the
class table and the analysis equal those a from-scratch reading of the same text gives.

The fixture is shaped on transformers 4.35.0 `models/t5/modeling_t5.py`: `T5LayerNorm` (line 238), the
`try: from apex.normalization import FusedRMSNorm` rebinding after it (line 263), `T5DenseActDense` (line 279)
and `T5LayerFF` (line 330), rewritten at fixture size; the edits are the keystrokes and line moves of the
language server's latency bench on that file (`bench/lsp_latency.py`), and the module-level changes the
incremental caches must see."""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis import analyse
from adopter.analysis.analyser import Analyser
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.names.statement_reuse import collect
from adopter.analysis.names.symbols import ModuleSymbols, base_name, top_level_statements
from adopter.analysis.parse.source import SourceText, new_parser
from adopter.analysis.scope.classes import ClassTable

from .helpers import run_without_native, strictly_equal

SOURCE = '''import torch
from torch import nn
from .activations import ACT2FN

try:
    from apex.normalization import FusedRMSNorm
    LayerNorm = FusedRMSNorm
except ImportError:
    pass


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class DenseActDense(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.act = ACT2FN["gelu"]

    def forward(self, hidden_states):
        hidden_states = self.act(self.wi(hidden_states))
        return self.wo(hidden_states)


class LayerFF(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.DenseReluDense = DenseActDense(d_model, d_ff)
        self.layer_norm = T5LayerNorm(d_model)

    def forward(self, hidden_states):
        return hidden_states + self.DenseReluDense(self.layer_norm(hidden_states))


def scores(q, k):
    return torch.softmax(q @ k.transpose(-1, -2), dim=-1)
'''

PATH = "pkg/modeling_t5.py"
_RESOLVER = ModuleResolver()


def _extent(node: Node) -> tuple[int, int, str]:
    return (node.start_byte, node.end_byte, node.type)


def _tables(symbols: ModuleSymbols) -> tuple[object, ...]:
    """Everything the symbol table holds, nodes by extent, in iteration order."""
    def nodes(table: dict[str, Node]) -> list[tuple[str, tuple[int, int, str]]]:
        return [(k, _extent(v)) for k, v in table.items()]

    classes = [*symbols.classes, *symbols.nested_classes]
    return (nodes(symbols.classes), nodes(symbols.nested_classes), nodes(symbols.functions), nodes(symbols.values),
            list(symbols.imports.items()), list(symbols.aliases.items()), [_extent(n) for n in symbols.toplevel],
            [(c, nodes(symbols.methods_of(c)), symbols.bases_of(c)) for c in classes])


def _class_table(table: ClassTable) -> tuple[object, ...]:
    infos = [(n, _extent(i.node), i.bases, [(m, _extent(f)) for m, f in i.methods.items()]) for n, i in table.infos.items()]
    return (infos, table.conditional_bases(), {n: table.is_module(n) for n in table.infos},
            {n: table.mro(n) for n in table.infos})


class Chain:
    """Successive texts read as a document's analyses read them: each symbol table from the last one's readings."""

    def __init__(self, text: str) -> None:
        self.parser = new_parser()
        self.symbols = self._symbols(text, None)
        self.doc = DocumentAnalysis(text, PATH)
        self.doc.result()

    def _symbols(self, text: str, last: ModuleSymbols | None) -> ModuleSymbols:
        data = text.encode()
        src = SourceText(data, self.parser.parse(data), PATH)
        return ModuleSymbols(src, "pkg", last.readings if last is not None else None, keep=True)

    def step(self, text: str) -> ModuleSymbols:
        """Read `text` from the last readings; check it against a fresh reading and the document against `analyse`."""
        last = self.symbols
        now = self._symbols(text, last)
        fresh = self._symbols(text, None)
        assert _tables(now) == _tables(fresh)
        assert _class_table(ClassTable(now, _RESOLVER, PATH)) == _class_table(ClassTable(fresh, _RESOLVER, PATH))
        self.symbols = now
        self.doc.update(text)
        got = self.doc.result()
        want = analyse(text, PATH)
        assert got == want and strictly_equal(got, want)
        return now


def _read_again(chain: Chain, text: str) -> list[str]:
    """The statements (kind and name) a reading of `text` from the chain's last readings reads afresh."""
    last = chain.symbols.readings
    assert last is not None
    data = text.encode()
    src = SourceText(data, chain.parser.parse(data), PATH)
    finder = last.finder(data, "pkg")
    assert finder is not None
    collect(list(top_level_statements(src.tree.root_node)), finder, ModuleSymbols(src, "pkg")._read, False)
    out: list[str] = []
    for *_, reading in finder.read:
        assert isinstance(reading, tuple)
        out.append(f"{reading[0]} {reading[1]}" if len(reading) > 1 else str(reading[0]))
    return out


def test_a_keystroke_in_a_method_reads_its_class_alone_and_keeps_the_rest() -> None:
    chain = Chain(SOURCE)
    text = SOURCE.replace("pow(2)", "pow(3)")
    assert _read_again(chain, text) == ["class T5LayerNorm"]
    symbols = chain.step(text)
    assert symbols.body_edit
    text = text.replace("self.wo(hidden_states)", "self.wo(hidden_states * 2)")  # a later class
    assert _read_again(chain, text) == ["class DenseActDense"]
    assert chain.step(text).body_edit
    text = text.replace("self.wo(hidden_states * 2)", "self.wo(hidden_states * 2) ")  # a blank after the last statement
    assert _read_again(chain, text) == []
    assert not chain.step(text).body_edit


def test_successive_edits_of_module_level_names_read_as_afresh() -> None:
    chain = Chain(SOURCE)
    text = SOURCE
    edits = [
        ("class DenseActDense(nn.Module):", "class DenseGated(nn.Module):"),  # a class renamed: LayerFF's name unresolved
        ("class DenseGated(nn.Module):", "class DenseActDense(nn.Module):"),  # and back
        ("class LayerFF(nn.Module):", "class LayerFF(T5LayerNorm):"),  # a base class changed
        ("torch.softmax(q @", "F.softmax(q @"),  # the function calls a name not imported yet
        ("from torch import nn\n", "from torch import nn\nimport torch.nn.functional as F\n"),  # an import added
        ("import torch.nn.functional as F\n", "import torch.nn.functional as G\n"),  # renamed
        ("import torch.nn.functional as G\n", ""),  # removed
        ("F.softmax(q @", "torch.softmax(q @"),
    ]
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
        symbols = chain.step(text)
        assert not symbols.body_edit or old.startswith(("torch.softmax", "F.softmax"))
    # a module-level function redefined after its first definition (the later one binds the name)
    text = text + "\n\ndef scores(q, k):\n    return q @ k\n"
    chain.step(text)
    # a statement moved: the function block above the first class
    block = "\n\ndef scores(q, k):\n    return torch.softmax(q @ k.transpose(-1, -2), dim=-1)\n"
    assert block in text
    text = text.replace(block, "\n").replace("\n\nclass T5LayerNorm", block + "\n\nclass T5LayerNorm", 1)
    chain.step(text)
    # a class deleted, then restored
    start = text.index("class LayerFF(")
    end = text.index("\n\n\n", start) + 3
    deleted = text[:start] + text[end:]
    chain.step(deleted)
    chain.step(text)


def test_edits_inside_bodies_that_change_the_class_table() -> None:
    chain = Chain(SOURCE)
    text = SOURCE
    # a method added to a class (at its end: the class grows, not a body edit), a nested class added in a body, a
    # nested class with a same-body base, a method renamed and decorated, a statement added to a method
    for old, new, body in [
        ("        return self.wo(hidden_states)\n",
         "        return self.wo(hidden_states)\n\n    def extra(self):\n        return None\n", False),
        ("    def extra(self):", "    class Inner(nn.Module):\n        pass\n\n    def extra(self):", True),
        ("    class Inner(nn.Module):\n        pass\n",
         "    class Inner(nn.Module):\n        pass\n\n    class Outer(Inner):\n        def forward(self, x):\n            return x\n",
         True),
        ("    def extra(self):", "    @staticmethod\n    def extra2():", True),
        ("        return hidden_states + self", "        hidden_states = hidden_states * 2\n        return hidden_states + self", True),
    ]:
        assert old in text, old
        text = text.replace(old, new)
        assert chain.step(text).body_edit == body
    assert "DenseActDense.Outer" in chain.symbols.nested_classes
    assert chain.symbols.bases_of("DenseActDense.Outer") == ["Inner"]


def test_conditional_bases_carried_only_while_what_they_read_is_unchanged() -> None:
    # sktime 0.x `networks/ltsf/layers/enc_dec.py`'s form (see `names.conditional_bases`), in this fixture
    guarded = SOURCE.replace(
        "class T5LayerNorm(nn.Module):",
        "if HAS_TORCH:\n    Base = nn.Module\nelse:\n    class Base:\n        pass\n\n\nclass T5LayerNorm(Base):")
    doc = DocumentAnalysis(guarded, PATH)
    first = doc.result()
    assert any(a.name == "T5LayerNorm" for a in first.architectures)
    known = doc._analyser._conditional
    assert known is not None and known[0] == {"Base": "torch.nn.Module"}
    text = guarded.replace("pow(2)", "pow(3)")  # a body edit: carried (the very dict)
    doc.update(text)
    assert doc.result() == analyse(text, PATH)
    assert doc._analyser._conditional is not None and doc._analyser._conditional[0] is known[0]
    for old, new in [
        ("if HAS_TORCH:", "if HAS_TORCHX:"),  # the test's text (between statements): not carried
        ("    Base = nn.Module", "    Base = nn.Linear"),  # the binding: not a module class any more
        ("    Base = nn.Linear", "    Base = nn.Module"),
        ("class T5LayerNorm(Base):", "class T5LayerNorm(nn.Module):"),  # a header
        ("class T5LayerNorm(nn.Module):", "@torch.jit.script\nclass T5LayerNorm(Base):"),  # a decorator (and a header)
    ]:
        last = doc._analyser._conditional
        assert old in text, old
        text = text.replace(old, new)
        doc.update(text)
        got = doc.result()
        assert got == analyse(text, PATH) and strictly_equal(got, analyse(text, PATH))
        now = doc._analyser._conditional
        assert now is None or last is None or now[0] is not last[0]


def test_look_alikes_that_are_read_again() -> None:
    """Refusals: a statement after the edit on the edited line (a different column), a text with a syntax error
    (no readings kept or taken), a class's header edited (not a body edit), an edit between statements."""
    chain = Chain("import math; import os\n" + SOURCE)
    text = "import cmath; import os\n" + SOURCE
    # the `;` and `import os` after the edit on its line: read again (their column moved)
    assert _read_again(chain, text) == ["import (('cmath', 'cmath'),)", "other", "import (('os', 'os'),)"]
    chain.step(text)
    broken = text.replace("pow(2)", "pow(2")
    chain.step(broken)
    assert chain.symbols.readings is None
    fixed = broken.replace("pow(2", "pow(3)")
    chain.step(fixed)
    assert chain.symbols.readings is not None and not chain.symbols.body_edit  # nothing to read from: all afresh
    header = fixed.replace("class LayerFF(nn.Module):", "class LayerFF(nn.Module, object):")
    assert _read_again(chain, header) == ["class LayerFF"]
    assert not chain.step(header).body_edit
    gap = header.replace("\n\n\nclass DenseActDense", "\n\n\n\nclass DenseActDense")  # a line between statements
    assert _read_again(chain, gap) == []
    assert not chain.step(gap).body_edit


def test_an_edit_of_a_base_compares_only_the_changed_names_dependencies() -> None:
    """A unit kept from the last run whose dependencies include an edited class compares only the fingerprints
    of the names the edit changed (`_Entry.by_base`), not all of them."""
    from adopter import _native

    if _native.state["active"]:  # compiled methods cannot be patched: run it again without them
        run_without_native(__file__, "test_an_edit_of_a_base_compares_only_the_changed_names_dependencies")
        return
    doc = DocumentAnalysis(SOURCE, PATH)
    doc.result()
    entry = doc._analyser.cache["class LayerFF"]
    assert "DenseActDense" in entry.by_base and "T5LayerNorm" in entry.by_base
    asked: list[str] = []  # the fingerprints asked while the unit of LayerFF is looked up
    unit, fingerprint = Analyser._unit, ModuleSymbols.fingerprint
    current: list[str] = []

    def looking_up(self: Analyser, key: str, *args: object, **kwargs: object) -> object:
        current.append(key)
        try:
            return unit(self, key, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            current.pop()

    def counting(self: ModuleSymbols, name: str) -> tuple[object, ...]:
        if current and current[-1] == "class LayerFF":
            asked.append(name)
        return fingerprint(self, name)

    # an edit of T5LayerNorm.forward: LayerFF depends on that class (it builds one), not on this text
    text = SOURCE.replace("hidden_states = hidden_states * torch.rsqrt", "hidden_states = hidden_states * 1 * torch.rsqrt")
    Analyser._unit, ModuleSymbols.fingerprint = looking_up, counting  # type: ignore[method-assign,assignment]
    try:
        doc.update(text)
        got = doc.result()
    finally:
        Analyser._unit, ModuleSymbols.fingerprint = unit, fingerprint  # type: ignore[method-assign]
    assert got == analyse(text, PATH)
    assert "class LayerFF" not in doc.reanalysed
    assert doc._analyser.cache["class LayerFF"] is entry  # the last run's entry, checked by the changed name only
    assert asked and {base_name(n) for n in asked} == {"T5LayerNorm"}, asked
    assert len(asked) < len(entry.deps)
