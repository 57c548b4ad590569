"""How many items a loop of `__init__` adds to a list, when its trip counts are literal: MobileNetV2's
`for t, c, n, s in settings: for i in range(n): features.append(block(...))` over a literal `settings`
table adds the sum of its `n` column. Read so that the list's items after the loop keep their positions
(`Ctor.lead`: `self.features[18](x)`); which item is at each counted position is not read."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from adopter.analysis.names.identifiers import bound_identifiers
from adopter.analysis.parse.source import Field, SourceText

MAX_ITERATIONS = 4096
_EXITS = re.compile(r"(?<![\w.])(?:break|continue|return)(?!\w)")

Env = dict[str, int]


def added_by_loop(loop: Node, name: str, src: SourceText) -> int | None:
    """The number of items `loop` (a `for` statement) adds to the list `name` (`features`, `self.features`),
    when every statement of it that names the list is an `append`, an `extend` of a display, or an
    `if` whose paths add as many, its loops run over `range(...)` of literal counts or over the rows of a
    literal table, and nothing leaves a loop early; None otherwise."""
    return _Counter(name, src).statement(loop, {})


class _Counter:
    def __init__(self, name: str, src: SourceText) -> None:
        self.name = name
        self.src = src
        self.mention = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
        self.iterations = 0

    def block(self, block: Node | None, env: Env) -> int | None:
        total = 0
        for stmt in block.named_children if block is not None else ():
            if stmt.type == "comment":
                continue
            n = self.statement(stmt, env)
            if n is None:
                return None
            total += n
        return total

    def statement(self, stmt: Node, env: Env) -> int | None:
        text = self.src.text(stmt)
        if _EXITS.search(text):
            return None  # a loop left early adds fewer items than its count
        if not self.mention.search(text):
            return 0
        if stmt.type == "expression_statement" and stmt.named_child_count == 1:
            return self._addition(stmt.named_children[0])
        if stmt.type == "if_statement":
            counts = {self.block(stmt.child_by_field_id(Field.CONSEQUENCE), env)}
            has_else = False
            for clause in stmt.children_by_field_name("alternative"):
                has_else = has_else or clause.type == "else_clause"
                counts.add(self.block(clause.child_by_field_id(Field.BODY) or clause.child_by_field_id(
                    Field.CONSEQUENCE), env))
            if not has_else:
                counts.add(0)
            return counts.pop() if len(counts) == 1 else None
        if stmt.type == "for_statement" and not any(c.type == "else_clause" for c in stmt.children):
            runs = self._runs(stmt, env)
            if runs is None:
                return None
            total = 0
            for inner in runs:
                n = self.block(stmt.child_by_field_id(Field.BODY), inner)
                if n is None:
                    return None
                total += n
            return total
        return None

    def _addition(self, call: Node) -> int | None:
        """`name.append(x)`: 1; `name.extend([a, b])`: 2; anything else None."""
        func = call.child_by_field_id(Field.FUNCTION) if call.type == "call" else None
        args = call.child_by_field_id(Field.ARGUMENTS) if call.type == "call" else None
        if func is None or args is None or func.type != "attribute":
            return None
        obj, method = func.child_by_field_id(Field.OBJECT), func.child_by_field_id(Field.ATTRIBUTE)
        values = [a for a in args.named_children if a.type != "comment"]
        if obj is None or method is None or self.src.text(obj) != self.name or len(values) != 1:
            return None
        if self.mention.search(self.src.text(values[0])):
            return None
        if self.src.text(method) == "append":
            return 1
        items = [c for c in values[0].named_children if c.type != "comment"]
        if self.src.text(method) == "extend" and values[0].type in ("list", "tuple") and not any(
                c.type in ("list_splat", "parenthesized_list_splat") for c in items):
            return len(items)
        return None

    def _runs(self, loop: Node, env: Env) -> list[Env] | None:
        """The loop variables' integer values in each run of `loop`'s body (None: the runs are not evident)."""
        left, right = loop.child_by_field_id(Field.LEFT), loop.child_by_field_id(Field.RIGHT)
        if left is None or right is None:
            return None
        names = [self.src.text(n) for n in bound_identifiers(left)]
        if right.type == "call" and self.src.text(right.child_by_field_id(Field.FUNCTION) or right) == "range":
            args = right.child_by_field_id(Field.ARGUMENTS)
            values = [_integer(a, env, self.src, loop) for a in args.named_children] if args is not None else []
            counts = [v for v in values if v is not None]
            if (not 1 <= len(values) <= 3 or len(counts) != len(values) or (len(counts) == 3 and counts[2] == 0)
                    or len(range(*counts)) > MAX_ITERATIONS):
                return None
            rows: list[list[int | None]] = [[i] for i in range(*counts)]
        elif right.type == "identifier":
            table = _literal_table(right, self.src)
            if table is None:
                return None
            rows = []
            for entry in table:
                cells = [c for c in entry.named_children if c.type != "comment"] if entry.type in ("list", "tuple") else []
                rows.append([_integer(c, {}, self.src, None) for c in cells] if len(names) > 1 else [None])
        else:
            return None
        self.iterations += len(rows)
        if self.iterations > MAX_ITERATIONS:
            return None
        out: list[Env] = []
        for row in rows:
            if len(names) > 1 and len(row) != len(names):
                return None
            inner = {k: v for k, v in env.items() if k not in names}
            inner.update({k: v for k, v in zip(names, row) if v is not None})
            out.append(inner)
        return out



def _integer(node: Node, env: Env, src: SourceText, loop: Node | None) -> int | None:
    """An integer literal, or a name the enclosing loops bind to one and `loop`'s body never rebinds."""
    text = src.text(node)
    if node.type == "integer" and text.isdigit():
        return int(text)
    if node.type != "identifier" or text not in env or loop is None:
        return None
    body = loop.child_by_field_id(Field.BODY)
    rebound = re.compile(rf"(?<![\w.]){re.escape(text)}\b[^\n=]*(?<![=!<>])=(?!=)")
    return None if body is not None and rebound.search(src.text(body)) else env[text]


def _literal_table(name: Node, src: SourceText) -> list[Node] | None:
    """The rows of the list or tuple display assigned to `name` once, at the top level of the function the
    loop is in, when the function uses the name only as what its loops run over."""
    function = name.parent
    while function is not None and function.type != "function_definition":
        function = function.parent
    body = function.child_by_field_id(Field.BODY) if function is not None else None
    if body is None:
        return None
    text = src.text(name)
    rows: list[Node] | None = None
    for node in _named(body, text, src):
        parent = node.parent
        if parent is None:
            return None
        if parent.type == "for_statement" and parent.child_by_field_id(Field.RIGHT) == node:
            continue
        value = parent.child_by_field_id(Field.RIGHT) if parent.type == "assignment" else None
        holder = parent.parent
        if (rows is None and value is not None and parent.child_by_field_id(Field.LEFT) == node
                and value.type in ("list", "tuple") and holder is not None and holder.type == "expression_statement"
                and holder.parent == body):
            rows = [c for c in value.named_children if c.type != "comment"]
            continue
        return None
    return rows


def _named(node: Node, text: str, src: SourceText) -> Iterator[Node]:
    """The identifiers spelled `text` under `node`."""
    if node.type == "identifier":
        if src.text(node) == text:
            yield node
        return
    for child in node.named_children:
        yield from _named(child, text, src)
