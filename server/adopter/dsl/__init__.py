"""The Adopter DSL: parse and print model architectures and rewrite rules (`.adl` files).

The names below are imported on first use: importing `adopter.dsl.types` (which every layer does) then
does not load Lark, which only parsing needs (the language server's rules usually come from the parsed
rule cache, see `adopter.engine.loading`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adopter.dsl.errors import DslError
    from adopter.dsl.parse import parse_architecture, parse_module_file, parse_rules
    from adopter.dsl.printer import format_architecture, format_module_file, format_rule

__all__ = [
    "DslError",
    "format_architecture",
    "format_module_file",
    "format_rule",
    "parse_architecture",
    "parse_module_file",
    "parse_rules",
]

_HOME = {
    "DslError": "adopter.dsl.errors",
    "parse_architecture": "adopter.dsl.parse",
    "parse_module_file": "adopter.dsl.parse",
    "parse_rules": "adopter.dsl.parse",
    "format_architecture": "adopter.dsl.printer",
    "format_module_file": "adopter.dsl.printer",
    "format_rule": "adopter.dsl.printer",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'adopter.dsl' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups are plain module attributes
    return value
