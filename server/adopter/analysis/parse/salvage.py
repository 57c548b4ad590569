"""The error-tolerant reading of a text Python rejects: the statements that do not parse are blanked.

`adopter check` (a fresh analysis) and the language server (`DocumentAnalysis`, edit by edit) read a
broken text through `salvage`, a function of the text alone, so both report the same findings and the
same syntax errors for it, whatever edits led there.

The text is cut into statements by indentation, brackets and strings (`Lines`), as Python's tokenizer
would, with two tolerances: a `def` or `class` line at column 0 ends an unclosed bracket or string, and
a statement at the indentation of an unclosed bracket's line or left of it ends that bracket, so a
half-typed line cannot swallow the rest of the file. A statement that does not parse alone is repaired
from the inside: a compound statement (a class, a method, an `if`) keeps its headers and has the
statements of its bodies masked the same way; a line that ends the block above it (a letter typed at
column 0 inside a class) is blanked and the lines below it join that block again; what is left broken
is blanked (spaces, the line breaks kept, so every position stays valid). A body left without code gets
a `pass` (on a line long enough for it). The syntax errors are those of the smallest statement blanked,
parsed alone: at their real lines, not where tree-sitter's error recovery of the whole file lands.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import compress, count
from operator import not_, or_

from tree_sitter import Parser, Tree

from adopter.analysis.parse.reparse import common_prefix, common_suffix
from adopter.analysis.parse.source import (
    MAX_SYNTAX_PROBLEMS,
    SourceText,
    is_broken,
    new_parser,
    repair,
    syntax_problems,
)
from adopter.dsl.types import Problem, Severity, Span

MEMO_BYTES = 4 << 20  # statement text kept with parse verdicts, per document (then the memo starts over)

# Comments, strings (a prefix such as `rb` changes nothing here: a backslash escapes the quote in raw
# strings too), backslash continuations, brackets.
_TOKENS = re.compile(
    rb"(?=[#\"'\\()\[\]{}])"  # lets the regex engine skip to a candidate character
    rb"(?:#[^\n]*"
    rb'|"""[\s\S]*?"""'
    rb"|'''[\s\S]*?'''"
    rb'|"""[\s\S]*'  # unterminated: to the end, as Python reads it (cut below)
    rb"|'''[\s\S]*"
    rb'|"(?:\\.|[^"\\\n])*"'
    rb"|'(?:\\.|[^'\\\n])*'"
    rb"|\\\r?\n"
    rb"|[()\[\]{}])"
)
# A column-0 line no string or bracket can hold in real code: where an unclosed one is taken to end.
_CHUNK = re.compile(rb"\n(?:(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(|class[ \t]+\w+[ \t]*[(:])")
# A line that reads as a statement of its own (a keyword, an assignment with spaced `=`): inside a bracket
# opened on a line indented as deep or deeper, it is taken to end that bracket's statement (unclosed).
_STATEMENT = re.compile(
    rb"[ \t]*(?:(?:def|class|return|if|elif|else|for|while|with|try|except|finally|raise|assert|del|pass|"
    rb"import|from|break|continue|yield|async|await|global|nonlocal)\b|@\w"
    rb"|[\w.]+(?:\[[^\]\n]*\])?(?:[ \t]*,[ \t]*[\w.]+)*[ \t]+(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=[ \t])"
)
_CLAUSE = re.compile(rb"(?:else|elif|except|finally)\b")
_INDENT = re.compile(rb"^[ \t]*", re.M)
_OPENERS = frozenset(b"([{")
_CLOSERS = frozenset(b")]}")
_MATCH = {ord(")"): ord("("), ord("]"): ord("["), ord("}"): ord("{")}


# Per line of a chunk: inside a string, bracket depth, start (offset in the chunk), indentation; comments.
_Scan = tuple[list[bool], list[int], dict[int, int], list[int], list[int]]


def _scan(chunk: bytes, last: bool) -> _Scan:
    """Tokenize one chunk (from a column-0 `def`/`class` line to the next): for each of its lines,
    whether it starts inside a string or after a backslash, its bracket depth at its start, where
    its comment starts, where it starts and its indentation (offsets into the chunk). `last`: the
    chunk ends the text (its final line has no line break)."""
    found = list(_INDENT.finditer(chunk))
    if not last and len(found) > 1:
        found.pop()  # the empty match after the chunk's final line break is the next chunk's first line
    starts = [m.start() for m in found]
    indent = [m.end() - m.start() for m in found]
    n = len(starts)
    inside = [False] * n
    depth_at = [0] * n
    comments: dict[int, int] = {}
    _tokenize(chunk, starts, indent, inside, depth_at, comments, 0, None)
    return inside, depth_at, comments, starts, indent


# Where `_tokenize` may stop early (`_rescan`): the first line of the text after the change, how many lines
# the change added, and the last reading's `inside` and depth per line.
_Sync = tuple[int, int, list[bool], list[int]]


