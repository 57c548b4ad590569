"""Square roots written as powers: `e ** -0.5`, `e.pow(-0.5)`, `torch.pow(e, -0.5)` are `torch.rsqrt(e)`, and the
exponent `0.5` is `torch.sqrt(e)` (exactly: torch computes both the same way, up to rounding).

Read only where `e` is a sum or a mean the pass made (`(variance + eps) ** -0.5`, `x.pow(2).mean(-1).pow(-0.5)`):
the normalisers' denominators. A number's power (`head_dim ** -0.5`, `x.shape[-1] ** 0.5`: an attention scale,
whose readings look for the power) and a tensor of unknown make keep their spelling.
Found by the metamorphic harness (docs/notes/meta38.md, its first-ranked weakness): with `torch.rsqrt` spelled as
a power, every RMSNorm it was given (LlamaRMSNorm, Mistral, torchtune, litgpt, diffusers) went unread.
"""

from __future__ import annotations

from collections.abc import Mapping

from adopter.analysis.canonical.ranks import consulted
from adopter.analysis.canonical.spellings import MEAN, RSQRT, SQRT, Key
from adopter.dsl.types import Expr, Op, Ref

# the spellings of a power whose exponent is the second argument
_POWERS: frozenset[Key] = frozenset({("operator", "**"), ("method", "pow"), ("function", "torch.pow")})
# the exponents, as written, that make a root
_ROOTS: dict[str, Key] = {"-0.5": RSQRT, "-.5": RSQRT, "0.5": SQRT, ".5": SQRT}
# what made the base: a sum (`+`, also `.add(eps)` once respelled) or a mean
_SUMS: frozenset[Key] = frozenset({("operator", "+"), MEAN})


def root_of(op: Op, made_by: Mapping[str, Key], ranks: Mapping[str, int]) -> Key | None:
    """The root `op` computes (RSQRT or SQRT) when it raises a sum or mean of the pass to -0.5 or 0.5, else None."""
    if (op.kind._value_, op.target) not in _POWERS or len(op.args) != 2 or op.kwargs or len(op.outputs) != 1:
        return None
    base, exponent = op.args
    if not isinstance(base, Ref) or not isinstance(exponent, Expr):
        return None
    root = _ROOTS.get(exponent.text.replace(" ", ""))
    # the ranks last: asked only of a root of a sum or mean (`ranks.consulted`)
    return root if (root is not None and made_by.get(base.name) in _SUMS
                    and consulted(ranks).get(base.name) != 0) else None



