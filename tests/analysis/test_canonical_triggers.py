"""The canonical pass feeds three mechanisms only in forwards that hold their triggers (`normalise._triggers`).

`SoftmaxGuards`, `RescaledShift` and `SizeReads` follow every op of a forward, yet act only after a few op kinds:
a guard target or a `/` in an inlined helper, a `view` / `reshape` with a `2` among its arguments. The pass
computes once per forward whether those are there and skips the mechanism otherwise. These tests tie the
trigger tables to the code that acts: the respellings the pass applies before asking a mechanism make none of
its triggers, the guard answers for no target outside `GUARD_TARGETS`, and on fixtures where each mechanism
changes the forward (shaped on physis-lm's guarded softmax, lucidrains' `stable_softmax`, ai2-olmo's and
neuraloperator's rotate_half) the pass with every mechanism forced on gives the same architecture.
"""

from __future__ import annotations

import dataclasses

import pytest

import adopter.analysis.canonical.normalise as normalise
from adopter.analysis.canonical.moments import split_var_mean
from adopter.analysis.canonical.normalise import _triggers
from adopter.analysis.canonical.sized_splits import RESHAPES
from adopter.analysis.canonical.softmax_guards import GUARD_TARGETS, SoftmaxGuards
from adopter.analysis.canonical.spellings import CANONICAL, FUNCTION_VALUES, MODULES
from adopter.dsl.types import Expr, Kwarg, Op, OpKind, Ref, Span

from .helpers import arch

_SPAN = Span(1, 0, 1, 1)


def _op(kind: OpKind, target: str, args: tuple[Expr | Ref, ...], via: tuple[str, ...] = ("helper",),
        outputs: tuple[str, ...] = ("out",)) -> Op:
    return Op(kind, target, args, (), outputs, _SPAN, _SPAN, via)


def test_no_respelling_before_a_guard_or_a_shift_makes_their_triggers() -> None:
    """`_Pass.op` asks the guard and the shift of a body op after at most these respellings: a module call bound to
    a function (`FUNCTION_VALUES`), a stateless module (`MODULES`), `torch.var_mean`'s two parts. None of them is
    a guard target or a division, so a body without one (in a helper) never reaches them with one."""
    made = set(FUNCTION_VALUES) | {spelled.op[1] for spelled in MODULES.values()}
    var_mean = _op(OpKind.FUNCTION, "torch.var_mean", (Ref("x"), Expr("-1")), outputs=("v", "m"))
    parts = split_var_mean(var_mean)
    assert parts is not None
    made |= {part.target for part in parts}
    assert not made & (GUARD_TARGETS | {"/"})


def test_no_respelling_makes_a_reshape() -> None:
    """The pass emits a `view` / `reshape` only where the body holds one (or a spliced item's forward does)."""
    made = {*CANONICAL.values(), *(spelled.op for spelled in MODULES.values())}
    assert not {key for key in made if key[0] == "method" and key[1] in RESHAPES}


# Arguments that satisfy each of the guard's readings, with the masks it has seen.
_GUARDED_CALLS = (
    (Ref("p"), Ref("keep")),  # `p * keep`
    (Ref("p"), Ref("drop"), Expr("0")),  # `p.masked_fill(drop, 0)`
    (Ref("p"),),  # `p.nan_to_num()`
    (Ref("keep"), Ref("p"), Expr("0")),  # `torch.where(keep, p, 0)`
)


@pytest.mark.parametrize("target", sorted(GUARD_TARGETS | {"+", "-", "/", "masked_scatter", "where", "nan", "cast",
                                                           *(key[1] for key in CANONICAL.values())}))
def test_the_guard_answers_only_for_its_targets(target: str) -> None:
    guards = SoftmaxGuards(keep={"keep"}, drop={"drop"})
    answers = [guards.guard(_op(kind, target, args), {"p"}) for kind in OpKind for args in _GUARDED_CALLS]
    assert any(a is not None for a in answers) == (target in GUARD_TARGETS)