def _tokenize(chunk: bytes, starts: list[int], indent: list[int], inside: list[bool], depth_at: list[int],
              comments: dict[int, int], line: int, sync: _Sync | None) -> int:
    """`_scan`'s walk over the tokens of `chunk`, from the start of line `line` with no bracket open (filling
    `inside`, `depth_at` and `comments` from there on); with `sync`, it stops at the first line it reaches, at
    or after `sync[0]`, that starts outside brackets and strings in both readings (the line it returns; -1
    when it ran to the end): see `_rescan`."""
    n = len(starts)
    stack: list[tuple[int, int]] = []  # open brackets and their lines (a closer that does not match the
    # innermost one is ignored)
    pos = starts[line] if line < n else len(chunk)
    search = _TOKENS.search
    while True:
        m = search(chunk, pos)
        stop = m.start() if m is not None else len(chunk)
        reached = line
        if not stack:  # lines up to this token are at depth 0 (the default)
            line = bisect_right(starts, stop, line) - 1
        while line + 1 < n and starts[line + 1] <= stop:  # inside brackets: each line's depth
            line += 1
            if stack and not inside[line] and indent[line] <= indent[stack[0][1]] and (
                    _STATEMENT.match(chunk, starts[line]) is not None):
                stack.clear()  # a statement at the bracket's indentation or left of it ends it
            depth_at[line] = len(stack)
        if sync is not None and line != reached and line >= sync[0] and not stack and not inside[line]:
            old = line - sync[1]
            if 0 <= old < len(sync[2]) and not sync[2][old] and not sync[3][old]:
                return line
        if m is None:
            break
        pos = m.end()
        first = chunk[stop]
        if pos - stop == 1:
            if first in _OPENERS:
                stack.append((first, line))
            elif first in _CLOSERS:
                if stack and stack[-1][0] == _MATCH[first]:
                    stack.pop()
            else:  # an empty comment
                comments[line] = stop
        elif first == 0x23:  # `#`
            comments[line] = stop
        elif first == 0x5C:  # a backslash continuation
            if line + 1 < n:
                inside[line + 1] = True
        else:  # a string: the lines after its first one are inside it (to the chunk's end at most)
            for k in range(line + 1, bisect_right(starts, pos - 1, line)):
                inside[k] = True
    return -1


def _rescan(old: bytes, scanned: _Scan, chunk: bytes, last: bool) -> _Scan | None:
    """`_scan(chunk, last)` from `scanned` = `_scan(old, last)`, for a chunk a keystroke changed: the lines
    before the change and those after it where both readings are back in step are taken from `scanned`; only
    the tokens between are read. None when the two chunks do not lend themselves to it.

    Why it is `_scan`'s reading. Line starts and indentation depend on the text around each line start only:
    lines that start before the change (`p`, the common prefix) and whose indentation ends before it keep
    theirs, lines that start after the line break ending the common suffix keep theirs moved by the change in
    length. Tokens: where a line starts outside brackets, strings and continuations (`fresh`: after its own
    text decided whether it ends the brackets open above it), no token crosses its start and no bracket is
    open, and a token found before it reads only the text before it (a comment, a bracket, a one-line string
    stop at the line break; a string that runs on crosses the line); so the walk from that line with nothing
    open finds the tokens the walk from the chunk's start finds after it. The walk restarts at the last such
    line of `old` above the line the change starts in (line 0 at worst): its text and all before it are
    unchanged, so it and the lines above it read as they did. It stops at the first line after the change
    that is such a line in both readings: from there on the text is the same and is read from the same state
    (nothing open), so its lines read as in `old`, moved.
    """
    o_inside, o_depth, o_comments, o_starts, o_indent = scanned
    if not last and not (old.endswith(b"\n") and chunk.endswith(b"\n")):
        return None  # (a chunk that does not end the text ends with its line break)
    p = common_prefix(old, chunk)
    s = common_suffix(old, chunk, min(len(old), len(chunk)) - p)
    delta = len(chunk) - len(old)
    o_n = len(o_starts)
    # Every line start, as `_INDENT.finditer` gives them (the one after a final line break included).
    o_all = [*o_starts, len(old)] if not last else o_starts
    o_all_indent = [*o_indent, 0] if not last else o_indent
    a = bisect_right(o_all, p) - 1  # the line the change starts in: those above it are unchanged
    tail = bisect_right(o_all, len(old) - s)  # the first line starting inside the common suffix
    starts = o_all[:a]
    indent = o_all_indent[:a]
    limit = len(chunk) - s
    for m in _INDENT.finditer(chunk, o_all[a]):
        if m.start() > limit:
            break
        starts.append(m.start())
        indent.append(m.end() - m.start())
    first = len(starts)  # the first line after the change
    starts.extend(map(delta.__add__, o_all[tail:]) if delta else o_all[tail:])
    indent.extend(o_all_indent[tail:])
    if not last and len(starts) > 1:
        starts.pop()
        indent.pop()
    n = len(starts)
    lines = n - o_n
    restart = max(min(a - 1, o_n - 1), 0)  # above the changed line: a line's own text decides whether it ends brackets
    while restart > 0 and (o_depth[restart] or o_inside[restart]):
        restart -= 1
    if restart >= n:
        return None
    inside = o_inside[:restart] + [False] * (n - restart)
    depth_at = o_depth[:restart] + [0] * (n - restart)
    comments = {k: v for k, v in o_comments.items() if k < restart}
    synced = _tokenize(chunk, starts, indent, inside, depth_at, comments, restart, (first, lines, o_inside, o_depth))
    if synced >= 0:
        old_line = synced - lines
        inside[synced:] = o_inside[old_line:]
        depth_at[synced:] = o_depth[old_line:]
        for k, v in o_comments.items():
            if k >= old_line:
                comments[k + lines] = v + delta
    return inside, depth_at, comments, starts, indent


