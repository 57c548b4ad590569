"""`rowmax(s) - s` going into a softmax over the last axis reads as `neg(s)` (helper mech104): the row's maximum,
kept as (…, 1), is a constant of each row, which the softmax ignores. Each case is the forward's canonical op
lines (`tests/analysis/helpers.py`)."""

from __future__ import annotations

import pytest

from .helpers import forward_lines

_CLASS = "class M(nn.Module):\n    def forward(self, x, y):\n"


def _forward(body: str) -> str:
    return _CLASS + "".join(f"        {line}\n" for line in body.splitlines())


SOFTMAX = "function torch.nn.functional.softmax"

# (id, forward body, the line that must be there)
NEGATED = [
    # boxmot 25.0.0 reid/backbones/common/attention.py:245 (CAM_Module): the maximum's values broadcast by expand_as
    ("expand_as of the values", "s = x @ y\nm = torch.max(s, -1, keepdim=True)[0].expand_as(s) - s\n"
     "p = torch.softmax(m, dim=-1)", "m = operator neg(s)"),
    # pytorchcv 0.0.74 pytorchcv/models/danet.py:106-107 (ChaAttBlock): unpacked, numpy's keepdims alias
    ("unpacked values, keepdims", "s = x @ y\nmx, _ = s.max(dim=-1, keepdims=True)\nm = mx.expand_as(s) - s\n"
     "p = m.softmax(-1)", "m = operator neg(s)"),
    ("amax", "s = x @ y\nm = s.amax(-1, keepdim=True) - s\np = F.softmax(m, dim=-1)", "m = operator neg(s)"),
    # the unpacked maximum and the keepdims alias reach the stable shift the other way round too: `s - rowmax(s)`
    ("stable shift, unpacked values", "s = x @ y\nmx, _ = s.max(dim=-1, keepdims=True)\nm = s - mx\n"
     "p = torch.softmax(m, dim=-1)", "m = operator cast(s)"),
]

KEPT = [
    ("not into a softmax", "s = x @ y\nm = torch.max(s, -1, keepdim=True)[0] - s\nreturn m",
     "m = operator -(%2, s)"),
    ("the maximum over axis 1", "s = x @ y\nm = torch.max(s, 1, keepdim=True)[0] - s\np = torch.softmax(m, dim=-1)",
     "m = operator -(%2, s)"),
    ("the maximum of another tensor", "s = x @ y\nm = torch.max(x, -1, keepdim=True)[0] - s\n"
     "p = torch.softmax(m, dim=-1)", "m = operator -(%2, s)"),
    ("the indices of the maximum", "s = x @ y\n_, i = s.max(dim=-1, keepdim=True)\nm = i - s\n"
     "p = torch.softmax(m, dim=-1)", "m = operator -(i, s)"),
    ("both keepdim and keepdims", "s = x @ y\nmx, _ = s.max(dim=-1, keepdim=True, keepdims=True)\nm = mx - s\n"
     "p = torch.softmax(m, dim=-1)", "m = operator -(mx, s)"),
]


@pytest.mark.parametrize(("case", "body", "line"), NEGATED + KEPT, ids=[c[0] for c in NEGATED + KEPT])
def test_rowmax_minus_scores(case: str, body: str, line: str) -> None:
    lines = forward_lines(_forward(body))
    assert line in lines, (case, lines)
