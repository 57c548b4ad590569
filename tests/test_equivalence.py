"""The equivalence harness (`tests/equivalence.py`) tells a rewrite that computes the same from one that breaks
outputs, gradients only, or running statistics only (a copy of a module against itself, then against a
copy broken in one of those ways)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from equivalence import compare_modules, trained_statistics  # noqa: E402

pytestmark = pytest.mark.torch


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).double()
    trained_statistics(model)
    return model


def _inputs() -> tuple[torch.Tensor]:
    return (torch.randn(2, 3, 6, 6, dtype=torch.float64),)


def test_a_copy_is_equivalent_at_the_strictest_tolerances() -> None:
    original = _model()
    compare_modules(original, copy.deepcopy(original), _inputs, atol=1e-12, rtol=0, grad_atol=1e-12,
                    buffer_atol=0, buffer_rtol=0, same_parameters=True, round_trip=True)


def _negated(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], out: torch.Tensor) -> torch.Tensor:
    return -out


def _gradients_scaled(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], out: torch.Tensor) -> torch.Tensor:
    return out.detach() + 1.001 * (out - out.detach())  # same values, gradients x1.001


@pytest.mark.parametrize("hook", [_negated, _gradients_scaled], ids=["outputs", "gradients-only"])
def test_a_broken_forward_fails(hook: object) -> None:
    original = _model()
    broken = copy.deepcopy(original)
    broken.register_forward_hook(hook)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        compare_modules(original, broken, _inputs, atol=1e-9, rtol=1e-6, grad_atol=1e-9)


def test_other_running_statistics_fail() -> None:
    original = _model()
    broken = copy.deepcopy(original)
    broken[1].momentum = 0.11  # the same outputs and gradients; training moves the statistics elsewhere
    compare_modules(original, copy.deepcopy(original), _inputs, modes=(False, True))
    with pytest.raises(AssertionError, match="running_mean"):
        compare_modules(original, broken, _inputs, modes=(False, True))
