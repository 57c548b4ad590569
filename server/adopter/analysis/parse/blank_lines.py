"""Whether two texts differ only in how many blanks their blank lines hold.

Typing inside a statement that stays broken (`self.lay` -> `self.laye` -> `self.layer`) changes the text
`salvage` masks only there: the statement is blanked in each (spaces, line breaks kept), so the masked texts
differ in the length of a line that is blank in both. Python's tokenizer and tree-sitter read no token on a
blank line: both texts have the same tokens at the same lines and columns (a blank line ends before any token
of the next line starts), so the same tree shape, the same spans and the same analysis (the analysis is blind
to blanks at line ends: `adopter.analysis.names.symbols._without_trailing_blanks`). The incremental document
then hands back its last result (`DocumentAnalysis.result`) with the new text's syntax errors.
"""

from __future__ import annotations

from adopter.analysis.parse.reparse import common_prefix, common_suffix

_BLANKS = b" \t"


def blank_lines_only(old: bytes, new: bytes) -> bool:
    """Whether `old` and `new` differ only in lines that are blank (spaces and tabs only) in both, as many
    lines in each: the lines from the first byte that differs to the last are all blank in both texts."""
    if old == new:
        return True
    p = common_prefix(old, new)
    s = common_suffix(old, new, min(len(old), len(new)) - p)
    start = old.rfind(b"\n", 0, p) + 1  # the line the difference starts in (the same in both: a common prefix)
    old_end, new_end = old.find(b"\n", len(old) - s), new.find(b"\n", len(new) - s)
    old_end = len(old) if old_end < 0 else old_end  # the end of the line it ends in (the same line: a common suffix)
    new_end = len(new) if new_end < 0 else new_end
    before, after = old[start:old_end], new[start:new_end]
    return (before.count(b"\n") == after.count(b"\n") and not before.translate(None, _BLANKS + b"\n")
            and not after.translate(None, _BLANKS + b"\n"))
