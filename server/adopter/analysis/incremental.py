"""Incremental analysis of one open document, for the language server.

Lifecycle: the server creates one `DocumentAnalysis(text, path)` per opened document, tells it about
each change with `edit` (a range replaced, in internal positions), `update` (the whole new text; the
changed range is found by diffing) or `apply_edit` (raw tree-sitter edit arguments), and calls
`result()` when it needs the `ModuleFile`. Each change calls `tree.edit` and re-parses with the old
tree (tree-sitter reuses the unchanged subtrees); `result()` re-analyses only the units (classes,
functions, top-level code) whose source text, position or module-level dependencies changed.
`invalidate()` drops the caches (e.g. when other workspace files changed). Not thread-safe: one
document, one caller at a time. Never raises from `result()`.

Half-typed lines. A keystroke that breaks the syntax of a clean file (an opening bracket, a letter
at column 0 inside a class) makes tree-sitter's error recovery re-parse everything after it, and it
reshapes the classes below, which are then re-analysed: on a 100 KB file that costs tens of ms per
keystroke. So each change is first parsed on its own: the method it is in, else its top-level
statements (an `included_ranges` parse of a few KB; `adopter.analysis.masks`). When that region was
clean before and is broken now, the changed lines are *masked*: the tree and the analysis see them as
they were before, padded, or blank (same length, so positions stay valid), the rest of the file keeps
its clean tree, and the syntax error is reported from the region parse. A mask moves with later edits and goes away when an edit touches its lines again. If
masking the changed lines does not make the region parse (a deleted closing bracket), or anything
else is unusual, the plain path runs: the whole text with error recovery and `repair`.
"""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Parser, Range, Tree

from adopter.analysis.analyser import Analyser
from adopter.analysis.masks import (
    Mask,
    apply_masks,
    line_bounds,
    mask_candidates,
    method_around,
    shift_problem,
    statement_around,
    statements_around,
)
from adopter.analysis.reparse import reparse_start, whitespace_only
from adopter.analysis.resolver import ModuleResolver
from adopter.analysis.source import SourceText, check_input, is_broken, new_parser, syntax_problems
from adopter.dsl.types import ModuleFile, Problem, Severity

MAX_MASKS = 8  # broken lines kept masked at once; beyond this the plain (error recovery) path runs


def _point(data: bytes, offset: int) -> tuple[int, int]:
    """The tree-sitter (row, byte column) of byte `offset` in `data`."""
    row = data.count(b"\n", 0, offset)
    return (row, offset - (data.rfind(b"\n", 0, offset) + 1))


def _common_prefix(a: bytes, b: bytes) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # binary search on slice equality: O(log n) comparisons done in C
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _dedents(data: bytes, start: int, end: int, indent: int) -> bool:
    """Whether a non-blank line among those holding bytes `start:end` starts left of column `indent`."""
    if indent <= 0:
        return False
    first = data.rfind(b"\n", 0, start) + 1
    for line in data[first:end].split(b"\n"):
        body = line.lstrip(b" \t")
        if body.strip() and len(line) - len(body) < indent:
            return True
    return False


def _indent_of(line: bytes) -> int | None:
    """The indentation of a line holding code, None for a blank or comment-only line."""
    body = line.lstrip(b" \t")
    if not body.strip() or body.startswith(b"#"):
        return None
    return len(line) - len(body)


def _statement_above(data: bytes, lo: int, indent: int) -> int | None:
    """When the first code line at or after `lo` is indented deeper than `indent`, where the nearest code
    line above `lo` at `indent` or left of it starts (the statement whose block it may continue); else None."""
    end = data.find(b"\n", lo)
    first = data[lo : len(data) if end < 0 else end]
    while _indent_of(first) is None and end >= 0:
        start, end = end + 1, data.find(b"\n", end + 1)
        first = data[start : len(data) if end < 0 else end]
    found = _indent_of(first)
    if found is None or found <= indent:
        return None
    start = lo
    while start > 0:
        prev = data.rfind(b"\n", 0, start - 1) + 1
        found = _indent_of(data[prev : start - 1])
        if found is not None and found <= indent:
            return prev
        start = prev
    return None


