"""A module of the file that wraps one `nn.Linear` and applies it once to its input, with only elementwise work
around it, is read as `nn.Linear` (`adopter.analysis.idioms.linear_like`): transformers' Gemma 4 vision and
audio layers (`Gemma4ClippableLinear`: optional clamps around `self.linear`, ported to timm) and litgpt's adapter
v2 (`AdapterV2Linear`: `scale * (self.linear(x) + bias)`) build their gated MLPs, Linear→GELU MLPs and q/k/v
projections from such modules, which no rule read. Their sites are reported without an automatic fix."""

from __future__ import annotations

import pytest

from adopter.analysis.idioms.linear_like import LINEAR_LIKE
from adopter.dsl.types import Ctor
from adopter.engine import Environment, check, load_rules

from .helpers import arch, module, reanalysed_after

# the two wrapper shapes, written small, and the three families' users
WRAPPERS = """
class ClippableLinear(nn.Module):
    def __init__(self, config, in_features, out_features):
        super().__init__()
        self.use_clip = config.use_clip
        self.linear = nn.Linear(in_features, out_features, bias=False)
        if self.use_clip:
            self.input_min = nn.Buffer(torch.tensor(-float("inf")))
            self.output_max = nn.Buffer(torch.tensor(float("inf")))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.use_clip:
            hidden_states = torch.clamp(hidden_states, min=self.input_min)
        hidden_states = self.linear(hidden_states)
        if self.use_clip:
            hidden_states = hidden_states.clamp(max=self.output_max)
        return hidden_states


class AdapterLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, **kwargs):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features, **kwargs)
        self.adapter_bias = torch.nn.Parameter(torch.zeros(out_features))
        self.adapter_scale = torch.nn.Parameter(torch.ones(out_features))

    def forward(self, x):
        return self.adapter_scale * (self.linear(x) + self.adapter_bias)
"""

USERS = """
class GatedMLP(nn.Module):
    def __init__(self, config, d, h):
        super().__init__()
        self.gate_proj = {cls}
        self.up_proj = {cls}
        self.down_proj = nn.Linear(h, d)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Mlp(nn.Module):
    def __init__(self, config, d, h):
        super().__init__()
        self.fc = {cls}
        self.proj = nn.Linear(h, d)

    def forward(self, x):
        x = self.fc(x)
        x = F.gelu(x)
        return self.proj(x)


class Attention(nn.Module):
    def __init__(self, config, d, h):
        super().__init__()
        self.q_proj = {cls}
        self.k_proj = {cls}
        self.v_proj = {cls}

    def forward(self, x):
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        return F.scaled_dot_product_attention(q, k, v)
"""

CLIPPED = "ClippableLinear(config, d, h)"
ADAPTER = "AdapterLinear(d, h, bias=False)"
LINEAR = "nn.Linear(d, h)"


def _findings(source: str) -> dict[str, tuple[bool, str | None]]:
    mf = module(source)
    env = Environment("cuda", frozenset(), "2.13.0")
    found = check(mf, load_rules().rules, env).findings
    return {f"{f.rule_id}@{f.scope_name}": (f.fixable, f.no_fix_reason) for f in found if f.family in (6, 9, 14)}


def _binding(source: str, cls: str, attr: str) -> Ctor:
    net = arch(source, cls)
    assert net.init is not None
    (value,) = [b.value for b in net.init.bindings if b.attr == attr]
    assert isinstance(value, Ctor)
    return value


@pytest.mark.parametrize(("ctor", "name"), [(CLIPPED, "ClippableLinear"), (ADAPTER, "AdapterLinear")])
def test_a_linear_like_module_is_bound_as_linear(ctor: str, name: str) -> None:
    value = _binding(WRAPPERS + USERS.format(cls=ctor), "GatedMLP", "gate_proj")
    assert value.callee == "torch.nn.Linear" and value.args == () and value.kwargs == ()
    assert (value.origin or "").startswith(name) and (value.origin or "").endswith(LINEAR_LIKE + ")")


@pytest.mark.parametrize("ctor", [CLIPPED, ADAPTER])
def test_families_14_6_and_9_are_found_over_linear_like_modules_without_a_fix(ctor: str) -> None:
    found = _findings(WRAPPERS + USERS.format(cls=ctor))
    assert set(found) == {"f14-swiglu@GatedMLP", "f06-linear-gelu@Mlp", "f09-fused-qkv@Attention"}
    name = ctor.split("(")[0]
    for fixable, reason in found.values():
        assert not fixable and reason is not None and f"`{name}`" in reason and "wraps one nn.Linear" in reason


