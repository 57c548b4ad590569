"""Where a change can be parsed on its own, and the masks that hide half-typed lines from the analysis.

Helpers of `adopter.analysis.incremental`: a mask replaces whole lines of the real text by as many bytes
(their previous text padded with spaces, or blanks), so every position stays valid.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tree_sitter import Tree

from adopter.analysis.source import Field
from adopter.dsl.types import Problem, Span


@dataclass(frozen=True)
class Mask:
    """Lines hidden from the analysis: bytes `start:end` of the real text, what stands in for them
    (as many bytes), and their syntax errors."""

    start: int
    end: int
    content: bytes
    problems: tuple[Problem, ...]

    def apply(self, data: bytes) -> bytes:
        return data[: self.start] + self.content + data[self.end :]


def apply_masks(data: bytes, masks: list[Mask]) -> bytes:
    """`data` with every mask applied."""
    for m in masks:
        data = m.apply(data)
    return data


def shift_problem(p: Problem, rows: int) -> Problem:
    if p.span is None or rows == 0:
        return p
    s = p.span
    return replace(p, span=Span(s.start_line + rows, s.start_col, s.end_line + rows, s.end_col))


def blank(data: bytes, start: int, end: int) -> bytes:
    """`data` with every byte of `start:end` except newlines turned into a space."""
    chunk = bytes(b if b == 0x0A else 0x20 for b in data[start:end])
    return data[:start] + chunk + data[end:]


def line_bounds(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The whole lines around bytes `start:end` (end excludes the final newline)."""
    a = data.rfind(b"\n", 0, start) + 1
    b = data.find(b"\n", max(end, a))
    return a, (len(data) if b < 0 else b)


def statements_around(
    tree: Tree, start: int, end: int, masked: list[tuple[int, int]]
) -> tuple[int, int, bool]:
    """The bytes of the top-level statements of `tree` that touch `start:end`, and whether the edit
    lies outside every statement (between two). Such an edit also takes the statement on each side (a
    decorator typed above a `def`, a bracket closed below a half-typed call), as does a neighbour
    holding a mask (`masked` ranges)."""
    children = tree.root_node.children
    first = next((i for i, c in enumerate(children) if c.end_byte >= start), len(children))
    last = first - 1
    for i in range(first, len(children)):
        if children[i].start_byte > end:
            break
        last = i
    gap = last < first
    if gap:  # the statements on both sides
        lo_i, hi_i = first - 1, first
    else:
        lo_i, hi_i = first, last
        if lo_i > 0 and any(children[lo_i - 1].start_byte <= a and b <= children[lo_i - 1].end_byte for a, b in masked):
            lo_i -= 1
        if hi_i + 1 < len(children) and any(
            children[hi_i + 1].start_byte <= a and b <= children[hi_i + 1].end_byte for a, b in masked
        ):
            hi_i += 1
    lo, hi = start, end
    if 0 <= lo_i < len(children):
        lo = min(lo, children[lo_i].start_byte)
    if 0 <= hi_i < len(children):
        hi = max(hi, children[hi_i].end_byte)
    return lo, hi, gap


def method_around(tree: Tree, start: int, end: int) -> tuple[int, int, int] | None:
    """(start byte, end byte, column) of the method of a top-level class whose text holds `start:end`
    entirely (decorators included), or None."""
    for child in tree.root_node.children:
        if child.start_byte > start:
            return None
        if child.end_byte < end:
            continue
        node = child.child_by_field_id(Field.DEFINITION) if child.type == "decorated_definition" else child
        if node is None or node.type != "class_definition":
            return None
        body = node.child_by_field_id(Field.BODY)
        for member in body.named_children if body is not None else ():
            if member.start_byte > start:
                return None
            inner = member.child_by_field_id(Field.DEFINITION) if member.type == "decorated_definition" else member
            if inner is not None and inner.type == "function_definition" and member.end_byte >= end:
                return member.start_byte, member.end_byte, member.start_point[1]
        return None
    return None


def mask_candidates(masked: bytes, old: bytes, a: int, b: int, delta: int) -> list[bytes]:
    """Ways to hide the broken lines `a:b` of `masked` (same length, so positions stay valid): their
    previous text in `old` padded with spaces (the line the user is changing, as it was: keeps a `def`
    header or a statement being edited in the architecture), else blank lines (a new half-typed line).
    `delta` is the change's length difference (the lines end `delta` bytes earlier in `old`)."""
    out: list[bytes] = []
    previous = old[a : b - delta]
    if delta >= 0 and previous.count(b"\n") == masked[a:b].count(b"\n"):
        lines = previous.split(b"\n")
        width = [len(x) for x in masked[a:b].split(b"\n")]
        padded = [x + b" " * (w - len(x)) for x, w in zip(lines, width)]
        if all(len(x) == w for x, w in zip(padded, width)):
            out.append(masked[:a] + b"\n".join(padded) + masked[b:])
    out.append(blank(masked, a, b))
    return out


SIMPLE_STATEMENTS = frozenset(
    {"expression_statement", "return_statement", "delete_statement", "raise_statement", "pass_statement",
     "break_statement", "continue_statement", "global_statement", "nonlocal_statement", "assert_statement",
     "import_statement", "import_from_statement", "type_alias_statement"}
)


def statement_around(tree: Tree, data: bytes, start: int, end: int) -> tuple[int, int, int] | None:
    """(start byte, end byte, column) of the simple statement (an assignment, a call, a `return`...)
    of `tree` (parsed from `data`) whose text holds `start:end` after its first character and which
    starts its line, or None. Parsed alone, such a statement says cheaply whether a keystroke inside
    it left the code valid."""
    # An insertion at the end of a statement touches the node after it: look one byte back.
    node = tree.root_node.descendant_for_byte_range(start - 1 if start == end and start > 0 else start, end)
    while node is not None and node.type not in SIMPLE_STATEMENTS:
        node = node.parent
    if node is None or not (node.start_byte < start and end <= node.end_byte):
        return None
    parent = node.parent
    if parent is None or parent.type not in ("block", "module"):
        return None
    if data[node.start_byte - node.start_point[1] : node.start_byte].strip(b" \t"):
        return None  # `if x: return y`, `a = 1; b = 2`: not alone on its line
    return node.start_byte, node.end_byte, node.start_point[1]
