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
string with more than one conditional placeholder, leaves the f-string as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from adopter.dsl.types import Expr

# A string constant without quotes or braces inside, or a conditional of two (as the flow analysis keeps
# `'b j d' if k.ndim == 3 else 'b h j d'`: its text).
_LITERAL = r"""(?P<q{n}>['"])(?P<s{n}>[^'"{{}}\\]*)(?P=q{n})"""
_CONSTANT = re.compile(rf"^{_LITERAL.format(n=1)}$")
_CHOICE = re.compile(rf"^{_LITERAL.format(n=1)}\s+if\s+(?P<test>.+?)\s+else\s+{_LITERAL.format(n=2)}$", re.S)


def constant_choices(text: str) -> tuple[tuple[str, ...], str | None] | None:
    """The strings a constant's text stands for, and the test choosing between two (None for one)."""
    m = _CONSTANT.match(text.strip())
    if m:
        return (m.group("s1"),), None
    m = _CHOICE.match(text.strip())
    if m:
        return (m.group("s1"), m.group("s2")), m.group("test")
    return None


def bind_constant(constants: dict[str, str | None], name: str, value: object) -> None:
    """Record what local `name` is bound to: a string constant's text (or a conditional of two); a name
    bound twice to different texts, or once to anything else, names no constant (None)."""
    text = value.text if isinstance(value, Expr) and constant_choices(value.text) is not None else None
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
                if test is not None:
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
