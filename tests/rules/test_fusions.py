"""Fusion rules (families 5-8, 11-14, 17): every rewrite computes what the original computed.

For each case: analyse the source, find the rule's sites, rewrite them, exec the original and the
rewritten source in fresh namespaces, build both modules, load the original's `state_dict` into the
rewritten one with `strict=True`, and compare outputs, input gradients and parameter gradients (and
BatchNorm running statistics in training) on random inputs with fixed seeds. Then: fixing the
rewritten source again changes nothing, and no finding of the rule is left in the fixed class.
Tolerances are stated per case (float32 on CPU).
"""

from __future__ import annotations

import functools
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.dsl import parse_rules  # noqa: E402
from adopter.dsl.types import Rule  # noqa: E402
from adopter.engine import Environment, find  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO / "bench"))  # bench/tf435.py: where transformers 4.35.0 is, and whether it loads
from tf435 import TF435, unusable_reason  # noqa: E402

sys.path.append(str(Path(__file__).resolve().parent))
from real_sources import (  # noqa: E402
    LITGPT_MLPS,
    MAX_VIT_MBCONV,
    OPEN_CLIP_BOTTLENECK,
    TIMM_SWIGLU,
    TORCHVISION_RESNET,
    ULTRALYTICS_TRANSFORMER_LAYER,
)

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")
# Rules offered on CUDA only (f06) are synthesized for a CUDA environment; the tests still run on CPU.
CUDA = Environment(device="cuda", packages=frozenset(), torch_version="2.13.0")


def rules_of(stem: str) -> tuple[Rule, ...]:
    path = REPO / "rules" / f"{stem}.adl"
    return tuple(parse_rules(path.read_text(encoding="utf-8"), str(path)))


def fix(source: str, rules: tuple[Rule, ...]) -> tuple[str | None, int, tuple[str, ...]]:
    """(rewritten source or None, number of findings, reasons of skipped findings)."""
    env = CPU if any(CPU.offers(t) for r in rules for t in r.targets) else CUDA
    findings = find(analyse(source), rules, env)
    if not findings:
        return None, 0, ()
    result = rewrite(source, findings, rules=rules, env=env)
    reasons = tuple(s.reason for s in getattr(result, "skipped", ()))
    if isinstance(result, Rewritten):
        return result.new_source, len(findings), reasons
    return None, len(findings), (*reasons, getattr(result, "reason", ""))


def load(source: str, name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"fusion_case_{name}"}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace


@dataclass
class Case:
    id: str
    rule: str  # the rule file stem
    source: str
    cls: str
    args: tuple[Any, ...]
    inputs: Callable[[], tuple[Any, ...]]
    modes: tuple[bool, ...] = (True, False)  # training flags to compare in
    atol: float = 1e-6
    rtol: float = 1e-5
    sites: int = 1
    needs_transformers: bool = False
    skips: int = 0  # findings the fix declines (each with its reason)
    extra: dict[str, Any] = field(default_factory=dict)


def randn(*shape: int) -> Callable[[], tuple[Any, ...]]:
    return lambda: (torch.randn(*shape),)


BERT_OUTPUT = """
import torch
from torch import nn


class BertSelfOutput(nn.Module):
    def __init__(self, hidden_size, dropout):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states
"""

RESIDUAL_FIRST = """
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(p)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        h = self.drop(self.proj(x))
        s = x + h
        return self.norm(s)
"""

FUNCTIONAL_DROPOUT = """
import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, dim, dropout):
        super().__init__()
        self.dropout = dropout
        self.dense = nn.Linear(dim, dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.dense(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states
"""

# XLM's encoder: the LayerNorm is an element of a ModuleList picked by the loop index.
MODULE_LIST = """
import torch
from torch import nn


class Transformer(nn.Module):
    def __init__(self, dim, dropout):
        super().__init__()
        self.dropout = dropout
        self.n_layers = 2
        self.attentions = nn.ModuleList([nn.Linear(dim, dim) for _ in range(2)])
        self.layer_norm1 = nn.ModuleList([nn.LayerNorm(dim) for _ in range(2)])

    def forward(self, tensor):
        for i in range(self.n_layers):
            attn = self.attentions[i](tensor)
            attn = nn.functional.dropout(attn, p=self.dropout, training=self.training)
            tensor = tensor + attn
            tensor = self.layer_norm1[i](tensor)
        return tensor
"""

