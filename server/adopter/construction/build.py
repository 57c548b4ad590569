"""Construct a class (from a factory, or from inferred arguments) and make its example inputs; never raises."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import torch
from torch import nn

from adopter.construction.arguments import constructor_arguments
from adopter.construction.inputs import forward_inputs
from adopter.construction.names import SEQ, SPATIAL, WIDTHS
from adopter.construction.types import Built, Construction, NotBuilt


def load_factory(spec: str) -> Any:
    """The function named by `module:fn` (dotted attributes allowed after the colon); raises ValueError
    for a malformed spec, ImportError/AttributeError when it does not resolve."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"a factory is written module:function, got {spec!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{spec} is not callable")
    return obj


def _from_factory(spec: str, batch: int, seq: int, device: Any) -> Construction:
    """A factory returns a model, or (model, inputs) with inputs a tuple, a dict, or one tensor; it is
    called with `batch` and `seq` when it takes them."""
    try:
        fn = load_factory(spec)
        params = inspect.signature(fn).parameters
        given = {k: v for k, v in (("batch", batch), ("seq", seq)) if k in params}
        with torch.device(device) if device is not None else _nothing():
            out = fn(**given)
    except Exception as exc:
        return NotBuilt(spec, "factory", f"{type(exc).__name__}: {exc}")
    model, inputs = (out[0], out[1]) if isinstance(out, tuple) and len(out) == 2 else (out, None)
    if not isinstance(model, nn.Module):
        return NotBuilt(spec, "factory", f"it returned {type(model).__name__}, not an nn.Module")
    if inputs is None:
        made = forward_inputs(model, batch=batch, seq=seq, device=device)
        if isinstance(made, NotBuilt):
            return made
        return Built(model, made[0], made[1], {"factory": spec}, made[2])
    if isinstance(inputs, dict):
        return Built(model, (), dict(inputs), {"factory": spec})
    return Built(model, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,), {}, {"factory": spec})


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _describe(value: Any) -> str:
    return type(value).__name__ if not isinstance(value, (int, float, bool, str, type(None), list, tuple)) else repr(value)


def construct(cls: type, module: Any = None, *, factory: str | None = None, device: Any = "meta",
              batch: int = 2, seq: int = SEQ, spatial: int = SPATIAL, small: bool = True,
              inputs: Any = None, generic_inputs: bool = False, flip: str | None = None) -> Construction:
    """Build `cls` (defined in `module`, whose namespace resolves annotations and config classes) on
    `device` ("meta" by default: no weights are allocated) and example inputs for it.

    `factory` (`module:fn`) replaces the inference; `inputs` (a tuple of positional inputs, or a dict of
    keyword inputs) replaces the inferred inputs. Tries each width in `WIDTHS` until the constructor
    accepts one (a head count it defaults to may not divide the first). `generic_inputs` gives a model
    whose layers say nothing about its input a `(B, T, width)` one. `flip` builds a variant with its
    boolean parameters flipped (`constructor_arguments`). Never raises."""
    name = getattr(cls, "__name__", repr(cls))
    if factory is not None:
        return _from_factory(factory, batch, seq, device)
    if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
        return NotBuilt(name, "arguments", "it is not an nn.Module class")
    if inspect.isabstract(cls):
        return NotBuilt(name, "arguments", "it is abstract")
    failure: NotBuilt | None = None
    for width in WIDTHS:
        with torch.device(device) if device is not None else _nothing():  # sub-module arguments too
            chosen = constructor_arguments(cls, module, width=width, small=small, fill_defaults=small, flip=flip)
        if isinstance(chosen, NotBuilt):
            return chosen
        kwargs, config, guessed = chosen
        try:
            model = _instantiate(cls, kwargs, device)
        except Exception as exc:
            failure = NotBuilt(name, "construct", f"{name}({', '.join(f'{k}={_describe(v)}' for k, v in kwargs.items())}) "
                               f"failed: {type(exc).__name__}: {str(exc)[:300]}", _missing_from(exc))
            listed = as_lists(kwargs, guessed) if wants_a_list(exc) else None
            try:
                if listed is None:
                    raise
                model, kwargs = _instantiate(cls, listed, device), listed
            except Exception:
                if not guessed:
                    return failure
                continue
        described = {k: _describe(v) for k, v in kwargs.items()}
        if inputs is not None:
            args, kw = (((), dict(inputs)) if isinstance(inputs, dict) else
                        (tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,), {}))
            return Built(model, args, kw, described, guessed)
        with torch.device(device) if device is not None else _nothing():
            made = forward_inputs(model, config, batch=batch, seq=seq, spatial=_spatial(kwargs, model, spatial),
                                  device=device, arguments=kwargs, generic_width=width if generic_inputs else None)
        if isinstance(made, NotBuilt):
            return made
        return Built(model, made[0], made[1], described, guessed + made[2])
    assert failure is not None
    return failure


# What a constructor says when it iterates or indexes a number it was given for a list (`for d in dims`,
# `layers[0]`): the guessed numbers with plural names are given as lists instead (`as_lists`).
_WANTS_A_LIST = ("'int' object is not iterable", "'int' object is not subscriptable", "object of type 'int' has no len()")


def wants_a_list(exc: Exception) -> bool:
    return isinstance(exc, TypeError) and any(s in str(exc) for s in _WANTS_A_LIST)


def as_lists(kwargs: dict[str, Any], guessed: tuple[str, ...]) -> dict[str, Any] | None:
    """`kwargs` with each guessed integer whose name is plural (`dims`, `layers`, `depths`, `channels`)
    made a list of four of it (four stages: the common count of a ResNet or U-Net's stage lists); None when
    there is none."""
    plural = {k for k in guessed if k.lower().endswith("s") and isinstance(kwargs.get(k), int)
              and not isinstance(kwargs.get(k), bool)}
    return {k: [v] * 4 if k in plural else v for k, v in kwargs.items()} if plural else None


def _instantiate(cls: type, kwargs: dict[str, Any], device: Any) -> nn.Module:
    """`cls(**kwargs)` on `device`. On the meta device a constructor that reads a value out of a tensor it
    made (`[x.item() for x in torch.linspace(0, rate, depth)]`) cannot run; it is built on the CPU (at the
    small sizes chosen) and moved to meta."""
    try:
        with torch.device(device) if device is not None else _nothing():
            model: nn.Module = cls(**kwargs)
            return model
    except Exception as exc:
        if str(device) != "meta" or not _needs_data(exc):
            raise
    on_cpu: nn.Module = cls(**kwargs)
    return on_cpu.to("meta")


def _needs_data(exc: Exception) -> bool:
    text = str(exc)
    return "cannot be called on meta tensors" in text or "Cannot copy out of meta tensor" in text


def _spatial(kwargs: dict[str, Any], model: nn.Module, default: int) -> int:
    """The image side the model was built for, when its arguments or attributes say one."""
    for source in (kwargs, vars(model)):
        for key in ("img_size", "image_size", "input_size", "resolution"):
            v = source.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
            if isinstance(v, (tuple, list)) and v and isinstance(v[-1], int):
                return int(v[-1])
    return default


def _missing_from(exc: Exception) -> str | None:
    """The argument a TypeError says is missing (`__init__() missing 1 required positional argument: 'x'`)."""
    text = str(exc)
    if isinstance(exc, TypeError) and "missing" in text and "'" in text:
        return text.split("'")[1]
    return None
