"""A softmax at a positive axis of a parameter the module holds, by the rank `__init__` builds it with (helper
`mech108`, family 4): `self.w = nn.Parameter(torch.ones(len(inputs)))` is 1-D, so `torch.softmax(self.w, dim=0)` is
over its last axis (`adopter.analysis.canonical.held_ranks`).

The f04 finding is information only on CPU; with the `liger` target (CUDA, `liger_kernel` importable) the call
becomes `liger_softmax(x)`, the softmax over the last axis. That rewrite is checked here against the original with a
stand-in for Liger's kernel that computes what Liger defines it to (`torch.softmax(x, -1)`): outputs, input and
parameter gradients, float64 on CPU (`adopter.verify.compare` tolerances for float64), eval and train mode, seeds 0
and 1.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from adopter.engine import Environment  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f04-softmax")
LIGER = Environment(device="cuda", packages=frozenset({"liger_kernel"}), torch_version="2.13.0")


def _sites(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES)]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


# effdet 0.4.1 effdet/efficientdet.py:285-299 (FpnCombine; birder 0.8.4 net/detection/efficientdet.py:288-303 is
# the same code): the fusion weights, one per input, a parameter for the attention-weighted fusion and None
# otherwise; the softmax of the 1-D parameter over dim 0 is over its last axis.
FUSION_WEIGHTS = """
import torch
from torch import nn


class WeightedFusion(nn.Module):
    def __init__(self, offsets, weight_method="attn"):
        super().__init__()
        self.offsets = offsets
        self.weight_method = weight_method
        if weight_method == "attn":
            self.edge_weights = nn.Parameter(torch.ones(len(offsets)), requires_grad=True)
        else:
            self.edge_weights = None

    def forward(self, x):
        dtype = x[0].dtype
        nodes = [x[i] for i in self.offsets]
        if self.weight_method == "attn":
            normalized = torch.softmax(self.edge_weights.to(dtype=dtype), dim=0)
            out = torch.stack(nodes, dim=-1) * normalized
        else:
            out = torch.stack(nodes, dim=-1)
        return torch.sum(out, dim=-1)
"""

# transformers 4.46.3 models/esm/modeling_esmfold.py:2040, 2148 (EsmForProteinFolding; also esmfold2's
# `layer_weights` in later versions): one weight per language-model layer plus the embeddings, a 1-D parameter
# whose size is a sum with an integer literal; the method's softmax(0) is over its last axis.
LAYER_MIX = """
import torch
from torch import nn


class LayerMix(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers
        self.combine = nn.Parameter(torch.zeros(self.layers + 1))

    def forward(self, states):
        mixed = (self.combine.softmax(0).unsqueeze(0) @ states).squeeze(2)
        return mixed
"""

# super-image 0.1.7 models/smsr/modeling_smsr.py:59, 76: a channel mask held as a 4-D parameter of sizes written one
# by one, its softmax over dim 3 (there in a preparation method; here in the forward).
CHANNEL_MASK = """
import torch
from torch import nn


class ChannelMask(nn.Module):
    def __init__(self, channels, layers):
        super().__init__()
        self.ch_mask = nn.Parameter(torch.rand(1, channels, layers, 2))

    def forward(self, x):
        mask = self.ch_mask.softmax(3)
        return x * mask[..., 1].sum()
"""


@pytest.mark.parametrize("source, text", [(FUSION_WEIGHTS, "torch.softmax"), (LAYER_MIX, "softmax(0)"),
                                          (CHANNEL_MASK, "softmax(3)")],
                         ids=["one-per-input", "layers-plus-one", "four-sizes"])
def test_a_softmax_over_the_last_axis_of_a_held_parameter_is_family_4(source: str, text: str) -> None:
    assert _sites(source) == [_line(source, text)]


# -- near forms: the rank is not known, or the axis is known not to be the last --------------------------------

# rec-pangu 0.4.1 models/multi_task/omoe.py:42, 80: the gate is (experts, 1) and its softmax runs over dim 0, the
# experts: not the last axis.
GATE_COLUMN = """
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, experts):
        super().__init__()
        self.gate = torch.nn.Parameter(torch.rand(experts, 1), requires_grad=True)

    def forward(self, outputs):
        gate = nn.Softmax(dim=0)(self.gate)
        return (outputs * gate).sum(0)
