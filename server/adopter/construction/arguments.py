"""Constructor arguments for a class: defaults where it has them, small sizes its parameter names say,
and a small instance of the package's configuration class for a `config` parameter."""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
import sys
from typing import Any

from adopter.construction.names import HEADS, LAYERS, kind_of, value_for
from adopter.construction.submodules import adapted_layer, annotated_submodule, callable_for
from adopter.construction.types import NotBuilt

CONFIG_NAMES = ("config", "cfg", "configuration", "conf", "args", "hparams", "params", "model_args",
                "model_config", "model_cfg")
# Config attributes that count repeated layers: set to LAYERS so a small config builds one block.
_LAYER_ATTRS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "num_decoder_layers",
                "num_encoder_layers", "encoder_layers", "decoder_layers", "depth", "depths", "num_blocks",
                "layers")


def annotation(param: inspect.Parameter, module: Any) -> Any:
    """The parameter's annotation, evaluated in the module's namespace when it is a string; None if absent."""
    ann = param.annotation
    if isinstance(ann, str):
        try:
            ann = eval(ann, vars(module) if module is not None else {})  # the module is imported anyway
        except Exception:
            return None
    return None if ann is inspect.Parameter.empty else ann


def _config_classes(namespace: dict[str, Any]) -> list[type]:
    return [v for k, v in namespace.items() if inspect.isclass(v) and k.endswith("Config")]


def _package_config_classes(module: Any) -> list[type]:
    """`*Config` classes of the module, then of the modules beside it in its package (configuration_*.py)."""
    found = _config_classes(vars(module)) if module is not None else []
    if found:
        return found
    package = getattr(module, "__package__", None)
    pkg = sys.modules.get(package) if package else None
    for info in pkgutil.iter_modules(getattr(pkg, "__path__", None) or []):
        if "config" not in info.name:
            continue
        try:
            found.extend(_config_classes(vars(importlib.import_module(f"{package}.{info.name}"))))
        except Exception:
            continue
    return found


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def config_class(cls: type, param: inspect.Parameter, module: Any) -> type | None:
    """The configuration class for `cls`'s config parameter: its annotation, `cls.config_class`, or the
    `*Config` class of the module (or its package) whose name shares the longest prefix with the class's."""
    ann = annotation(param, module)
    declared = getattr(cls, "config_class", None)
    if inspect.isclass(ann) and ann.__module__ != "builtins" and ann.__name__ not in ("dict", "Any"):
        # An annotation may name the base class only (transformers' `config: PretrainedConfig`), which has
        # none of the model's fields: the class's own `config_class`, or the package's subclass of the
        # annotation closest to the class's name, says more.
        if inspect.isclass(declared) and declared is not ann and issubclass(declared, ann):
            return declared
        narrower = [c for c in _package_config_classes(module) if c is not ann and issubclass(c, ann)]
        return max(narrower, key=lambda c: _shared_prefix(cls.__name__, c.__name__)) if narrower else ann
    if inspect.isclass(declared):
        return declared
    found = _package_config_classes(module)
    if not found:
        return None
    return max(found, key=lambda c: _shared_prefix(cls.__name__, c.__name__))


def shrink_config(config: Any) -> Any:
    """Make a config small where that cannot break it: one layer per stack (each entry of a list of stage
    depths too). Widths and head counts stay as the config has them (they divide each other already)."""
    for attr in _LAYER_ATTRS:
        value = getattr(config, attr, None)
        try:
            if isinstance(value, int) and not isinstance(value, bool) and value > LAYERS:
                setattr(config, attr, LAYERS)
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
                setattr(config, attr, type(value)(min(v, LAYERS) for v in value))
        except Exception:
            continue
    return config


