"""The readings of a file's top-level statements, kept from one analysis of a document to the next.

`ModuleSymbols` reads each top-level statement (`top_level_statements`) into what its tables take from it: a
class's name, the methods and bases of it and of the classes nested in it, a function's name, the names an
import binds. A reading holds no node (nodes belong to one tree), only what a function of the statement's
text gives. A keystroke changes one statement: the next analysis of the document takes every other
statement's reading from the last one and reads the changed statements alone.

The fact it rests on: in two texts that both parse without error, a statement whose bytes lie wholly in the
texts' common prefix (or wholly in their common suffix, at the same column) at the same extent (moved by the
length change) is the same subtree, so it reads the same. Which
statement is found again is decided by its extent and node kind alone: nothing is compared byte by byte.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from adopter.analysis.parse.reparse import common_prefix, common_suffix

# (start byte, end byte) -> (node kind id, the reading `ModuleSymbols` made of the statement)
Readings = dict[tuple[int, int], tuple[int, object]]
# A class or function definition's reading gives its kind, its name and then the length of its header
# (its start to its body's start) at index 2: `body_edit` reads it.
HEADED = frozenset({"class", "function"})


@dataclass(frozen=True, slots=True)
class StatementReadings:
    """One analysis's readings of the top-level statements of `data` (parsed without error), by extent."""

    data: bytes
    package: str | None
    readings: Readings

    def finder(self, data: bytes, package: str | None) -> Finder | None:
        """How the analysis of `data` (parsed without error) finds the readings of its unchanged statements."""
        if package != self.package:
            return None
        return Finder(self, data)


class Finder:
    """The last analysis's readings, moved to where their statements lie in the new text (`moved`): a new statement
    at one of those extents, of the same node kind, is the statement read there (`collect`)."""

    def __init__(self, last: StatementReadings, data: bytes) -> None:
        old = last.data
        prefix = common_prefix(old, data)
        suffix = common_suffix(old, data, min(len(old), len(data)) - prefix)
        self.prefix = prefix
        self.old_end = len(old) - suffix  # old[old_end:] == data[new_end:]
        self.new_end = len(data) - suffix
        self.delta = len(data) - len(old)
        # The first line that starts inside the common suffix: a statement there has the same column as before (one
        # before it, on a line the edit touched, is compared).
        newline = data.find(b"\n", self.new_end)
        line_start = newline + 1 if newline >= 0 else len(data) + 1
        moved: Readings = {}
        self.unmatched: list[tuple[int, int, int, object]] = []  # the last statements not found in the new text
        for (start, end), found in last.readings.items():
            if end <= prefix:
                moved[(start, end)] = found
            elif start >= self.old_end and (start + self.delta >= line_start
                                            or _column(data, start + self.delta) == _column(old, start)):
                moved[(start + self.delta, end + self.delta)] = found
            else:
                self.unmatched.append((start, end, found[0], found[1]))
        self.moved = moved  # (new start, new end) -> (node kind id, reading)
        self.read: list[tuple[int, int, int, object]] = []  # the new statements read afresh (`collect`)
        self.found = 0  # how many new statements `collect` found in `moved`

    def body_edit(self) -> bool:
        """Whether the edit lies inside the body of one class or function definition, the same statement before
        and after it (same start, kind, name and header): everything else of the text is as it was."""
        if len(self.unmatched) != 1 or len(self.read) != 1 or self.found != len(self.moved):
            return False  # not one statement for one, or a statement of the last text not found again
        old_start, old_end, old_kind, old = self.unmatched[0]
        start, end, kind, new = self.read[0]
        if not (isinstance(old, tuple) and isinstance(new, tuple) and len(old) > 2 and len(new) > 2):
            return False
        if old_kind != kind or old[0] not in HEADED or old[:3] != new[:3] or start != old_start:
            return False
        head = old[2]
        return (isinstance(head, int) and start + head <= self.prefix and self.old_end <= old_end
                and self.new_end <= end and end - old_end == self.delta)


def _column(data: bytes, offset: int) -> int:
    return offset - (data.rfind(b"\n", 0, offset) + 1)


def collect(statements: list[Node], finder: Finder | None, read: Callable[[Node], object],
            keep: bool) -> tuple[list[object], Readings | None]:
    """Each statement's reading: `finder`'s when it has the statement, else `read(node)`; with `keep`, the
    readings by extent for the next analysis."""
    out: list[object] = []
    kept: Readings | None = {} if keep else None
    moved = finder.moved if finder is not None else {}
    for node in statements:
        extent = (node.start_byte, node.end_byte)
        kind = node.kind_id
        found = moved.get(extent)
        if found is not None and found[0] == kind:
            reading = found[1]
            if finder is not None:
                finder.found += 1
        else:
            reading = read(node)
            if finder is not None:
                finder.read.append((extent[0], extent[1], kind, reading))
        out.append(reading)
        if kept is not None:
            kept[extent] = (kind, reading)
    return out, kept