def _chunk_starts(data: bytes, memo: ParseMemo | None) -> list[int]:
    """Where each chunk but the first starts: the column-0 `def`/`class` lines (`_CHUNK`), carried from
    the memo's last text when there is one (a document's next keystroke).

    Whether `_CHUNK` matches at a line break depends on the text from that break to the next one only
    (no part of the pattern crosses a line break, and matches never overlap), so matches whose line lies
    wholly in the common prefix or wholly in the common suffix of the two texts are the old ones, moved by
    the change in length for the suffix; only the lines the change touches are searched again."""
    last = memo.last_chunks if memo is not None else None
    if last is None:
        found = [m.start() + 1 for m in _CHUNK.finditer(data)]
    elif last[0] is data or last[0] == data:
        found = last[1]
    else:
        old, starts = last
        p = common_prefix(old, data)
        s = common_suffix(old, data, min(len(old), len(data)) - p)
        q = max(data.rfind(b"\n", 0, p), 0)  # a match at a break before `q` reads the prefix only
        tail = len(data) - s  # one at or after it, the suffix only
        after = data.find(b"\n", tail)
        end = len(data) if after < 0 else after + 1
        head = starts[: bisect_right(starts, q)]  # break (start - 1) before q
        moved = starts[bisect_left(starts, len(old) - s + 1):]  # break at or after len(old) - s
        middle = [m.start() + 1 for m in _CHUNK.finditer(data, q, end) if m.start() < tail]
        delta = len(data) - len(old)
        found = head + middle + (list(map(delta.__add__, moved)) if delta else moved)
    if memo is not None:
        memo.last_chunks = (data, found)
    return found


def _same_chunk(previous: Lines, j: int, data: bytes, a: int, b: int) -> bool:
    """Whether `previous`'s chunk `j` has the text of `data[a:b]` and ends its text as that one does (a
    chunk's reading depends on these alone)."""
    if not 0 <= j < len(previous.chunks):
        return False
    _, chunk, last = previous.chunks[j]
    return b - a == len(chunk) and last == (b == len(data)) and data.startswith(chunk, a)