"""
# diffusers (fresh6) condition_embedder_minimax_music3.py:44, 61: one size held in a name; a name may hold a whole
# shape, so the rank is not known (never guessed from the name).
SIZE_IN_A_NAME = LAYER_MIX.replace("torch.zeros(self.layers + 1)", "torch.zeros(layers)")
# videoseal losses/watson_fft.py:59, 216: a second binding from a computed tensor, whose rank is not written.
SECOND_BINDING = FUSION_WEIGHTS.replace("""        else:
            self.edge_weights = None""", """        else:
            self.edge_weights = nn.Parameter(torch.log(offsets))""")
# normflows 1.7.3 distributions/base.py:610, 618: a parameter from data, its rank not written.
FROM_DATA = LAYER_MIX.replace("torch.zeros(self.layers + 1)", "torch.tensor(layers)")
# A parameter built again in the forward (a lazy build, here 3-D): torch lets the slot take only a parameter, and
# the store leaves no op behind, so no held rank is trusted in that forward.
REBOUND = LAYER_MIX.replace("        mixed = (self.combine.softmax(0)",
                            "        self.combine = nn.Parameter(states.new_zeros(1, 4, 1))\n"
                            "        mixed = (self.combine.softmax(0)")
# Two sizes: dim 0 of a 2-D parameter is its first axis.
TWO_SIZES = LAYER_MIX.replace("torch.zeros(self.layers + 1)", "torch.zeros(self.layers + 1, 4)")


@pytest.mark.parametrize("source", [GATE_COLUMN, SIZE_IN_A_NAME, SECOND_BINDING, FROM_DATA, REBOUND, TWO_SIZES],
                         ids=["first-of-two-axes", "size-in-a-name", "second-binding", "from-data", "rebound",
                              "two-sizes"])
def test_a_softmax_not_known_to_be_over_the_last_axis_is_not_reported(source: str) -> None:
    assert _sites(source) == []


# -- the liger rewrite of the new sites computes what the original does -------------------------------------------

@pytest.fixture
def liger_stand_in() -> Iterator[None]:
    """`liger_kernel.transformers.functional.liger_softmax` as Liger defines it (the softmax over the last axis),
    so that the rewritten module runs on CPU."""
    names = ("liger_kernel", "liger_kernel.transformers", "liger_kernel.transformers.functional")
    saved = {n: sys.modules.get(n) for n in names}
    modules = [types.ModuleType(n) for n in names]
    modules[2].liger_softmax = lambda x: torch.softmax(x, dim=-1)  # type: ignore[attr-defined]
    sys.modules.update(zip(names, modules))
    try:
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def _equivalent(source: str, new: str, cls: str, make: object, inputs: object) -> None:
    from adopter.verify.compare import compare

    torch.manual_seed(0)
    original = make(load(source, "orig")[cls]).double()  # type: ignore[operator]
    rewritten = make(load(new, "new")[cls]).double()  # type: ignore[operator]
    with torch.no_grad():  # weights that differ from one another, so the softmax is not uniform
        for p in original.parameters():
            p.copy_(torch.randn_like(p))
    rewritten.load_state_dict(original.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, (inputs(), {}), seed=seed, dtype=torch.float64)  # type: ignore[operator]
            assert result.equivalent, (train, seed, result)


@pytest.mark.usefixtures("liger_stand_in")
def test_the_liger_rewrite_of_the_fusion_weights_is_equivalent() -> None:
    new = fixed(FUSION_WEIGHTS, RULES, applied=1, env=LIGER)
    assert "normalized = liger_softmax(self.edge_weights.to(dtype=dtype))" in new, new
    _equivalent(FUSION_WEIGHTS, new, "WeightedFusion", lambda cls: cls([0, 2, 1]),
                lambda: ([torch.randn(2, 3, 4, dtype=torch.float64) for _ in range(3)],))


@pytest.mark.usefixtures("liger_stand_in")
def test_the_liger_rewrite_of_the_layer_mix_is_equivalent() -> None:
    new = fixed(LAYER_MIX, RULES, applied=1, env=LIGER)
    assert "liger_softmax(self.combine)" in new, new
    _equivalent(LAYER_MIX, new, "LayerMix", lambda cls: cls(3),
                lambda: (torch.randn(2, 5, 4, 6, dtype=torch.float64),))