def _deep(x: object) -> object:
    """A value with every field compared (`Op.origin` included, which `==` leaves out)."""
    if isinstance(x, tuple | list):
        return tuple(_deep(i) for i in x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (type(x).__name__, tuple(_deep(getattr(x, f.name)) for f in dataclasses.fields(x)))
    return x


GUARDED = '''
import torch
import torch.nn as nn


def _guarded(scores, allow):
    neg = torch.finfo(scores.dtype).min
    scores = scores.masked_fill(~allow, neg)
    has_any = allow.any(dim=-1, keepdim=True)
    attn = torch.softmax(scores, dim=-1)
    return attn * has_any.to(attn.dtype)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wq = nn.Linear(c, c)
        self.wk = nn.Linear(c, c)

    def forward(self, x, allow):
        q, k = self.wq(x), self.wk(x)
        scores = torch.einsum("bhid,bhjd->bhij", q, k)
        attn = _guarded(scores, allow)
        return torch.einsum("bhij,bhjd->bhid", attn, x)
'''

RESCALED = '''
import torch
import torch.nn as nn


def stable_softmax(t, dim=-1, alpha=32 ** 2):
    t = t / alpha
    t = t - torch.amax(t, dim=dim, keepdim=True).detach()
    return (t * alpha).softmax(dim=dim)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wq = nn.Linear(c, c)
        self.wk = nn.Linear(c, c)

    def forward(self, x):
        q, k = self.wq(x), self.wk(x)
        sim = torch.einsum("b i d, b j d -> b i j", q, k)
        attn = stable_softmax(sim)
        return torch.einsum("b i j, b j d -> b i d", attn, x)
'''

SIZED = '''
import torch
from torch import nn


class RotaryEmbedding(nn.Module):
    def rotate_half(self, x):
        B, nh, T, hs = x.size()
        x = x.view(B, nh, T, 2, hs // 2)
        x1, x2 = x.unbind(dim=-2)
        return torch.cat((-x2, x1), dim=-1)

    def forward(self, q, pos_sin, pos_cos):
        return (q * pos_cos) + (self.rotate_half(q) * pos_sin)
'''

PLAIN = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c, c)

    def forward(self, x):
        h = self.fc(x).view(x.shape[0], -1)
        return torch.tanh(h) * 2