class Lines:
    """The lines of a text with what a tokenizer knows at each: indentation, whether a statement may
    start there (outside brackets and strings, not after a backslash), where its code ends.

    A column-0 `def` or `class` line ends whatever bracket or string is open before it (no real code
    has one inside either), so the text is tokenized in chunks between such lines, each on its own and
    remembered in `memo`: a keystroke re-tokenizes one chunk. The lines of the chunks whose text the last
    reading in `memo` had (`ParseMemo.last_lines`) are carried from it, moved to where they are now (a
    chunk's reading depends on its text and whether it ends the text alone), so a keystroke builds the
    per-line lists of its own chunk only, not of the whole file.
    """

    def __init__(self, data: bytes, memo: ParseMemo | None = None) -> None:
        self.data = data
        self.indent: list[int] = []
        self.starts: list[int] = []
        self._inside: list[bool] = []
        # outside brackets and strings at its start, not after a backslash (`not (depth or inside)`)
        self.fresh: list[bool] = []
        self._comment: dict[int, int] = {}  # where a line's comment starts
        self._comment_lines: list[int] = []  # the lines with a comment, ascending
        self._code: dict[int, bool] = {}
        # Each chunk's first line and text (`_Masker.top` skips the chunks found whole before), and offset.
        self.chunks: list[tuple[int, bytes, bool]] = []
        self.offsets: list[int] = []
        self.ends: list[int] = []  # where each line's `\n` is
        # The lines at column 0 (blank ones included): where a top-level statement can start.
        self.column0: list[int] = []
        bounds = [0, *_chunk_starts(data, memo), len(data)]
        previous = memo.last_lines if memo is not None else None
        n = len(bounds) - 1
        m = len(previous.chunks) if previous is not None else 0
        k = 0
        while k < n:
            a, b = bounds[k], bounds[k + 1]
            if previous is not None:  # the last text's chunk of this text: at the same index from either end
                if _same_chunk(previous, k, data, a, b):
                    j = k
                elif m != n and _same_chunk(previous, k - n + m, data, a, b):
                    j = k - n + m
                else:
                    j = -1
                if j >= 0:  # it and the chunks after it that follow its old ones, as they were, moved
                    e = k + 1
                    while e < n and _same_chunk(previous, j + e - k, data, bounds[e], bounds[e + 1]):
                        e += 1
                    self._carry(previous, j, j + e - k, a - previous.offsets[j])
                    k = e
                    continue
            # (the chunk this one replaces, when the text has as many: its reading is the base of this one's)
            self._read(data, a, b, memo, previous.chunks[k] if previous is not None and m == n else None)
            k += 1
        if memo is not None:
            memo.last_lines = self

    def _read(self, data: bytes, a: int, b: int, memo: ParseMemo | None,
              before: tuple[int, bytes, bool] | None = None) -> None:
        """Append the lines of the chunk `data[a:b]`, tokenized (or its tokenization found in `memo`, or
        re-read from that of the chunk `before` it replaces, when `memo` holds it: `_rescan`)."""
        last = b == len(data)
        chunk = data[a:b]
        scanned = memo.scan(chunk, last) if memo is not None else None
        if scanned is None:
            base = memo.scan(before[1], last) if memo is not None and before is not None and before[2] == last else None
            if base is not None:
                assert before is not None
                scanned = _rescan(before[1], base, chunk, last)
            if scanned is None:
                scanned = _scan(chunk, last)
            if memo is not None:
                memo.keep_scan(chunk, last, scanned)
        inside, depth, comments, starts, indent = scanned
        first = len(self._inside)
        self.chunks.append((first, chunk, last))
        self.offsets.append(a)
        self._inside.extend(inside)
        self.fresh.extend(map(not_, map(or_, depth, inside)))
        self.starts.extend(map(a.__add__, starts) if a else starts)  # C-level: nothing per line here
        self.ends.extend(map((a - 1).__add__, starts[1:]))
        if starts:
            self.ends.append(len(data) if last else b - 1)
        self.indent.extend(indent)
        self.column0.extend(compress(count(first), map(not_, indent)))
        for line, offset in sorted(comments.items()):
            self._comment[first + line] = a + offset
            self._comment_lines.append(first + line)

    def _carry(self, previous: Lines, c: int, d: int, delta: int) -> None:
        """Append the lines of `previous`'s chunks `c:d`, whose text this text holds unchanged, `delta` bytes
        further on: a chunk's reading depends on its text alone, so theirs is `previous`'s, moved."""
        a = previous.chunks[c][0]
        b = previous.chunks[d][0] if d < len(previous.chunks) else len(previous.starts)
        shift = len(self.starts) - a  # lines
        self.indent.extend(previous.indent[a:b])
        self._inside.extend(previous._inside[a:b])
        self.fresh.extend(previous.fresh[a:b])
        self.starts.extend(map(delta.__add__, previous.starts[a:b]) if delta else previous.starts[a:b])
        self.ends.extend(map(delta.__add__, previous.ends[a:b]) if delta else previous.ends[a:b])
        column0 = previous.column0[bisect_left(previous.column0, a) : bisect_left(previous.column0, b)]
        self.column0.extend(map(shift.__add__, column0) if shift else column0)
        self.chunks.extend((first + shift, chunk, last) for first, chunk, last in previous.chunks[c:d])
        self.offsets.extend(map(delta.__add__, previous.offsets[c:d]) if delta else previous.offsets[c:d])
        lines = previous._comment_lines
        for line in lines[bisect_left(lines, a) : bisect_left(lines, b)]:
            self._comment[line + shift] = previous._comment[line] + delta
            self._comment_lines.append(line + shift)

    def state(self, a: int, b: int) -> tuple[bytes, bytes, tuple[int, ...]]:
        """All this reading knows of lines `a:b` beyond their text, relative to them: which start a
        statement's logical line, which start inside a string or after a backslash, where comments start."""
        first = bisect_right(self._comment_lines, a - 1)
        last = bisect_right(self._comment_lines, b - 1)
        comments = tuple(x for line in self._comment_lines[first:last]
                         for x in (line - a, self._comment[line] - self.starts[line]))
        return bytes(self.fresh[a:b]), bytes(self._inside[a:b]), comments

    def _body(self, i: int) -> bytes:
        return self.data[self.starts[i] + self.indent[i] : self._comment.get(i, self.ends[i])].rstrip()

    def code(self, i: int) -> bool:
        """Whether code starts on line `i` (not blank, not only a comment, not inside a string)."""
        found = self._code.get(i)
        if found is None:
            found = self._code[i] = not self._inside[i] and bool(self._body(i))
        return found

    def colon(self, i: int) -> bool:
        """Whether line `i`'s code ends with `:` (the last line of a block header)."""
        return self._body(i).endswith(b":")

    def starts_statement(self, i: int, indent: int) -> bool:
        """Whether a statement starts on line `i` at column `indent` or left of it."""
        return self.indent[i] <= indent and self.fresh[i] and self.code(i)


# A top-level statement as the masking reads it: its text, `Lines.state` and the file's path.
_TopKey = tuple[bytes, bytes, bytes, tuple[int, ...], str | None]
# A segment (`_Masker.top`): its text, whether it ends the text, the file's path.
_SegmentKey = tuple[bytes, bool, str | None]


