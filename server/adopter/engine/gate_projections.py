"""Whether a gated MLP's two projections may be projections the caller chose (family 14's `gate_projections`
guard): read from the `__init__` bindings of the submodules the match calls on the gate and on the up side.

`act(gate(x)) * up(x)` is a gated MLP whatever kind of projection the constructor is handed: torchtune's
`FeedForward(gate_proj=..., up_proj=...)` holds `self.w1 = gate_proj`, and torchtitan's holds `self.w1 =
config.w1.build()`; the builders that pick `nn.Linear` live in other files. Each of the two must be an
`nn.Linear` or such a module (the parameter itself, or a call on a parameter), and at least one of them must
be passed in (two `nn.Linear` layers are `f14-swiglu`'s, with a fix). Or the two are one layer built twice
alike: the same imported class (not torch's) called with the same arguments, as Meta's Llama reference code
builds `self.w1` and `self.w3` as `ColumnParallelLinear(dim, hidden_dim, bias=False, ...)` (fairscale): two
applications of one layer kind of one shape to the same input, SiLU/GELU-gated, are a gated MLP whatever the
class is. A torch layer of another kind, a class of this file (its forward is read instead) or two imported
classes built differently, a container or a lookup is known to be something else, or not known to be a
projection, and fails; so does one submodule on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.types import Binding, Ctor, Expr
from adopter.engine.bindings import InitIndex

_LINEAR = "torch.nn.Linear"


def may_be_passed_projections(targets: Sequence[str], init: InitIndex) -> bool:
    """Whether the submodules `targets` (`self.w1`, `self.w3`) are different, each an `nn.Linear` or passed
    in, and at least one passed in (see the module docstring)."""
    if len(set(targets)) != len(targets):
        return False
    if any(not t.startswith("self.") or "[" in t for t in targets):
        return False
    bindings = [init.bindings_of(t[len("self."):]) for t in targets]
    if _built_alike(bindings):
        return True
    params = {p.name for p in init.parameters()}
    kinds = [_kind(bs, params) for bs in bindings]
    if None in kinds or "passed" not in kinds:
        return False
    # two attributes holding one value handed in (`self.w1 = self.w3 = proj`) are one module on both sides
    passed = [{b.value.text.strip() for b in bs if isinstance(b.value, Expr)} for bs in bindings]
    return not set.intersection(*passed)


def _built_alike(bindings: Sequence[Sequence[Binding]]) -> bool:
    """Each target bound once, unconditionally, to a call of one imported class that is not torch's, with
    the same arguments (fairscale's `ColumnParallelLinear(dim, hidden, bias=False, ...)` twice)."""
    if len(bindings) < 2 or any(len(bs) != 1 or bs[0].condition is not None for bs in bindings):
        return False
    ctors = [bs[0].value for bs in bindings]
    first = ctors[0]
    if not isinstance(first, Ctor) or first.items or first.lookup is not None or first.lead:
        return False
    if "." not in first.callee or first.callee.startswith("torch."):
        return False  # a class of this file is read through; a torch layer is known (Linear: f14-swiglu)
    return all(isinstance(c, Ctor) and _call_text(c) == _call_text(first) for c in ctors[1:])


def _call_text(ctor: Ctor) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    return (ctor.callee, tuple(_text(a) for a in ctor.args), tuple((k.name, _text(k.value)) for k in ctor.kwargs))


def _text(value: object) -> str:
    return " ".join(value.text.split()) if isinstance(value, Expr) else repr(value)


def _kind(bindings: Sequence[Binding], params: set[str]) -> str | None:
    """"linear", "passed" (some binding is passed in, the others `nn.Linear`) or None (anything else)."""
    kinds = {_binding_kind(b, params) for b in bindings}
    if not kinds or None in kinds:
        return None  # no binding in this `__init__`, or one known to be something else
    return "passed" if "passed" in kinds else "linear"


def _binding_kind(binding: Binding, params: set[str]) -> str | None:
    value = binding.value
    if isinstance(value, Ctor):
        if value.items or value.lookup is not None:
            return None
        if value.callee == _LINEAR:
            return "linear"
        # a method of a value passed in (`config.w1.build()`): the caller's choice
        root, dot, _ = value.callee.partition(".")
        return "passed" if dot and root in params else None
    return "passed" if value.text.strip() in params else None
