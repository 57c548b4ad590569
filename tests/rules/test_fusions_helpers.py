"""The helper functions the fusion strategies add to user files, checked on their own (CPU, float32).

Each helper is exec'd from the strategy's template the way a rewritten file defines it, and compared
against the modules it replaces over the corner cases the rewrites meet (bias/affine present or not,
padding modes, grouped convolutions, 2-D vs 3-D BatchNorm1d input, every GELU spelling).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from adopter.synth.strategies import checkpoint_hooks, fusions_act, fusions_bn, fusions_norm  # noqa: E402

pytestmark = pytest.mark.torch
REPO = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO / "bench"))  # bench/tf435.py: where transformers 4.35.0 is, and whether it loads
from tf435 import TF435, unusable_reason  # noqa: E402


def helper(template: str, name: str, **subs: str) -> Any:
    code = template
    for key, value in {"F": "torch.nn.functional", "torch": "torch", **subs}.items():
        code = code.replace("{" + key + "}", value)
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(code, f"<{name}>", "exec"), namespace)
    return namespace[name]


def conv_bn_helper() -> Any:
    template = fusions_bn._CONV_BN.replace("{FOLD}", fusions_bn._FOLD_SCALE_SHIFT.strip("\n"))
    return helper(template, "folded_conv_bn")


def linear_bn_helper() -> Any:
    template = fusions_bn._LINEAR_BN.replace("{FOLD}", fusions_bn._FOLD_SCALE_SHIFT.strip("\n"))
    return helper(template, "folded_linear_bn")


def _stats(bn: Any) -> None:
    with torch.no_grad():
        bn.running_mean.normal_(0, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
        if bn.weight is not None:
            bn.weight.normal_(1, 0.3)
            bn.bias.normal_(0, 0.3)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("conv_kwargs", [
    {"padding": 1}, {"padding": 1, "padding_mode": "reflect"}, {"padding": 2, "dilation": 2, "groups": 2},
    {"stride": 2},
])
def test_folded_conv_bn_matches_modules_in_eval(bias: bool, affine: bool, conv_kwargs: dict[str, Any]) -> None:
    fold = conv_bn_helper()
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(4, 6, 3, bias=bias, **conv_kwargs).eval()
    bn = torch.nn.BatchNorm2d(6, affine=affine).eval()
    _stats(bn)
    x = torch.randn(2, 4, 11, 11, requires_grad=True)
    expected = bn(conv(x))
    got = fold(x, conv, bn)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    g = torch.randn_like(expected)
    want = torch.autograd.grad(expected, [x, conv.weight], g)
    have = torch.autograd.grad(got, [x, conv.weight], g)
    for a, b in zip(want, have):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)


def test_folded_conv_bn_trains_like_modules() -> None:
    fold = conv_bn_helper()
    torch.manual_seed(0)
    conv_a, bn_a = torch.nn.Conv2d(3, 5, 3), torch.nn.BatchNorm2d(5)
    conv_b, bn_b = torch.nn.Conv2d(3, 5, 3), torch.nn.BatchNorm2d(5)
    conv_b.load_state_dict(conv_a.state_dict())
    bn_b.load_state_dict(bn_a.state_dict())
    x = torch.randn(4, 3, 8, 8)
    torch.testing.assert_close(fold(x, conv_b, bn_b), bn_a(conv_a(x)))
    torch.testing.assert_close(bn_b.running_mean, bn_a.running_mean)
    assert int(bn_b.num_batches_tracked) == 1


def test_folded_conv_bn_without_running_stats_uses_batch_statistics() -> None:
    fold = conv_bn_helper()
    conv, bn = torch.nn.Conv2d(3, 5, 1).eval(), torch.nn.BatchNorm2d(5, track_running_stats=False).eval()
    x = torch.randn(4, 3, 6, 6)
    torch.testing.assert_close(fold(x, conv, bn), bn(conv(x)))


@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("training", [False, True])
def test_folded_linear_bn(three_d: bool, training: bool) -> None:
    fold = linear_bn_helper()
    torch.manual_seed(0)
    if three_d:
        # BatchNorm1d on (N, C, L) normalises dim 1, not the Linear's features: no folding then.
        x, linear, bn = torch.randn(3, 4, 6), torch.nn.Linear(6, 6), torch.nn.BatchNorm1d(4)
    else:
        x, linear, bn = torch.randn(7, 6), torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5)
    _stats(bn)
    linear.train(training)
    bn.train(training)
    x.requires_grad_(True)
    expected = bn(linear(x))
    got = fold(x, linear, bn)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    g = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(expected, [x, linear.weight], g), torch.autograd.grad(got, [x, linear.weight], g)):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)


def _gelus() -> list[tuple[str, Any, bool]]:
    """(label, activation, expected to take the fused path)."""
    acts: list[tuple[str, Any, bool]] = [
        ("nn.GELU", torch.nn.GELU(), True),
        ("nn.GELU-tanh", torch.nn.GELU(approximate="tanh"), True),
        ("F.gelu", torch.nn.functional.gelu, True),
        ("nn.ReLU", torch.nn.ReLU(), False),
        ("nn.SiLU", torch.nn.SiLU(), False),
    ]
    return acts


@pytest.mark.parametrize(("label", "act", "fused"), _gelus(), ids=[a[0] for a in _gelus()])
def test_fused_linear_gelu_matches_for_every_activation(label: str, act: Any, fused: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fn = helper(fusions_act._LINEAR_GELU, "fused_linear_gelu")
    torch.manual_seed(0)
    linear = torch.nn.Linear(8, 16)
    calls: list[int] = []
    linear.register_forward_hook(lambda *_: calls.append(1))
    x = torch.randn(2, 3, 8, requires_grad=True)
    expected = act(linear(x))
    calls.clear()
    got = fn(x, linear, act)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
    assert (not calls) == fused, f"{label}: fused path taken={not calls}"


@pytest.mark.parametrize("name", ["gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "quick_gelu",
                                  "relu", "silu", "tanh"])
def test_fused_linear_gelu_with_transformers_activations(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if (reason := unusable_reason()) is not None:
        pytest.skip(reason)
    monkeypatch.syspath_prepend(str(TF435))
    from transformers.activations import ACT2FN

    fn = helper(fusions_act._LINEAR_GELU, "fused_linear_gelu")
    torch.manual_seed(0)
    linear, act = torch.nn.Linear(8, 16), ACT2FN[name]
    x = torch.randn(4, 8, requires_grad=True)
    expected = act(linear(x))
    calls: list[int] = []
    linear.register_forward_hook(lambda *_: calls.append(1))
    got = fn(x, linear, act)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    # Every GELU spelling takes the fused path; other activations run the original modules.
    assert (not calls) == name.startswith("gelu"), calls
    g = torch.randn_like(got)
    for a, b in zip(torch.autograd.grad(expected, [x, linear.weight, linear.bias], g),
                    torch.autograd.grad(got, [x, linear.weight, linear.bias], g)):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("training", [False, True])
def test_fused_dropout_add_layer_norm(training: bool) -> None:
    fn = helper(fusions_norm._DROPOUT_ADD_LAYER_NORM, "fused_dropout_add_layer_norm")
    norm, drop = torch.nn.LayerNorm(16), torch.nn.Dropout(0.4)
    with torch.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    x, r = torch.randn(3, 16), torch.randn(3, 16)
    torch.manual_seed(5)
    expected = norm(drop.train(training)(x) + r)
    torch.manual_seed(5)
    got = fn(x, r, norm, drop.p, drop.training)
    torch.testing.assert_close(got, expected)


def test_checkpoint_hooks_keep_the_separate_format_both_ways() -> None:
    keep = helper(checkpoint_hooks.CHECKPOINT_HOOKS, "keep_separate_checkpoints")

    class Fused(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate_up = torch.nn.Linear(4, 10)
            keep(self, "gate_up", ("gate", "up"))

    class Separate(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate = torch.nn.Linear(4, 5)
            self.up = torch.nn.Linear(4, 5)

    old, new = torch.nn.Sequential(Separate()), torch.nn.Sequential(Fused())
    new.load_state_dict(old.state_dict(), strict=True)
    torch.testing.assert_close(new[0].gate_up.weight[:5], old[0].gate.weight)
    torch.testing.assert_close(new[0].gate_up.bias[5:], old[0].up.bias)
    # The fused module saves in the original format: old code loads it, and so does the fused module.
    assert set(new.state_dict()) == set(old.state_dict())
    fresh = torch.nn.Sequential(Separate())
    fresh.load_state_dict(new.state_dict(), strict=True)
    torch.testing.assert_close(fresh[0].up.weight, old[0].up.weight)
    new.load_state_dict(new.state_dict(), strict=True)