class ParseMemo:
    """Whether a statement's text parses alone at a column, chunks' tokenizations, and the top-level
    statements and segments found whole: kept between the analyses of one document, so a keystroke in a
    broken file tokenizes one chunk, walks one segment and parses only the statements it changed. A pure
    cache: masking with it gives what masking afresh gives."""

    def __init__(self) -> None:
        self._verdicts: dict[tuple[bytes, int], bool] = {}
        self._scans: dict[tuple[bytes, bool], _Scan] = {}
        self._tops: set[_TopKey] = set()  # top-level statements found whole (`_Masker._kept_top`)
        # Segments (`_Masker.top`) whose top-level statements were all found whole: the line (from the
        # segment's first) where the last of them starts.
        self._chunks: dict[_SegmentKey, int] = {}
        self._leads: dict[tuple[bytes, bool], int] = {}  # lines of decorators at chunks' ends
        self._bytes = 0
        self.last_chunks: tuple[bytes, list[int]] | None = None  # the last text's chunk starts (`Lines`)
        self.last_lines: Lines | None = None  # the last text's reading: its unchanged chunks' lines are carried

    def get(self, key: tuple[bytes, int]) -> bool | None:
        return self._verdicts.get(key)

    def put(self, key: tuple[bytes, int], verdict: bool) -> None:
        self._room(len(key[0]))
        self._verdicts[key] = verdict

    def scan(self, chunk: bytes, last: bool) -> _Scan | None:
        """A chunk's tokenization (`Lines`), when kept."""
        return self._scans.get((chunk, last))

    def keep_scan(self, chunk: bytes, last: bool, scanned: _Scan) -> None:
        self._room(len(chunk))
        self._scans[(chunk, last)] = scanned

    def top(self, key: _TopKey) -> bool:
        """Whether a top-level statement with this text and reading was found whole (`_Masker.block`)."""
        return key in self._tops

    def keep_top(self, key: _TopKey) -> None:
        self._room(len(key[0]))
        self._tops.add(key)

    def chunk(self, key: _SegmentKey) -> int | None:
        """Where the last top-level statement of a segment found whole starts (a line of the segment)."""
        return self._chunks.get(key)

    def keep_chunk(self, key: _SegmentKey, last: int) -> None:
        if key not in self._chunks:
            self._room(len(key[0]))
            self._chunks[key] = last

    def lead(self, chunk: bytes, last: bool) -> int | None:
        """How many lines at a chunk's end are decorators of the next chunk's first line (`_Masker._lead`)."""
        return self._leads.get((chunk, last))

    def keep_lead(self, chunk: bytes, last: bool, found: int) -> None:
        self._room(len(chunk))
        self._leads[(chunk, last)] = found

    def _room(self, size: int) -> None:
        if self._bytes + size > MEMO_BYTES:
            self._verdicts.clear()
            self._scans.clear()
            self._tops.clear()
            self._chunks.clear()
            self._leads.clear()
            self._bytes = 0
        self._bytes += size


@dataclass(frozen=True, slots=True)
class Salvaged:
    """A broken text as the analysis reads it: the same length, the statements that do not parse
    blanked; their syntax errors (at the real lines); `blanked` line ranges."""

    data: bytes
    problems: tuple[Problem, ...]
    blanked: tuple[tuple[int, int], ...]


