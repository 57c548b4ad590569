"""A name passed as a size is a number (helper `mech96`, family 4 form M1 "hidden rank"): `x.reshape(m, n, -1)`,
`x.view(b, h, 1, d)`, `x.expand(b, n, -1)`, `torch.zeros(b, t)` take one integer per size, so each name written
there has rank 0, and so has numpy's elementwise math of it (`np.sqrt(head_dim)`). A product of known rank scaled
by such a number (`w /= n ** 0.5`, `s / np.sqrt(head_dim)`) keeps its rank, and its softmax at `dim=k` reads as
`dim=-1` where k is the last axis. Each case is the forward's canonical op lines (`tests/analysis/helpers.py`)."""

from __future__ import annotations

import pytest

from adopter.analysis.canonical import ranks
from adopter.dsl.types import Expr, Op, OpKind, Ref, Span

from .helpers import forward_lines

_CLASS = "import numpy as np\n\n\nclass M(nn.Module):\n    def forward(self, x, y, d):\n"


def _forward(body: str) -> str:
    return _CLASS + "".join(f"        {line}\n" for line in body.splitlines())


SOFTMAX = "function torch.nn.functional.softmax"

# (id, forward body, the softmax's canonical line)
FOUND = [
    # min-dalle 0.4.11 min_dalle/models/vqgan_detokenizer.py:43-55 (AttentionBlock): `n` (2 ** 9) is a reshape
    # size, so `w /= n ** 0.5` scales the 3-D `bmm` product by a number: dim=2 is its last axis.
    ("bmm scaled by a power of a reshape size",
     "n, m = 2 ** 9, x.shape[0]\nk = x.reshape(m, n, -1)\nq = y.reshape(m, n, -1).permute(0, 2, 1)\n"
     "w = torch.bmm(q, k)\nw /= n ** 0.5\np = torch.softmax(w, dim=2)", f"p = {SOFTMAX}(w, dim=-1)"),
    # FastNLP 1.0.1 fastNLP/modules/torch/encoder/star_transformer.py:144-157 (_MSA2): `head_dim` is a view size,
    # so `np.sqrt(head_dim)` is a number and the 4-D product keeps its rank: dim=3 is the last axis.
    ("4-D product over numpy's sqrt of a view size",
     "nhead, head_dim = self.nhead, self.head_dim\nb, h, t, _ = y.shape\nq = x.view(b, nhead, 1, head_dim)\n"
     "k = y.view(b, nhead, head_dim, t)\ns = torch.matmul(q, k) / np.sqrt(head_dim)\n"
     "s = s.masked_fill(d, -float('inf'))\np = F.softmax(s, 3)", f"p = {SOFTMAX}(s, dim=-1)"),
    # pytorchvideo 0.1.5 pytorchvideo/layers/nonlocal_net.py:54-80 (NonLocal): `dim_inner` is a view size, the
    # einsum's output is 3-D, scaled by `dim_inner ** -0.5`: dim=2 is its last axis.
    ("einsum output scaled by a power of a view size",
     "dim_inner = self.conv.out_channels\nn = x.shape[0]\ntheta = x.view(n, dim_inner, -1)\n"
     "phi = y.view(n, dim_inner, -1)\ns = torch.einsum('nct,ncp->ntp', theta, phi)\ns = s * (dim_inner ** -0.5)\n"
     "p = nn.functional.softmax(s, dim=2)", f"p = {SOFTMAX}(s, dim=-1)"),
    ("a creation size", "z = torch.zeros(2, d)\nw = torch.bmm(x, y) * d\np = w.softmax(2)",
     f"p = {SOFTMAX}(w, dim=-1)"),
    ("an expand size", "e = y.expand(x.shape[0], d, -1)\nw = torch.bmm(x, e) / d\np = w.softmax(2)",
     f"p = {SOFTMAX}(w, dim=-1)"),
]

