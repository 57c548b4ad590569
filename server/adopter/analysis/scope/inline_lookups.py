"""Activation modules looked up and called in one expression in `forward` (family 6, helper `mech113`).

transformers' ELECTRA, ConvBERT, Funnel and RoFormer heads (and the packages copying them) build the activation
where they use it: `x = ACT2FN[self.config.hidden_act](x)`, `h = get_activation("gelu")(h)`. A module built and
called in one expression is that module's call, as if `__init__` had bound it (the principle the canonical form
already applies to `nn.Softmax(dim=-1)(x)`, helper `mech4`). This reading adds, for each such expression, the
binding `__init__` would hold had it written it, under an attribute that is the expression's own text (the
target the forward's call op carries): the canonical pass reads that call as the module's (`as_module_call`),
and every reading of a bound lookup (cross-file keys, `key_may_be`) reads it the same way.

The expressions read are a subscript of an imported table (`ACT2FN[key]`) and a call of an imported function
with one positional argument and nothing else (`get_activation(key)`), each read by `InitAnalysis` as the same
expression in `__init__` would be. A key written through an attribute `__init__` binds to one of its
parameters (`self.config.hidden_act` with `self.config = config`) is read as that parameter's
(`config.hidden_act`): the same key a bound lookup spells, so the same answer.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.source import Field, SourceText, descendants
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Binding, Ctor, Expr, Init, Kwarg, Value

# `](` or `)(`: a call of a subscript or of a call; a forward without one holds no inline lookup.
_CALLED_RESULT = re.compile(rb"[\])]\s*\(")
# A `]` or `)` and the next `(` with only what tree-sitter's Python grammar skips between two tokens in between:
# whitespace (with the form feed and three zero-width characters it takes as such), a comment to its line's end, a
# line continuation. Possessive: each byte says which of them it starts, so nothing is tried twice.
_BRACKET_THEN_PAREN = re.compile(rb"[\])](?:\s|\\|#[^\n]*+|\xef\xbb\xbf|\xe2\x81\xa0|\xe2\x80\x8b)*+\(")
_LITERAL = re.compile(r"""(?:'[^'\\]*'|"[^"\\]*")""")


def with_inline_lookups(init: Init | None, forward: Node | None, name: str, table: ClassTable,
                        src: SourceText) -> Init | None:
    """`init` with a binding for each activation lookup `forward` builds and calls inline (none: `init`)."""
    if init is None or forward is None or _CALLED_RESULT.search(src.raw(forward)) is None:
        return init
    held = _held_parameters(init)
    bound = {b.attr for b in init.bindings}
    added: list[Binding] = []
    reader: InitAnalysis | None = None
    for function in _called_lookups(forward, src):
        attr = src.norm(function)
        if attr in bound:
            continue
        reader = reader or InitAnalysis(name, table, src)
        alts = reader.constructors(function)
        if len(alts) != 1 or alts[0].items or not _one_key(alts[0]):
            continue
        bound.add(attr)
        added.append(Binding(attr, _rekeyed(alts[0], held), src.span(function)))
    return replace(init, bindings=(*init.bindings, *added)) if added else init