'''


@pytest.mark.pure_python
@pytest.mark.parametrize(("code", "name", "which"), [(GUARDED, "Attention", 0), (RESCALED, "Attention", 1),
                                                     (SIZED, "RotaryEmbedding", 2), (PLAIN, "Block", None)])
def test_the_triggers_skip_only_what_cannot_act(code: str, name: str, which: int | None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fixture holds one mechanism's trigger (none for the plain block): with every mechanism forced on the
    architecture is the same; with that one forced off it changes (the fixture exercises it)."""
    seen: list[tuple[bool, bool, bool]] = []

    def recorded(flat: tuple[Op, ...], items: bool) -> tuple[bool, bool, bool]:
        seen.append(_triggers(flat, items))
        return seen[-1]

    monkeypatch.setattr(normalise, "_triggers", recorded)
    computed = arch(code, name)
    assert seen and (any(t[which] for t in seen) if which is not None else not any(any(t) for t in seen))
    monkeypatch.setattr(normalise, "_triggers", lambda flat, items: (True, True, True))
    assert _deep(arch(code, name)) == _deep(computed)
    if which is not None:
        off = [True, True, True]
        off[which] = False
        monkeypatch.setattr(normalise, "_triggers", lambda flat, items: tuple(off))
        assert _deep(arch(code, name)) != _deep(computed)


def test_the_triggers_read_nested_ops_and_keywords() -> None:
    """A trigger inside a branch or a loop counts (the flat list holds every op); a `2` given by keyword too."""
    view = Op(OpKind.METHOD, "reshape", (Ref("x"),), (Kwarg("shape", Expr("2")),), ("y",), _SPAN, _SPAN)
    assert _triggers((view,), False) == (False, False, True)
    assert _triggers((_op(OpKind.OPERATOR, "/", (Ref("t"), Expr("4"))),), False) == (False, True, False)
    assert _triggers((_op(OpKind.OPERATOR, "/", (Ref("t"), Expr("4")), via=()),), False) == (False, False, False)
    assert _triggers((), True) == (False, False, True)  # a spliced item's forward may hold a reshape


# -- the per-op gates: each table lists every target its reading can act on ---------------------------------

# Targets to try: every spelling the pass knows, the tables' own, and a few others.
_TARGETS = sorted({*(key[1] for key in CANONICAL), *(key[1] for key in CANONICAL.values()),
                   *(spelled.op[1] for spelled in MODULES.values()), *normalise._SOFTMAX_TARGETS,
                   *normalise._LAST_SPLITTERS, *normalise._ITEMS_TARGETS, *normalise._LAYOUT_TARGETS,
                   *normalise._RANK_READS, *normalise._ROW_MAXIMA, "setitem", "getitem", "unbind", "view", "+", "//",
                   "detach", "expand_as", "ndim", "amin", "min", "split_with_sizes", "unflatten_", "self.w.to",
                   # written out: a table that lost one of these would drop it from the sets above
                   "-", "*", "/", "torch.matmul", "dim", "max", "torch.max", "amax", "torch.amax", "list", "tuple",
                   "split", "torch.split", "chunk", "torch.chunk", "tensor_split", "torch.tensor_split",
                   "einops.rearrange", "unflatten", "torch.nn.functional.softmax",
                   "torch.nn.functional.log_softmax"})


def _shapes(target: str) -> list[Op]:
    """Ops of `target` of every kind, with arguments that satisfy the readings' other conditions."""
    args: list[tuple[Expr | Ref, ...]] = [
        (Ref("x"), Ref("y")), (Ref("x"), Expr("'... (j d) -> ... j d'")), (Ref("x"), Expr("-1"), Expr("(2, -1)")),
        (Ref("x"), Expr("0"), Ref("v")), (Ref("x"), Expr("ndim")), (Ref("r"), Expr("1")), (Ref("x"), Ref("m")),
        (Ref("x"), Expr("-1"), Expr("True")), (Ref("x"),), (Ref("m"), Expr("0")), (Ref("x"), Expr("'values'"))]
    return [Op(kind, target, a, kw, outs, _SPAN, _SPAN, via)
            for kind in OpKind for a in args for outs in (("x",), ("o",), ("o", "i"))
            for kw in ((), (Kwarg("j", Expr("2")),), (Kwarg("dim", Expr("-1")), Kwarg("keepdim", Expr("True"))))
            for via in ((), ("helper",))]


def _pass() -> normalise._Pass:
    from adopter.dsl.types import Forward
    return normalise._Pass(Forward("forward", (), (), _SPAN), {}, {})


@pytest.mark.parametrize("target", _TARGETS)
def test_each_per_op_reading_acts_only_on_its_targets(target: str) -> None:
    ranks = {"x": 3, "y": 3}
    for op in _shapes(target):
        if target not in normalise._ITEMS_TARGETS:
            assert normalise._items_rank(op, ranks) is None
        if target not in normalise._LAST_SPLITTERS:
            assert not normalise._splits_last_in_two(op)
        if target != "setitem":
            assert not normalise._writes_into_ranked(op, ranks)
        if target not in normalise._SOFTMAX_TARGETS:
            assert normalise._implicit_dim(op, ranks) is op
        if op.kind != OpKind.MODULE:
            from adopter.analysis.canonical.held_ranks import held_method_rank
            assert held_method_rank(op, {"self.w": 2}) is None
        one = _pass()
        one.ranked = {"r": ("rank", "x")}
        one._rank_less_one(op)
        if target not in normalise._RANK_READS:
            assert one.ranked == {"r": ("rank", "x")}
        shift = _pass()
        shift._scanned = (frozenset(), frozenset({"o", "x"}))
        if target not in normalise._ROW_MAXIMA:
            assert shift.row_maxima(op, None) is None and not shift.rowmax
        if target != "unbind":
            halves = _pass()
            halves.halves = {"x": "t"}
            assert halves.unbound_halves(op) is None
        if target not in normalise._LAYOUT_TARGETS:
            layout = _pass()
            layout.made_by = {"x": normalise.MATMUL, "y": normalise.MATMUL}
            layout.scaled = {"x": ("p", Expr("2"), "*", (0, 0))}
            layout._scores = frozenset({"o", "x"})
            out: list[Op] = []
            layout._product_layout(op, out)
            assert out == [op]