REFUSED = [
    ("the factor is never a size", "w = torch.bmm(x, y)\nw = w / d ** 0.5\np = torch.softmax(w, dim=2)"),
    ("the factor is a size only after the scaling",
     "w = torch.bmm(x, y) / d\np = torch.softmax(w, dim=2)\nz = x.view(2, d)"),
    ("one size argument may be a whole shape",
     "z = x.reshape(d)\nw = torch.bmm(x, y) / d\np = torch.softmax(w, dim=2)"),
    ("a starred size", "z = x.view(*d, 2)\nw = torch.bmm(x, y) / d\np = torch.softmax(w, dim=2)"),
    ("a size passed by keyword", "z = x.new_zeros(2, 3, dtype=d)\nw = torch.bmm(x, y) / d\np = torch.softmax(w, dim=2)"),
    ("the size rebound to a tensor after the view",
     "z = x.view(2, d)\nd = self.proj(y)\nw = torch.bmm(x, y) / d\np = torch.softmax(w, dim=2)"),
    ("a size under one branch only",
     "if self.flag:\n    z = x.view(2, d)\nw = torch.bmm(x, y) / d\np = torch.softmax(w, dim=2)"),
    ("numpy's sqrt of a tensor", "z = x.view(2, d)\nw = torch.bmm(x, y) / np.sqrt(y)\np = torch.softmax(w, dim=2)"),
    # FastNLP 1.0.1 star_transformer.py:108-122 (_MSA1): the 5-D product summed with keepdim stays 5-D; dim=3 is
    # not its last axis (labelled not a site).
    ("the keepdim sum of a 5-D product: dim=3 is not the last",
     "nhead, head_dim = self.nhead, self.head_dim\nb, h, t, _ = x.shape\nq = x.view(b, nhead, head_dim, 1, t)\n"
     "k = y.view(b, nhead, head_dim, 3, t)\np = F.softmax((q * k).sum(2, keepdim=True) / np.sqrt(head_dim), 3)"),
    ("the axis of the queries, not the keys",
     "n, m = 2 ** 9, x.shape[0]\nk = x.reshape(m, n, -1)\nw = torch.bmm(y, k)\nw /= n ** 0.5\n"
     "p = torch.softmax(w, dim=1)"),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_the_softmax_reads_as_over_the_last_axis(body: str, expected: str) -> None:
    assert expected in forward_lines(_forward(body))


@pytest.mark.parametrize("body", [c[1] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_the_softmax_axis_is_not_read_as_the_last(body: str) -> None:
    (line,) = [s for s in forward_lines(_forward(body)) if SOFTMAX in s]
    assert "dim=-1" not in line, line


_SPAN = Span(0, 0, 0, 1)


def _op(kind: OpKind, target: str, *args: str, outputs: tuple[str, ...] = ("y",)) -> Op:
    values = tuple(Ref(a) if a.lstrip("*").isidentifier() else Expr(a) for a in args)
    return Op(kind, target, values, (), outputs, _SPAN, _SPAN)


@pytest.mark.parametrize(("op", "names"), [
    (_op(OpKind.METHOD, "reshape", "x", "m", "n", "-1"), ("m", "n")),
    (_op(OpKind.METHOD, "view", "x", "b", "4"), ("b",)),
    (_op(OpKind.FUNCTION, "torch.zeros", "b", "t"), ("b", "t")),
    (_op(OpKind.METHOD, "view", "x", "shape"), ()),  # one argument: maybe a whole shape
    (_op(OpKind.METHOD, "view", "x", "*shape", "2"), ()),
    (_op(OpKind.METHOD, "permute", "x", "a", "b"), ()),  # axes, not sizes
    (_op(OpKind.METHOD, "view", "x", "n", "2", outputs=("n",)), ()),
], ids=["reshape", "view", "zeros", "one-argument", "starred", "permute", "rebinds-its-size"])
def test_size_names(op: Op, names: tuple[str, ...]) -> None:
    assert ranks.size_names(op) == names


@pytest.mark.parametrize(("op", "rank"), [
    (_op(OpKind.FUNCTION, "numpy.sqrt", "n"), 0),
    (_op(OpKind.FUNCTION, "numpy.power", "n", "-0.5"), 0),
    (_op(OpKind.FUNCTION, "numpy.sqrt", "64"), 0),
    (_op(OpKind.FUNCTION, "numpy.sqrt", "x"), None),  # a tensor
    (_op(OpKind.FUNCTION, "numpy.sqrt", "u"), None),  # unknown
    (_op(OpKind.FUNCTION, "numpy.sqrt", "self.d"), None),  # an attribute: not known to be a number
    (_op(OpKind.FUNCTION, "numpy.mean", "n"), None),
], ids=["sqrt-of-a-number", "power", "literal", "tensor", "unknown", "attribute", "not-elementwise"])
def test_numpy_scalar_rank(op: Op, rank: int | None) -> None:
    assert ranks.numpy_scalar_rank(op, {"n": 0, "x": 3}) == rank