class _Masker:
    """Masks the statements of one text that do not parse (see the module docstring)."""

    def __init__(self, data: bytes, path: str | None, memo: ParseMemo, parser: Parser, *, seed: bool = False) -> None:
        self.lines = Lines(data, memo)
        # Also mask the bodies of every compound statement that parses (`seed_memo`): their verdicts go into the memo.
        self.seed = seed
        self.out = bytearray(data)
        self.path = path
        self.memo = memo
        self.parser = parser
        self.problems: list[Problem] = []
        self.blanked: list[tuple[int, int]] = []
        self._failed: tuple[bytes, Tree] | None = None  # the last text parsed alone that did not parse

    # -- parsing pieces alone --------------------------------------------------------------------

    def _bytes(self, a: int, b: int) -> bytes:
        lines = self.lines
        return bytes(self.out[lines.starts[a] : lines.ends[b - 1]])

    def parses(self, a: int, b: int, indent: int) -> bool:
        """Whether lines `a:b` (as masked so far) parse alone as statements at column `indent`."""
        return self._parses_text(self._bytes(a, b), indent)

    def _parses_text(self, text: bytes, indent: int) -> bool:
        key = (text, indent)
        found = self.memo.get(key)
        if found is None:
            tree = self.parser.parse(text)
            found = not is_broken(tree, indent)
            self.memo.put(key, found)
            if not found:
                self._failed = (text, tree)  # `_problems` of the same statement reads this tree
        return found

    def _problems(self, a: int, b: int, indent: int) -> list[Problem]:
        """The syntax errors of lines `a:b` parsed alone: a bracket that does not match where Python
        reports it, else tree-sitter's error regions."""
        text = self._bytes(a, b)
        found = _bracket_problem(text, self.path, a)
        if found is not None:
            return [found]
        failed = self._failed
        tree = failed[1] if failed is not None and failed[0] == text else self.parser.parse(text)
        return [_moved(p, a) for p in syntax_problems(tree, SourceText(text, tree, self.path), indent)]

    # -- masking ---------------------------------------------------------------------------------

    def _has_code(self, a: int, b: int) -> bool:
        lines = self.lines
        return any(lines.code(i) and self.out[lines.starts[i] : lines.ends[i]].strip() for i in range(a, b))

    def _blank(self, a: int, b: int) -> None:
        lines, out = self.lines, self.out
        for i in range(a, b):
            s, e = lines.starts[i], lines.ends[i]
            out[s:e] = b" " * (e - s)
        self.blanked.append((a, b))

    def statements(self, a: int, b: int, indent: int) -> list[tuple[int, int]]:
        """The statements of the block of lines `a:b` whose statements start at column `indent`:
        a `def`'s decorators and an `if`'s `else` clauses go with it; deeper lines with the one above."""
        lines, data = self.lines, self.lines.data
        cuts: list[int] = []
        decorator = False
        depth, fresh, starts, ends = lines.indent, lines.fresh, lines.starts, lines.ends
        # At column 0 only the lines at column 0 can start a statement (most lines are deeper).
        candidates = (lines.column0[bisect_left(lines.column0, a) : bisect_left(lines.column0, b)]
                      if indent == 0 else range(a, b))
        for i in candidates:
            if depth[i] > indent or not fresh[i] or ends[i] - starts[i] == depth[i] or not lines.code(i):
                continue
            head = data[lines.starts[i] + lines.indent[i] : lines.ends[i]]
            joins = lines.indent[i] == indent and (decorator or _CLAUSE.match(head) is not None)
            if not joins or not cuts:
                cuts.append(i)
            decorator = head.startswith(b"@")
        if not cuts or cuts[0] != a:
            cuts.insert(0, a)
        return [(c, cuts[k + 1] if k + 1 < len(cuts) else b) for k, c in enumerate(cuts)]

    def block(self, a: int, b: int, indent: int, check: bool = True) -> None:
        """Mask what does not parse among the statements of lines `a:b` (column `indent`).

        A top-level compound statement (a class, a function) is not parsed whole: its body's statements
        are, and its skeleton (`_bodies`), so a keystroke in a big class parses its method, not the class.
        """
        if check and self.parses(a, b, indent):
            return
        self._masked(a, b, indent, None, None)

    def _masked(self, a: int, b: int, indent: int, previous: tuple[int, int] | None,
                whole: list[tuple[int, bool]] | None) -> tuple[int, int] | None:
        """`block`'s walk over the statements of lines `a:b` (`previous`: the statement above them, as far
        as it reaches); the statement above the next line. `whole` collects each top-level statement's
        first line and whether it was found whole (nothing blanked, no syntax error)."""
        for s, e in self.statements(a, b, indent):
            if not self._has_code(s, e):
                continue
            key = self._top_key(s, e) if indent == 0 else None
            if key is not None and self._kept_top(key):
                previous = (s, e)
                if whole is not None:
                    whole.append((s, True))
                continue
            marks = (len(self.problems), len(self.blanked))
            tried = indent == 0 and self._compound(s, e, indent)
            if self._bodies(s, e, indent) if tried else self.parses(s, e, indent):
                if self.seed and not tried and self._compound(s, e, indent):
                    self._bodies(s, e, indent)  # what a keystroke that breaks it would ask first (`seed_memo`)
                previous = (s, e)
                if key is not None:
                    self._keep_top(key, marks)
                if whole is not None:
                    whole.append((s, marks == (len(self.problems), len(self.blanked))))
            elif self.statement(s, e, indent, previous, tried) and previous is not None:
                previous = (previous[0], e)
                if whole is not None:
                    whole.append((s, False))
            else:
                previous = (s, e)
                if whole is not None:
                    whole.append((s, False))
        return previous

    def top(self) -> None:
        """Mask the top-level statements (`block(0, N, 0)`), skipping the segments found whole before.

        A segment runs from the statement that holds a chunk's first line (the chunk's `def`/`class`
        line, or the first of the decorators above it) to the next such statement. Each line's reading
        (`Lines.state`) depends on the segment's text alone: chunks are tokenized on their own, and the
        decorators above a chunk start outside any bracket or string. A segment's top-level statements
        are cut as the walk over the whole text cuts them (it starts and ends at statement starts), and
        each is masked by its own lines alone (`_kept_top`). So a segment whose statements were all found
        whole is left as it is when its text comes again: the walk would find the same; only the
        statement above the next line (`previous`, which a broken line below may join) is carried over
        it. A keystroke then walks the statements of the segment it is in, not those of the whole file."""
        lines, memo, path, data = self.lines, self.memo, self.path, self.lines.data
        chunks = lines.chunks
        n, total = len(chunks), len(lines.starts)
        previous: tuple[int, int] | None = None
        start = 0
        for c in range(n):
            end = chunks[c + 1][0] - self._lead(c) if c + 1 < n else total
            if end <= start:
                continue  # (cannot happen: a chunk's first line is no decorator) nothing of its own
            key = (data[lines.starts[start] : lines.starts[end] if end < total else len(data)], end == total, path)
            found = memo.chunk(key)
            if found is not None:
                previous = (start + found, end)
            else:
                whole: list[tuple[int, bool]] = []
                previous = self._masked(start, end, 0, previous, whole)
                if whole and all(w for _, w in whole):
                    memo.keep_chunk(key, whole[-1][0] - start)
            start = end

    def _lead(self, c: int) -> int:
        """How many lines at the end of chunk `c` belong to the statement of the next chunk's first line
        (the decorators above it, and the lines between them); remembered by chunk `c`'s text."""
        _, chunk, last = self.lines.chunks[c]
        found = self.memo.lead(chunk, last)
        if found is None:
            lines = self.lines
            line = lines.chunks[c + 1][0]
            column0 = lines.column0
            k = bisect_left(column0, line) - 1
            first = line
            while k >= 0:  # the lines that could start a top-level statement (`statements`), upwards
                i = column0[k]
                k -= 1
                if not (lines.fresh[i] and lines.ends[i] != lines.starts[i] and lines.code(i)):
                    continue
                if lines.data[lines.starts[i] : lines.starts[i] + 1] != b"@":
                    break
                first = i
            found = line - first
            self.memo.keep_lead(chunk, last, found)
        return found

    def _top_key(self, s: int, e: int) -> _TopKey:
        lines = self.lines
        return (lines.data[lines.starts[s] : lines.ends[e - 1]], *lines.state(s, e), self.path)

    def _kept_top(self, key: _TopKey) -> bool:
        """Whether a top-level statement with this text and reading was found whole before: it parsed,
        or its bodies did, with nothing blanked and no syntax error (then it is left as it is).

        A top-level statement is masked by what its own lines are (text and `Lines.state`) alone: nothing
        outside them is read or written. A keystroke then re-masks the statement it is in, not every class
        of the file. (Statements with errors are not kept: their messages name absolute lines.)"""
        return self.memo.top(key)

    def _keep_top(self, key: _TopKey, marks: tuple[int, int]) -> None:
        if marks == (len(self.problems), len(self.blanked)):
            self.memo.keep_top(key)

    def _compound(self, s: int, e: int, indent: int) -> bool:
        """Whether the statement at lines `s:e` has a block header (ending with `:`) and deeper lines."""
        lines = self.lines
        h = self._logical_end(self._header(s, e), e)
        return lines.colon(h - 1) and any(
            lines.indent[i] > indent and lines.fresh[i] and lines.code(i) for i in range(h, e))

    def _logical_end(self, s: int, e: int) -> int:
        """The line after the logical line starting at line `s` (continuation lines included)."""
        lines = self.lines
        k = s + 1
        while k < e and not lines.fresh[k]:
            k += 1
        return k

    def _header(self, s: int, e: int) -> int:
        """The first line of the statement at lines `s:e` after its decorators."""
        lines, data = self.lines, self.lines.data
        c = s
        while c < e and data[lines.starts[c] + lines.indent[c] : lines.starts[c] + lines.indent[c] + 1] == b"@":
            c = self._logical_end(c, e)
            while c < e and not lines.code(c):
                c += 1
        return c if c < e else s

    def statement(self, s: int, e: int, indent: int, previous: tuple[int, int] | None, tried: bool = False) -> bool:
        """Mask the broken statement of lines `s:e` (`tried`: its bodies were masked already, and it
        still does not parse); True when its deeper lines joined `previous`."""
        lines = self.lines
        c = self._header(s, e)
        h = self._logical_end(c, e)
        # (whether there is one: the first found, not every line of a long body)
        deeper = any(lines.indent[i] > indent and lines.fresh[i] and lines.code(i) for i in range(h, e))
        if lines.colon(h - 1) and deeper:  # a compound statement: keep the headers, mask the bodies
            if not tried and self._bodies(s, e, indent):
                return False
        elif deeper and previous is not None:
            # A line that ends the block above it (a letter at column 0 in a class): without it, the lines
            # below continue that block.
            problems = self._problems(s, e, indent)
            saved = (bytes(self.out), len(self.problems), len(self.blanked))
            self._blank(s, h)
            p = previous[0]
            if self.parses(p, e, indent):
                self.problems.extend(problems)
                return True
            if self.lines.colon(self._logical_end(p, e) - 1) and self._bodies(p, e, indent):
                self.problems.extend(problems)  # the block above had errors of its own too: masked
                return True
            self.out[:] = saved[0]
            del self.problems[saved[1] :], self.blanked[saved[2] :]
        self.problems.extend(self._problems(s, e, indent))
        self._blank(s, e)
        return False

    def _bodies(self, s: int, e: int, indent: int) -> bool:
        """Mask the body of each clause of the compound statement at lines `s:e`; whether it parses now.

        Each body's statements are masked so that each parses alone; the statement then parses when its
        skeleton (decorators and clause headers, each body a `pass`) does: a few lines to parse, not the
        whole class. (Were that ever wrong, the masked text's own parse catches it: `salvage`.)
        """
        lines, data, out = self.lines, self.lines.data, self.out
        first = self._header(s, e)
        clauses = [first] + [i for i in range(first + 1, e) if lines.indent[i] == indent and lines.starts_statement(i, indent)
                             and _CLAUSE.match(data[lines.starts[i] + indent : lines.ends[i]]) is not None]
        skeleton = [bytes(out[lines.starts[s] : lines.starts[first]])]
        for k, c in enumerate(clauses):
            d = clauses[k + 1] if k + 1 < len(clauses) else e
            h = self._logical_end(c, d)
            body = next((i for i in range(h, d) if lines.fresh[i] and lines.code(i)), -1)  # its first code line
            if not lines.colon(h - 1) or body < 0 or lines.indent[body] <= indent:
                return False
            inner = lines.indent[body]
            self.block(h, d, inner, check=False)
            if not self._has_code(h, d):
                self._pass(body, d, inner)
            skeleton.append(bytes(out[lines.starts[c] : lines.ends[h - 1]]) + b"\n" + b" " * inner + b"pass\n")
        return self._parses_text(b"".join(skeleton), indent)

    def _pass(self, first: int, end: int, indent: int) -> None:
        """Put `pass` on the first line of `first:end` long enough for it (a body left without code)."""
        lines = self.lines
        for line in range(first, end):
            s, e = lines.starts[line], lines.ends[line]
            if e - s >= indent + 4:
                self.out[s + indent : s + indent + 4] = b"pass"
                return