GELU_MLP = """
import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim, hidden, approximate):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate=approximate)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
"""

ACT2FN_INTERMEDIATE = """
from torch import nn

from transformers.activations import ACT2FN


class Intermediate(nn.Module):
    def __init__(self, hidden_size, intermediate_size, hidden_act):
        super().__init__()
        self.dense = nn.Linear(hidden_size, intermediate_size)
        if isinstance(hidden_act, str):
            self.intermediate_act_fn = ACT2FN[hidden_act]
        else:
            self.intermediate_act_fn = hidden_act

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.intermediate_act_fn(hidden_states)
        return hidden_states
"""

CONV_BN = """
import torch
from torch import nn


class ConvLayer(nn.Module):
    def __init__(self, cin, cout, bias, affine, padding_mode):
        super().__init__()
        self.convolution = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=bias, padding_mode=padding_mode)
        self.normalization = nn.BatchNorm2d(cout, affine=affine)
        self.activation = nn.ReLU()

    def forward(self, input):
        hidden_state = self.convolution(input)
        hidden_state = self.normalization(hidden_state)
        hidden_state = self.activation(hidden_state)
        return hidden_state


class Stem(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.bn2 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(x)))
"""

# torchvision's ResNet Bottleneck (torchvision/models/resnet.py): the norm is a constructor argument, and
# `norm_layer=` may be any norm (a GroupNorm has no running statistics: the fold must not run on it).
BOTTLENECK = """
from typing import Callable, Optional

from torch import Tensor, nn


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class Bottleneck(nn.Module):
    expansion: int = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: Optional[nn.Module] = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)

        out = self.conv3(out)
        out = self.bn3(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out
"""

# A norm passed in may be anything that takes the width: the fold runs only on a BatchNorm1d.
LINEAR_NORM = """
from torch import nn


class ProjectionHead(nn.Module):
    def __init__(self, in_dim, out_dim, norm_layer=nn.BatchNorm1d):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.norm = norm_layer(out_dim)

    def forward(self, features):
        return self.norm(self.linear(features))
"""

LINEAR_BN = """
from torch import nn


class ProjectionHead(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.batch_norm = nn.BatchNorm1d(out_dim)
        self.activation = nn.ReLU()

    def forward(self, features):
        hidden = self.linear(features)
        hidden = self.batch_norm(hidden)
        return self.activation(hidden)
"""

DEBERTA_LN = """
import torch
from torch import nn


class DebertaLayerNorm(nn.Module):
    def __init__(self, size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(size))
        self.bias = nn.Parameter(torch.randn(size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_type = hidden_states.dtype
        hidden_states = hidden_states.float()
        mean = hidden_states.mean(-1, keepdim=True)
        variance = (hidden_states - mean).pow(2).mean(-1, keepdim=True)
        hidden_states = (hidden_states - mean) / torch.sqrt(variance + self.variance_epsilon)
        hidden_states = hidden_states.to(input_type)
        y = self.weight * hidden_states + self.bias
        return y
"""

RSQRT_LN = """
import torch
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        x = (x - mu) * torch.rsqrt(var + self.eps)
        return self.gamma * x
"""

RMS_NORMS = """
import torch
from torch import nn


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states
"""

GATED_MLP = """
import torch
from torch import nn


class MistralMLP(nn.Module):
    def __init__(self, hidden_size, intermediate_size, bias):
        super().__init__()
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=bias)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=bias)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
"""

# The Llama reference form: the activation a function call, not a submodule (the helper is handed `F.silu`).
GATED_MLP_FUNCTIONAL = """
import torch.nn.functional as F
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
"""

# Up projection first, on the left of the product, GELU spelled through `torch.nn.functional`.
GATED_MLP_UP_FIRST = """
import torch
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.gate = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        up = self.up(x)
        return self.down(up * torch.nn.functional.gelu(self.gate(x)))
"""

