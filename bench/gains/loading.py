"""Import the original and rewritten code side by side and build models with the same weights."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from gains.models import ModelSpec
from gains.prepare import TF435
from tf435 import unusable_reason

VARIANTS = ("original", "model", "full")  # original code; rewritten model file; rewritten model + script
VARIANT_TITLES = {"original": "original model + original script",
                  "model": "rewritten model + original script",
                  "full": "rewritten model + rewritten script (fused AdamW)"}


def use_transformers() -> ModuleType:
    """Import transformers 4.35.0 from .cache/tf435 (never from the venv); raise with the fix if missing."""
    if (reason := unusable_reason()) is not None:
        raise FileNotFoundError(reason)
    if str(TF435) not in sys.path:
        sys.path.append(str(TF435))  # after the venv, so the venv's torch and numpy are the ones used
    import transformers

    if transformers.__version__ != "4.35.0":
        raise RuntimeError(f"expected transformers 4.35.0 from {TF435}, got {transformers.__version__} "
                           f"from {transformers.__file__}")
    return transformers


def load_file(name: str, path: Path) -> ModuleType:
    """Import the file at `path` as module `name` (a sibling name resolves the file's relative imports)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


@dataclass(frozen=True, slots=True)
class Code:
    """The modeling module and training script one variant runs."""

    modeling: ModuleType
    script: ModuleType


def load_variants(spec: ModelSpec, rewritten_model: str | None, original_script: str,
                  rewritten_script: str | None, per_rule: dict[str, str] | None = None) -> dict[str, Code]:
    """Modeling module and script per variant; a missing rewrite falls back to the original code.

    `per_rule` maps a rule id to a copy fixed with that rule alone: variant `rule:<id>`, original script.
    """
    use_transformers()
    original = importlib.import_module(spec.module)
    # The rewritten copy is imported as a sibling of the original, so `from ...activations import ...`
    # and `from .configuration_x import ...` resolve to the very same objects (one config class for both).
    rewritten = load_file(f"{spec.module}_adopter", Path(rewritten_model)) if rewritten_model else original
    script = load_file("gains_train_script", Path(original_script))
    script_fixed = load_file("gains_train_script_adopter", Path(rewritten_script)) if rewritten_script else script
    code = {"original": Code(original, script), "model": Code(rewritten, script),
            "full": Code(rewritten, script_fixed)}
    for i, (rule, path) in enumerate(sorted((per_rule or {}).items())):
        code[f"rule:{rule}"] = Code(load_file(f"{spec.module}_adopter_rule{i}", Path(path)), script)
    return code


def dropout_left(model: Any) -> list[str]:
    """Submodules that would still drop out: nn.Dropout with p > 0 or float `*drop*` attributes > 0."""
    import torch

    left = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0:
            left.append(f"{name or '<root>'} (p={module.p})")
            continue
        for attr, value in vars(module).items():
            if "drop" in attr.lower() and isinstance(value, float) and value > 0:
                left.append(f"{name or '<root>'}.{attr}={value}")
    return left


def build_models(spec: ModelSpec, code: dict[str, Code], config: Any, seed: int, variants: tuple[str, ...],
                 device: str) -> dict[str, Any]:
    """One model per variant, the original randomly initialised from `seed`, the others loading its weights."""
    import torch

    torch.manual_seed(seed)
    reference = getattr(code["original"].modeling, spec.task_class)(config)
    state = reference.state_dict()
    models: dict[str, Any] = {}
    for v in variants:
        cls = getattr(code[v].modeling, spec.task_class)
        if v == "original":
            model = reference
        else:
            model = cls(config)
            model.load_state_dict(state, strict=True)  # raises on any missing or unexpected key
        models[v] = model.to(device).train()
    return models
