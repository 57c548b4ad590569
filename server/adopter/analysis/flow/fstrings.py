"""f-strings whose placeholders name local string constants, read as the strings they make.

lucidrains' attention cores (x-transformers, MEGABYTE, soundstorm, block-recurrent-transformer, ...) build
an einsum equation from a local chosen by the keys' rank:

    kv_einsum_eq = 'b j d' if k.ndim == 3 else 'b h j d'
    sim = einsum(f"b h i d, {kv_einsum_eq} -> b h i j", q, k)

The f-string is the literal `"b h i d, b j d -> b h i j"` or `"b h i d, b h j d -> b h i j"`; it is given
as the conditional expression of those two literals (`'…' if k.ndim == 3 else '…'`), the text a
conditional of two string constants already has in the flow analysis, so a reader of equations
(`adopter.analysis.canonical.normalise`) sees every string the code can pass. A placeholder that is not
a bare name bound to a string constant (or to a conditional of two), a format spec or conversion, or a
string with two placeholders chosen by different tests, leaves the f-string as written.

audiocraft's streaming attention writes the same thing with statements: the layout is chosen by an
`if`/`else` statement, the keys' layout derived from it by `str.replace`, the query's by an alias:

    if time_dim == 2: layout = "b h t d"
    else: layout = "b t h d"
    key_layout = layout.replace('t', 'k')
    query_layout = layout
    pre_w = torch.einsum(f"{query_layout},{key_layout}-> b h t k", q, k)

Each path of an `if` keeps its own constants; where an `if`/`else` joins, a name bound to one constant on
each path is the conditional of the two under the `if`'s test (`joined_constants`); `str.replace` of a
constant with literal arguments is the constant it makes, on each alternative (`constant_method`), and a
name bound to a constant's name is that constant. Two placeholders chosen by the same test make one
conditional of two strings (the test decides both).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from adopter.dsl.types import Expr, Ref

# A string constant without quotes or braces inside, or a conditional of two (as the flow analysis keeps
# `'b j d' if k.ndim == 3 else 'b h j d'`: its text).
_LITERAL = r"""(?P<q{n}>['"])(?P<s{n}>[^'"{{}}\\]*)(?P=q{n})"""
_CONSTANT = re.compile(rf"^{_LITERAL.format(n=1)}$")
_CHOICE = re.compile(rf"^{_LITERAL.format(n=1)}\s+if\s+(?P<test>.+?)\s+else\s+{_LITERAL.format(n=2)}$", re.S)


def constant_choices(text: str) -> tuple[tuple[str, ...], str | None] | None:
    """The strings a constant's text stands for, and the test choosing between two (None for one)."""
    text = text.strip()
    if text[:1] not in ("'", '"'):
        return None  # both patterns start with a quote (most texts the flow binds are calls and names)
    m = _CONSTANT.match(text)
    if m:
        return (m.group("s1"),), None
    m = _CHOICE.match(text)
    if m:
        return (m.group("s1"), m.group("s2")), m.group("test")
    return None


def bind_constant(constants: dict[str, str | None], name: str, value: object) -> None:
    """Record what local `name` is bound to: a string constant's text (or a conditional of two); a name
    bound twice to different texts, or once to anything else, names no constant (None)."""
    text = value.text if isinstance(value, Expr) and constant_choices(value.text) is not None else None
    if text is None and isinstance(value, (Expr, Ref)):
        text = constants.get(value.text if isinstance(value, Expr) else value.name)  # `query_layout = layout`
    if name in constants and constants[name] != text:
        text = None
    constants[name] = text


def substituted(node: Node, text_of: Callable[[Node], str], lookup: Callable[[str], str | None]) -> Expr | None:
    """The f-string at `node` with its placeholders replaced by the string constants they name: a string
    literal, or a conditional of two when one placeholder is chosen by a test; None when any placeholder
    is something else (then the caller keeps the f-string's text)."""
    start = node.children[0] if node.children else None
    if start is None or start.type != "string_start" or "f" not in text_of(start).lower():
        return None
    prefix = text_of(start)
    if any(c in prefix.lower() for c in "rb"):
        return None
    quote = prefix.lstrip("fF")
    parts: list[tuple[str, ...]] = []
    test: str | None = None
    placeholders = 0
    for child in node.children[1:]:
        if child.type == "string_content":
            parts.append((text_of(child),))
        elif child.type == "interpolation":
            inner = [c for c in child.named_children if c.type != "comment"]
            if len(inner) != 1 or inner[0].type != "identifier":
                return None  # an expression, a conversion (`!r`) or a format spec
            value = lookup(text_of(inner[0]))
            if value is None:
                return None
            choices = constant_choices(value)
            if choices is None:
                return None
            strings, chosen_by = choices
            if chosen_by is not None:
                if test is not None and chosen_by != test:
                    return None  # two independent choices: four strings
                test = chosen_by
            parts.append(strings)
            placeholders += 1
        elif child.type == "string_end":
            continue
        else:
            return None  # an escape sequence or anything else: keep the text as written
    if not placeholders:
        return None
    texts = ["".join(p[i] if len(p) > 1 else p[0] for p in parts) for i in range(2 if test else 1)]
    if any(quote in t or "{" in t or "}" in t for t in texts):
        return None
    if test is None:
        return Expr(f"{quote}{texts[0]}{quote}")
    return Expr(f"{quote}{texts[0]}{quote} if {test} else {quote}{texts[1]}{quote}")


# The str method whose result is a constant when its arguments are; every call `constant_method` reads holds
# its name in its source, which the caller asks first (`ExpressionFlow.value`). A second method needs a
# second word there.
METHOD_WORD = b"replace"
_METHODS = frozenset({METHOD_WORD.decode()})


def constant_method(node: Node, text_of: Callable[[Node], str], lookup: Callable[[str], str | None]) -> Expr | None:
    """The call at `node`, `name.replace('t', 'k')` with `name` a local string constant (or a conditional of
    two) and literal arguments, as the constant it makes (a conditional of the two results); else None."""
    function = node.child_by_field_name("function")
    arguments = node.child_by_field_name("arguments")
    if function is None or arguments is None or function.type != "attribute":
        return None
    receiver, attr = function.child_by_field_name("object"), function.child_by_field_name("attribute")
    if receiver is None or attr is None or receiver.type != "identifier" or text_of(attr) not in _METHODS:
        return None
    value = lookup(text_of(receiver))
    choices = constant_choices(value) if value is not None else None
    args = [a for a in arguments.named_children if a.type != "comment"]
    literals = [constant_choices(text_of(a)) for a in args if a.type == "string"]
    if choices is None or len(args) != 2 or len(literals) != 2 or any(c is None or c[1] for c in literals):
        return None
    old, new = (c[0][0] for c in literals if c is not None)
    strings, test = choices
    made = [s.replace(old, new) for s in strings]
    if any("'" in m or '"' in m or "{" in m or "}" in m for m in made):
        return None
    if test is None:
        return Expr(f'"{made[0]}"')
    return Expr(f'"{made[0]}" if {test} else "{made[1]}"')


def joined_constants(paths: list[dict[str, str | None]], conditions: tuple[str, ...]) -> dict[str, str | None]:
    """The constants after an `if` joins: a name bound to the same text on every path keeps it; on the two
    paths of an `if`/`else` (`conditions` = (test, "else")) to one constant each, it is their conditional
    under the test; otherwise it names no constant."""
    if len(paths) == 1:
        return paths[0]
    # A name absent or None on some path names no constant: only the first path's constants can join
    # into one (the others are None whatever they hold), so only those are compared.
    joined: dict[str, str | None] = dict.fromkeys(set().union(*paths))
    others = paths[1:]
    for name, first in paths[0].items():
        if first is None:
            continue
        texts = [first, *(p.get(name) for p in others)]
        if all(t == first for t in texts):
            joined[name] = first
            continue
        if len(paths) == 2 and len(conditions) == 2 and conditions[1] == "else" and all(
                t is not None for t in texts):
            choices = [constant_choices(t) for t in texts if t is not None]
            if all(c is not None and c[1] is None for c in choices):
                a, b = (c[0][0] for c in choices if c is not None)
                joined[name] = f'"{a}" if {conditions[0]} else "{b}"'
    return joined
