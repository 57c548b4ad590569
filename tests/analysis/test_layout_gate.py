"""The canonical pass keeps `_Pass.track`'s tables, and asks `product_layouts`, only where a reading of them can act.

`track` records, for every name the pass binds, what made it, how often it was bound, whether it holds a softmax's
output, a transpose, zeros, a product scaled once, a last axis split in two. Those tables are read only by the
readings listed in `_READERS`, each of which acts only where the forward holds one of `normalise._LAYOUT_READS`'
targets (or `guarded`, `sized`, spliced items). These tests tie that to the code: every method of `_Pass` reading a
table is listed with what lets it act, only the listed methods make a matrix product, no respelling made before a
reading turns a forward without a trigger into one with it, and on fixtures where the readings change the forward
(and the five examples) the pass with the gate forced open gives the same architecture; with the gate forced shut
the fixtures change, and a forward without a trigger keeps no table.
"""

from __future__ import annotations

import ast
import dataclasses
import pathlib

import pytest

import adopter.analysis.canonical.normalise as normalise
from adopter.analysis import analyse
from adopter.analysis.canonical.moments import split_var_mean
from adopter.analysis.canonical.normalise import _LAYOUT_READS, _Pass
from adopter.analysis.canonical.ranks import UNTRACKED
from adopter.analysis.canonical.spellings import (
    CANONICAL,
    FUNCTION_VALUES,
    MATMUL,
    MODULES,
    PARTIAL_FUNCTIONS,
)
from adopter.dsl.types import Expr, Op, OpKind, Ref, Span

from .helpers import HEADER, arch

_TABLES = frozenset({"made_by", "version", "zeros", "probs", "swapped", "transposed", "halves", "scaled", "sizes"})
# `_Pass` method -> the tables it reads (besides `track`, which keeps them, and `__init__`); what lets each act:
_READERS = {
    "_product_layout": {"made_by", "swapped", "probs", "transposed"},  # a matrix product (made only from a trigger)
    "_scale_chain": {"scaled", "version"},  # a product scaled (`scaled` is kept only after a matrix product)
    "_version_of": {"version"},  # asked by `_scale_chain` and `track` only
    "unbound_halves": {"halves"},  # `unbind`
    "baddbmm": {"zeros"},  # `torch.baddbmm`
    "op": {"made_by", "probs"},  # `root_of` (a power), the guard (`guarded`), `einops.rearrange` of probabilities
}
# Where no reading but the guard can act (`guarded`, no trigger), `track` keeps `probs` alone (`_track_probs`).
# `_Pass` methods that make a matrix product: each is asked only of a trigger (`einsum` of `torch.einsum` /
# `einops.einsum`, `baddbmm` of `torch.baddbmm`, `_product_layout` of a matrix product).
_MAKERS = frozenset({"_product_layout", "einsum", "permuted_product", "baddbmm"})


def _methods() -> dict[str, ast.FunctionDef]:
    # the module's source file (under the native build `normalise` is compiled: its `__file__` is the extension)
    source = pathlib.Path(__file__).resolve().parents[2] / "server" / "adopter" / "analysis" / "canonical" / "normalise.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_Pass")
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def test_every_reader_of_the_tables_is_listed() -> None:
    found: dict[str, set[str]] = {}
    for name, method in _methods().items():
        if name in ("track", "_track_probs", "__init__"):
            continue
        read = {n.attr for n in ast.walk(method) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == "self" and n.attr in _TABLES}
        if read:
            found[name] = read
    assert found == _READERS, "a new reading of `track`'s tables: add what lets it act to `_LAYOUT_READS`"


def test_only_the_listed_methods_make_a_matrix_product() -> None:
    made = {name for name, method in _methods().items() if name != "track"
            and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_new"
                    and len(n.args) > 1 and isinstance(n.args[1], ast.Name) and n.args[1].id == "MATMUL"
                    for n in ast.walk(method))}
    assert made <= _MAKERS
    assert {"torch.einsum", "einops.einsum", "torch.baddbmm"} <= _LAYOUT_READS


def test_the_triggers_cover_every_spelling_a_reading_acts_on() -> None:
    """Every spelling of a matrix product, every power `root_of` reads, `unbind`, `einops.rearrange` and each module
    computing it are triggers; no respelling made before a reading (a module's function, a stateless module's op,
    `var_mean`'s parts) is one, except `einops.rearrange`, whose modules are triggers themselves."""
    assert MATMUL[1] in _LAYOUT_READS
    assert {key[1] for key, canonical in CANONICAL.items() if canonical == MATMUL} <= _LAYOUT_READS
    assert normalise._POWER_TARGETS <= _LAYOUT_READS
    assert {"unbind", "einops.rearrange"} <= _LAYOUT_READS
    assert not (set(FUNCTION_VALUES) | set(PARTIAL_FUNCTIONS)) & _LAYOUT_READS
    for callee, spelled in MODULES.items():
        assert spelled.op[1] not in _LAYOUT_READS or callee in _LAYOUT_READS, callee
    span = Span(1, 0, 1, 1)
    var_mean = Op(OpKind.FUNCTION, "torch.var_mean", (Ref("x"), Expr("-1")), (), ("v", "m"), span, span)
    parts = split_var_mean(var_mean)
    assert parts is not None and not {p.target for p in parts} & _LAYOUT_READS


