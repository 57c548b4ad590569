"""Whether two masked texts differ only in the blanks at the ends of lines that hold no token but `pass`.

Typing inside a statement that stays broken (`self.lay` -> `self.laye` -> `self.layer`) changes the text
`salvage` masks only there: the statement is blanked in each (spaces, line breaks kept; a body left without code
gets `pass` on its first line), so the masked texts differ in how many blanks end a line that is blank, or holds
`pass` only, in both. Outside strings, blanks at a line's end separate no tokens and precede no backslash (a line
of `pass` or of nothing has none): both texts have the same tokens at the same lines and columns, so the same tree
shape, the same spans and the same analysis (the analysis is blind to blanks at line ends:
`adopter.analysis.names.symbols._without_trailing_blanks`). The incremental document then hands back its last
result (`DocumentAnalysis._run`) with the new text's syntax errors.
"""

from __future__ import annotations

from tree_sitter import Tree

from adopter.analysis.parse.reparse import common_prefix, common_suffix

_BLANKS = b" \t"
_STRINGS = frozenset({"string", "string_content", "concatenated_string"})


def blanks_only(old: bytes, new: bytes, tree: Tree) -> bool:
    """Whether `old` and `new` (parsed as `tree`) differ only in the blanks that end lines holding nothing else,
    or `pass` only, in both, outside strings, with as many lines in each: every line from the first byte that
    differs to the last is such a line in both texts, with the same code."""
    if old == new:
        return True
    p = common_prefix(old, new)
    s = common_suffix(old, new, min(len(old), len(new)) - p)
    start = old.rfind(b"\n", 0, p) + 1  # the line the difference starts in (the same in both: a common prefix)
    old_end, new_end = old.find(b"\n", len(old) - s), new.find(b"\n", len(new) - s)
    old_end = len(old) if old_end < 0 else old_end  # the end of the line it ends in (the same line: a common suffix)
    new_end = len(new) if new_end < 0 else new_end
    before, after = old[start:old_end].split(b"\n"), new[start:new_end].split(b"\n")
    if len(before) != len(after):
        return False
    for a, b in zip(before, after, strict=True):
        code = a.rstrip(_BLANKS)
        if code != b.rstrip(_BLANKS) or code.lstrip(_BLANKS) not in (b"", b"pass"):
            return False
    node = tree.root_node.descendant_for_byte_range(start, new_end)
    while node is not None:  # (a line of a string holds its blanks: they are the string's)
        if node.type in _STRINGS:
            return False
        node = node.parent
    return True
