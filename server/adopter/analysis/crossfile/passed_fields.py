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

from adopter.analysis.crossfile.init_source import InitSource, PassedClasses, init_arguments, init_parameters


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
    out: list[tuple[str, str, str]] = []
    for passed in init_arguments(source.name, param, index, "attribute", src, source.note):
        if passed is None:
            return None
        argument, owner = passed
        obj, attr = argument.child_by_field_name("object"), argument.child_by_field_name("attribute")
        if obj is None or obj.type != "identifier" or attr is None:
            return None
        cls = classes.of(owner, src.text(obj))
        if cls is None:
            return None
        out.append((cls, src.text(obj), src.text(attr)))
    return tuple(out) or None


def _rebinds(source: InitSource, param: str) -> bool:
    """Whether `__init__` assigns `param` anywhere (its value is then not the argument's)."""
    text = textwrap.dedent(source.src.raw(source.function).decode("utf-8", errors="replace"))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return True
    return any(isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Store) for n in ast.walk(tree))
