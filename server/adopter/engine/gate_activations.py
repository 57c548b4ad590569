"""What a gated MLP's activation may be (family 14's `gate_activation` guard): read from the `__init__`
bindings of the submodule the match calls on the gate, by what is known of it rather than by its name.

Fusing the gate and up projections is right whatever callable runs on the gate (the fused GEMM computes
exactly `gate(x)` and `up(x)`), so a custom activation class, a constructor parameter with a default, a
registry or `getattr` lookup, a lambda or a config value all pass. What is known to be something else fails:
a torch layer that is not a SiLU or GELU (a `Linear`, a `Dropout`, a `LayerNorm`: then the product is not a
gated MLP), or a lookup whose literal keys all name other activations (`ACT2FN["relu"]`: family 14 is the
SiLU/GELU gated MLP, `bench/data/realworld/LABELLING.md`). So does an activation the caller must pass (a
constructor parameter with no default, stored or called: `self.act = activation`, `self.act = act_layer()`):
nothing in the file says it is a SiLU or GELU gate (curated-transformers' `PointwiseFeedForward(activation:
Module, use_gate=...)`; the labelled sets count a gate chosen by a parameter only by its default, dev2 and
held-out `LABELLING.md`). A parameter with a default is read as that default by the analysis (`activation=
nn.ReLU()`: a ReLU, no site; `nn.SiLU()`: a site), and the torch layers the file's own constructions pass
are bindings of their own (`adopter.analysis.chains.passed_layers`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from adopter.dsl.types import Binding, Ctor, Expr, Param, ParamKind
from adopter.engine.bindings import InitIndex
from adopter.engine.layer_facts import literal_keys

# The torch layers that are a SiLU or a GELU (stateless ones reach the matcher as `F.silu` / `F.gelu`).
_GATED_TORCH_LAYERS = frozenset({"torch.nn.SiLU", "torch.nn.GELU"})


def may_be_gate_activation(target: str, init: InitIndex, keys: Collection[str]) -> bool:
    """Whether the submodule `target` (`self.act`) may be a gated MLP's activation: some binding of its
    attribute is not known to be another layer (see the module docstring), or it has no binding in this
    `__init__` (set elsewhere: a base class, a method). `keys` are the lookup keys that name one."""
    if not target.startswith("self.") or "[" in target:
        return False  # an item of a container: a layer list, not one activation
    bindings = init.by_attr.get(target[len("self."):], ())
    required = _required_parameters(init.params)
    return not bindings or any(_may_be(binding, keys, required) for binding in bindings)


def _required_parameters(params: Sequence[Param]) -> frozenset[str]:
    """The `__init__` parameters a caller must pass (no default). A `None` default is left as it was: the
    binding that calls it is then under a test of it (`act_layer() if act_layer else nn.Identity()`)."""
    return frozenset(p.name for p in params
                     if p.kind not in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD) and p.default is None)


def _may_be(binding: Binding, keys: Collection[str], required: frozenset[str]) -> bool:
    value = binding.value
    if _passed_in(value, required):
        # The caller chooses it and nothing in this file says which: the activation is not evident here,
        # so the product is not known to be a SiLU/GELU gate (a parameter whose default is one is read as
        # that default by the analysis and passes below).
        return False
    if not isinstance(value, Ctor):
        return True  # a lambda, `getattr(...)`, an attribute of a config: a callable not known here
    if value.items:
        return False  # a container (an nn.Sequential, a ModuleList)
    if value.callee.startswith("torch."):
        return value.callee in _GATED_TORCH_LAYERS
    found = literal_keys(value)
    return found is None or not found.isdisjoint(keys)


def _passed_in(value: Ctor | Expr, required: frozenset[str]) -> bool:
    """`self.act = activation` or `self.act = act_layer(...)` of a required `__init__` parameter."""
    if isinstance(value, Expr):
        return value.text.strip() in required
    return not value.items and value.callee in required
