"""The Adopter DSL: parse and print model architectures and rewrite rules (`.adl` files)."""

from __future__ import annotations

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
