"""The canonical pass runs a forward without tracking ranks first (`ranks.UNTRACKED`), and again tracking them
where a reading would consult them (`ranks.consulted` raises `RanksAsked`).

A pass that ends untracked is exact only if every reading of the ranks goes through `consulted` and no writer
writes into `UNTRACKED`. These tests tie that to the code: every function of the canonical package that takes
the ranks is listed here as a reading (its source consults them) or as one that only writes or carries them (run
untracked, each returns before touching them, or is not called); and on forwards where each reading changes the
canonical form (an axis counted from 0, a softmax without `dim`, a stateless module's axis, a root of a mean, a
softmax over a last axis of length 1, a layer bounding the rank) the untracked-first pass gives what the pass
tracking from the start gives, with `UNTRACKED` left empty.
"""

from __future__ import annotations

import inspect
import pathlib
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

import adopter.analysis.canonical as canonical_package
import adopter.analysis.canonical.normalise as normalise
from adopter.analysis import analyse
from adopter.analysis.canonical.ranks import UNTRACKED, RanksAsked, consulted
from adopter.dsl.printer import format_architecture
from adopter.dsl.types import block_ops

from .helpers import HEADER

# Functions (and `_Pass` methods) that read the ranks to decide an op's canonical form: each consults them.
_READINGS = frozenset({"normalise_values", "_unit_last", "_implicit_dim", "_ranked_axes", "root_of"})
# Functions that write ranks, or read them only to compute ranks: never called untracked, or returning first.
_WRITERS = frozenset({
    "_track_rank", "_meet", "_writes_into_ranked", "_items_rank", "_makes_unit_last", "_rank", "reduced_rank",
    "numpy_scalar_rank", "held_method_rank", "_part_rank", "_flattened_rank", "_rank_bound",
})
# Functions that hand the ranks on (to the readings and writers above) and write them only where tracked.
_CARRIERS = frozenset({"block", "_block", "op", "einsum", "unsqueezed", "permuted_product", "normalise"})


def _taking_ranks() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    folder = pathlib.Path(canonical_package.__file__).parent
    for path in sorted(folder.glob("*.py")):
        module = __import__(f"adopter.analysis.canonical.{path.stem}", fromlist=["_"])
        for value in vars(module).values():
            members = [value]
            if inspect.isclass(value) and value.__module__ == module.__name__:
                members = [m for m in vars(value).values() if inspect.isfunction(m)]
            for member in members:
                if (inspect.isfunction(member) and member.__module__ == module.__name__
                        and member is not consulted
                        and any(p in ("ranks", "known") for p in inspect.signature(member).parameters)):
                    found[member.__name__] = member
    return found


@pytest.mark.pure_python  # reads the functions' signatures and sources (compiled ones have neither)
def test_every_function_taking_the_ranks_is_a_reading_a_writer_or_a_carrier() -> None:
    found = _taking_ranks()
    assert set(found) == _READINGS | _WRITERS | _CARRIERS, (
        "a function taking the ranks is not listed: a reading must consult them through `ranks.consulted`")


@pytest.mark.pure_python
def test_each_reading_consults_the_ranks() -> None:
    found = _taking_ranks()
    for name in _READINGS:
        source = inspect.getsource(found[name])
        assert "consulted(ranks)" in source or "ranks is UNTRACKED" in source, name


def test_consulted_raises_only_untracked() -> None:
    assert consulted({"x": 2}) == {"x": 2}
    with pytest.raises(RanksAsked):
        consulted(UNTRACKED)


# Forwards where a reading of the ranks changes the canonical form, and some where none does.
_SOURCES = (
    # an axis counted from 0 of a 4-D view (`normalise_values`)
    """
    class A(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(8, 8)
        def forward(self, x):
            b, t, _ = x.shape
            q = self.q(x).view(b, t, 2, 4).transpose(1, 2)
            return torch.matmul(q, q.transpose(2, 3)).softmax(dim=3)
    """,
    # a softmax without `dim` of a 2-D tensor (`_implicit_dim`), and a stateless module's axis (`_ranked_axes`)
    """
    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.sm = nn.Softmax(dim=1)
            self.implicit = nn.Softmax()
        def forward(self, x):
            y = x.view(4, 5)
            return F.softmax(y) + self.sm(y) + self.implicit(x.view(2, 3, 4))
    """,
    # a root of a mean (`root_of`) of a number and of a tensor
    """
    class C(nn.Module):
        def __init__(self, eps: float = 1e-6):
            super().__init__()
            self.eps = eps
        def forward(self, x, n: int = 3):
            v = x.pow(2).mean(-1, keepdim=True)
            m = (n + 1) ** -0.5
            return x * (v + self.eps) ** -0.5 * m
    """,
    # a softmax over a last axis of length 1 (`_unit_last`)
    """
    class D(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.w_g = nn.Parameter(torch.randn(d, 1))
        def forward(self, q):
            a = q @ self.w_g
            return a.softmax(dim=-1) * q
    """,
    # a layer bounding the rank (`_BOUND`): an axis 2 of a Conv1d output is its last
    """
    class E(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(4, 4, 3)
        def forward(self, x):
            y = torch.tanh(self.conv(x))
            return torch.softmax(y, dim=2)
    """,
    # einsum, branches and a loop: no reading asks
    """
    class F2(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        def forward(self, q, k, flag: bool = False):
            s = torch.einsum("bhid,bhjd->bhij", q, k)
            if flag:
                s = s * 2
            else:
                s = s.softmax(-1)
            for layer in self.layers:
                q = layer(q)
            return s, q
    """,
    # an einsum whose operands' ranks are then read (`transpose(1, 2)` of its product)
    """
    class G(nn.Module):
        def forward(self, q, k):
            s = torch.einsum("bhid,bhjd->bhij", q, k)
            return s.transpose(1, 2)
    """,
)


@pytest.mark.pure_python
@pytest.mark.parametrize("source", _SOURCES + tuple(
    p.read_text() for p in sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))))
def test_untracked_first_is_the_tracked_pass(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    real = normalise.canonical_forward

    def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(normalise, "canonical_forward", recorded)
    import adopter.analysis.analyser as analyser
    import adopter.analysis.idioms.submodules as submodules
    monkeypatch.setattr(analyser, "canonical_forward", recorded)
    monkeypatch.setattr(submodules, "canonical_forward", recorded)
    mf = analyse(HEADER + textwrap.dedent(source), None)
    assert calls
    for args, kwargs in calls:
        first = real(*args, **kwargs)
        tracked = real(*args, **kwargs, untracked_first=False)
        assert first == tracked
        assert [(op, op.origin) for op in block_ops(first.body)] == [  # the origins too (not part of equality)
            (op, op.origin) for op in block_ops(tracked.body)]
    assert UNTRACKED == {}
    for a in mf.architectures:
        format_architecture(a)


def test_the_readings_change_these_forwards() -> None:
    """Each fixture above where a reading acts is one the ranks change: without them, another canonical form."""
    texts = {name: format_architecture(a) for source in _SOURCES[:5]
             for a in analyse(HEADER + textwrap.dedent(source), None).architectures for name in (a.name,)}
    assert "transpose(%" in texts["A"] and "-3, -2" in texts["A"]
    assert texts["B"].count("dim=-1") == 2 and "softmax(%4, dim=-3)" in texts["B"]
    assert "rsqrt" in texts["C"] and "pow(%2, -0.5)" in texts["C"]  # `n + 1` is a number: rank 0
    assert "ones_like" in texts["D"]
    assert "dim=-1" in texts["E"]
