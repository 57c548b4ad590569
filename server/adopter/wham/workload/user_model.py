"""Build an `nn.Module` class of the user's file for the search: its constructor arguments and example inputs.

Runs only in the tracing subprocess (it imports the user's file). A `transformers`-style `config`
argument is built from the configuration class the file imports (with its defaults); other
constructors from their default arguments. The inputs come from `forward`'s signature: known names
(`input_ids`, `attention_mask`, `pixel_values`, `hidden_states`, …) take their sizes from the config,
a generic first argument (`x`, `input`, …) from the model's first layer. The model is built on the
meta device, so no weights are allocated. When something cannot be inferred, `UserModelError` says
what and how to give a factory instead.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

# torch is imported inside the functions that build: `source_digest` is called by the search process,
# which never imports torch (only the tracing subprocess does).


class UserModelError(Exception):
    """The class could not be built or given inputs; the message says why and how to say it."""


def how_to(class_name: str) -> str:
    """The two ways to tell the search how to build a class."""
    return (f"Give a factory: in pyproject.toml, [tool.adopter.search] factories = {{ {class_name} = "
            f"\"mypkg.models:make_model\" }} (a function taking batch and seq and returning (model, example inputs)), "
            "or choose module:factory… in the search's quick pick.")


def source_digest(path: str) -> bytes:
    """SHA-256 over the file and the `.py` files beside it (its configuration module), for the trace cache."""
    h = hashlib.sha256()
    here = Path(path)
    for f in sorted(here.parent.glob("*.py")) if here.parent.is_dir() else [here]:
        try:
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        except OSError:
            pass
    return h.digest()


def import_file(path: str) -> Any:
    """Import the file as the module it is in its package (so relative imports work), else by path."""
    file = Path(path).resolve()
    if not file.is_file():
        raise UserModelError(f"{path} does not exist (save the file first)")
    sys.dont_write_bytecode = True  # leave no __pycache__ folders in the user's workspace
    parts, folder = [file.stem], file.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    sys.path.insert(0, str(folder))
    if len(parts) > 1:
        return importlib.import_module(".".join(parts))
    name = f"adopter_user_{file.stem}"  # never shadows a real module called like the file
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _annotation(param: inspect.Parameter, module: Any) -> Any:
    ann = param.annotation
    if isinstance(ann, str):
        try:
            ann = eval(ann, vars(module))  # the file's own names: it is being imported anyway
        except Exception:
            return None
    return None if ann is inspect.Parameter.empty else ann


def _config_classes(module: Any) -> list[type]:
    return [v for k, v in vars(module).items() if inspect.isclass(v) and k.endswith("Config")]


def config_class(cls: type, param: inspect.Parameter, module: Any) -> type | None:
    """The configuration class for `cls`'s `config` argument: its annotation, `cls.config_class`, or the
    `*Config` class the file imports whose name shares the longest prefix with the model's."""
    ann = _annotation(param, module)
    if inspect.isclass(ann):
        return ann
    declared = getattr(cls, "config_class", None)
    if inspect.isclass(declared):
        return declared
    found = _config_classes(module)
    if not found:
        return None

    def shared(c: type) -> int:
        a, b = cls.__name__, c.__name__
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    return max(found, key=shared)


def constructor_arguments(cls: type, module: Any) -> tuple[dict[str, Any], Any]:
    """Keyword arguments for `cls(...)` and the config object (None when it takes none)."""
    kwargs: dict[str, Any] = {}
    config = None
    init = cls.__init__  # type: ignore[misc]  # the class's own __init__, read, never called here
    for name, param in list(inspect.signature(init).parameters.items())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.default is not param.empty:
            continue
        ann = _annotation(param, module)
        is_config = name in ("config", "cfg", "configuration") or (
            inspect.isclass(ann) and ann.__name__.endswith("Config")) or (
            isinstance(param.annotation, str) and param.annotation.endswith("Config"))
        if not is_config:
            raise UserModelError(f"{cls.__name__}.__init__ needs `{name}`, which has no default, and it is not a "
                                 f"configuration object the search can build. {how_to(cls.__name__)}")
        config_cls = config_class(cls, param, module)
        if config_cls is None:
            raise UserModelError(f"{cls.__name__}.__init__ takes `{name}`, but the file imports no configuration "
                                 f"class (a name ending in Config) to build it from. {how_to(cls.__name__)}")
        try:
            config = config_cls()
        except Exception as exc:
            raise UserModelError(f"{config_cls.__name__}() with its defaults failed ({type(exc).__name__}: {exc}). "
                                 f"{how_to(cls.__name__)}") from exc
        kwargs[name] = config
    return kwargs, config


