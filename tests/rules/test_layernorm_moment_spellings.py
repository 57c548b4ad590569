"""Family 11: a LayerNorm's statistics from `torch.var_mean`, eps by a clamp of the variance or added to the std (mech94).

All are detection-only LayerNorms with the biased variance (beside `f11-layernorm-var` / `-var-rsqrt`, the mean of `x`
over the last or the channel axis), found by the dev census in 3 packages each (docs/notes/mech94.md):

- `var, mean = torch.var_mean(x, dim=d, unbiased=False, keepdim=True)`: the canonical pass reads it as
  `x.var(d, unbiased=False, keepdim=True)` and `x.mean(d, keepdim=True)`. Shaped on timm 1.0.12
  `timm/layers/norm.py:85-89` (`_layer_norm_cf`, channel axis, rsqrt), rec-pangu 0.4.1
  `rec_pangu/models/layers/conv.py:164-175` (channel axis of `[B, C, T]`, `/ torch.sqrt`) and deepmd-kit 3.2.0
  `deepmd/pt/model/network/layernorm.py:94-99` (last axis, under an `if xx.numel() > 0`).
- `(x - mean) * var.clamp(min=eps).rsqrt()`: lucidrains' channel LayerNorm, rule `f11-layernorm-var-clamp`.
  Shaped on muse-maskgit-pytorch 0.3.5 `muse_maskgit_pytorch/vqgan_vae.py:137-146` and soundstorm-pytorch 0.6.1
  `soundstorm_pytorch/soundstorm.py:261-270` (eps chosen by dtype); metnet3-pytorch's `ChanLayerNorm` is a
  labelled dev2 site of the same form.
- `(x - mean) / (torch.var(x, d, unbiased=False, keepdim=True).sqrt() + eps)`: eps added to the biased standard
  deviation, rule `f11-layernorm-std-eps` (segformer-pytorch, uformer-pytorch, axial-attention).

The code is rewritten at fixture size. The look-alikes stay silent: the unbiased `var_mean` (torch's default, a
standardisation: bert-pytorch's labelled not-site), `var_mean` over another axis, the variance of another tensor,
a clamp from above, `var_mean` not unpacked into two names, and a clamped normalisation whose statistics are kept
to undo it (iTransformer's RevIN: an instance normalisation over time, not a LayerNorm); the unbiased standard
deviation plus eps (the annotated transformer's LayerNorm, fresh6 G9: a dev2 not-site by the written convention),
and the standard deviation of another tensor.
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of, skip_reasons

RULES = rules_of("f11-layernorm")

VAR_MEAN = '''
import torch
from torch import nn


def _layer_norm_cf(x, weight, bias, eps: float):
    s, u = torch.var_mean(x, dim=1, unbiased=False, keepdim=True)
    x = (x - u) * torch.rsqrt(s + eps)
    return x * weight[:, None, None] + bias[:, None, None]


class LayerNormExp2d(nn.LayerNorm):
    def __init__(self, num_channels: int, eps: float = 1e-6):
        super().__init__(num_channels, eps=eps)

    def forward(self, x):
        return _layer_norm_cf(x, self.weight, self.bias, self.eps)


class ChannelLayerNorm(nn.Module):
    def __init__(self, channels: int, epsilon: float = 1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones([1, channels, 1]))
        self.beta = nn.Parameter(torch.zeros([1, channels, 1]))
        self.epsilon = epsilon

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=1, keepdim=True, unbiased=False)
        x = (x - mean) / torch.sqrt(var + self.epsilon)
        return x * self.gamma + self.beta


class GuardedLayerNorm(nn.Module):
    def __init__(self, num_in: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.matrix = nn.Parameter(torch.ones(num_in))
        self.bias = nn.Parameter(torch.zeros(num_in))

    def forward(self, xx):
        if xx.numel() > 0:
            variance, mean = torch.var_mean(xx, dim=-1, unbiased=False, keepdim=True)
            yy = (xx - mean) / torch.sqrt(variance + self.eps)
        else:
            yy = xx
        return yy * self.matrix + self.bias
'''

CLAMPED = '''
import torch
from torch import nn


class LayerNormChan(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(1, dim, 1, 1))

    def forward(self, x):
        var = torch.var(x, dim=1, unbiased=False, keepdim=True)
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) * var.clamp(min=self.eps).rsqrt() * self.gamma


class ChanLayerNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(1, dim, 1))

    def forward(self, x):
        eps = 1e-6 if x.dtype == torch.float32 else 1e-4
        var = torch.var(x, dim=1, unbiased=False, keepdim=True)
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) * var.clamp(min=eps).rsqrt() * self.gamma
'''

# segformer-pytorch 0.0.6 `segformer_pytorch/segformer_pytorch.py:30-40`, uformer-pytorch 0.0.8
# `uformer_pytorch/uformer_pytorch.py:93-103`, axial-attention 0.6.1 `axial_attention/axial_attention.py:40-50`:
# eps added to the biased standard deviation (one of them with the statistics from `var_mean`, as rewritten here).
STD_EPS = '''
import torch
from torch import nn


class ChanLayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(1, dim, 1, 1))
        self.b = nn.Parameter(torch.zeros(1, dim, 1, 1))

    def forward(self, x):
        std = torch.var(x, dim=1, unbiased=False, keepdim=True).sqrt()
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) / (std + self.eps) * self.g + self.b


class LastAxisNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / (torch.sqrt(var) + self.eps) * self.g
'''

LOOK_ALIKES = '''
import torch
from torch import nn


class UnbiasedStandardise(nn.Module):
    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)


class TimeStatistics(nn.Module):
    def forward(self, x):
        var, mean = torch.var_mean(x, dim=2, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)


class WhitenByOther(nn.Module):
    def forward(self, x, ref):
        var, _ = torch.var_mean(ref, dim=-1, unbiased=False, keepdim=True)
        mean = x.mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)


class Paired(nn.Module):
    def forward(self, x):
        stats = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return (x - stats[1]) / torch.sqrt(stats[0] + 1e-5)


class ClippedVariance(nn.Module):
    def forward(self, x):
        var = torch.var(x, dim=1, unbiased=False, keepdim=True)
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) * var.clamp(max=1e3).rsqrt()


class ReversibleNorm(nn.Module):
    # iTransformer 0.8.1, iTransformer/revin.py:33-46 (RevIN): the statistics are kept to undo the normalisation
    def __init__(self, num_variates, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(num_variates, 1))

    def forward(self, x):
        var = torch.var(x, dim=-1, unbiased=False, keepdim=True)
        mean = torch.mean(x, dim=-1, keepdim=True)
        normed = (x - mean) * var.clamp(min=self.eps).rsqrt() * self.gamma
        return normed, (mean, var)


class AnnotatedLayerNorm(nn.Module):
    # the annotated transformer's LayerNorm (deeptab 2.1.0 `deeptab/nn/blocks/common.py:189-200`, bert-pytorch):
    # the unbiased standard deviation plus eps, labelled not a site in dev2
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class UnbiasedStdPlusEps(nn.Module):
    def forward(self, x):
        std = torch.var(x, dim=1, keepdim=True).sqrt()
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) / (std + 1e-5)


class StdOfOther(nn.Module):
    def forward(self, x, ref):
        std = torch.var(ref, dim=-1, unbiased=False, keepdim=True).sqrt()
        mean = torch.mean(x, dim=-1, keepdim=True)
        return (x - mean) / (std + 1e-5)


class UnbiasedClamped(nn.Module):
    def forward(self, x):
        var = torch.var(x, dim=1, keepdim=True)
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) * var.clamp(min=1e-5).rsqrt()
'''


def _found(source: str) -> list[tuple[str, str]]:
    return sorted((f.rule_id, f.scope_name) for f in findings_of(source, RULES))


def test_statistics_from_var_mean_are_a_layer_norm_in_each_shape() -> None:
    assert _found(VAR_MEAN) == [("f11-layernorm-var", "ChannelLayerNorm"), ("f11-layernorm-var", "GuardedLayerNorm"),
                                ("f11-layernorm-var-rsqrt", "LayerNormExp2d")]


def test_var_mean_sites_are_detection_only_at_the_var_mean_line() -> None:
    found = findings_of(VAR_MEAN, RULES)
    lines = VAR_MEAN.splitlines()
    assert sorted(lines[f.span.start_line].strip().split(" = ")[0] for f in found) == ["s, u", "var, mean",
                                                                                        "variance, mean"]
    assert not any(f.fixable for f in found)
    assert len(skip_reasons(VAR_MEAN, RULES)) == 3


def test_variance_clamped_at_eps_is_a_layer_norm_without_a_fix() -> None:
    assert _found(CLAMPED) == [("f11-layernorm-var-clamp", "ChanLayerNorm"),
                               ("f11-layernorm-var-clamp", "LayerNormChan")]
    assert not any(f.fixable for f in findings_of(CLAMPED, RULES))


def test_eps_added_to_the_biased_std_is_a_layer_norm_without_a_fix() -> None:
    assert _found(STD_EPS) == [("f11-layernorm-std-eps", "ChanLayerNorm"), ("f11-layernorm-std-eps", "LastAxisNorm")]
    assert not any(f.fixable for f in findings_of(STD_EPS, RULES))


def test_look_alikes_of_the_moment_spellings_stay_silent() -> None:
    assert _found(LOOK_ALIKES) == []