def test_with_nn_linear_in_their_place_the_same_sites_are_fixable() -> None:
    found = _findings(WRAPPERS + USERS.format(cls=LINEAR))
    assert set(found) == {"f14-swiglu@GatedMLP", "f06-linear-gelu@Mlp", "f09-fused-qkv@Attention"}
    assert all(fixable for fixable, _ in found.values())


# Each is not one Linear applied once with elementwise work around it.
REFUSED = {
    "Convolves": ("self.conv = nn.Conv1d(d, d, 3)", "return self.conv(self.linear(x) * 2)"),
    "Attends": ("", "y = self.linear(x) * 2\n        return torch.softmax(y, -1) @ y"),
    "LoraBranch": ("self.lora_a = nn.Linear(d, 4)\n        self.lora_b = nn.Linear(4, h)",
                   "return self.linear(x) * 2 + self.lora_b(self.lora_a(x))"),
    "LoraMatmul": ("self.lora_a = nn.Parameter(torch.zeros(d, 4))",
                   "return self.linear(x) * 2 + x @ self.lora_a"),
    "Twice": ("", "return self.linear(self.linear(x) * 2)"),
    "Residual": ("", "return self.linear(x) * 2 + x"),
    "Conditional": ("", "if self.training:\n            x = self.linear(x)\n        return x * 2"),
    "Reshaped": ("", "return self.linear(x).view(-1, 2) * 2"),
    "InputBound": ("", "return torch.clamp(self.linear(x), min=x.min())"),
    "OtherInput": ("", "return self.linear(self.other) * 2"),
    "ChainOnly": ("", "return self.linear(x)"),
}


def _refused(name: str) -> str:
    extra, body = REFUSED[name]
    init = f"        {extra}\n" if extra else ""
    return (f"\nclass {name}(nn.Module):\n    def __init__(self, d, h):\n        super().__init__()\n"
            f"        self.linear = nn.Linear(d, h)\n{init}        self.other = None\n\n"
            f"    def forward(self, x):\n        {body}\n")


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_modules_that_are_not_one_linear_applied_once_stay_as_written(name: str) -> None:
    source = _refused(name) + USERS.format(cls=f"{name}(d, h)")
    assert _binding(source, "GatedMLP", "gate_proj").callee != "torch.nn.Linear" or name == "ChainOnly"
    found = _findings(source)
    if name == "ChainOnly":
        # a forward that only applies the Linear is read through where it is called, as before: not LINEAR_LIKE
        assert all(reason is None or "wraps one nn.Linear" not in reason for _, reason in found.values())
    else:
        assert "f14-swiglu@GatedMLP" not in found and "f09-fused-qkv@Attention" not in found


@pytest.mark.parametrize(("init", "why"), [
    ("if d > 0:\n            self.linear = nn.Linear(d, h)", "bound under a condition"),
    ("self.linear = nn.Linear(d, h)\n        self.linear = nn.Linear(h, h)", "bound twice"),
    ("self.linear = nn.Conv1d(d, h, 1)", "not an nn.Linear"),
])
def test_the_layer_must_be_one_nn_linear_bound_once(init: str, why: str) -> None:
    wrapper = (f"\nclass Wrapped(nn.Module):\n    def __init__(self, d, h):\n        super().__init__()\n        {init}\n\n"
               "    def forward(self, x):\n        return self.linear(x) * 2\n")
    assert _binding(wrapper + USERS.format(cls="Wrapped(d, h)"), "GatedMLP", "gate_proj").callee == "Wrapped", why


def test_a_subclass_of_another_base_is_not_read() -> None:
    wrapper = WRAPPERS.replace("class AdapterLinear(torch.nn.Module)", "class AdapterLinear(Base)")
    source = "\nclass Base(nn.Identity):\n    pass\n" + wrapper + USERS.format(cls=ADAPTER)
    assert _binding(source, "GatedMLP", "gate_proj").callee != "torch.nn.Linear"


def test_a_user_depends_on_whether_the_forward_is_linear_like_not_its_text() -> None:
    source = WRAPPERS + USERS.format(cls=ADAPTER)
    old = "        return self.adapter_scale * (self.linear(x) + self.adapter_bias)"
    units, same = reanalysed_after(source, old, "return self.adapter_scale * (self.linear(x) - self.adapter_bias)")
    assert "class AdapterLinear" in units and "class GatedMLP" not in units and same
    units, same = reanalysed_after(source, old, "return self.linear(x) + x")
    assert "class AdapterLinear" in units and "class GatedMLP" in units and same
