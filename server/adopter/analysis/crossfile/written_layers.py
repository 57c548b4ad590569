"""Which torch layer a module's forward writes out (Python's `ast`): a GELU formula or a LayerNorm over the last axis.

`written_layer` answers for one class of any file, this one's (`idioms.formula_layers`) or another's
(`reach`): `nn.GELU` when the forward is the exact GELU or its tanh approximation of its input
(`names.formula_functions.gelu_approximation`), `nn.LayerNorm` when it is a LayerNorm over the last axis whose
weight and bias are the class's own parameters (`names.formula_norms`); with the `Ctor.origin` suffix that keeps
the sites it reaches without an automatic fix.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from adopter.analysis.names.formula_functions import FORMULA_GELU, gelu_approximation
from adopter.analysis.names.formula_norms import FORMULA_NORM, affine_parameters, layer_norm_roles

GELU = "torch.nn.GELU"
LAYER_NORM = "torch.nn.LayerNorm"

Layer = tuple[str, tuple[tuple[str, str], ...], str]  # (the torch layer, its keywords as text, the origin suffix)


def written_layer(forward: ast.FunctionDef | ast.AsyncFunctionDef, init: ast.FunctionDef | ast.AsyncFunctionDef | None,
                  qualify: Callable[[str], str]) -> Layer | None:
    """The layer `forward` writes out (see the module doc), `init` the class's `__init__`; else None."""
    if not isinstance(forward, ast.FunctionDef):
        return None
    approximate = gelu_approximation(forward)
    if approximate is not None:
        return gelu_layer(approximate)
    roles = layer_norm_roles(forward)
    if roles is None or not affine_parameters(init if isinstance(init, ast.FunctionDef) else None, roles, qualify):
        return None
    return norm_layer(roles)


def gelu_layer(approximate: str) -> Layer:
    """`nn.GELU` of the written-out form `approximate` ("none" or "tanh")."""
    return GELU, ((("approximate", '"tanh"'),) if approximate == "tanh" else ()), FORMULA_GELU


def norm_layer(roles: tuple[tuple[str, str], ...]) -> Layer:
    """`nn.LayerNorm` with the affine parameters the written-out forward reads (`roles`)."""
    kinds = {role for _, role in roles}
    kwargs: tuple[tuple[str, str], ...] = ()
    if "weight" not in kinds:
        kwargs = (("elementwise_affine", "False"),)
    elif "bias" not in kinds:
        kwargs = (("bias", "False"),)
    return LAYER_NORM, kwargs, FORMULA_NORM