GELU_FORMULAS = """
import math

import torch
from torch import nn


def gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def bloom_gelu_forward(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class EsmIntermediate(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.dense = nn.Linear(hidden, intermediate)

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = gelu(hidden_states)
        return hidden_states


class BloomGelu(nn.Module):
    def forward(self, hidden_states):
        return bloom_gelu_forward(hidden_states)


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))
"""

# A pair in a Sequential nested in another, and one built by `Sequential` imported by name: the inner
# construction is the one rewritten (the outer keeps `nn.Sequential`).
NESTED_SEQUENTIAL = """
from torch import nn
from torch.nn import BatchNorm2d, Conv2d, ReLU, Sequential


class Nested(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)), nn.ReLU())
        self.head = Sequential(Conv2d(c, c, 1), BatchNorm2d(c), ReLU())

    def forward(self, x):
        h = self.body(x)
        return self.head(h)
"""

SMALL_RESNET = """

def small_resnet(norm_layer=None):
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10, norm_layer=norm_layer)
"""

MBCONV = """

def mbconv(dim_in, dim_out, downsample):
    return MBConv(dim_in, dim_out, downsample=downsample)
"""


CASES = [
    Case("bert-output", "f05-dropout-add-layernorm", BERT_OUTPUT, "BertSelfOutput", (16, 0.3),
         lambda: (torch.randn(2, 5, 16), torch.randn(2, 5, 16))),
    Case("residual-first", "f05-dropout-add-layernorm", RESIDUAL_FIRST, "Block", (16, 0.2), randn(3, 16)),
    Case("functional-dropout", "f05-dropout-add-layernorm", FUNCTIONAL_DROPOUT, "EncoderLayer", (16, 0.2),
         randn(2, 3, 16)),
    Case("module-list-element", "f05-dropout-add-layernorm", MODULE_LIST, "Transformer", (16, 0.2),
         randn(2, 3, 16)),
    Case("gelu-exact", "f06-linear-gelu", GELU_MLP, "Mlp", (8, 32, "none"), randn(2, 3, 8)),
    Case("gelu-tanh", "f06-linear-gelu", GELU_MLP, "Mlp", (8, 32, "tanh"), randn(4, 8)),
    *(
        Case(f"act2fn-{act}", "f06-linear-gelu", ACT2FN_INTERMEDIATE, "Intermediate", (8, 32, act),
             randn(2, 3, 8), needs_transformers=True, atol=1e-5)
        for act in ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu")
    ),
    *(
        Case(f"conv-bn-{bias}-{affine}-{mode}", "f07-conv-bn", CONV_BN, "ConvLayer", (3, 8, bias, affine, mode),
             randn(2, 3, 9, 9), atol=1e-5, rtol=1e-4)
        for bias, affine, mode in ((False, True, "zeros"), (True, True, "reflect"), (True, False, "zeros"))
    ),
    Case("stem", "f07-conv-bn", CONV_BN, "Stem", (4,), randn(2, 3, 16, 16), atol=1e-5, rtol=1e-4, sites=2),
    Case("linear-bn", "f08-linear-bn", LINEAR_BN, "ProjectionHead", (6, 10), randn(7, 6), atol=1e-5, rtol=1e-4),
    Case("bottleneck-batchnorm", "f07-conv-bn", BOTTLENECK, "Bottleneck", (16, 4), randn(2, 16, 8, 8),
         atol=1e-5, rtol=1e-4, sites=3),
    Case("bottleneck-groupnorm", "f07-conv-bn", BOTTLENECK, "Bottleneck",
         (16, 4, 1, None, 1, 64, 1, functools.partial(torch.nn.GroupNorm, 2)), randn(2, 16, 8, 8),
         atol=1e-5, rtol=1e-4, sites=3),
    Case("linear-norm-batchnorm", "f08-linear-bn", LINEAR_NORM, "ProjectionHead", (6, 10), randn(7, 6),
         atol=1e-5, rtol=1e-4),
    Case("linear-norm-layernorm", "f08-linear-bn", LINEAR_NORM, "ProjectionHead", (6, 10, torch.nn.LayerNorm),
         randn(7, 6), atol=1e-5, rtol=1e-4),
    Case("deberta-ln", "f11-layernorm", DEBERTA_LN, "DebertaLayerNorm", (16,), randn(2, 5, 16), atol=1e-5),
    Case("rsqrt-ln", "f11-layernorm", RSQRT_LN, "LayerNorm", (16,), randn(2, 5, 16), atol=1e-5),
    Case("llama-rms", "f12-rmsnorm", RMS_NORMS, "LlamaRMSNorm", (16,), randn(2, 5, 16), sites=2),
    Case("t5-rms", "f12-rmsnorm", RMS_NORMS, "T5LayerNorm", (16,), randn(2, 5, 16), sites=2),
    Case("esm-gelu", "f13-gelu", GELU_FORMULAS, "EsmIntermediate", (8, 16), randn(2, 3, 8), sites=3),
    Case("bloom-gelu", "f13-gelu", GELU_FORMULAS, "BloomGelu", (), randn(4, 16), sites=3),
    Case("new-gelu", "f13-gelu", GELU_FORMULAS, "NewGELUActivation", (), randn(4, 16), sites=3),
    Case("mistral-mlp", "f14-swiglu", GATED_MLP, "MistralMLP", (8, 24, False), randn(2, 3, 8), atol=1e-5),
    Case("gated-mlp-bias", "f14-swiglu", GATED_MLP, "MistralMLP", (8, 24, True), randn(5, 8), atol=1e-5),
    Case("llama-functional-silu", "f14-swiglu", GATED_MLP_FUNCTIONAL, "FeedForward", (8, 24), randn(2, 3, 8),
         atol=1e-5),
    Case("up-first-functional-gelu", "f14-swiglu", GATED_MLP_UP_FIRST, "Expert", (8, 24), randn(2, 3, 8),
         atol=1e-5),
    # Conv -> BatchNorm pairs built inside an nn.Sequential, folded in place (real classes, real_sources.py):
    # the stem and blocks, and `_make_layer`'s downsample Sequential, with a BatchNorm and with a GroupNorm
    # passed as `norm_layer` (which must run unfolded).
    Case("torchvision-resnet", "f07-conv-bn", TORCHVISION_RESNET + SMALL_RESNET, "small_resnet", (),
         randn(2, 3, 32, 32), atol=1e-4, rtol=1e-4, sites=6),
    Case("torchvision-resnet-groupnorm", "f07-conv-bn", TORCHVISION_RESNET + SMALL_RESNET, "small_resnet",
         (functools.partial(torch.nn.GroupNorm, 2),), randn(2, 3, 32, 32), atol=1e-4, rtol=1e-4, sites=6),
    # (`out = self.bn3(self.conv3(out))` reads the output of an AvgPool2d-or-Identity layer: folded in place.)
    Case("open-clip-bottleneck-downsample", "f07-conv-bn", OPEN_CLIP_BOTTLENECK, "Bottleneck", (8, 4, 2),
         randn(2, 8, 8, 8), atol=1e-5, rtol=1e-4, sites=4),
    Case("open-clip-bottleneck-identity-pool", "f07-conv-bn", OPEN_CLIP_BOTTLENECK, "Bottleneck", (32, 8, 1),
         randn(2, 32, 8, 8), atol=1e-5, rtol=1e-4, sites=3),
    Case("max-vit-mbconv", "f07-conv-bn", MAX_VIT_MBCONV + MBCONV, "mbconv", (8, 8, False), randn(2, 8, 8, 8),
         atol=1e-5, rtol=1e-4, sites=3),
    # timm's SwiGLU: `init_weights` reads the gate's weight and bias; the fix rewrites them as the fused halves.
    Case("timm-swiglu-init-weights", "f14-swiglu", TIMM_SWIGLU, "swiglu", (8, 24), randn(2, 3, 8), atol=1e-5),
    # ultralytics' TransformerLayer: q, k, v as the three arguments of one call (sequence-first inputs).
    Case("ultralytics-qkv-arguments", "f09-fused-qkv", ULTRALYTICS_TRANSFORMER_LAYER, "TransformerLayer", (16, 4),
         randn(5, 2, 16), atol=1e-5, rtol=1e-4),
    # litgpt's LLaMAMLP and GemmaMLP(LLaMAMLP): both forwards fused with the inherited projections.
    Case("litgpt-llama-mlp", "f14-swiglu", LITGPT_MLPS, "llama_mlp", (8, 24, True), randn(2, 3, 8), atol=1e-5,
         sites=2),
    Case("litgpt-gemma-mlp", "f14-swiglu", LITGPT_MLPS, "gemma_mlp", (8, 24, False, "tanh"), randn(2, 3, 8),
         atol=1e-5, sites=2),
    # The inner Sequential's pair is one site, at its construction (the forward's run of `self.body` joins it:
    # `engine.nested_chains`); with the head's pair, two sites, none skipped.
    Case("nested-sequential", "f07-conv-bn", NESTED_SEQUENTIAL, "Nested", (4,), randn(2, 4, 8, 8), atol=1e-5,
         rtol=1e-4, sites=2),
    Case("max-vit-mbconv-downsample", "f07-conv-bn", MAX_VIT_MBCONV + MBCONV, "mbconv", (8, 16, True),
         randn(2, 8, 8, 8), atol=1e-5, rtol=1e-4, sites=3),
]


