"""Two rank facts of the canonical pass (helper `mech91`, family 4 form M1): a tensor's sizes unpacked into n
names prove it n-D (`b, c, h, w = x.shape`), and a reduction over axes written as integers drops them
(`x.mean(dim=(-2, -1))`) or, with `keepdim=True`, keeps them. With them `softmax(dim=k)` of the result reads as
`dim=-1` where k is its last axis. Each case is the forward's canonical op lines (`tests/analysis/helpers.py`)."""

from __future__ import annotations

import pytest

from adopter.analysis.canonical import ranks
from adopter.dsl.types import Expr, Kwarg, Op, OpKind, Ref, Span

from .helpers import arch, forward_lines, ops

_CLASS = "class M(nn.Module):\n    def forward(self, x, d):\n"


def _forward(body: str) -> str:
    return _CLASS + "".join(f"        {line}\n" for line in body.splitlines())


SOFTMAX = "function torch.nn.functional.softmax"

# (id, forward body, the softmax's canonical line)
FOUND = [
    # deepinv 0.5.0 deepinv/models/third_party/promptir.py:40-42 (PromptGenBlock): a 4-D input averaged over its
    # two spatial axes is 2-D, so dim=1 of the prompt weights is their last axis.
    ("unpacked 4-D, mean over two axes", "b, c, h, w = x.shape\ne = x.mean(dim=(-2, -1))\np = F.softmax(e, dim=1)",
     f"p = {SOFTMAX}(e, dim=-1)"),
    # pywick 0.6.5 models/segmentation/testnets/axial_deeplab/axial_deeplab.py:76-79: five sizes summed over one
    # axis are 4-D, so dim=3 is the last.
    ("viewed 5-D, sum over one axis", "s = x.view(2, 3, 4, 5, 5).sum(dim=1)\np = F.softmax(s, dim=3)",
     f"p = {SOFTMAX}(s, dim=-1)"),
    ("sizes read by size()", "b, t = x.size()\np = x.softmax(1)", f"p = {SOFTMAX}(x, dim=-1)"),
    ("keepdim keeps the rank", "b, t, e = x.shape\ns = torch.sum(x, 1, keepdim=True)\np = s.softmax(2)",
     f"p = {SOFTMAX}(s, dim=-1)"),
    ("amax over one positional axis", "b, t, e = x.shape\ns = x.amax(2)\np = s.softmax(1)", f"p = {SOFTMAX}(s, dim=-1)"),
]

REFUSED = [
    ("a starred target says nothing of the rank", "b, *rest = x.shape\np = F.softmax(x, dim=1)"),
    ("a starred target among several", "b, c, *rest = x.shape\ne = x.mean(dim=(-2, -1))\np = F.softmax(e, dim=1)"),
    ("keepdim=True keeps the two axes: dim=1 of a 4-D tensor",
     "b, c, h, w = x.shape\ne = x.mean(dim=(-2, -1), keepdim=True)\np = F.softmax(e, dim=1)"),
    ("an axis held in a parameter", "b, c, h, w = x.shape\ne = x.mean(dim=d)\np = F.softmax(e, dim=1)"),
    ("keepdim held in a parameter", "b, c, h = x.shape\ne = x.mean(1, keepdim=d)\np = F.softmax(e, dim=1)"),
    ("the input's rank unknown", "e = x.mean(dim=(-2, -1))\np = F.softmax(e, dim=1)"),
    ("a slice of the sizes", "h, w = x.shape[-2:]\np = F.softmax(x, dim=1)"),
    ("one axis given twice (torch raises)", "b, c, h, w = x.shape\ne = x.sum(dim=(1, -3))\np = F.softmax(e, dim=1)"),
    ("an axis out of range", "b, t = x.shape\ne = x.sum(dim=2)\np = F.softmax(e, dim=0)"),
    ("unbiased, not keepdim, is std's third", "b, t, e = x.shape\ns = x.std(2, True)\np = F.softmax(s, dim=1)"),
    ("the sizes unpacked under a branch only", "if d:\n    b, t = x.shape\np = F.softmax(x, dim=1)"),
    ("the name rebound after its sizes were read", "b, t = x.shape\nx = x.unsqueeze(0)\np = F.softmax(x, dim=1)"),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_the_softmax_reads_as_over_the_last_axis(body: str, expected: str) -> None:
    assert expected in forward_lines(_forward(body))


@pytest.mark.parametrize("body", [c[1] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_the_softmax_axis_is_left_as_written(body: str) -> None:
    (line,) = [s for s in forward_lines(_forward(body)) if SOFTMAX in s]
    assert "dim=-1" not in line, line


def test_the_flow_marks_an_unpacking_into_a_starred_target() -> None:
    forward = arch(_forward("b, *rest = x.shape\n[b, *rest] = x.shape\n(b, *rest) = x.size()\nb, *rest, = x.shape\n"
                            "c, d = x.shape")).forward
    assert forward is not None
    *starred, plain = [op for op in ops(forward.body) if op.target in ("getattr", "size")]
    assert len(starred) == 4
    for op in starred:
        assert op.origin is not None and op.origin.target == ranks.STARRED_UNPACK
        assert ranks.unpacked_rank(op) is None
    assert plain.origin is None and ranks.unpacked_rank(plain) == ("x", 2)


_SPAN = Span(0, 0, 0, 1)


def _op(kind: OpKind, target: str, args: tuple[str, ...], kwargs: dict[str, str] | None = None,
        outputs: tuple[str, ...] = ("y",)) -> Op:
    values = tuple(Ref(a) if a.isidentifier() and a not in ("True", "False") else Expr(a) for a in args)
    return Op(kind, target, values, tuple(Kwarg(k, Expr(v)) for k, v in (kwargs or {}).items()), outputs, _SPAN,
              _SPAN)


@pytest.mark.parametrize(("op", "rank"), [
    (_op(OpKind.METHOD, "mean", ("x", "(-2, -1)")), 2),
    (_op(OpKind.METHOD, "mean", ("x", "[1]"), {"keepdim": "True"}), 4),
    (_op(OpKind.FUNCTION, "torch.logsumexp", ("x", "-1", "False")), 3),
    (_op(OpKind.METHOD, "var", ("x",), {"dim": "1", "correction": "0"}), 3),
    (_op(OpKind.METHOD, "mean", ("x",)), None),  # every axis: numpy's and torch's spellings differ
    (_op(OpKind.METHOD, "mean", ("x", "()")), None),
    (_op(OpKind.METHOD, "mean", ("x", "1.0")), None),
    (_op(OpKind.METHOD, "sum", ("x", "1"), {"out": "o"}), None),
    (_op(OpKind.METHOD, "max", ("x", "1")), None),  # values and indices
], ids=["two-axes", "keepdim", "logsumexp-positional-keepdim", "var-keywords", "no-axis", "empty-axes",
        "float-axis", "unknown-keyword", "max"])
def test_reduced_rank_of_a_4d_input(op: Op, rank: int | None) -> None:
    assert ranks.reduced_rank(op, {"x": 4}) == rank
