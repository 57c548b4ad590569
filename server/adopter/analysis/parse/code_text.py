"""A node's source with its comments left out: for readings of raw text that a comment must not change, and
for the keys of cached analyses that such readings make comment-blind (a comment keystroke re-analyses nothing).

A comment is a tree-sitter `comment` node: from a `#` outside a string to the end of its line. It never holds a
newline and nothing but the line's end follows it, so blanking one keeps every other byte, line and column."""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.parse.source import SourceText


def comments(src: SourceText, start: int, end: int, *, ending: bool = True) -> list[tuple[int, int]]:
    """The (start, end) bytes of the comments that begin in `src.data[start:end]`, in order (a `#` inside a
    string is not one: the tree says which node holds it). `ending=False` leaves out a comment that ends a node
    (`return x  # done` as a method's last line: the method's, its block's and maybe its class's span end there)."""
    data, root = src.data, src.tree.root_node
    out: list[tuple[int, int]] = []
    at = data.find(b"#", start, end)
    while at >= 0:
        node = root.descendant_for_byte_range(at, at + 1)
        if node is not None and node.type == "comment" and node.start_byte == at:
            parent = node.parent
            if ending or parent is None or parent.end_byte != node.end_byte:
                out.append((at, node.end_byte))
            at = data.find(b"#", node.end_byte, end)
        else:
            at = data.find(b"#", at + 1, end)
    return out


def code_bytes(src: SourceText, node: Node) -> bytes:
    """`src.raw(node)` with every comment's bytes replaced by spaces (offsets, lines and columns kept): what a
    search of a method's text (`self.<name>(`, `label(`) reads, so that a comment naming a call finds nothing."""
    raw = src.raw(node)
    if b"#" not in raw:
        return raw
    return _replaced(raw, node.start_byte, comments(src, node.start_byte, node.end_byte), blank=True)


def code_key(src: SourceText, start: int, end: int) -> bytes:
    """`src.data[start:end]` with every comment's text reduced to its `#`: equal for two texts that differ
    only inside comments. Every other byte kept, so equal keys mean the same code tokens at the same lines and
    columns (a comment ends its line); a comment that ends a node is kept whole (that node's span ends with it,
    and every node containing it ends at or after it): equal keys mean equal spans. The key of a cached analysis
    whose readings are blind to what a comment says (`Analyser._unit`, `ModuleSymbols.fingerprint`). A comment's presence stays in the key (a few readings
    see that a comment interrupts a text: a class header's pattern, a gap between tokens)."""
    raw = src.data[start:end]
    if b"#" not in raw:
        return raw
    return _replaced(raw, start, comments(src, start, end, ending=False), blank=False)


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