class DocumentAnalysis:
    """The parse tree and analysis of one document, kept up to date edit by edit."""

    def __init__(self, text: str, path: str | None = None, *, resolver: ModuleResolver | None = None) -> None:
        self.path = path
        self._parser = new_parser()
        self._analyser = Analyser(resolver)
        self._text = text
        self._data: bytes | None = None
        self._tree: Tree | None = None
        self._tree_data: bytes | None = None  # what `_tree` was parsed from: `_data` with its masks applied
        self._masks: list[Mask] = []
        self._base: tuple[bytes, Tree] | None = None  # the clean text and tree from before the masks
        self._previous: tuple[bytes, Tree] | None = None  # the text and tree before the last change
        self._region_parser: Parser | None = None
        self._problem: Problem | None = None
        self._result: ModuleFile | None = None
        self._set_text(text, None)

    @property
    def text(self) -> str:
        return self._text

    @property
    def tree(self) -> Tree | None:
        """The current tree-sitter tree (None when the text cannot be analysed: binary, too large)."""
        return self._tree

    @property
    def reanalysed(self) -> tuple[str, ...]:
        """The units the last `result()` analysed afresh (e.g. `("class BertLayer",)`); for tests and logs."""
        return tuple(self._analyser.reanalysed)

    @property
    def analysed_text(self) -> bytes | None:
        """The bytes the tree and the analysis see: the text with masked (half-typed) lines replaced."""
        return self._tree_data

    def _set_text(self, text: str, edit: tuple[int, int, int] | None) -> None:
        """Adopt `text`; `edit` = (start byte, old end byte, new end byte) of the change, when known."""
        data, problem = check_input(text, self.path)
        self._text = text
        self._result = None
        self._problem = problem
        if data is None:
            self._data = self._tree = self._tree_data = None
            self._masks, self._base = [], None
            return
        old_data, old_tree, old_tree_data = self._data, self._tree, self._tree_data
        self._data = data
        if old_tree is not None and old_data is not None and old_tree_data is not None and edit is not None:
            if self._masked_parse(old_tree, old_tree_data, edit):
                return
        self._masks, self._base = [], None
        if old_tree is not None and old_tree_data is not None and edit is not None:
            self._tree = self._reparse(old_tree, old_tree_data, data)
            self._previous = (old_tree_data, old_tree)
        else:
            self._tree, self._previous = self._parser.parse(data), None
        self._tree_data = data

    def _reparse(self, old_tree: Tree, old: bytes, new: bytes) -> Tree:
        """Parse `new` reusing `old_tree` (parsed from `old`, left unchanged); the changed range is
        found by diffing and shaped for reuse (`adopter.analysis.reparse`). Returning to the text
        before the last change (a typed character deleted, an undo) takes that text's tree as it was:
        tree-sitter re-parses some such edits in full."""
        if self._previous is not None and self._previous[0] == new:
            return self._previous[1]
        old_tree = old_tree.copy()
        start = _common_prefix(old, new)
        suffix = _common_suffix(old, new, min(len(old), len(new)) - start)
        old_end, new_end = len(old) - suffix, len(new) - suffix
        tokens_same = whitespace_only(old, new, start, old_end, new_end) and not old_tree.root_node.has_error
        if not tokens_same:
            start = reparse_start(old, start)
        old_tree.edit(
            start_byte=start,
            old_end_byte=old_end,
            new_end_byte=new_end,
            start_point=_point(old, start),
            old_end_point=_point(old, old_end),
            new_end_point=_point(new, new_end),
        )
        if tokens_same:  # see adopter.analysis.reparse: the moved tree is what a parse would give
            return old_tree
        return self._parser.parse(new, old_tree)

    def _region_clean(self, data: bytes, start: int, end: int) -> Tree:
        """A parse of bytes `start:end` of `data` alone (whole top-level statements)."""
        if self._region_parser is None:
            self._region_parser = new_parser()
        self._region_parser.included_ranges = [Range(_point(data, start), _point(data, end), start, end)]
        return self._region_parser.parse(data)

    def _mask_region(
        self, masks: list[Mask], lo: int, hi: int, indent: int, old: bytes, start: int, new_end: int, delta: int,
        may_mask: bool,
    ) -> tuple[bytes, list[Mask]] | None:
        """The analysed text and masks when the region `lo:hi` (its statements at column `indent`),
        holding the change `start:new_end`, parses alone: as it is, with the masks it had, or with
        the changed lines masked; None when none of these parses."""
        data = self._data
        assert data is not None
        # Masks in the region are decided afresh: the edit may have fixed their lines.
        inside = [m for m in masks if m.start >= lo and m.end <= hi]
        masks = [m for m in masks if not (m.start >= lo and m.end <= hi)]
        masked = apply_masks(data, masks)
        region = self._region_clean(masked, lo, hi)
        if not is_broken(region, indent):
            return masked, masks
        above = _statement_above(masked, lo, indent)
        if above is not None and not is_broken(self._region_clean(masked, above, hi), indent):
            # The region's first lines continue the block above it (lines between them were deleted): with
            # that block they parse, and nothing is half-typed.
            return masked, masks
        kept = masked
        if inside:
            kept = apply_masks(masked, inside)
            region = self._region_clean(kept, lo, hi)
            if not is_broken(region, indent):  # the lines masked before are still what is broken
                return kept, masks + inside
        if not may_mask or len(masks) + len(inside) >= MAX_MASKS or _dedents(data, start, new_end, indent):
            # A changed line left of the region's statements (a class pasted into a method) ends the
            # region's block: the region alone is broken where the file need not be; a wider region decides.
            return None
        problems = tuple(syntax_problems(region, SourceText(kept, region, self.path), indent))
        a, b = line_bounds(data, start, new_end)
        for candidate in mask_candidates(kept, old, a, b, delta):
            if not is_broken(self._region_clean(candidate, lo, hi), indent):
                return candidate, [*masks, *inside, Mask(a, b, candidate[a:b], problems)]
        return None

    def _statement_clean(
        self, old_tree: Tree, old_tree_data: bytes, masks: list[Mask], start: int, old_end: int, new_end: int,
        delta: int,
    ) -> tuple[bytes, list[Mask]] | None:
        """The analysed text and masks when the edit lies inside one simple statement that still
        parses alone (most keystrokes): a parse of a line or two instead of the whole method. None:
        ask the method or the top-level statements. The whole-file parse that follows checks again."""
        found = statement_around(old_tree, old_tree_data, start, old_end)
        if found is None:
            return None
        assert self._data is not None
        masked = apply_masks(self._data, masks)
        lo, hi = line_bounds(masked, found[0], max(found[1] + delta, new_end))
        if is_broken(self._region_clean(masked, lo, hi), found[2]):
            return None
        return masked, masks

    def _masked_parse(self, old_tree: Tree, old_tree_data: bytes, edit: tuple[int, int, int]) -> bool:
        """The fast path for an edit of a clean tree (see the module docstring); False: take the plain one."""
        if is_broken(old_tree):
            return False
        data = self._data
        assert data is not None
        start, old_end, new_end = edit
        delta = new_end - old_end
        rows = data.count(b"\n", start, new_end) - old_tree_data.count(b"\n", start, old_end)
        masks: list[Mask] = []
        for m in self._masks:  # masks move with the text; one the edit touches is dropped
            if m.end < start:
                masks.append(m)
            elif m.start > old_end:
                problems = tuple(shift_problem(p, rows) for p in m.problems)
                masks.append(Mask(m.start + delta, m.end + delta, m.content, problems))
        masked_ranges = [(m.start, m.end) for m in self._masks]
        wide_lo, wide_hi, in_gap = statements_around(old_tree, start, old_end, masked_ranges)
        done = None
        touched = len(masks) < len(self._masks)  # a mask the edit touched is decided in its region
        if not touched and not any(wide_lo <= m.start and m.end <= wide_hi + delta for m in masks):
            done = self._statement_clean(old_tree, old_tree_data, masks, start, old_end, new_end, delta)
        if done is None:
            regions = [(wide_lo, wide_hi, 0, True)]
            # Parsed alone first: a method is a few KB where its class can be a hundred. A method may get
            # a mask of its own; new lines between statements are only taken when they parse (a decorator
            # line needs the `def` below it). Not while a mask elsewhere in the wide region could be fixed.
            narrow = method_around(old_tree, start, old_end)
            if narrow is None and in_gap:
                narrow = (start, old_end, 0)
            if narrow is not None:
                lo_n, hi_n = narrow[0], max(narrow[1], old_end) + delta
                lo_w, hi_w = wide_lo, wide_hi + delta
                if not any(lo_w <= m.start and m.end <= hi_w and not (lo_n <= m.start and m.end <= hi_n) for m in masks):
                    regions.insert(0, (narrow[0], narrow[1], narrow[2], narrow[2] > 0))
            for lo, hi, indent, may_mask in regions:
                lo, hi = line_bounds(data, lo, max(hi + delta, new_end))
                done = self._mask_region(masks, lo, hi, indent, old_tree_data, start, new_end, delta, may_mask)
                if done is not None:
                    break
        if done is None:
            return False
        masked, masks = done
        masks.sort(key=lambda m: m.start)
        if self._base is not None and masked == self._base[0]:
            tree = self._base[1]  # back to the text before the masks (a typed character deleted)
        else:
            tree = self._reparse(old_tree, old_tree_data, masked)
        if is_broken(tree):  # not expected: the region parsed alone; stay on the safe side
            return False
        if not masks:
            self._base = None
        elif not self._masks:
            # tree-sitter re-parses some of these edits back in full (a space removed at the end of a
            # `def` line costs a whole-file parse), so keep the clean tree to return to.
            self._base = (old_tree_data, old_tree)
        self._previous = (old_tree_data, old_tree)
        self._tree, self._tree_data, self._masks = tree, masked, masks
        return True

    def update(self, new_text: str) -> None:
        """Replace the whole text; the changed range is found by comparing with the previous text."""
        if new_text == self._text:
            return
        old = self._data
        new = new_text.encode("utf-8", errors="surrogatepass")
        if old is None:
            self._set_text(new_text, None)
            return
        start = _common_prefix(old, new)
        suffix = _common_suffix(old, new, min(len(old), len(new)) - start)
        self._set_text(new_text, (start, len(old) - suffix, len(new) - suffix))

    def edit(self, start: tuple[int, int], end: tuple[int, int], replacement: str) -> None:
        """Replace the range `start`-`end` (internal positions: 0-based line, code-point column; lines
        end at `\n` only, as tree-sitter's rows do, not at the other breaks `str.splitlines` knows)."""
        lines = self._text.split("\n")

        def offset(pos: tuple[int, int]) -> int:
            line, col = pos
            if line >= len(lines):
                return len(self._text)
            return sum(len(t) + 1 for t in lines[:line]) + min(col, len(lines[line].rstrip("\r")))

        a, b = offset(start), offset(end)
        if b < a:
            raise ValueError(f"edit range ends before it starts: {start} > {end}")
        new_text = self._text[:a] + replacement + self._text[b:]
        if self._data is None:
            self._set_text(new_text, None)
            return
        start_byte = len(self._text[:a].encode("utf-8", errors="surrogatepass"))
        old_end_byte = start_byte + len(self._text[a:b].encode("utf-8", errors="surrogatepass"))
        new_end_byte = start_byte + len(replacement.encode("utf-8", errors="surrogatepass"))
        self._set_text(new_text, (start_byte, old_end_byte, new_end_byte))

    def apply_edit(
        self,
        start_byte: int,
        old_end_byte: int,
        new_end_byte: int,
        start_point: tuple[int, int],
        old_end_point: tuple[int, int],
        new_end_point: tuple[int, int],
        new_text: str,
    ) -> None:
        """A change given as tree-sitter's edit arguments (byte offsets, (row, byte column) points),
        with `new_text` the whole document after the change."""
        del start_point, old_end_point, new_end_point  # recomputed from the texts, which are authoritative
        self._set_text(new_text, (start_byte, old_end_byte, new_end_byte))

    def invalidate(self) -> None:
        """Forget cached analyses and resolved imports (other files changed)."""
        self._analyser.clear()
        self._analyser.resolver.clear()
        self._result = None

    def result(self) -> ModuleFile:
        """The current ModuleFile; re-analyses only what changed since the last call. Never raises."""
        if self._result is not None:
            return self._result
        if self._tree is None or self._data is None:
            problems = (self._problem,) if self._problem is not None else ()
            self._result = ModuleFile(self.path, (), problems)
            return self._result
        try:
            data = self._tree_data if self._tree_data is not None else self._data
            result = self._analyser.run(data, self._tree, self.path)
            if self._masks:
                masked = tuple(p for m in self._masks for p in m.problems)
                result = replace(result, problems=masked + result.problems)
            self._result = result
        except Exception as exc:  # the contract: never raise
            self._result = ModuleFile(
                self.path,
                (),
                (Problem(f"internal error: {type(exc).__name__}: {exc}", None, self.path, Severity.ERROR, "internal-error"),),
            )
        return self._result
