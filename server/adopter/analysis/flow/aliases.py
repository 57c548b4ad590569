"""A second name for the forward's argument: `values = keys` binds the same tensor to both names.

    if queries is None:                # slp's attention (1.2.1, `modules/attention.py`)
        queries = keys
    values = keys
    k, q, v = self.k(keys), self.q(queries), self.v(values)

A plain name on the right of an assignment emits no op (locals keep their own names), so the flow loses the
link and `self.v(values)` projects "another" tensor. `input_alias` says when the statement walker passes the
argument on by a transparent `choose` instead (as it does for `if context is None: context = x`):

- the target is a local of the forward itself (not a parameter, not an inlined callee's local), the statement
  outside loops;
- any other binding of the target is a call of a method or a module's function (the conformers'
  `query_key_states = self._apply_rotary_embedding(query_key_states, ...)` under an `if`): an op of its own,
  which ends the link on its path. Other bindings emit no op (`residual = None`, a later `residual = h`), so the
  `choose` would reach past them: such a name keeps the old reading;
- the argument is bound nowhere after the statement: both names hold one tensor to the end. An argument bound
  again later (`residual = hidden_states` ... `hidden_states = residual + h`) would have the matcher read one
  name at two definitions, turning the residual add of a dropout-add-LayerNorm path-dependent (unfixable).
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.assignments import read_assignment, target_leaves
from adopter.analysis.names.identifiers import identifier_nodes
from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import Ref

_SCOPES = frozenset({"function_definition", "class_definition", "lambda"})
_LOOP_TARGETS = frozenset({"for_statement", "for_in_clause"})
_NAMED_TARGETS = frozenset({"as_pattern_target", "delete_statement", "global_statement", "nonlocal_statement"})


def input_alias(v: Ref, name: str, target: Node, params: frozenset[str], root: bool, src: SourceText) -> bool:
    """Whether `name = <v>` (at `target`) in the analysed forward names one of its arguments again, on the
    module doc's terms."""
    return alias_reading(v, name, target, params, root, src)[0]


def alias_reading(v: Ref, name: str, target: Node, params: frozenset[str], root: bool,
                  src: SourceText) -> tuple[bool, bool]:
    """`input_alias`'s answer, and whether an edit after the top-level statement holding `target` could change it
    (`flow.resume` restores no checkpoint past such a statement): a yes always can (a binding written below undoes
    it), a no only where that statement alone says yes. The function's body is walked once for both."""
    if not (root and v.name in params and name not in params and _plain(target, v.name, src)):
        return False, False
    function = target.parent
    while function is not None and function.type not in _SCOPES:
        function = function.parent
    if function is None or function.type != "function_definition":
        return False, False
    body = function.child_by_field_id(Field.BODY)
    if body is None or _in_loop(target, function):
        return False, False
    table = _bindings(body, frozenset((name, v.name)), src)
    decided = _holds(table.get(name, []), table.get(v.name, []), target, None)
    return decided, decided or _holds(table.get(name, []), table.get(v.name, []), target,
                                      _top_statement(target, body).end_byte)


def _holds(own: list[Node], argument: list[Node], target: Node, until: int | None) -> bool:
    """The alias's terms over the bindings of its name (`own`) and of the argument, those from byte `until` on
    left out (None: all): the name bound nowhere else but by calls, the argument not bound after it."""
    if any(b != target and not _computed(b) for b in own if until is None or b.start_byte < until):
        return False
    return all(b.start_byte < target.start_byte for b in argument if until is None or b.start_byte < until)


def _top_statement(node: Node, body: Node) -> Node:
    """The statement of `body` (a function's block) that holds `node`."""
    while node.parent is not None and node.parent != body:
        node = node.parent
    return node


def _plain(target: Node, value: str, src: SourceText) -> bool:
    """Whether `target` is the one target of `target = <value>`, the value written as the bare name (not
    `x if flag else None`, which the flow also reads as `x`)."""
    node = target.parent
    if node is None or node.type != "assignment" or node.child_by_field_id(Field.LEFT) != target:
        return False
    right = node.child_by_field_id(Field.RIGHT)
    return right is not None and right.type == "identifier" and src.text(right) == value


def _computed(leaf: Node) -> bool:
    """Whether binding `leaf` is the one target of `leaf = <obj>.<method>(...)` (`torch.cat(...)`,
    `self._apply_rotary_embedding(...)`): a call the flow writes as an op of its own, which ends the alias."""
    node = leaf.parent
    if node is None or node.type != "assignment" or node.child_by_field_id(Field.LEFT) != leaf:
        return False
    right = node.child_by_field_id(Field.RIGHT)
    function = right.child_by_field_id(Field.FUNCTION) if right is not None and right.type == "call" else None
    return function is not None and function.type == "attribute"


def _in_loop(node: Node, function: Node) -> bool:
    parent = node.parent
    while parent is not None and parent != function:
        if parent.type in ("for_statement", "while_statement"):
            return True
        parent = parent.parent
    return False


def _bindings(block: Node, names: frozenset[str], src: SourceText) -> dict[str, list[Node]]:
    """The targets in `block` (nested functions and classes left out) that bind each of the locals `names`: from
    the table of every local `block` binds, walked once per block and file (`SourceText.memo`; a forward asks
    once per aliasing statement, 474 asks of 306 blocks over check_speed's files)."""
    key = ("alias-bindings", block.start_byte)
    table = src.memo.get(key)
    if table is None:
        table = src.memo[key] = _all_bindings(block, src)
    assert isinstance(table, dict)
    return {name: table[name] for name in names if name in table}


def _all_bindings(block: Node, src: SourceText) -> dict[str, list[Node]]:
    """The targets in `block` (nested functions and classes left out) that bind each local, in walk order."""
    found: dict[str, list[Node]] = {}
    stack = list(block.named_children)
    # The ranges of the assignments that are another assignment's value (`a = b = c`): read with the outer one.
    # Noted when the outer one is popped, before its children are: `Node.parent` descends from the tree's root.
    chained: set[tuple[int, int]] = set()
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _SCOPES:
            continue
        children = node.named_children
        stack.extend(children)
        targets: list[Node] = []
        if kind == "assignment":
            chained.update([(c.start_byte, c.end_byte) for c in children if c.type == "assignment"])
            if (node.start_byte, node.end_byte) not in chained:
                read = read_assignment(node)
                targets = read[0] if read is not None else []
        elif kind == "augmented_assignment" or kind in _LOOP_TARGETS:
            left = node.child_by_field_id(Field.LEFT)
            targets = [left] if left is not None else []
        elif kind == "named_expression":
            left = node.child_by_field_id(Field.NAME)
            targets = [left] if left is not None else []
        elif kind in _NAMED_TARGETS:
            targets = [node]
        for t in targets:
            for leaf in _leaves(t):
                found.setdefault(src.text(leaf), []).append(leaf)
    return found


def _leaves(target: Node) -> list[Node]:
    if target.type in _NAMED_TARGETS:
        return [n for n in identifier_nodes(target)]
    return [leaf for leaf in target_leaves(target) if leaf.type == "identifier"]