def _randomise_buffers(module: Any) -> None:
    """Give BatchNorm running statistics non-trivial values, so eval mode really exercises them."""
    gen = torch.Generator().manual_seed(1)
    for name, buf in module.named_buffers():
        if name.endswith("running_mean"):
            buf.copy_(torch.randn(buf.shape, generator=gen) * 0.5)
        elif name.endswith("running_var"):
            buf.copy_(torch.rand(buf.shape, generator=gen) + 0.5)


def _compare(case: Case, new_source: str) -> None:
    """The harness's contract at the case's tolerances (gradients and buffers as strict as outputs), the state
    dict loading both ways (checkpoints saved after the rewrite still load into the original code) and the same
    dropout masks on both sides."""
    old_ns, new_ns = load(case.source, f"{case.id}_old"), load(new_source, f"{case.id}_new")
    torch.manual_seed(0)
    original = old_ns[case.cls](*case.args)
    with torch.no_grad():
        _randomise_buffers(original)
    rewritten = new_ns[case.cls](*case.args)
    compare_modules(original, rewritten, case.inputs, modes=case.modes, atol=case.atol, rtol=case.rtol,
                    grad_atol=case.atol, buffer_atol=case.atol, buffer_rtol=case.rtol, run_seed=7, round_trip=True)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rewrite_is_equivalent(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    if case.needs_transformers:
        if (reason := unusable_reason()) is not None:
            pytest.skip(reason)
        monkeypatch.syspath_prepend(str(TF435))
    rules = rules_of(case.rule)
    source = textwrap.dedent(case.source)
    case.source = source
    new_source, count, reasons = fix(source, rules)
    assert count >= case.sites, f"{case.id}: expected {case.sites} site(s), found {count}"
    assert new_source is not None, f"{case.id}: no rewrite: {reasons}"
    assert len(reasons) == case.skips, f"{case.id}: skipped findings: {reasons}"
    _compare(case, new_source)
    # Fixing again changes nothing, and the fixed class re-analyses clean for this rule.
    again, count_again, _ = fix(new_source, rules)
    # (a declined site may be gone too: a nested Sequential's pair, folded by its own construction's fix)
    assert again is None and count_again <= case.skips, f"{case.id}: a second fix found {count_again} site(s)"


def _source_for_optimizer(call: str) -> str:
    return f"import torch\n\n\ndef make_optimizer(model):\n    optimizer = {call}\n    return optimizer\n"


@pytest.mark.parametrize("call", [
    "torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)",
    "torch.optim.Adam(model.parameters(), lr=1e-2, amsgrad=True)",
    "torch.optim.Adam(\n        model.parameters(),\n        lr=1e-2,\n    )",
    "torch.optim.Adam(\nmodel.parameters(), lr=1e-2\n)",
    # the parameters passed by keyword (anomalib's configure_optimizers, lerobot's learner)
    "torch.optim.AdamW(params=model.parameters(), lr=1e-2, weight_decay=0.01)",
    "torch.optim.Adam(lr=1e-2, params=[p for p in model.parameters() if p.requires_grad])",
])
def test_fused_adam_steps_like_the_original(call: str) -> None:
    rules = rules_of("f17-fused-adam")
    source = _source_for_optimizer(call)
    new_source, count, reasons = fix(source, rules)
    assert count == 1 and new_source is not None, reasons
    assert "fused=True" in new_source
    torch.manual_seed(0)
    model_a = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    model_b = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    model_b.load_state_dict(model_a.state_dict(), strict=True)
    opt_a = load(source, "opt_old")["make_optimizer"](model_a)
    opt_b = load(new_source, "opt_new")["make_optimizer"](model_b)
    assert opt_b.defaults.get("fused") is True
    for _ in range(5):
        x = torch.randn(4, 8)
        for model, opt in ((model_a, opt_a), (model_b, opt_b)):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    for a, b in zip(model_a.parameters(), model_b.parameters()):
        torch.testing.assert_close(b, a, atol=1e-6, rtol=1e-5)
    again, count_again, _ = fix(new_source, rules)
    assert again is None and count_again == 0


@pytest.mark.parametrize("call", [
    "torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)",
    "torch.optim.AdamW(model.parameters(), lr=1e-3, fused=False)",
    "torch.optim.AdamW(model.parameters(), **settings)",
])
def test_fused_adam_leaves_explicit_choices_alone(call: str) -> None:
    new_source, _, _ = fix(_source_for_optimizer(call), rules_of("f17-fused-adam"))
    assert new_source is None


def test_gated_mlp_declines_when_a_projection_is_used_elsewhere() -> None:
    source = textwrap.dedent(GATED_MLP) + textwrap.dedent("""

        def gate_norm(mlp):
            return mlp.gate_proj.weight.norm()
    """)
    new_source, count, reasons = fix(source, rules_of("f14-swiglu"))
    assert count == 1 and new_source is None
    assert any("used elsewhere" in r for r in reasons), reasons


def test_helpers_are_added_once_per_file() -> None:
    source = textwrap.dedent(CONV_BN)
    new_source, count, _ = fix(source, rules_of("f07-conv-bn"))
    assert count == 3 and new_source is not None
    assert new_source.count("def folded_conv_bn(") == 1
    # A later fix of the same file reuses the helper added by the first one.
    extra = new_source + textwrap.dedent("""

        class Extra(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 3, 1)
                self.bn = nn.BatchNorm2d(3)

            def forward(self, x):
                return self.bn(self.conv(x))
    """)
    newer, count2, _ = fix(extra, rules_of("f07-conv-bn"))
    assert count2 == 1 and newer is not None
    assert newer.count("def folded_conv_bn") == 1 and "folded_conv_bn(x, self.conv, self.bn)" in newer


def test_a_stored_intermediate_blocks_the_rewrite() -> None:
    # `self.cache = hidden_states` reads the dropped-out value: deleting its statement would change it.
    source = textwrap.dedent(BERT_OUTPUT).replace(
        "        hidden_states = self.LayerNorm(",
        "        self.cache = hidden_states\n        hidden_states = self.LayerNorm(",
    )
    new_source, count, reasons = fix(source, rules_of("f05-dropout-add-layernorm"))
    # Either the analysis sees the use (no finding) or the strategy reads it and declines.
    assert new_source is None
    assert count == 0 or any("also used on line" in r for r in reasons), reasons


def test_an_input_reassigned_between_the_fused_statements_blocks_the_rewrite() -> None:
    source = textwrap.dedent("""
        from torch import nn


        class ConvLayer(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = nn.Conv2d(c, c, 3, padding=1)
                self.bn = nn.BatchNorm2d(c)

            def forward(self, x):
                h = self.conv(x)
                x = x * 2
                return self.bn(h) + x
    """)
    new_source, count, reasons = fix(source, rules_of("f07-conv-bn"))
    assert count == 1 and new_source is None
    assert any("`x` is reassigned on line 13" in r for r in reasons), reasons


def test_gated_mlp_with_a_keyword_activation_call_passes_it_bound() -> None:
    # `F.gelu(g, approximate="tanh")` is handed to the helper as `lambda gate: F.gelu(gate, approximate="tanh")`.
    source = GATED_MLP_FUNCTIONAL.replace("F.silu(self.w1(x))", 'F.gelu(self.w1(x), approximate="tanh")')
    new_source, count, reasons = fix(textwrap.dedent(source), rules_of("f14-swiglu"))
    assert new_source is not None and count == 1 and not reasons, reasons
    assert 'lambda gate: F.gelu(gate, approximate="tanh")' in new_source
    _compare(Case("keyword-gelu", "f14-swiglu", textwrap.dedent(source), "FeedForward", (8, 24), randn(2, 3, 8),
                  atol=1e-5), new_source)


def test_gated_mlp_with_a_computed_activation_argument_is_declined() -> None:
    # An argument that is computed (a call) would be evaluated inside the helper: declined.
    source = GATED_MLP_FUNCTIONAL.replace("F.silu(self.w1(x))", 'F.gelu(self.w1(x), approximate=str("tanh"))')
    new_source, count, reasons = fix(textwrap.dedent(source), rules_of("f14-swiglu"))
    assert new_source is None and count == 1 and any("function call" in r for r in reasons), reasons


@pytest.mark.parametrize(("source", "factory", "args", "folded"), [
    (MAX_VIT_MBCONV + MBCONV, "mbconv", (8, 16, True), 3),
    (TORCHVISION_RESNET + SMALL_RESNET, "small_resnet", (), 12),
    (TORCHVISION_RESNET + SMALL_RESNET, "small_resnet", (functools.partial(torch.nn.GroupNorm, 2),), 0),
])
def test_sequential_pairs_fold_in_eval_and_keep_their_keys(source: str, factory: str, args: tuple[Any, ...],
                                                           folded: int) -> None:
    """The in-place fold really folds (no BatchNorm module runs in eval mode: its pair ran as one
    convolution), runs every norm that is not a BatchNorm, and leaves every state-dict key as it was."""
    source = textwrap.dedent(source)
    new_source, _, reasons = fix(source, rules_of("f07-conv-bn"))
    assert new_source is not None and "FoldedConvBnSequential(" in new_source, reasons
    torch.manual_seed(0)
    original = load(source, "keys_old")[factory](*args)
    rewritten = load(new_source, "keys_new")[factory](*args)
    assert list(rewritten.state_dict()) == list(original.state_dict())
    norms = [m for m in rewritten.modules() if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.GroupNorm))]
    ran: list[Any] = []
    for m in norms:
        m.register_forward_hook(lambda mod, inp, out: ran.append(mod))
    rewritten.eval()
    with torch.no_grad():
        rewritten(torch.randn(2, 3 if factory == "small_resnet" else 8, 32, 32))
    assert len(norms) - len({id(m) for m in ran}) == folded


