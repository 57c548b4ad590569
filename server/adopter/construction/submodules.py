"""Constructor arguments that are themselves layers: a factory for one (`norm_factory`, an annotated
`Callable[..., nn.Module]`), a layer a wrapper adapts (`base_layer`), or a sub-module whose annotation names
its class (`encoder: Encoder`), built in turn the way its owner is."""

from __future__ import annotations

import collections.abc
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

# Parameters that hold a callable making a layer: a name ending so, or a `Callable` annotation whose return
# is a module. (A `_fn` or a `Callable[[Tensor], Tensor]` applies itself to tensors: `callable_for`.)
_FACTORY = re.compile(r"(_factory|_cls|_class|_builder|_constructor|_layer_cls|_module_cls)$")
# A layer an adapter wraps and reads the sizes of (LoRA-style `base_layer.in_features`): a Linear.
_ADAPTED = re.compile(r"^(base_layer|base_module|original_layer|original_module|target_layer|target_module|"
                      r"linear|orig_linear)$")
MAX_DEPTH = 2  # sub-modules of sub-modules built from annotations; deeper ones are not tried


def is_callable_annotation(ann: Any) -> bool:
    """Whether an annotation is a `Callable[...]` (typing's or collections.abc's, bare or subscripted)."""
    origin = typing.get_origin(ann) or ann
    if origin is typing.Union or type(ann).__name__ == "UnionType":  # `Callable[...] | None`
        return any(is_callable_annotation(a) for a in typing.get_args(ann) if a is not type(None))
    return origin is collections.abc.Callable


def _returns_a_module(ann: Any) -> bool:
    from torch import nn

    args = typing.get_args(ann)
    if typing.get_origin(ann) is typing.Union or type(ann).__name__ == "UnionType":
        return any(_returns_a_module(a) for a in args)
    result = args[-1] if len(args) == 2 else None
    return inspect.isclass(result) and issubclass(result, nn.Module)


def callable_for(name: str, ann: Any, passthrough: Any) -> Any:
    """What a callable parameter gets: a layer class for a factory (a LayerNorm for a norm, a GELU for an
    activation, else an Identity, which accepts any sizes), a module passing its first input through for a
    function on tensors (`Callable` annotated otherwise); None when the parameter holds no callable."""
    from torch import nn

    factory = _FACTORY.search(name.lower()) or (is_callable_annotation(ann) and _returns_a_module(ann))
    if not factory:
        return passthrough() if is_callable_annotation(ann) else None
    low = name.lower()
    if "norm" in low:
        return nn.LayerNorm
    if "act" in low or "nonlin" in low:
        return nn.GELU
    return nn.Identity


def adapted_layer(name: str, width: int) -> Any:
    """A Linear(width, width) for a parameter naming the layer an adapter wraps, else None."""
    from torch import nn

    return nn.Linear(width, width) if _ADAPTED.match(name.lower()) else None


def annotated_submodule(ann: Any, module: Any, width: int, depth: int, arguments_for: Callable[..., Any]) -> Any:
    """An instance of the concrete nn.Module subclass an annotation names (`encoder: Encoder`), its own
    arguments chosen as its owner's are (`arguments_for`: `arguments.constructor_arguments`, passed in so
    this module stays below it); None when the annotation names none or it cannot be built."""
    import sys

    from torch import nn

    if not (inspect.isclass(ann) and issubclass(ann, nn.Module)) or ann is nn.Module or inspect.isabstract(ann):
        return None
    if depth >= MAX_DEPTH:
        return None
    chosen = arguments_for(ann, sys.modules.get(ann.__module__, module), width=width, depth=depth + 1)
    if not isinstance(chosen, tuple):
        return None
    try:
        return ann(**chosen[0])
    except Exception:
        return None
