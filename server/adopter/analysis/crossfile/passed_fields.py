"""The config field every construction in the file passes to a required `__init__` parameter used as a key.

A block that takes its activation's name as a plain argument leaves the name to the block that builds it
(transformers' older Llama port, Idefics, Qwen2-VL's vision MLP, chronos' residual block):

    class LlamaMLP(nn.Module):
        def __init__(self, hidden_size, intermediate_size, hidden_act):
            self.act_fn = ACT2FN[hidden_act]
    class LlamaDecoderLayer(nn.Module):
        def __init__(self, config: LlamaConfig):
            self.mlp = LlamaMLP(config.hidden_size, config.intermediate_size, config.hidden_act)

`hidden_act` then holds what `config.hidden_act` holds where the class is built: the field's default in the
constructing class's config (`PassedClasses`: annotated, declared by `config_class`, or passed on), read as
prec10 reads `ACT2FN[config.hidden_act]` written in the class itself. Only when every construction of the class
in its file (a call by its name inside a class's `__init__`) passes the parameter `<parameter>.<field>` of the
constructing `__init__` whose class is known; anything else (no construction, an argument left out, a literal
or any other expression, a construction in a method or a function, a parameter `__init__` rebinds) leaves the
key unknown, as it was. What another file passes is not read: a file's analysis does not depend on the files
that import it.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from adopter.analysis.crossfile.init_source import (
    InitSource,
    PassedClasses,
    argument_passed,
    enclosing_method,
    init_parameters,
)


def passed_fields(source: InitSource | None, param: str) -> tuple[tuple[str, str, str], ...] | None:
    """(config class, qualified; the constructing parameter; field) per construction of the analysed class in
    its file, for the required `__init__` parameter `param`; None unless every construction passes one."""
    if source is None or not source.name or _rebinds(source, param):
        return None
    src = source.src
    positional, named = init_parameters(source.function, src)
    if param not in named:
        return None
    index = positional.index(param) if param in positional else None
    classes = PassedClasses(src, source.qualify, source.note)
    data, root = src.data, src.tree.root_node
    needle = f"{source.name}(".encode()
    out: list[tuple[str, str, str]] = []
    at = data.find(needle)
    while at >= 0:
        before = data[at - 1 : at]
        if not (before.isalnum() or before in (b"_", b".")):
            node = root.descendant_for_byte_range(at, at + len(source.name))
            call = node.parent if node is not None and node.type == "identifier" else None
            if call is not None and call.type == "call" and call.child_by_field_name("function") == node:
                found = _field(call, param, index, src, classes, source)
                if found is None:
                    return None
                out.append(found)
        at = data.find(needle, at + 1)
    return tuple(out) or None


def _field(call: Any, param: str, index: int | None, src: Any, classes: PassedClasses,
           source: InitSource) -> tuple[str, str, str] | None:
    """(config class, parameter, field) one construction passes as `<parameter>.<field>`, else None."""
    passed = argument_passed(call, param, index, src)
    caller = enclosing_method(call, src)
    if passed is None or passed.type != "attribute" or caller is None:
        return None
    obj, attr = passed.child_by_field_name("object"), passed.child_by_field_name("attribute")
    if obj is None or obj.type != "identifier" or attr is None:
        return None
    owner, method = caller
    if source.note is not None:
        source.note(owner, method)
    if method != "__init__":
        return None
    cls = classes.of(owner, src.text(obj))
    return (cls, src.text(obj), src.text(attr)) if cls is not None else None


def _rebinds(source: InitSource, param: str) -> bool:
    """Whether `__init__` assigns `param` anywhere (its value is then not the argument's)."""
    text = textwrap.dedent(source.src.raw(source.function).decode("utf-8", errors="replace"))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return True
    return any(isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Store) for n in ast.walk(tree))
