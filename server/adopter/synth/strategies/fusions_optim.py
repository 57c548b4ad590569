"""Fused optimizer step (family 17): `torch.optim.Adam/AdamW(...)` → the same call with `fused=True`."""

from __future__ import annotations

from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.fusions_chain import rewrite_chain

_CONFLICTING = ("fused", "foreach", "differentiable")


@strategy("fused_optimizer")
def fused_optimizer(ctx: SynthContext) -> None:
    """Add `fused=True` to the matched optimizer construction."""
    op = ctx.finding.match.ops[-1]
    names = {kwarg.name for kwarg in op.kwargs}
    if names & set(_CONFLICTING):
        ctx.decline("the optimizer already chooses its implementation (fused=/foreach=/differentiable=)")
    text = ctx.text(op.span)
    if "**" in text:
        ctx.decline("keyword arguments are passed with **; they may already set fused= or foreach=")
    body = text.rstrip()
    if not body.endswith(")"):
        ctx.decline("the optimizer call does not end with `)`")
    inner = body[:-1].rstrip()
    if inner.endswith(","):
        # Keep the user's layout: a multi-line call with a trailing comma gets one more line.
        tail = body[len(inner) : -1]
        indent = tail.split("\n")[-1] if "\n" in tail else " "
        new = f"{inner}\n{indent}    fused=True,\n{indent})" if "\n" in tail else f"{inner} fused=True)"
    else:
        new = f"{inner}, fused=True)"
    rewrite_chain(ctx, new, [op])
