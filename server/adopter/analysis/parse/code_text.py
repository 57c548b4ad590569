"""A node's source with its comments left out: for readings of raw text that a comment must not change, and
for the keys of cached analyses that such readings make comment-blind (a comment keystroke re-analyses nothing).

A comment is a tree-sitter `comment` node: from a `#` outside a string to the end of its line. It never holds a
newline and nothing but the line's end follows it, so blanking one keeps every other byte, line and column."""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.parse.source import SourceText

_STATEMENT_LISTS = frozenset(("block", "module"))
_DEFINITIONS = frozenset(("function_definition", "class_definition"))


def comments(src: SourceText, start: int, end: int, *, between_statements: bool = False) -> list[tuple[int, int]]:
    """The (start, end) bytes of the comments that begin in `src.data[start:end]`, in order (a `#` inside a
    string is not one: the tree says which node holds it). `between_statements`: only those a block or the
    module holds that do not end it (a comment line between statements, or after a simple statement's code), and
    the comment lines of a `def` or `class` before its body's first statement (tree-sitter hangs them on the
    definition, after its `:`). Left out: a comment inside an expression (`f(a,  # why`: an expression's text
    holds it), on a definition's first line (`class A(B):  # why`: `header_span` reads that line) or after a
    compound statement's header, and one that ends a block (`return x  # done` as a method's last line: the
    spans of the block and of what holds it end with it)."""
    data, root = src.data, src.tree.root_node
    out: list[tuple[int, int]] = []
    at = data.find(b"#", start, end)
    while at >= 0:
        node = root.descendant_for_byte_range(at, at + 1)
        if node is not None and node.type == "comment" and node.start_byte == at:
            if not between_statements or _between_statements(node):
                out.append((at, node.end_byte))
            at = data.find(b"#", node.end_byte, end)
        else:
            at = data.find(b"#", at + 1, end)
    return out


def _between_statements(comment: Node) -> bool:
    parent = comment.parent
    if parent is None:
        return False
    if parent.type in _STATEMENT_LISTS:
        return parent.end_byte != comment.end_byte
    if parent.type in _DEFINITIONS:
        before = comment.prev_sibling
        return before is not None and before.type in (":", "comment") and comment.start_point[0] > parent.start_point[0]
    return False


def code_bytes(src: SourceText, node: Node) -> bytes:
    """`src.raw(node)` with every comment's bytes replaced by spaces (offsets, lines and columns kept): what a
    search of a method's text (`self.<name>(`, `label(`) reads, so that a comment naming a call finds nothing."""
    raw = src.raw(node)
    if b"#" not in raw:
        return raw
    return _replaced(raw, node.start_byte, comments(src, node.start_byte, node.end_byte), blank=True)


def code_key(src: SourceText, start: int, end: int) -> bytes:
    """`src.data[start:end]` with the text of every comment between statements (`comments(...,
    between_statements=True)`) reduced to its `#`: equal for two texts that differ only inside such comments.
    Every other byte kept, so equal keys mean the same code tokens at the same lines and columns (a comment ends
    its line) and the same text for every expression and every node's span (no node but the comment itself ends
    or starts inside such a comment, and none but a block or the module holds it). The key of a cached analysis
    whose readings are blind to what a comment between statements says (`Analyser._unit`,
    `ModuleSymbols.fingerprint`; the readings of a body's raw text use `code_bytes`). A comment's presence stays
    in the key (a few readings see that a comment interrupts a text: a class header's pattern)."""
    raw = src.data[start:end]
    if b"#" not in raw:
        return raw
    return _replaced(raw, start, comments(src, start, end, between_statements=True), blank=False)


def _replaced(raw: bytes, offset: int, found: list[tuple[int, int]], *, blank: bool) -> bytes:
    parts: list[bytes] = []
    last = 0
    for start, end in found:
        start, end = start - offset, min(end - offset, len(raw))
        parts.append(raw[last:start])
        parts.append(b" " * (end - start) if blank else b"#")
        last = end
    parts.append(raw[last:])
    return b"".join(parts)