def mask_broken(data: bytes, path: str | None, memo: ParseMemo | None = None,
                parser: Parser | None = None) -> Salvaged:
    """`data` with its statements that do not parse blanked, and their syntax errors; a function of
    `data` alone (`memo` only caches parse verdicts)."""
    masker = _Masker(data, path, memo if memo is not None else ParseMemo(), parser or new_parser())
    masker.top()
    problems = sorted(dict.fromkeys(masker.problems), key=lambda p: (p.span.start_line, p.span.start_col) if p.span else (0, 0))
    return Salvaged(bytes(masker.out), tuple(problems[:MAX_SYNTAX_PROBLEMS]), tuple(masker.blanked))


def seed_memo(data: bytes, path: str | None, memo: ParseMemo, parser: Parser | None = None) -> None:
    """Fill `memo` for the keystrokes that will break `data`, a text that parses: `mask_broken`'s walk, which
    also masks the bodies of every compound statement that parses, at every depth (the walk of a text
    masks the bodies of a statement only once the statement does not parse). A keystroke that breaks a
    statement then finds the verdicts of the statements around it, at every level up to the top, instead of
    parsing each alone for the first time (12-31 statements for one in a long method). Costs parsing the
    text about once per level of nesting. The memo is a pure cache keyed by the texts parsed: what is masked
    with it is what is masked without it (and the text masked here is dropped)."""
    _Masker(data, path, memo, parser or new_parser(), seed=True).top()