# Which boolean parameters a variant flips: "all" (every one, to its non-default value) or "on" (only those
# off by default, switched on: the optional layers a flag adds, `use_bn=False`, `use_batch_norm=False`).
FLIPS = ("all", "on")
# Flags that are never flipped: loading or fetching weights (a variant must not download anything), and
# choosing a kernel or a memory saver (flash/xformers/triton/CUDA kernels, fused ops, checkpointing,
# compilation), which select how the same layers run, not which layers there are.
_NEVER_FLIPPED = re.compile(r"pretrain|download|hub|checkpoint|load|flash|xformers|triton|cuda|fused|fuse_|compile|"
                            r"jit|script|memory_efficient|mem_efficient|deterministic|offload|distributed|fsdp|"
                            r"quantiz|fp16|bf16|half|amp\b|verbose|debug", re.IGNORECASE)


def _flipped(params: list[tuple[str, inspect.Parameter]], flip: str | None, module: Any) -> dict[str, bool]:
    """The values `flip` gives the boolean parameters: a bool default negated, or True for a parameter with
    no default annotated `bool` (which is otherwise given False). Chosen by type and default alone."""
    out: dict[str, bool] = {}
    if flip is None:
        return out
    for name, param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = param.default
        if default is param.empty and annotation(param, module) in (bool, "bool"):
            default = False
        if isinstance(default, bool) and (flip == "all" or not default) and not _NEVER_FLIPPED.search(name):
            out[name] = not default
    return out