# One forward per reading, each holding only that reading's trigger, each changed by it: the values through the
# transposed probabilities (`bmm(w, p.permute(0, 2, 1))`), keys laid out `(b, d, n)`, scores scaled twice, `baddbmm`
# of zeros, a root of a mean, `unbind` of split halves, `rearrange` of probabilities.
_READINGS = {
    "values": "p = F.softmax(x, dim=-1)\n        w = self.q(v)\n        return torch.bmm(w, p.permute(0, 2, 1))",
    "keys": "q = self.q(x)\n        k = self.q(v).reshape(3, 4, 5)\n        s = torch.bmm(q, k)\n"
            "        return F.softmax(s, dim=-1)",
    "scaled": "s = x @ v.transpose(-2, -1)\n        s = s * t.exp() * 0.5\n        return s.softmax(dim=-1)",
    "zeros": "z = torch.zeros(3, 4)\n        return torch.baddbmm(z, x, v, beta=1.0, alpha=0.5)",
    "root": "m = x.mean(-1, keepdim=True)\n        return (m + 1e-6) ** -0.5",
    "halves": "h = einops.rearrange(x, '... (j d) -> ... j d', j=2)\n        a, b = h.unbind(dim=-2)\n"
              "        return a + b",
    "rearranged": "p = F.softmax(x, dim=-1)\n        return einops.rearrange(p, 'b i j -> b j i')",
}


def _reading(body: str) -> str:
    return (f"{HEADER}import einops\n\n\nclass M(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n"
            f"        self.q = nn.Linear(c, c)\n\n    def forward(self, x, t, v):\n        {body}\n")


LAYOUTS = _reading(_READINGS["values"])
# A helper's guard of fully masked rows after its softmax (`softmax_guards`), without a matrix product.
GUARDED = HEADER + '''

def _guarded(scores, allow):
    neg = torch.finfo(scores.dtype).min
    scores = scores.masked_fill(~allow, neg)
    has_any = allow.any(dim=-1, keepdim=True)
    attn = torch.softmax(scores, dim=-1)
    return attn * has_any.to(attn.dtype)


class Gate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wq = nn.Linear(c, c)

    def forward(self, x, allow):
        attn = _guarded(self.wq(x), allow)
        return attn.sum(-1)
'''
PLAIN = '''
class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c, c)
        self.act = nn.GELU()

    def forward(self, x):
        h = self.act(self.fc(x)) * 2
        return torch.tanh(h) / 3 + x
'''
_EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))


class _Everything:
    def __contains__(self, item: object) -> bool:
        return True


def _deep(x: object) -> object:
    """A value with every field compared (`Op.origin` included, which `==` leaves out)."""
    if isinstance(x, tuple | list):
        return tuple(_deep(i) for i in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, tuple(_deep(getattr(x, f.name)) for f in dataclasses.fields(x)))
    return x


def _all(text: str) -> object:
    return _deep(analyse(text, None).architectures)


@pytest.mark.pure_python
@pytest.mark.parametrize("text", [*(_reading(body) for body in _READINGS.values()), HEADER + PLAIN, GUARDED,
                                  *(p.read_text() for p in _EXAMPLES)])
def test_the_gate_forced_open_gives_the_same_architectures(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    gated = _all(text)
    monkeypatch.setattr(normalise, "_LAYOUT_READS", _Everything())
    assert _all(text) == gated


@pytest.mark.pure_python
@pytest.mark.parametrize("reading", sorted(_READINGS))
def test_the_gate_forced_shut_changes_each_fixture(reading: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fixture exercises its reading (else the test above would prove nothing for it)."""
    text = _reading(_READINGS[reading])
    gated = _all(text)
    monkeypatch.setattr(normalise, "_LAYOUT_READS", frozenset())
    assert _all(text) != gated


def test_a_forward_without_a_trigger_keeps_no_table() -> None:
    forward = arch(PLAIN, "Block").forward
    assert forward is not None
    plain = _Pass(forward, {}, {})
    plain.block(forward.body, UNTRACKED)
    assert not plain.layouts and not plain.made_by and not plain.version
    attention = analyse(LAYOUTS, None).architectures[0].forward
    assert attention is not None
    kept = _Pass(attention, {}, {})
    kept.block(attention.body, UNTRACKED)
    assert kept.layouts and kept.made_by


@pytest.mark.pure_python
def test_a_forward_without_a_trigger_asks_no_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    original = _Pass.product_layouts

    def counted(self: _Pass, ops: list[Op]) -> list[Op]:
        asked.append(len(ops))
        return original(self, ops)

    monkeypatch.setattr(_Pass, "product_layouts", counted)
    arch(PLAIN, "Block")
    assert not asked
    analyse(LAYOUTS, None)
    assert asked


@pytest.mark.pure_python
def test_a_guarded_forward_without_a_trigger_keeps_its_probabilities(monkeypatch: pytest.MonkeyPatch) -> None:
    forward = analyse(GUARDED, None).architectures[-1].forward
    assert forward is not None
    guarded = _Pass(forward, {}, {})
    guarded.block(forward.body, UNTRACKED)
    assert guarded.guarded and not guarded.layouts and guarded.probs and not guarded.made_by
    kept = _all(GUARDED)
    monkeypatch.setattr(_Pass, "_track_probs", lambda self, op: None)
    assert _all(GUARDED) != kept  # the guard reads them
