"""A walk of a function's top-level statements kept so that the next walk of the edited function resumes it.

The flow of a function is a walk with state (`state.FlowState`): the state before top-level statement `i` is a
function of the function's header, statements `0..i-1` (their text and position), the inputs a `FlowAnalysis`
is built with, and the module-level names it consulted through `symbols` (`ModuleSymbols.consulted`) while it
walked them. At the top level almost nothing looks ahead (`ControlFlow.branch` walks the statements after an `if`
only inside an inlined callee), so a keystroke in statement `k` leaves that state as it was at every `i <= k`. The
one exception, a second name for an argument (`flow.aliases`: `values = keys` holds while `keys` is bound nowhere
after it), records the statement that read ahead (`Walk.looked_ahead`), and no checkpoint past it is restored.
`Checkpoint` is that state, taken before each top-level statement where the walk is between statements of the
analysed function itself (no inlined callee, no open block); `Walk` is one whole walk with its checkpoints.
The next walk of the same function (`FlowAnalysis.function(resume=...)`) restores the last checkpoint whose
statements before it are byte for byte the same, at the same bytes and lines, and whose consulted names have the same
fingerprints, and walks on from there: the Forward is the one a walk from the start computes (tested, and
`bench/differential_fuzz.py`).

What a checkpoint holds refers to the walk's own results only by length where those only grow while the
walk is at the top level (the root block, `calls`, `applications`, the problems, the names in use): the walk's
final lists hold them. Tree nodes the state holds (the statement being walked, the closures defined so far) are found again in
the new tree by type and byte range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tree_sitter import Node

from adopter.analysis.flow.state import EnvVal
from adopter.dsl.types import Problem, Span, Stmt

# A node of the walked function, found again in a later tree by its type and byte range.
NodeAt = tuple[str, int, int]
# (via, result names, statement span, enclosing `if` alternatives): `FlowState.applications`' items
Application = tuple[tuple[str, ...], tuple[str, ...], Span, tuple[tuple[int, int], ...]]


class Checkpoint(NamedTuple):
    """The flow state before top-level statement `statement` of a walk (see the module docstring). A named tuple,
    not a frozen dataclass: one is made before every statement of every walk kept, and a tuple is built
    five times faster."""

    statement: int  # the top-level statement it precedes
    counter: int
    ops: int
    names: int  # how many of the walk's `names` were in use
    callee_locals: int  # how many of the walk's `callee_locals` were made
    block: int  # the root block's length
    calls: int
    applications: int
    problems: int  # problems the walk had reported
    terminated: bool
    returned: bool
    stmt_span: Span | None
    stmt_node: NodeAt | None
    env: dict[str, EnvVal]  # copies, never changed
    constants: dict[str, str | None]
    closures: tuple[NodeAt, ...]  # the closures defined so far (`FlowState.local_functions`), each in the root frame
    consulted: frozenset[str]  # the module-level names looked up so far


@dataclass(frozen=True, slots=True)
class Walk:
    """One walk of a function from its first statement, kept to resume the next walk of the same function.

    `start` and `head` (the function's start byte and its text up to the body) and `statements` (type, start
    and end byte, text and start line of each top-level statement) say which function and statements it walked
    (the line too: an edit can keep every byte offset and move lines, a newline typed and a character deleted
    between two statements, and the walk's spans are lines);
    `fingerprints` are those of every name it consulted, as they were; `resumed`, where it began."""

    start: int
    head: bytes
    statements: tuple[tuple[str, int, int, bytes, int], ...]
    checkpoints: tuple[Checkpoint, ...]
    names: tuple[str, ...]  # `FlowState.names` and `callee_locals`, in the order they were made
    callee_locals: tuple[str, ...]
    block: tuple[Stmt, ...]
    calls: tuple[tuple[str, Span], ...]
    applications: tuple[Application, ...]
    problems: tuple[Problem, ...]
    fingerprints: dict[str, tuple[object, ...]]
    resumed: int = 0  # the statement this walk began at (restored from the walk before it), 0 when from the first
    # The first top-level statement whose walk read the statements after it (`flow.aliases`), or None: a
    # checkpoint after it holds a decision an edit below it can change, so none past it is restored.
    looked_ahead: int | None = None


def node_at(node: Node) -> NodeAt:
    return (node.type, node.start_byte, node.end_byte)


def find_node(root: Node, at: NodeAt) -> Node | None:
    """The node of type `at[0]` spanning exactly bytes `at[1]:at[2]` under `root`, else None."""
    kind, start, end = at
    if start < root.start_byte or end > root.end_byte:
        return None
    node: Node | None = root.descendant_for_byte_range(start, end)
    while node is not None and node.start_byte == start and node.end_byte == end:
        if node.type == kind:
            return node
        node = node.parent
    return None
