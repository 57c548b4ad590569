"""The default of a field of a same-file config class, read as a key where `__init__` passes `config.<field>`.

open-moonvit's `MoonViTMLP.__init__(self, config: MoonViTConfig)` builds `self.act = _get_activation(config.hidden_act)`
with `MoonViTConfig` a `@dataclass` of the same file whose body says `hidden_act: str = "gelu_pytorch_tanh"`. Under
the default configuration the key is that literal, as a parameter's literal default is a key (`scope.bindings`'
`_key_text`), and as cross-file reach already reads `ACT2FN[config.hidden_act]` from an annotated config class
(`crossfile.reach`'s `_key`, with the same evaluator: `crossfile.evaluator.config_defaults` over the class's own
`__init__`, else `class_defaults` over its class-level fields and `__post_init__`).

Read only when all of these hold, else nothing: the parameter is annotated with one class of this file (no union);
the class defines `__init__`, or is a `@dataclass` (its generated `__init__` takes every field), or has no base (a
base's `__init__` could set the field on the instance); the field's default is a string literal.
"""

from __future__ import annotations

import ast
import textwrap

from tree_sitter import Node

from adopter.analysis.crossfile.evaluator import class_defaults, config_defaults
from adopter.analysis.parse.source import SourceText

__all__ = ["field_default"]

_DATACLASS = frozenset({"dataclass", "dataclasses.dataclass"})


def field_default(definition: Node, field_name: str, src: SourceText) -> str | None:
    """The string literal `field_name` of the class `definition` (a tree-sitter `class_definition`, read with
    its decorators) holds under its defaults (see the module doc), else None."""
    parent = definition.parent
    node = parent if parent is not None and parent.type == "decorated_definition" else definition
    try:
        tree = ast.parse(textwrap.dedent(" " * node.start_point[1] + src.text(node)))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    cls = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(cls, ast.ClassDef):
        return None
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is not None:
        defaults = config_defaults(init)
    elif _is_dataclass(cls) or not [b for b in cls.bases if not (isinstance(b, ast.Name) and b.id == "object")]:
        defaults = class_defaults(cls, {})
    else:
        return None
    value = defaults.get(field_name)
    return value if isinstance(value, str) else None


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for decorator in cls.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if ast.unparse(target) in _DATACLASS:
            return True
    return False