def boolean_parameters(cls: type, module: Any = None) -> tuple[str, ...]:
    """The boolean parameters a variant may flip: the constructor's, and (as `config.NAME`) those its
    config class declares in its own `__init__` (a base class's `**kwargs` are not its)."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.items())[1:]  # type: ignore[misc]
    except (TypeError, ValueError):
        return ()
    names = list(_flipped(params, "all", module))
    for name, param in params:
        if param.default is param.empty and _is_config_param(name, param, module):
            config_cls = config_class(cls, param, module)
            if config_cls is not None:
                names += [f"{name}.{n}" for n in _config_flips(config_cls, "all")]
    return tuple(names)


def _config_flips(config_cls: type, flip: str | None) -> dict[str, bool]:
    try:
        params = list(inspect.signature(config_cls.__init__).parameters.items())[1:]  # type: ignore[misc]
    except (TypeError, ValueError):
        return {}
    return _flipped(params, flip, sys.modules.get(config_cls.__module__))


def _build_config(config_cls: type, small: bool, flip: str | None = None) -> Any:
    config = config_cls(**_config_flips(config_cls, flip))
    return shrink_config(config) if small else config


def _is_config_param(name: str, param: inspect.Parameter, module: Any) -> bool:
    ann = annotation(param, module)
    named = isinstance(param.annotation, str) and param.annotation.split(".")[-1].strip("'\"").endswith("Config")
    return name in CONFIG_NAMES or named or (inspect.isclass(ann) and ann.__name__.endswith("Config"))


def nn_module() -> type:
    from torch import nn

    return nn.Module


# Parameters that name the callable a wrapper applies (`PreNorm(dim, fn)`, `Residual(fn)`, `EMA(model)`):
# given a module that passes its first input through, so the wrapper's own code builds and runs.
# Reversible blocks name their two halves `f` and `g`; a model made of parts names them `encoder`, `backbone`.
_WRAPPED = re.compile(r"^(fn|f|g|func|function|net|model|module|layer|block|sublayer|sub_layer|inner|wrapped|"
                      r"submodule|sub_module|inner_module|base_model|wrapped_module|encoder|decoder|backbone|"
                      r"image_encoder|text_encoder|trunk|body)$")


@functools.cache
def passthrough_class() -> type:
    """`Passthrough`: an nn.Module whose forward takes any arguments and returns the first one."""
    from torch import nn

    class Passthrough(nn.Module):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return args[0] if args else next(iter(kwargs.values()), None)

    return Passthrough


def _typed_default(name: str, param: inspect.Parameter, module: Any, width: int, depth: int = 0) -> tuple[bool, Any]:
    """(found, value) for a parameter without default: a sub-module its annotation names, a module for a
    wrapped callable or an adapted layer, by its name, else by its annotation."""
    kind = kind_of(name)
    ann = annotation(param, module)
    if (sub := annotated_submodule(ann, module, width, depth, constructor_arguments)) is not None:
        return True, sub
    if _WRAPPED.match(name.lower()) or ann is nn_module():
        return True, passthrough_class()()
    if (layer := adapted_layer(name, width)) is not None:
        return True, layer
    if ann is bool or ann == "bool":
        return True, False
    if name == "dtype":
        import torch

        return True, torch.float32
    if name == "device":
        return True, None
    if kind is not None:
        value = value_for(kind, width)
        if ann is float or ann == "float":
            return True, float(value)
        if kind == "layers" and (ann in (list, tuple) or str(ann).startswith(("list[int]", "tuple[int", "typing.List[int]"))):
            return True, [LAYERS] * 4
        return True, value
    if (made := callable_for(name, ann, passthrough_class())) is not None:
        return True, made
    if inspect.isclass(ann) and ann.__module__ not in ("builtins", "typing") and not issubclass(ann, nn_module()):
        try:
            return True, ann()  # a settings class (a dataclass of defaults, say): its defaults
        except Exception:
            pass
    if ann is int or ann == "int":
        return True, HEADS
    if ann is float or ann == "float":
        return True, 0.1
    return False, None


def constructor_arguments(cls: type, module: Any = None, *, width: int = 32, small: bool = True,
                          fill_defaults: bool = False, flip: str | None = None, depth: int = 0,
                          ) -> tuple[dict[str, Any], Any, tuple[str, ...]] | NotBuilt:
    """(keyword arguments for `cls(...)`, the config object or None, the names whose values were guessed),
    or `NotBuilt` naming the first required parameter nothing could supply.

    Parameters with defaults keep them unless `fill_defaults` (then size-named ones are made small too,
    which the oracle uses to keep default-constructed models cheap to trace). `flip` ("all" or "on", see
    `FLIPS`) builds a variant with the boolean parameters (the config class's too) flipped: code behind
    a flag that is off by default (`if use_bn:`) runs in it. `depth` counts the sub-modules being built
    for an owner's annotated parameters (`submodules.annotated_submodule`)."""
    try:
        params = list(inspect.signature(cls.__init__).parameters.items())[1:]  # type: ignore[misc]
    except (TypeError, ValueError) as exc:
        return NotBuilt(cls.__name__, "arguments", f"its __init__ signature cannot be read ({exc})")
    kwargs: dict[str, Any] = dict(_flipped(params, flip, module))
    config = None
    guessed: list[str] = list(kwargs)
    for name, param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in kwargs:
            continue
        if param.default is not param.empty:
            if fill_defaults and kind_of(name) in ("layers",) and isinstance(param.default, int) \
                    and not isinstance(param.default, bool) and param.default > LAYERS:
                kwargs[name] = LAYERS
                guessed.append(name)
            continue
        if _is_config_param(name, param, module):
            config_cls = config_class(cls, param, module)
            if config_cls is None:
                return NotBuilt(cls.__name__, "arguments", "no configuration class (a name ending in Config) "
                                "was found in the module or its package to build it from", name)
            try:
                config = _build_config(config_cls, small, flip)
            except Exception as exc:
                return NotBuilt(cls.__name__, "arguments", f"{config_cls.__name__}() with its defaults failed "
                                f"({type(exc).__name__}: {exc})", name)
            kwargs[name] = config
            guessed.append(name)
            continue
        found, value = _typed_default(name, param, module, width, depth)
        if not found:
            return NotBuilt(cls.__name__, "arguments", "it has no default and its name does not say what it "
                            "holds; give a factory (module:fn)", name)
        kwargs[name] = value
        guessed.append(name)
    return kwargs, config, tuple(guessed)
