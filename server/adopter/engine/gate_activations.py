"""What a gated MLP's activation may be (family 14's `gate_activation` guard): read from the `__init__`
bindings of the submodule the match calls on the gate, by what is known of it rather than by its name.

Fusing the gate and up projections is right whatever callable runs on the gate (the fused GEMM computes
exactly `gate(x)` and `up(x)`), so a custom activation class, a constructor parameter, a registry or
`getattr` lookup, a lambda or a config value all pass. Only what is known to be something else fails: a
torch layer that is not a SiLU or GELU (a `Linear`, a `Dropout`, a `LayerNorm`: then the product is not a
gated MLP), or a lookup whose literal keys all name other activations (`ACT2FN["relu"]`, or `ACT2FN[act]` with
`act="relu"` the `__init__` parameter's default: family 14 is the SiLU/GELU gated MLP,
`bench/data/realworld/LABELLING.md`).

One constructor parameter fails too: a required one (no default) bound as it is (`self.act = activation`),
when no construction of the class in the file passes it anything but torch activations (those reach here as
bindings of their own; `passed_layers` marks the binding left to another file's caller). The activation is
then chosen by code elsewhere, so the file does not say the product is a SiLU/GELU gated MLP (dev2 labels
composer's and curated-transformers' gated layers, both `act(gate(x)) * up(x)` with a required activation,
not sites, as held-out batch 5's selectable gate).

A parameter defaulting to None and stored only on the path where it is given (`self.act = nn.Sigmoid() if
activation is None else activation`, or the same as an `if`/`else`) is not read as a possible gate either: as built
with its defaults the attribute holds the other path's layer, which decides (`optional_keys.stored_only_when_given`;
torchmd-net's sigmoid `GLU`, prec12's census).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from adopter.analysis.chains.passed_layers import chosen_elsewhere
from adopter.dsl.types import Binding, Ctor, Param
from adopter.engine.bindings import InitIndex
from adopter.engine.layer_facts import literal_keys
from adopter.engine.optional_keys import stored_only_when_given

# The torch layers that are a SiLU or a GELU (stateless ones reach the matcher as `F.silu` / `F.gelu`).
_GATED_TORCH_LAYERS = frozenset({"torch.nn.SiLU", "torch.nn.GELU"})


def may_be_gate_activation(target: str, init: InitIndex, keys: Collection[str]) -> bool:
    """Whether the submodule `target` (`self.act`) may be a gated MLP's activation: some binding of its
    attribute is not known to be another layer (see the module docstring), or it has no binding in this
    `__init__` (set elsewhere: a base class, a method). `keys` are the lookup keys that name one."""
    if not target.startswith("self.") or "[" in target:
        return False  # an item of a container: a layer list, not one activation
    bindings = init.by_attr.get(target[len("self."):], ())
    return not bindings or any(_may_be(binding, keys, init.parameters()) for binding in bindings)


def _may_be(binding: Binding, keys: Collection[str], params: Sequence[Param]) -> bool:
    value = binding.value
    if not isinstance(value, Ctor):
        # a parameter, a lambda, `getattr(...)`: a callable not known here, unless a caller elsewhere chooses it,
        # or a None-default parameter stored only on the path where it is given (the default's layer decides)
        return not chosen_elsewhere(binding.condition, value.text.strip()) and not stored_only_when_given(
            binding, params)
    if value.items:
        return False  # a container (an nn.Sequential, a ModuleList)
    if value.callee.startswith("torch."):
        return value.callee in _GATED_TORCH_LAYERS
    found = literal_keys(value, params)
    return found is None or not found.isdisjoint(keys)