def _called_lookups(forward: Node, src: SourceText) -> list[Node]:
    """The callee of each call in `forward` that is a subscript of an imported name or a call of one with a
    single positional argument (`ACT2FN[k](x)`, `get_activation(k)(x)`), in the order `descendants` visits the
    calls.

    Found from the text, not by a walk of every node (the forward of a class with `self.layers[i](x)` in it was
    walked whole): such a call's callee ends with `]` or `)` and its arguments start with `(`, with only what
    tree-sitter skips between tokens in between (`_BETWEEN`). Each `(` after a `]` or `)` is looked up in the
    tree; those that open a call's arguments give the calls to test (a `(` in a string or a comment opens none).
    Without an error in the forward every call's callee ends with its bracket (no MISSING token), so every call
    is found; with one, the forward is walked."""
    if forward.has_error:
        return [f for node in descendants(forward) if (f := _lookup_callee(node, src)) is not None]
    start = forward.start_byte
    calls: list[tuple[int, int, Node]] = []
    for m in _BRACKET_THEN_PAREN.finditer(src.raw(forward)):
        at = start + m.end() - 1
        paren = forward.descendant_for_byte_range(at, at + 1)
        arguments = paren.parent if paren is not None and paren.type == "(" else None
        call = arguments.parent if arguments is not None else None
        if (call is None or call.type != "call" or arguments is None
                or arguments.type not in ("argument_list", "generator_expression")
                or arguments.start_byte != at):
            continue
        function = _lookup_callee(call, src)
        if function is not None:
            calls.append((-call.end_byte, call.start_byte, function))
    # `descendants` visits a node before the nodes under it and, of two apart, the later first: two calls
    # nested end apart (the inner one ends before the outer one's arguments close), so the order is by end,
    # the later first.
    calls.sort(key=lambda c: (c[0], c[1]))
    return [f for _, _, f in calls]


def _lookup_callee(node: Node, src: SourceText) -> Node | None:
    """`node`'s callee when `node` is a call `_called_lookups` gives, else None."""
    if node.type != "call":
        return None
    function = node.child_by_field_id(Field.FUNCTION)
    if function is None:
        return None
    if function.type == "subscript":
        value = function.child_by_field_id(Field.VALUE)
    elif function.type == "call":
        value = function.child_by_field_id(Field.FUNCTION)
        arguments = function.child_by_field_id(Field.ARGUMENTS)
        named = [a for a in arguments.named_children if a.type != "comment"] if arguments is not None else []
        if len(named) != 1 or named[0].type in ("keyword_argument", "list_splat", "dictionary_splat"):
            return None
    else:
        return None
    dotted = dotted_text(value, src) if value is not None else None
    return function if dotted is not None and dotted.split(".")[0] != "self" else None


def _one_key(ctor: Ctor) -> bool:
    """A table lookup, or a factory given its one key (what `_called_lookups` admitted, read as a layer), the key
    a literal or read off `self`: a name of forward's own (`ACT2FN[act](x)` with `act` a forward parameter) is not
    `__init__`'s parameter of the same name, which is how the binding would read it."""
    if ctor.lookup is not None:
        key = ctor.lookup
    elif len(ctor.args) == 1 and not ctor.kwargs and isinstance(ctor.args[0], Expr):
        key = ctor.args[0].text
    else:
        return False
    return key.startswith("self.") or _LITERAL.fullmatch(key) is not None


def _held_parameters(init: Init) -> dict[str, str]:
    """`self.<attr>` -> the parameter of `__init__` it holds (`self.config = config`, bound once, on every path)."""
    names = {p.name for p in init.params}
    counts: dict[str, int] = {}
    for b in init.bindings:
        counts[b.attr] = counts.get(b.attr, 0) + 1
    return {f"self.{b.attr}": b.value.text for b in init.bindings
            if isinstance(b.value, Expr) and b.value.text in names and b.condition is None and counts[b.attr] == 1}


def _rekeyed(ctor: Ctor, held: dict[str, str]) -> Ctor:
    """The lookup with its key read through the parameters `__init__` holds (`self.config.x` -> `config.x`)."""
    if not held:
        return ctor
    lookup = _through(ctor.lookup, held) if ctor.lookup is not None else None
    args = tuple(_value_through(a, held) for a in ctor.args)
    kwargs = tuple(Kwarg(k.name, _value_through(k.value, held)) for k in ctor.kwargs)
    return replace(ctor, lookup=lookup, args=args, kwargs=kwargs)


def _value_through(value: Value, held: dict[str, str]) -> Value:
    return Expr(_through(value.text, held)) if isinstance(value, Expr) else value


def _through(text: str, held: dict[str, str]) -> str:
    for attr, param in held.items():
        if text == attr or text.startswith(f"{attr}."):
            return param + text[len(attr):]
    return text