def test_gate_init_through_the_fused_halves_sets_what_the_original_set() -> None:
    """timm's SwiGLU.init_weights, rewritten to the fused Linear's first half: the checkpoint it saves holds
    the gate the original's init made (bias ones, weight near zero) and the up projection as constructed."""
    source = textwrap.dedent(TIMM_SWIGLU)
    new_source, _, reasons = fix(source, rules_of("f14-swiglu"))
    assert new_source is not None and not reasons, reasons
    assert "self.fc1_g.bias" not in new_source and ".bias[: self." in new_source
    torch.manual_seed(0)
    original = load(source, "init_old")["swiglu"](8, 24)
    torch.manual_seed(0)
    rewritten = load(new_source, "init_new")["swiglu"](8, 24)
    state = rewritten.state_dict()
    assert sorted(state) == sorted(original.state_dict())
    assert torch.equal(state["fc1_g.bias"], torch.ones(24))
    assert state["fc1_g.weight"].abs().max() < 1e-4
    assert state["fc1_x.weight"].abs().max() > 1e-2  # the up half keeps its default init


def test_gate_weight_handed_to_another_initialiser_is_declined() -> None:
    """Only `torch.nn.init` functions take the fused rows: another initialiser could read flags or
    attributes off the tensor that a slice does not carry (transformers' `_is_hf_initialized`)."""
    source = textwrap.dedent(TIMM_SWIGLU).replace("nn.init.ones_(self.fc1_g.bias)", "init.ones_(self.fc1_g.bias)")
    source = source.replace("from torch import nn as nn\n", "from torch import nn as nn\nfrom transformers import initialization as init\n")
    new_source, count, reasons = fix(source, rules_of("f14-swiglu"))
    assert new_source is None and count == 1 and any("used elsewhere" in r for r in reasons), reasons
