"""Which module-level names an edit can have changed, so that their dependency fingerprints are carried
from one analysis of a document to the next instead of computed again.

Every fingerprint of `ModuleSymbols` is read from one name's entry in the symbol tables: the node of a
class, function or value (its text and start point; for the finer keys, the class's header, methods,
or a method's chain shape, all inside the class node), or an import's or alias's qualified name. Such
a fingerprint is unchanged when the name's table entry is unchanged: the same table, a node in the
text both analyses share (before the first changed byte, or after the last one) at the same start
point, the same import or alias. Both trees must parse without error: only then is a node's subtree a
function of its text. `changed_names` gives the other names (an over-approximation: a name it leaves
out has every fingerprint it had).
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Point

from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.reparse import common_prefix, common_suffix

_Extent = tuple[int, int, Point]  # start byte, end byte, start point


@dataclass(frozen=True, slots=True)
class Layout:
    """What the fingerprints of one analysis were read from: each table's names with their nodes'
    extents, the imports and aliases; and the analysed text."""

    data: bytes
    tables: tuple[dict[str, _Extent], ...]  # classes, functions, values
    imports: dict[str, str]
    aliases: dict[str, str]

    @classmethod
    def of(cls, data: bytes, symbols: ModuleSymbols) -> Layout:
        tables = tuple({name: (n.start_byte, n.end_byte, n.start_point) for name, n in table.items()}
                       for table in (symbols.classes, symbols.functions, symbols.values))
        return cls(data, tables, dict(symbols.imports), dict(symbols.aliases))


def changed_names(old: Layout, new: Layout) -> set[str]:
    """The names whose fingerprints may differ between the analyses of `old` and `new` (see the module
    docstring); both texts parsed without error."""
    a, b = old.data, new.data
    prefix = common_prefix(a, b)
    suffix = common_suffix(a, b, min(len(a), len(b)) - prefix)
    new_end = len(b) - suffix  # new[new_end:] == old[len(a) - suffix:]
    delta = len(b) - len(a)
    changed: set[str] = set()
    for before, after in zip(old.tables, new.tables, strict=True):
        changed.update(before.keys() ^ after.keys())
        for name, (s, e, point) in after.items():
            was = before.get(name)
            if was is None:
                continue
            if e <= prefix:
                same = was == (s, e, point)
            elif s >= new_end:
                same = was == (s - delta, e - delta, point)
            else:
                same = False
            if not same:
                changed.add(name)
    changed.update(k for k, _ in old.imports.items() ^ new.imports.items())
    changed.update(k for k, _ in old.aliases.items() ^ new.aliases.items())
    return changed
