"""What cross-file reach knows of a name another file defines: where it is, and what it computes."""

from __future__ import annotations

from dataclasses import dataclass

from adopter.analysis.crossfile.evaluator import UNKNOWN


@dataclass(frozen=True, slots=True)
class Definition:
    """Where jedi found a name defined: the file, the 1-based line and the name there."""

    path: str
    line: int
    name: str


@dataclass(frozen=True, slots=True)
class Summary:
    """What an imported name is, as far as reading its code tells (see the module docstring)."""

    kind: str  # "layer" | "registry" | "factory" | "config" | "other"
    definition: Definition
    layer: str | None = None  # layer: the torch.nn class it computes
    layer_kwargs: tuple[tuple[str, str], ...] = ()  # layer: constructor keywords that say which variant
    own_init: bool = False  # layer: it has its own __init__ (its arguments are not the torch layer's)
    norm_act: bool = False  # layer: a BatchNorm whose forward activates after the norm (`norm_act`)
    eval_norm: bool = False  # layer: a BatchNorm subclass whose forward is that norm in eval mode only (`eval_norm`)
    linear_forward: bool = False  # layer: an nn.Linear by its forward's linear map of its own weight (`linear_forward`)
    formula: str = ""  # layer: the `origin` suffix of a GELU or LayerNorm its forward writes out (`formula_layers`)
    entries: tuple[tuple[str, str], ...] = ()  # registry: key -> qualified class (in the registry's file)
    ignore_case: bool = False  # registry: its lookups compare keys without case
    registry: str | None = None  # factory: the registry it looks up, qualified in the factory's file
    key_steps: tuple[tuple[str, tuple[object, ...]], ...] = ()  # factory: string methods applied to the key
    registry_from: str | None = None  # factory: the file `registry` is named in, when not the factory's own
    defaults: tuple[tuple[str, object], ...] = ()  # config: field -> default value

    def default(self, field_name: str) -> object:
        for name, value in self.defaults:
            if name == field_name:
                return value
        return UNKNOWN

    def entry(self, key: str) -> str | None:
        for name, value in self.entries:
            if name == key:
                return value
        if self.ignore_case:
            found = [v for n, v in self.entries if n.lower() == key.lower()]
            return found[0] if len(found) == 1 else None
        return None
