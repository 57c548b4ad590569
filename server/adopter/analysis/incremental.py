"""Incremental analysis of one open document, for the language server.

Lifecycle: the server creates one `DocumentAnalysis(text, path)` per opened document, tells it about
each change with `edit` (a range replaced, in internal positions), `update` (the whole new text; the
changed range is found by diffing) or `apply_edit` (raw tree-sitter edit arguments), and calls
`result()` when it needs the `ModuleFile`. Each change calls `tree.edit` and re-parses with the old
tree (tree-sitter reuses the unchanged subtrees); `result()` re-analyses only the units (classes,
functions, top-level code) whose source text, position or module-level dependencies changed.
`invalidate()` drops the caches (e.g. when other workspace files changed). `prepare()` (the server calls it
once a document is opened, off the keystroke path) fills `salvage`'s memo from a clean text. `release()` drops the parse
trees and the text's bytes (most of a document's memory) but keeps the per-unit cache and the last result:
the server releases documents nobody edits; the next change or `result()` parses the whole text again,
and re-analyses only the units that changed. Not thread-safe: one document, one caller at a time. Never
raises from `result()`.

Broken text. A text Python rejects is read through `adopter.analysis.parse.salvage`, a function of the text
alone: the statements that do not parse are blanked, the rest is analysed, and the syntax errors are
reported at their real lines, exactly as `adopter check` reads the same text. The masked text is
re-parsed incrementally from the last analysed tree (a half-typed line changes a few bytes of it), and
the statements' parse verdicts are memoised, so a keystroke in a broken file re-parses and re-analyses
about as little as one in a clean file. A keystroke that breaks a clean text is often known broken from the
statements it touches alone (`adopter.analysis.parse.verdict`): its whole-text re-parse is then not run (it
is what the next change re-parses from, or `tree` when asked: the last tree parsed, `_base`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, overload

from tree_sitter import Parser, Tree

from adopter.analysis.analyser import Analyser
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.parse.blank_lines import blanks_only
from adopter.analysis.parse.reparse import common_prefix, common_suffix, reparse_start, whitespace_only
from adopter.analysis.parse.salvage import ParseMemo, salvage, seed_memo
from adopter.analysis.parse.source import check_input, is_broken, new_parser
from adopter.analysis.parse.verdict import (
    breaks_indentation,
    certainly_broken,
    left_of_block,
    method_text,
    parse_within,
    resume,
    seldom_breaks,
    statement_starts,
)
from adopter.dsl.types import ModuleFile, Problem, Severity


def _point(data: bytes, offset: int, tree: Tree | None = None) -> tuple[int, int]:
    """The tree-sitter (row, byte column) of byte `offset` in `data`. With `tree` (parsed from `data`, or
    moved onto it by an edit: its points are `data`'s), the row of the smallest node that spans `offset`
    plus the line breaks between that node's start and `offset`: a keystroke in a 100 KB file counted
    every line break before it (~80 us on average over T5's text, against ~3 us)."""
    if tree is not None:
        node = tree.root_node.descendant_for_byte_range(offset, offset)
        if node is not None and node.start_byte <= offset:
            row = node.start_point[0] + data.count(b"\n", node.start_byte, offset)
            return (row, offset - (data.rfind(b"\n", 0, offset) + 1))
    row = data.count(b"\n", 0, offset)
    return (row, offset - (data.rfind(b"\n", 0, offset) + 1))


def _point_after(data: bytes, start: int, start_row: int, offset: int) -> tuple[int, int]:
    """`_point(data, offset)` for `offset >= start`, `start_row` being `start`'s row in `data`."""
    row = start_row + data.count(b"\n", start, offset)
    return (row, offset - (data.rfind(b"\n", 0, offset) + 1))


_QUOTES = frozenset(b"\"'")  # the bytes of a string delimiter


class DocumentAnalysis:
    """The parse tree and analysis of one document, kept up to date edit by edit.

    `resolver` and `reach` as for `adopter.analysis.analyse`; the language server passes its own
    deferred reach (`adopter.analysis.analyser.deferred_reach`)."""

    def __init__(self, text: str, path: str | None = None, *, resolver: ModuleResolver | None = None,
                 reach: CrossFileReach | None = None) -> None:
        self.path = path
        self._parser = new_parser()
        self._analyser = Analyser(resolver, reach)
        self._text = text
        self._data: bytes | None = None
        self._tree: Tree | None = None
        self._analysed: tuple[bytes, Tree] | None = None  # the text and tree the last `result()` read
        self._previous: tuple[bytes, Tree] | None = None  # the text and tree before the last change
        # The last text parsed and its tree, while the current text is known broken and not parsed (`_tree`
        # None); the next change re-parses from it.
        self._base: tuple[bytes, Tree] | None = None
        self._starts: tuple[Tree, list[int] | None] | None = None  # a tree's `statement_starts`
        self._region_parser: Parser | None = None
        self._problem: Problem | None = None
        self._result: ModuleFile | None = None
        self._released = False  # trees and bytes dropped (`release`); parsed again when next needed
        self._prepared = False  # salvage's memo holds only what `prepare` put there (no broken text since)
        # The text the last result read (masked when broken), the result, and how many of its problems are that
        # text's syntax errors (`_run`).
        self._reading: tuple[bytes, ModuleFile, int] | None = None
        self._set_text(text, None)

    @property
    def text(self) -> str:
        return self._text

    @property
    def tree(self) -> Tree | None:
        """The current tree-sitter tree of the text (None when it cannot be analysed: binary, too large)."""
        self._restore()
        if self._tree is None and self._base is not None and self._data is not None:
            self._tree = self._reparse(self._base[1], self._base[0], self._data)
            self._base = None
        return self._tree

    @property
    def released(self) -> bool:
        """Whether the trees are dropped (`release`) and not parsed again yet."""
        return self._released

    def release(self) -> None:
        """Drop the trees and the UTF-8 bytes of the text (for a 100 KB file about 2 MB) and the forwards'
        flows with their walks (`Analyser.release_text`), keeping the text, the last result and the per-unit
        analysis cache. The next change parses the whole new text (not incrementally) and re-analyses only
        the units that changed; `result()`, `tree` and the `analysed_*` properties parse the unchanged text
        again when they need it."""
        self._released = True
        if self._prepared:  # the memo of a text never broken: made again by `prepare` if it is opened again
            self._analyser.memo = ParseMemo()
            self._prepared = False
        self._analyser.release_text(self._data)
        self._data = self._tree = None
        self._analysed = self._previous = self._base = self._starts = None
        self._reading = None

    def _restore(self) -> None:
        if self._released:
            result = self._result
            self._set_text(self._text, None)
            self._result = result  # the text did not change: neither did its result

    @property
    def reanalysed(self) -> tuple[str, ...]:
        """The units the last `result()` analysed afresh (e.g. `("class BertLayer",)`); for tests and logs."""
        return tuple(self._analyser.reanalysed)

    @property
    def analysed_text(self) -> bytes | None:
        """The bytes the analysis reads: the text, with the statements that do not parse blanked."""
        self._need_analysed()
        return self._analysed[0] if self._analysed is not None else None

    @property
    def analysed_tree(self) -> Tree | None:
        """The tree of `analysed_text` (re-parsed incrementally)."""
        self._need_analysed()
        return self._analysed[1] if self._analysed is not None else None

    def _need_analysed(self) -> None:
        if self._released:
            self._restore()
            self._result = None  # run the analysis (from its unit cache) to get the masked text and its tree
        self.result()

    def _set_text(self, text: str, edit: tuple[int, int, int] | None) -> None:
        """Adopt `text`; `edit` = (start byte, old end byte, new end byte) of the change, when known."""
        data, problem = check_input(text, self.path)
        if self._released:  # the text released was `self._text`'s bytes (`release`): the analysis gets them back
            old = self._text
            self._analyser.restore_text(lambda: data if old == text and data is not None else old.encode("utf-8"))
        self._released = False
        self._text = text
        self._result = None
        self._problem = problem
        old_data, old_tree = self._data, self._tree
        if old_tree is None and self._base is not None:
            old_data, old_tree = self._base  # the last text not parsed: re-parse from the one before
        self._base = None
        if data is None:
            self._data = self._tree = None
            self._analysed = self._previous = None
            return
        self._data = data
        if old_tree is not None and old_data is not None and edit is not None:
            self._tree = self._reparse(old_tree, old_data, data, certify=True)
            self._previous = (old_data, old_tree)
            if self._tree is None:
                self._base = (old_data, old_tree)
        else:
            self._tree, self._previous = self._parser.parse(data), None

    @overload
    def _reparse(self, old_tree: Tree, old: bytes, new: bytes, *, certify: Literal[False] = False) -> Tree: ...

    @overload
    def _reparse(self, old_tree: Tree, old: bytes, new: bytes, *, certify: bool) -> Tree | None: ...

    def _reparse(self, old_tree: Tree, old: bytes, new: bytes, *, certify: bool = False) -> Tree | None:
        """Parse `new` reusing `old_tree` (parsed from `old`, left unchanged); the changed range is
        found by diffing and shaped for reuse (`adopter.analysis.parse.reparse`). Returning to the text
        before the last change (a typed character deleted, an undo) takes that text's tree as it was:
        tree-sitter re-parses some such edits in full. With `certify`, None when the re-parse runs over
        its budget and `new` is known broken from the statements the change touches
        (`adopter.analysis.parse.verdict`)."""
        if self._previous is not None and self._previous[0] == new:
            return self._previous[1]
        if old == new:
            return old_tree
        original = old_tree
        old_tree = old_tree.copy()
        start = common_prefix(old, new)
        suffix = common_suffix(old, new, min(len(old), len(new)) - start)
        old_end, new_end = len(old) - suffix, len(new) - suffix
        tokens_same = whitespace_only(old, new, start, old_end, new_end) and not old_tree.root_node.has_error
        changed = start
        if not tokens_same:
            start = reparse_start(old, start)
        # One count of the line breaks before the change; the ends' rows add those inside it.
        start_point = _point(old, start, original)
        old_tree.edit(
            start_byte=start,
            old_end_byte=old_end,
            new_end_byte=new_end,
            start_point=start_point,
            old_end_point=_point_after(old, start, start_point[0], old_end),
            new_end_point=_point_after(new, start, start_point[0], new_end),
        )
        if tokens_same:  # see adopter.analysis.parse.reparse: the moved tree is what a parse would give
            return old_tree
        # (only from a broken tree: typing a quote into a text that parses must not pay a second parse)
        quotes = is_broken(original) and bool(
            _QUOTES.intersection(old[changed:old_end]) or _QUOTES.intersection(new[changed:new_end]))
        if not certify:
            return self._fresh_if_broken(self._parser.parse(new, old_tree), new, quotes)
        if left_of_block(old, original, changed, old_end, new, new_end):  # code left of a body's column
            return None
        if not seldom_breaks(old, changed, old_end, new, new_end) and self._method_broken(
                original, old, new, changed, old_end, new_end):
            return None
        first = breaks_indentation(old, original, changed, old_end, new, new_end)  # the slowest re-parses: not started
        if first and self._broken(original, old, new, changed, old_end, new_end):
            return None
        tree = parse_within(self._parser, new, old_tree)
        if tree is not None:
            return self._fresh_if_broken(tree, new, quotes)
        if not first and self._broken(original, old, new, changed, old_end, new_end):
            self._parser.reset()
            return None
        return self._fresh_if_broken(resume(self._parser, new, old_tree), new, quotes)

    def _fresh_if_broken(self, tree: Tree, new: bytes, quotes: bool) -> Tree:
        """`tree`, or a parse of `new` from scratch when a change of string quotes in a broken text left the
        re-parse broken: tree-sitter's re-parse that reuses a broken tree can keep an error a fresh parse of the
        same bytes does not have (found by bench/differential_fuzz.py: `'''` typed into a text holding another unclosed
        `'''`, which the new one closes), and `adopter check` parses from scratch."""
        if quotes and is_broken(tree):
            fresh = self._parser.parse(new)
            if not is_broken(fresh):
                return fresh
        return tree

    def _broken(self, tree: Tree, old: bytes, new: bytes, start: int, old_end: int, new_end: int) -> bool:
        """Whether `new` is known broken from the statements of `old` (parsed as `tree`) the change touches."""
        if self._starts is None or self._starts[0] is not tree:
            self._starts = (tree, statement_starts(tree))
        starts = self._starts[1]
        if starts is None:
            return False
        if self._region_parser is None:
            self._region_parser = new_parser()
        return certainly_broken(old, starts, new, start, old_end, new_end, self._region_parser)

    def _method_broken(self, tree: Tree, old: bytes, new: bytes, start: int, old_end: int, new_end: int) -> bool:
        """Whether `new` is known broken from the method the change lies in, parsed alone
        (`adopter.analysis.parse.verdict.method_text`). Its verdict goes into `salvage`'s memo, under the key
        the masking of `new` looks up (the method's text and column): a broken keystroke in a method parses
        the method alone once, not the whole text and then the method."""
        found = method_text(old, tree, new, start, old_end, new_end)
        if found is None:
            return False
        memo = self._analyser.memo
        parses = memo.get(found)
        if parses is None:
            if self._region_parser is None:
                self._region_parser = new_parser()
            parses = not is_broken(self._region_parser.parse(found[0]), found[1])
            memo.put(found, parses)
        return not parses

    def _parse_analysed(self, masked: bytes) -> Tree:
        """The tree of a masked text, re-parsed from the tree the last result read."""
        if self._analysed is None:
            return self._parser.parse(masked)
        old, tree = self._analysed
        if old == masked:
            return tree
        previous = self._previous
        self._previous = None  # its tree is of the real text, not of a masked one
        try:
            return self._reparse(tree, old, masked)
        finally:
            self._previous = previous

    def update(self, new_text: str) -> None:
        """Replace the whole text; the changed range is found by comparing with the previous text."""
        if new_text == self._text:
            return
        old = self._data
        new = new_text.encode("utf-8", errors="surrogatepass")
        if old is None:
            self._set_text(new_text, None)
            return
        start = common_prefix(old, new)
        suffix = common_suffix(old, new, min(len(old), len(new)) - start)
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

    def prepare(self) -> None:
        """Do now what the first keystroke that breaks a clean text would do first: mask the text through
        `salvage`'s memo (every statement parses: nothing is blanked), which keeps each chunk's tokenization,
        each top-level statement's and segment's verdict and the chunk starts, and the verdict of every
        statement at every depth (`seed_memo`). That keystroke then tokenizes one chunk, masks one segment
        instead of all of them (25 ms on a 100 KB file, pure Python) and parses alone only the statements that
        hold it, not its siblings (12-31 statements for one in a long method). The
        memo is a pure cache, keyed by the texts it read: what is masked with it is what is masked afresh, and
        an entry whose text the keystroke changed is simply not found. Nothing for a broken text (its analysis
        filled the memo already) or a released one. `release` drops a memo only `prepare` filled (the server
        releases the documents nobody edits: their memos would be most of what prepare costs in memory).
        Never raises."""
        data, tree = self._data, self._tree
        if self._released or data is None or tree is None or is_broken(tree):
            return
        try:
            seed_memo(data, self.path, self._analyser.memo)
        except Exception:  # a cache left cold, never a failed document
            return
        self._prepared = True

    def invalidate(self) -> None:
        """Forget cached analyses and resolved imports (other files changed)."""
        self._reading = None
        self._analyser.clear()
        self._analyser.resolver.clear()
        self._result = None

    def result(self) -> ModuleFile:
        """The current ModuleFile; re-analyses only what changed since the last call. Never raises."""
        if self._result is not None:
            return self._result
        self._restore()
        if self._data is None:
            problems = (self._problem,) if self._problem is not None else ()
            self._result = ModuleFile(self.path, (), problems)
            return self._result
        try:
            self._result = self._run(self._data, self._tree)
        except Exception as exc:  # the contract: never raise
            self._reading = None
            self._result = ModuleFile(
                self.path,
                (),
                (Problem(f"internal error: {type(exc).__name__}: {exc}", None, self.path, Severity.ERROR, "internal-error"),),
            )
        return self._result

    def _run(self, data: bytes, tree: Tree | None) -> ModuleFile:
        """The analysis of `data` (parsed as `tree`; None or broken: masked through `salvage` first). A masked
        text that differs from the last text analysed only in the blanks that end its blank lines and `pass`
        lines (typing inside a statement that stays broken: `adopter.analysis.parse.blank_lines`) is not
        analysed again: the last result is handed back with this text's syntax errors, which is what its
        analysis gives."""
        salvaged: tuple[bytes, Tree, tuple[Problem, ...]] | None = None
        if tree is None or is_broken(tree):
            salvaged = salvage(data, self.path, self._analyser.memo, self._parse_analysed)
            self._prepared = False  # a broken text was masked: the memo is the document's own, as without `prepare`
            kept, analysed = self._reading, self._analysed
            if (kept is not None and analysed is not None and analysed[0] is kept[0]
                    and blanks_only(kept[0], salvaged[0], salvaged[1])):
                found = salvaged[2]
                result = replace(kept[1], problems=found + kept[1].problems[kept[2]:])
                self._analysed = (salvaged[0], salvaged[1])
                self._reading = (salvaged[0], result, len(found))
                self._analyser.reanalysed = []
                return result
        # (a run that raises leaves `_reading` to `result`'s handler, which drops it)
        result = self._analyser.run(data, tree, self.path, parse=self._parse_analysed, salvaged=salvaged)
        read = self._analysed = self._analyser.read
        errors = len(salvaged[2]) if salvaged is not None else 0
        self._reading = (read[0], result, errors) if read is not None else None
        return result
