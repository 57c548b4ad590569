"""BatchNorm folding for inference: Conv + BatchNorm (family 7) and Linear + BatchNorm1d (family 8)."""

from __future__ import annotations

from adopter.engine.sites import PATH_DEPENDENT
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.conv_bn_sequential import fold_in_sequential, sequential_origin
from adopter.synth.strategies.fusions_chain import (
    binding_path,
    ensure_helper,
    rewrite_chain,
    value_text,
)

# Training (or a BatchNorm without running statistics) runs the original modules, so running
# statistics keep updating; in eval mode the BatchNorm becomes a per-channel scale and shift folded
# into the preceding layer's weight and bias (recomputed each call: weights may change between calls).
_FOLD_SCALE_SHIFT = '''
    scale = (bn.running_var + bn.eps).rsqrt()
    if bn.weight is not None:
        scale = scale * bn.weight
    shift = -bn.running_mean if layer.bias is None else layer.bias - bn.running_mean
    shift = shift * scale
    if bn.bias is not None:
        shift = shift + bn.bias
'''

_CONV_BN = '''
def folded_conv_bn(x, layer, bn):
    """`bn(layer(x))`, with the BatchNorm folded into the convolution in eval mode (adopter: conv-bn)."""
    import torch

    nn = torch.nn
    # Modules passed in as arguments may be any module (a GroupNorm, a weight-standardised conv): fold
    # only a stock convolution and BatchNorm (BatchNorm1d/2d/3d share one forward), in eval mode, with
    # running statistics.
    convs = (nn.Conv1d.forward, nn.Conv2d.forward, nn.Conv3d.forward)
    norms = (nn.BatchNorm2d.forward, nn.SyncBatchNorm.forward)
    stock = type(layer).forward in convs and type(bn).forward in norms
    if not stock or layer.training or bn.training or bn.running_mean is None or bn.running_var is None:
        # Module.__call__ keeps the hooks; spelled out, the rewritten code no longer reads as layer -> BN.
        return bn(torch.nn.Module.__call__(layer, x))
{FOLD}
    weight = layer.weight * scale.reshape(-1, *([1] * (layer.weight.dim() - 1)))
    return layer._conv_forward(x, weight, shift)
'''

_LINEAR_BN = '''
def folded_linear_bn(x, layer, bn):
    """`bn(layer(x))`, with the BatchNorm folded into the Linear in eval mode (adopter: linear-bn)."""
    import torch

    nn = torch.nn
    # Modules passed in as arguments may be any module: fold only a stock Linear and BatchNorm, in eval
    # mode, with running statistics, on 2-D inputs (else BatchNorm1d normalises dimension 1).
    norms = (nn.BatchNorm1d.forward, nn.SyncBatchNorm.forward)
    stock = type(layer).forward is nn.Linear.forward and type(bn).forward in norms
    if not stock or x.dim() != 2 or layer.training or bn.training or bn.running_mean is None or bn.running_var is None:
        # Module.__call__ keeps the hooks; spelled out, the rewritten code no longer reads as layer -> BN.
        return bn(torch.nn.Module.__call__(layer, x))
{FOLD}
    return torch.nn.functional.linear(x, layer.weight * scale[:, None], shift)
'''


def _helper(ctx: SynthContext, name: str, tag: str, template: str) -> str:
    return ensure_helper(ctx, name, tag, template.replace("{FOLD}", _FOLD_SCALE_SHIFT.strip("\n")))


def _fold(ctx: SynthContext, name: str, tag: str, template: str) -> None:
    layer = binding_path(ctx, "layer")
    bn = binding_path(ctx, "bn")
    x = value_text(ctx, "x")
    helper = _helper(ctx, name, tag, template)
    rewrite_chain(ctx, f"{helper}({x}, {layer}, {bn})")


@strategy("fold_conv_bn")
def fold_conv_bn(ctx: SynthContext) -> None:
    """`bn(conv(x))` → `folded_conv_bn(x, conv, bn)` (`$layer`, `$bn`, `$x`); a pair of children of an
    `nn.Sequential` → that Sequential built as `FoldedConvBnSequential` (same children and keys)."""
    origin = sequential_origin(ctx)
    if origin is not None:
        # Path-dependent or not, this edits only the Sequential's construction: the subclass folds a pair
        # only when it finds a stock Conv and BatchNorm at run time, and runs as nn.Sequential otherwise.
        fold_in_sequential(ctx, origin, _helper(ctx, "folded_conv_bn", "conv-bn", _CONV_BN))
        return
    if ctx.finding.path_dependent and len({op.stmt_span for op in ctx.finding.match.ops}) > 1:
        # In one statement (`out = self.bn3(self.conv3(out))` after an `nn.Identity()`-or-pool layer) the
        # call is replaced where it is, reading the same operand text: every path sees what it saw before.
        ctx.decline(PATH_DEPENDENT)
    _fold(ctx, "folded_conv_bn", "conv-bn", _CONV_BN)


@strategy("fold_linear_bn")
def fold_linear_bn(ctx: SynthContext) -> None:
    """`bn(linear(x))` → `folded_linear_bn(x, linear, bn)` (`$layer`, `$bn`, `$x`)."""
    _fold(ctx, "folded_linear_bn", "linear-bn", _LINEAR_BN)
