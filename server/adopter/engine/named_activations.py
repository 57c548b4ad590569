"""Whether a submodule is an activation built by name with a GELU's name (family 6's `named_activation`
guard): `self.fn = get_act_layer(act)` with `act="GELU"` in the signature, where the function is one this
file does not define (an import the analysis could not read: the file alone, or a package not installed).

A call that takes one name and nothing else (but `inplace=`), the name evident here (a literal, or the
`__init__` parameter it is passed with that parameter's literal default), builds the activation that name
says in every activation factory and registry of the libraries (monai's `get_act_layer`, timm's
`create_act_layer`, transformers' `get_activation`); so does the class a factory of one name returns, called
with nothing (`get_act_layer(act)()`). The key is compared without case (`"GELU"` is `"gelu"`). The fix's helper
checks the activation at run time, so a factory that builds something else runs the original code. A name
that is not evident (a required parameter, a config field), a call with other arguments or keywords, and a
torch layer fail: nothing here says those are a GELU.
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from adopter.dsl.types import Binding, Expr, Param
from adopter.engine.bindings import InitIndex


def is_named_activation(target: str, init: InitIndex, keys: Collection[str]) -> bool:
    """Whether every binding of the submodule `target` (`self.fn`) is a call of one evident name among `keys`
    (lower case), see the module docstring."""
    if not target.startswith("self.") or "[" in target:
        return False
    bindings = init.bindings_of(target[len("self."):])
    if not bindings:
        return False
    params = init.parameters()
    wanted = {k.lower() for k in keys}
    return all(_named(b, params, wanted) for b in bindings)


def _named(binding: Binding, params: tuple[Param, ...], keys: set[str]) -> bool:
    value = binding.value
    if isinstance(value, Expr):
        argument = _class_factory_argument(value.text)
    elif (value.callee.startswith("torch.") or value.items or value.lookup is not None or len(value.args) != 1
          or not isinstance(value.args[0], Expr) or any(k.name != _INPLACE for k in value.kwargs)):
        return False
    else:
        argument = value.args[0].text.strip()
    name = _evident(argument, params) if argument is not None else None
    return isinstance(name, str) and name.lower() in keys


# Whether an activation runs in place changes where it writes, not what it computes (`create_act_layer(name,
# inplace=True)`); any other keyword may choose something else.
_INPLACE = "inplace"


def _class_factory_argument(text: str) -> str | None:
    """`get_act_layer(act)()`: a factory of one name giving a class, called with nothing: the name's text."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return None
    inner = node.func
    if (not isinstance(inner, ast.Call) or len(inner.args) != 1 or inner.keywords
            or not isinstance(inner.func, ast.Name | ast.Attribute)):
        return None
    return ast.unparse(inner.args[0])


def _evident(text: str, params: tuple[Param, ...]) -> object:
    """A string literal's value, or that of the default of the parameter named `text`; else None."""
    default = next((p.default for p in params if p.name == text), None)
    try:
        return ast.literal_eval(default if default is not None else text)
    except (ValueError, SyntaxError, MemoryError, TypeError, RecursionError):
        return None