def _cfg(config: Any, *names: str) -> int | None:
    for n in names:
        v = getattr(config, n, None) if config is not None else None
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
        if isinstance(v, (tuple, list)) and v and isinstance(v[0], int):
            return int(v[0])
    return None


def _first_layer(model: nn.Module) -> nn.Module | None:
    from torch import nn

    for m in model.modules():
        if isinstance(m, (nn.Embedding, nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.LayerNorm)):
            return m
    return None


def _generic_input(model: nn.Module, batch: int, seq: int) -> Any:
    """An input for a `forward(x)` from the first layer the model owns."""
    import torch
    from torch import nn

    first = _first_layer(model)
    sequence_model = any(isinstance(m, (nn.Embedding, nn.MultiheadAttention, nn.LayerNorm)) for m in model.modules())
    if isinstance(first, nn.Embedding):
        return torch.randint(0, first.num_embeddings, (batch, seq), device="meta")
    if isinstance(first, nn.Linear):
        shape = (batch, seq, first.in_features) if sequence_model else (batch, first.in_features)
        return torch.randn(shape, device="meta")
    if isinstance(first, nn.LayerNorm):
        return torch.randn((batch, seq, *first.normalized_shape), device="meta")
    if isinstance(first, nn.Conv1d):
        return torch.randn((batch, first.in_channels, seq), device="meta")
    if isinstance(first, nn.Conv2d):
        return torch.randn((batch, first.in_channels, seq, seq), device="meta")
    if isinstance(first, nn.Conv3d):
        return torch.randn((batch, first.in_channels, 16, seq, seq), device="meta")
    return None


GENERIC = ("x", "input", "inputs", "inp", "src", "features", "images", "image", "img", "tokens", "data", "hidden")


def example_inputs(model: nn.Module, config: Any, batch: int, seq: int) -> dict[str, Any]:
    """Keyword inputs for `model.forward`, on the meta device."""
    import torch

    params = dict(list(inspect.signature(model.forward).parameters.items()))
    seq = min(seq, _cfg(config, "max_position_embeddings", "n_positions") or seq)
    vocab = _cfg(config, "vocab_size") or 1000
    hidden = _cfg(config, "hidden_size", "d_model", "n_embd", "dim")
    image = _cfg(config, "image_size") or 224
    channels = _cfg(config, "num_channels") or 3
    ids = torch.randint(0, vocab, (batch, seq), device="meta")
    known: dict[str, Any] = {
        "input_ids": ids,
        "decoder_input_ids": ids,
        "pixel_values": torch.randn((batch, channels, image, image), device="meta"),
    }
    if hidden:
        known["hidden_states"] = torch.randn((batch, seq, hidden), device="meta")
        known["inputs_embeds"] = known["hidden_states"]
    out: dict[str, Any] = {}
    primary = next((n for n in ("input_ids", "pixel_values", "hidden_states", "inputs_embeds") if n in params and n in known), None)
    if primary:
        out[primary] = known[primary]
        if primary == "input_ids":
            if "attention_mask" in params:
                out["attention_mask"] = torch.ones((batch, seq), dtype=torch.long, device="meta")
            if "decoder_input_ids" in params:
                out["decoder_input_ids"] = ids
    for name, param in params.items():
        if name in out or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.default is not param.empty:
            continue
        if name in known:
            out[name] = known[name]
            continue
        generic = _generic_input(model, batch, seq) if name in GENERIC or not out else None
        if generic is None:
            raise UserModelError(f"{type(model).__name__}.forward needs `{name}`, and the search cannot tell its shape. "
                                 f"{how_to(type(model).__name__)}")
        out[name] = generic
    if not out:
        raise UserModelError(f"{type(model).__name__}.forward takes no input the search knows how to make. "
                             f"{how_to(type(model).__name__)}")
    return out


def build(path: str, class_name: str, batch: int, seq: int) -> tuple[nn.Module, dict[str, Any], None]:
    """(model on the meta device, keyword inputs, None for the default loss) for class `class_name` of `path`."""
    import torch
    from torch import nn

    try:
        module = import_file(path)
    except UserModelError:
        raise
    except Exception as exc:
        raise UserModelError(f"importing {path} failed: {type(exc).__name__}: {exc}. The search imports the file "
                             f"with the server's Python: it needs the file's imports installed there.") from exc
    cls = getattr(module, class_name, None)
    if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
        raise UserModelError(f"{path} has no nn.Module class {class_name} at its top level")
    kwargs, config = constructor_arguments(cls, module)
    try:
        with torch.device("meta"):
            model = cls(**kwargs)
    except Exception as exc:
        raise UserModelError(f"{class_name}({', '.join(kwargs)}) failed: {type(exc).__name__}: {exc}. "
                             f"{how_to(class_name)}") from exc
    return model, example_inputs(model, config, batch, seq), None
