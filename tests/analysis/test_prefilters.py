"""Work the analysis skips where it provably finds nothing (issues 20 and 22, helper `speed9`): each test counts
the work done and fails where it is done for nothing, and checks the answer is the one the full work gives.

- `ranks.required_ranks` walks a block back from its last `bmm` only (nothing after it proves a rank).
- `ExpressionFlow.value` asks `fstrings.constant_method` only of calls whose source holds the method's name.
- `fstrings.joined_constants` compares the names the first path binds to a constant, not every name.
"""

from __future__ import annotations

from typing import Any

import pytest

from adopter.analysis import analyse
from adopter.analysis.canonical import ranks
from adopter.analysis.flow import fstrings, values
from adopter.dsl.types import Expr, Op, OpKind, Ref, Span

SPAN = Span(0, 0, 0, 1)


def _op(kind: OpKind, target: str, args: tuple[str, ...], out: str) -> Op:
    return Op(kind, target, tuple(Ref(a) for a in args), (), (out,), SPAN, SPAN)


def _steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The targets of the ops `required_ranks` steps through."""
    stepped: list[str] = []
    original = ranks._step

    def counted(op: Op, *args: Any) -> None:
        stepped.append(op.target)
        original(op, *args)

    monkeypatch.setattr(ranks, "_step", counted)
    return stepped


def test_a_block_without_bmm_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    stepped = _steps(monkeypatch)
    block = (_op(OpKind.FUNCTION, "torch.nn.functional.softmax", ("a",), "w"),
             _op(OpKind.FUNCTION, "torch.matmul", ("w", "m"), "o"))
    assert ranks.required_ranks(block) == {}
    assert stepped == []


@pytest.mark.pure_python  # counts reads through patched / Python-level calls the compiled build makes natively
def test_the_walk_starts_at_the_last_bmm(monkeypatch: pytest.MonkeyPatch) -> None:
    stepped = _steps(monkeypatch)
    softmax = _op(OpKind.FUNCTION, "torch.nn.functional.softmax", ("a",), "w")
    unsqueeze = Op(OpKind.METHOD, "unsqueeze", (Ref("w"), Expr("1")), (), ("u",), SPAN, SPAN)
    bmm = _op(OpKind.FUNCTION, "torch.bmm", ("u", "m"), "o")
    after = (_op(OpKind.FUNCTION, "torch.tanh", ("o",), "t"), _op(OpKind.FUNCTION, "torch.sigmoid", ("t",), "s"))
    block = (softmax, unsqueeze, bmm, *after)
    # bmm proves `u` 3-D, so `w` 2-D at the unsqueeze and `a` 2-D at the softmax (styletts2's attention)
    assert ranks.required_ranks(block) == {(id(bmm), "u"): 3, (id(bmm), "m"): 3, (id(unsqueeze), "w"): 2,
                                           (id(softmax), "a"): 2}
    assert stepped == ["torch.bmm", "unsqueeze", "torch.nn.functional.softmax"]  # not the two ops after it


CALLS = '''
import torch
from torch import nn


class A(nn.Module):
    def forward(self, q, k):
        layout = "b h t d"
        scale = q.size(-1) ** -0.5
        q = self.proj(q) * scale
        k = self.proj(k).softmax(-1)
        return torch.einsum(f"{layout},{key}-> b h t k", q, k)
'''


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []
    original = values.constant_method

    def counted(node: Any, *args: Any) -> Any:
        asked.append(node.text.decode())
        return original(node, *args)

    monkeypatch.setattr(values, "constant_method", counted)
    return asked


def test_calls_without_the_method_name_are_not_read_as_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _asked(monkeypatch)
    analyse(CALLS, "m.py")
    assert asked == []  # four calls after a string constant is bound, none of them a `.replace`


@pytest.mark.pure_python  # counts reads through patched / Python-level calls the compiled build makes natively
def test_a_replace_of_a_constant_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _asked(monkeypatch)
    text = CALLS.replace("        scale =", "        key = layout.replace('t', 'k')\n        scale =")
    forward = analyse(text, "m.py").architectures[0].forward
    assert asked == ["layout.replace('t', 'k')"]
    assert forward is not None
    einsums = [op.origin or op for op in forward.body if isinstance(op, Op)]
    assert any(isinstance(op.args[0], Expr) and op.args[0].text == '"b h t d,b h k d-> b h t k"' for op in einsums
               if op.target == "torch.einsum")


class _Counted(dict[str, "str | None"]):
    """A path's constants that count the names looked up in them."""

    looked_up: list[str]

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        type(self).looked_up.append(name)
        return super().get(name, default)


@pytest.mark.parametrize(("first", "second", "joined"), [
    ({"x": '"a"', "n": None}, {"x": '"b"', "n": None}, {"x": '"a" if c else "b"', "n": None}),
    ({"x": '"a"'}, {"x": '"a"', "m": None}, {"x": '"a"', "m": None}),
    ({"x": None}, {"x": '"a"'}, {"x": None}),  # bound to something else on one path
    ({"x": '"a"'}, {}, {"x": None}),  # bound on one path only
    ({"x": "'a' if t else 'b'"}, {"x": '"c"'}, {"x": None}),  # a conditional already: not joined again
])
def test_joined_constants(first: dict[str, str | None], second: dict[str, str | None],
                          joined: dict[str, str | None]) -> None:
    assert fstrings.joined_constants([first, second], ("c", "else")) == joined


@pytest.mark.pure_python  # counts reads through patched / Python-level calls the compiled build makes natively
def test_only_the_first_paths_constants_are_compared() -> None:
    _Counted.looked_up = []
    first = _Counted({f"v{i}": None for i in range(50)} | {"layout": '"b h t d"'})
    second = _Counted({f"v{i}": None for i in range(50)} | {"layout": '"b t h d"'})
    joined = fstrings.joined_constants([first, second], ("time_dim == 2", "else"))
    assert joined == {f"v{i}": None for i in range(50)} | {"layout": '"b h t d" if time_dim == 2 else "b t h d"'}
    assert _Counted.looked_up == ["layout"]  # not the 51 names on each path
