"""Whether a layer looked up by name is built only when an optional `__init__` parameter gives the name (family 6's
`key_may_be`): as written, and as its callers leave it, the module then holds no such layer.

    def __init__(self, ..., post_act_fn: Optional[str] = None):
        if post_act_fn is None:
            self.post_act = None
        else:
            self.post_act = get_activation(post_act_fn)

`get_activation(post_act_fn)` is bound only on the path where the parameter, None by default, was given: at the
default there is no activation after the Linear, and on the other path the name is whatever a caller passes, so
nothing in the file says the module applies a GELU (`bench/data/realworld/LABELLING.md`: an activation "whose
default is GELU"; held-out batch 7: selectable options with other defaults are not counted). diffusers'
`TimestepEmbedding` and its copy in chatterbox-tts (`s3gen/matcha/decoder.py`) are this form (prec9's census).

Only this reading is decided: the key is a bare parameter whose default is `None`, and the binding's condition is
false when that parameter is None (`p is not None`, `not (p is None)`, `p`, and `and`/`or`/`not` of them).

The same holds for a default that is a function (`activation=F.relu`, a name the helper maps only when a string is
passed): `if isinstance(activation, str): activation = get_activation(activation)` then `self.activation =
activation` looks the name up only on a path the default does not take (`isinstance(p, str)` false, `callable(p)`
true), so as built the module applies the default function, which the forward reads as itself. A default spelling a
GELU (`F.gelu`) stays a possible site, since the attribute then holds a GELU. A None
default bound unconditionally (`self.act = ACT2FN[act]`, `act=None`: the caller must give a name), a string default
(read by `layer_facts.literal_keys`), a required parameter and a config field stay as they were.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from functools import lru_cache

from adopter.dsl.types import Binding, Ctor, Param, ParamKind
from adopter.engine.default_choice import truth
from adopter.engine.layer_facts import key_text

_NAMED = (ParamKind.POSITIONAL, ParamKind.KEYWORD_ONLY)


def built_only_when_given(binding: Binding, params: Sequence[Param]) -> bool:
    """Whether `binding` looks its layer up by an `__init__` parameter that defaults to None and is made only on
    a path where that parameter is not None (see the module docstring)."""
    value = binding.value
    if binding.condition is None or not isinstance(value, Ctor):
        return False
    key = key_text(value)
    if key is None or not key.strip().isidentifier():
        return False
    name = key.strip()
    param = next((p for p in params if p.name == name and p.kind in _NAMED), None)
    if param is None or param.default is None:
        return False
    default = param.default.strip()
    tree = _parsed(binding.condition)
    if tree is None:
        return False
    if default == "None":
        return _truth_when_none(tree, name) is False
    return _FUNCTION.fullmatch(default) is not None and "gelu" not in default.lower() and _truth_when_function(
        tree, name) is False


def stored_only_when_given(binding: Binding, params: Sequence[Param]) -> bool:
    """Whether `binding` stores a bare `__init__` parameter that defaults to None (`self.act = activation`) on a
    path only taken when that parameter is not None: `self.act = nn.Sigmoid() if activation is None else
    activation`. As built with its defaults the attribute holds the other path's layer, so this binding is not
    what the module applies (family 14's `gate_activation`: the layer chosen at the default decides)."""
    value = binding.value
    if binding.condition is None or isinstance(value, Ctor):
        return False
    name = value.text.strip()
    if not name.isidentifier():
        return False
    param = next((p for p in params if p.name == name and p.kind in _NAMED), None)
    if param is None or param.default is None or param.default.strip() != "None":
        return False
    tree = _parsed(binding.condition)
    return tree is not None and _truth_when_none(tree, name) is False


# A default that is a function reached through a module (`F.relu`, `torch.tanh`, `nn.functional.silu`): lower
# case, so not a class nor a constant of another module; one spelling a GELU stays a possible site.
_FUNCTION = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.[a-z_][a-z0-9_]*")


def _truth_when_function(node: ast.expr, name: str) -> bool | None:
    """The truth of `node` when the parameter `name` holds a function: `isinstance(name, str)` is false,
    `callable(name)` true, and `and`/`or`/`not` of them; None when it is not evident."""
    def leaf(node: ast.expr) -> bool | None:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
            return None
        args = node.args
        if not args or not isinstance(args[0], ast.Name) or args[0].id != name:
            return None
        if node.func.id == "callable" and len(args) == 1:
            return True
        if node.func.id == "isinstance" and len(args) == 2 and isinstance(args[1], ast.Name) and args[1].id == "str":
            return False
        return None
    return truth(node, leaf)


@lru_cache(maxsize=1024)
def _parsed(condition: str) -> ast.expr | None:
    try:
        return ast.parse(condition.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None


def _truth_when_none(node: ast.expr, name: str) -> bool | None:
    """The truth of `node` when the parameter `name` is None: True, False, or None when it is not evident."""
    def leaf(node: ast.expr) -> bool | None:
        if isinstance(node, ast.Name):
            return False if node.id == name else None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            sides = (node.left, node.comparators[0])
            if any(isinstance(s, ast.Name) and s.id == name for s in sides) and any(
                    isinstance(s, ast.Constant) and s.value is None for s in sides):
                return isinstance(node.ops[0], ast.Is)
        return None
    return truth(node, leaf)
