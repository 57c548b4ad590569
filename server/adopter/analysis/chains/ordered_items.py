"""The items of an `nn.Sequential(...)` call in their order: its positional arguments, or the values of the one
`OrderedDict([("conv", a), ("bn", b), ...])` it is given (torch keeps that order: `Sequential.__init__` adds the
dict's items in turn, named by their keys)."""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.source import Field, SourceText

_BREAK = None  # a child whose place in the chain is not certain: the chain is cut there


def positional_children(args: list[Node], src: SourceText) -> list[Node | None]:
    """`(a, b, c)` -> a, b, c; `(OrderedDict([("conv", a), ...]))` -> a, ...; anything else -> None (`_BREAK`)."""
    if len(args) == 1 and args[0].type == "call":
        func = args[0].child_by_field_id(Field.FUNCTION)
        dotted = dotted_text(func, src) if func is not None else None
        if dotted is not None and dotted.endswith("OrderedDict"):
            inner = args[0].child_by_field_id(Field.ARGUMENTS)
            pairs = [a for a in (inner.named_children if inner is not None else ()) if a.type != "comment"]
            if len(pairs) == 1 and pairs[0].type in ("list", "tuple"):
                items: list[Node | None] = []
                for pair in pairs[0].named_children:
                    parts = [p for p in pair.named_children if p.type != "comment"]
                    items.append(parts[1] if pair.type == "tuple" and len(parts) == 2 else _BREAK)
                return items
            return [_BREAK]
    out: list[Node | None] = []
    for a in args:
        if a.type in ("keyword_argument", "list_splat", "dictionary_splat"):
            out.append(_BREAK)  # `*layers`: the list's order is not read here
        else:
            out.append(a)
    return out