def salvage(data: bytes, path: str | None, memo: ParseMemo | None = None,
            parse: Callable[[bytes], Tree] | None = None) -> tuple[bytes, Tree, tuple[Problem, ...]]:
    """The text, tree and syntax errors the analysis reads for a broken `data`.

    `parse` parses the masked text (the server re-parses it incrementally); a masked text that still
    does not parse (the cut into statements was wrong) is parsed afresh and `repair`ed, so that this
    rare case does not depend on a previous tree either.
    """
    parser = new_parser()
    salvaged = mask_broken(data, path, memo, parser)
    masked = salvaged.data
    tree = parse(masked) if parse is not None else parser.parse(masked)
    problems = salvaged.problems
    if is_broken(tree):
        tree = parser.parse(masked)
        if not problems:
            problems = tuple(syntax_problems(tree, SourceText(masked, tree, path)))
        masked, tree = repair(masked, tree)
    return masked, tree, problems


def _bracket_problem(text: bytes, path: str | None, first_row: int) -> Problem | None:
    """Python's own error for the brackets of `text` (whose first line is line `first_row` of the
    file), at the bracket it names: a closer that does not match the innermost opener, a closer with
    none open, or an opener never closed."""
    stack: list[tuple[int, int]] = []  # (bracket byte, offset)
    for m in _TOKENS.finditer(text):
        token = m.group()
        if len(token) != 1 or token[0] not in b"()[]{}":
            continue
        b = token[0]
        if b in _OPENERS:
            stack.append((b, m.start()))
        elif stack and stack[-1][0] == _MATCH[b]:
            stack.pop()
        elif stack:
            opener, at = stack[-1]
            line = first_row + text.count(b"\n", 0, at) + 1
            return _at(text, m.start(), first_row, path,
                       f"syntax error: closing {chr(b)!r} does not match {chr(opener)!r} on line {line}")
        else:
            return _at(text, m.start(), first_row, path, f"syntax error: unmatched {chr(b)!r}")
    if stack:
        opener, at = stack[0]
        return _at(text, at, first_row, path, f"syntax error: {chr(opener)!r} was never closed")
    return None


def _at(text: bytes, offset: int, first_row: int, path: str | None, message: str) -> Problem:
    """A syntax error on the character at byte `offset` of `text` (columns in code points)."""
    row = first_row + text.count(b"\n", 0, offset)
    col = len(text[text.rfind(b"\n", 0, offset) + 1 : offset].decode("utf-8", "replace"))
    return Problem(message, Span(row, col, row, col + 1), path, Severity.ERROR, "syntax-error")


def _moved(p: Problem, rows: int) -> Problem:
    if p.span is None or rows == 0:
        return p
    s = p.span
    return replace(p, span=Span(s.start_line + rows, s.start_col, s.end_line + rows, s.end_col))
