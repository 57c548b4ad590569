"""One text as the fix pipeline reads it: lines, top-level outline, imports and Python `ast` trees, built
once per text and shared by every strategy, the splicer and the session that holds the text.

Planning a fix used to parse the whole module with Python's `ast` for every text with a fixable site
(20-45 ms for a 100 KB modeling file, 43 % of `adopter check` over the transformers corpus), although
a strategy reads one class and the file's top-level imports. Here the module is cut into its top-level
statements with the tree-sitter tree the analysis already built (`Unit`s: line ranges, statement kinds
and names), and `ast` parses a unit only when something asks for it, cached. The nodes have the line
numbers of the whole text (a unit is parsed after as many blank lines as precede it), so everything a
strategy reads (`lineno`, `ast.get_source_segment(text, node)`) is what the whole-module tree gives.

`module(lines)` is the whole-module tree restricted to the top-level statements covering `lines`: a
breadth-first walk of it visits those statements' nodes in the whole tree's order. When the text does
not parse (tree-sitter reports an error or a Python 2 statement, or a unit does not parse alone) or has
line breaks the cut cannot follow (a lone `\\r`), every method falls back to one `ast.parse` of the
whole text, so callers see the same tree, or the same `SyntaxError`, as before. (A statement Python 3
rejects that tree-sitter reads without error and that is not a Python 2 `print`/`exec` is not seen until
its unit is parsed; `fix` still refuses such a file, as its verification parses the whole rewrite.)

Read-only: callers must not mutate the trees.
"""

from __future__ import annotations

import ast
import bisect
import re
import tokenize
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from adopter.analysis.crossfile.ast_files import statements_in
from adopter.analysis.parse.words import whole_words
from adopter.dsl.types import Span

if TYPE_CHECKING:
    from tree_sitter import Node, Query, Tree

IMPORT_KINDS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
_FROM_MODULE = re.compile(r"^(\s*)from\s+[\w.]+\s+import", re.MULTILINE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIGITS = frozenset("0123456789")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# A line with its end, split where `ast.get_source_segment` splits (`\r\n`, `\r`, `\n`; not form feeds).
_SOURCE_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")


@dataclass(frozen=True, slots=True)
class Unit:
    """Top-level statements on lines `start`..`end` (0-based, inclusive); no other statement shares them.

    `kinds`: the tree-sitter type of each statement (a decorated definition counts as what it decorates);
    `names`: the names the class and function definitions among them define (NFKC, as Python reads them).
    """

    start: int
    end: int
    kinds: tuple[str, ...]
    names: tuple[str, ...] = ()

    def defines(self, kind: str, name: str | None = None) -> bool:
        """Whether a statement of this unit is a `kind` definition (named `name`, when given)."""
        return kind in self.kinds and (name is None or unicodedata.normalize("NFKC", name) in self.names)


_PYTHON2: Query | None = None


def _python2(root: Node, data: bytes | None = None) -> bool:
    """Whether the tree has a Python 2 statement (`print x`, `exec code`): tree-sitter reads them without an
    error, Python 3 does not parse them. With `data`, the tree's bytes, only the token at each place the
    keyword may stand is looked at (such a statement starts with its keyword's token): a query walks the
    whole tree, 1 % of `adopter check`'s time where a file has the word anywhere (speed6)."""
    global _PYTHON2
    from tree_sitter import Query, QueryCursor

    if data is not None:
        return any(_keyword_statement(root, data, at, word) for word in (b"print", b"exec")
                   for at in whole_words(data, word))
    if _PYTHON2 is None:
        from adopter.analysis.parse.source import language

        _PYTHON2 = Query(language(), "[(print_statement) (exec_statement)] @statement")
    return bool(QueryCursor(_PYTHON2).captures(root))


def outline(tree: Tree, text: str | None = None) -> tuple[tuple[Unit, ...], bool]:
    """The top-level units of a tree-sitter tree, and whether they can be parsed alone: the tree is free of
    syntax errors, and of the Python 2 statements tree-sitter accepts but Python 3 rejects. `text`, the
    tree's text when given, spares the whole-tree query for those statements when it has neither keyword."""
    root = tree.root_node
    if root.has_error or ((text is None or "print" in text or "exec" in text) and _python2(root, _utf8(text))):
        return (), False
    units: list[Unit] = []
    for child in root.named_children:
        if child.type == "comment":
            continue
        start, end = child.start_point[0], child.end_point[0]
        if end > start and child.end_point[1] == 0:
            end -= 1  # a node that ends at the start of a line does not reach into it
        kind, name = _kind_and_name(child)
        names = (unicodedata.normalize("NFKC", name),) if name is not None else ()
        if units and start <= units[-1].end:  # statements sharing a line (`a = 1; class B: ...`)
            last = units[-1]
            units[-1] = Unit(last.start, max(last.end, end), (*last.kinds, kind), (*last.names, *names))
        else:
            units.append(Unit(start, end, (kind,), names))
    return tuple(units), True


def _keyword_statement(root: Node, data: bytes, at: int, word: bytes) -> bool:
    """Whether the token at `data[at:]` is keyword `word` opening its Python 2 statement (`print_statement`)."""
    token = root.descendant_for_byte_range(at, at + len(word))
    parent = token.parent if token is not None else None
    kind = word.decode()
    return token is not None and parent is not None and token.type == kind and parent.type == f"{kind}_statement"


def _utf8(text: str | None) -> bytes | None:
    """`text` as the bytes tree-sitter parsed (None when there is no text, or it has no UTF-8 form)."""
    try:
        return text.encode("utf-8") if text is not None else None
    except UnicodeEncodeError:
        return None


def _kind_and_name(node: Node) -> tuple[str, str | None]:
    if node.type == "decorated_definition":
        inner = node.child_by_field_name("definition")
        if inner is None:
            return node.type, None
        node = inner
    if node.type in ("class_definition", "function_definition"):
        name = node.child_by_field_name("name")
        text = name.text if name is not None else None
        return node.type, text.decode("utf-8", "replace") if text is not None else None
    return node.type, None


def walk(tree: ast.AST) -> tuple[ast.AST, ...]:
    """`tuple(ast.walk(tree))` (the same breadth-first order) without a generator per node: a third faster."""
    out: list[ast.AST] = [tree]
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                out.append(value)
            elif isinstance(value, list):
                out.extend(item for item in value if isinstance(item, ast.AST))
    return tuple(out)


def walk_statements(tree: ast.Module) -> tuple[ast.AST, ...]:
    """The statements of `tree` (with the module, `except` handlers and `case` clauses that hold them) in
    `ast.walk` order: `walk(tree)` without the expressions (the analysis's `statements_in`)."""
    return tuple(statements_in(tree))


def _listed(cache: dict[int, tuple[ast.Module, tuple[ast.AST, ...]]], tree: ast.Module,
            listing: Callable[[ast.Module], tuple[ast.AST, ...]]) -> tuple[ast.AST, ...]:
    """`listing(tree)`, kept in `cache` by the tree's identity (the tree is kept too, so an id is never
    reused while its entry lives)."""
    hit = cache.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit[1]
    listed = listing(tree)
    cache[id(tree)] = (tree, listed)
    return listed


class ParsedText:
    """The lines, outline, imports and `ast` trees of one text, each computed at most once (see module doc).

    Build it with `ParsedText.of(text)` (parses with tree-sitter itself) or `ParsedText(text, tree)` with
    the tree-sitter tree of exactly `text` that the analysis parsed.
    """

    __slots__ = ("_bodies", "_from_spans", "_imports", "_indexes", "_modules", "_nodes", "_source_lines",
                 "_statements", "_taken", "_whole", "_whole_error", "_words", "lines", "text", "units")

    def __init__(self, text: str, tree: Tree | None) -> None:
        self.text = text
        self.lines: tuple[str, ...] = tuple(text.split("\n"))
        units: tuple[Unit, ...] = ()
        cut = tree is not None and text.count("\r") == text.count("\r\n")
        if cut and tree is not None:
            units, cut = outline(tree, text)
        self.units: tuple[Unit, ...] | None = units if cut else None  # None: the whole text is one tree
        self._bodies: dict[int, list[ast.stmt]] = {}
        self._modules: dict[tuple[int, ...] | None, ast.Module] = {}
        self._nodes: dict[int, tuple[ast.Module, tuple[ast.AST, ...]]] = {}
        self._indexes: dict[int, tuple[ast.Module, StatementIndex]] = {}
        self._statements: dict[int, tuple[ast.Module, tuple[ast.AST, ...]]] = {}
        self._whole: ast.Module | None = None
        self._whole_error: SyntaxError | ValueError | None = None
        self._imports: dict[tuple[str, str | None], str] | None = None
        self._taken: frozenset[str] | None = None
        self._source_lines: list[str] | None = None
        self._from_spans: tuple[list[int], list[int]] | None = None
        self._words: dict[str, bool] = {}

    @classmethod
    def of(cls, text: str) -> ParsedText:
        """`text` cut with its own tree-sitter parse (for callers without the analysis's tree)."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return cls(text, None)
        from adopter.analysis.parse.source import new_parser

        return cls(text, new_parser().parse(data))

    # -- trees --------------------------------------------------------------------------------------

    def whole(self) -> ast.Module:
        """`ast.parse` of the whole text (raises its `SyntaxError`/`ValueError`), parsed at most once."""
        if self._whole is None:
            if self._whole_error is not None:
                raise self._whole_error
            try:
                self._whole = ast.parse(self.text)
            except (SyntaxError, ValueError) as exc:
                self._whole_error = exc
                raise
        return self._whole

    def _body(self, i: int) -> list[ast.stmt]:
        """The statements of unit `i`, with the whole text's line numbers."""
        body = self._bodies.get(i)
        if body is None:
            assert self.units is not None
            unit = self.units[i]
            source = "\n" * unit.start + "\n".join(self.lines[unit.start : unit.end + 1])
            try:
                body = ast.parse(source).body
            except (SyntaxError, ValueError):
                self.whole()  # the whole text's own error (it does not parse either)
                self.units = None  # it parses as a whole but not cut: read it whole from now on
                raise _Uncut() from None
            self._bodies[i] = body
        return body

    def module(self, lines: Iterable[int] | None = None) -> ast.Module:
        """The module's tree, restricted to the top-level statements covering `lines` (all when None).

        Raises `SyntaxError` (or `ValueError`) like `ast.parse` of the whole text.
        """
        if self.units is None:
            return self.whole()
        picked: Sequence[int]
        if lines is None:
            key: tuple[int, ...] | None = None
            picked = range(len(self.units))
        else:
            picked = sorted({i for line in lines if (i := self.unit_at(line)) is not None})
            key = tuple(picked)
        cached = self._modules.get(key)
        if cached is not None:
            return cached
        try:
            body = [stmt for i in picked for stmt in self._body(i)]
        except _Uncut:
            return self.whole()
        tree = ast.Module(body=body, type_ignores=[])
        self._modules[key] = tree
        return tree

    def unit_at(self, line: int) -> int | None:
        """The index of the unit holding 0-based `line`, or None (a comment or blank line between them)."""
        units = self.units
        if units is None:
            return None
        lo, hi = 0, len(units)
        while lo < hi:
            mid = (lo + hi) // 2
            if units[mid].end < line:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(units) and units[lo].start <= line else None

    def nodes(self, tree: ast.Module) -> tuple[ast.AST, ...]:
        """Every node of `tree` (one this object returned) in `ast.walk` order, listed once per tree."""
        return _listed(self._nodes, tree, walk)

    def statements(self, tree: ast.Module) -> tuple[ast.AST, ...]:
        """`walk_statements(tree)` of a tree this object returned, listed once per tree."""
        return _listed(self._statements, tree, walk_statements)

    def top_level(self, wanted: Callable[[Unit], bool]) -> Iterator[ast.stmt]:
        """The top-level statements, in order, of the units `wanted` accepts (every statement of the
        module when it is read whole): a caller filters them as it would filter `module().body`, and
        `wanted` must accept every unit that has a statement the caller could pick."""
        if self.units is not None:
            try:
                picked = [i for i, unit in enumerate(self.units) if wanted(unit)]
                return iter([stmt for i in picked for stmt in self._body(i)])
            except _Uncut:
                pass
        return iter(self.whole().body)

    def leading(self, keep: Callable[[int, Unit], bool]) -> Iterator[ast.stmt]:
        """The module's statements from the top, parsing a unit only while `keep(index, unit)` says its
        first statement may be wanted; stops before the first unit it refuses."""
        if self.units is not None:
            try:
                out: list[ast.stmt] = []
                for i, unit in enumerate(self.units):
                    if not keep(len(out), unit):
                        break
                    out.extend(self._body(i))
                return iter(out)
            except _Uncut:
                pass
        return iter(self.whole().body)

    def class_headers(self) -> list[tuple[ast.ClassDef, int]]:
        """Each top-level class as (its header: decorators, name, bases and keywords, with an empty body;
        its last line, 1-based), in order. Only the headers are parsed when the text is cut (a class's
        last line is then its unit's: past its last statement there are only comments and blank lines);
        else the whole module is. Raises `SyntaxError` (or `ValueError`) like `ast.parse` of the text."""
        if self.units is not None:
            headers = self._headers()
            if headers is not None:
                return headers
        return [(c, c.end_lineno or c.lineno) for c in self.module().body if isinstance(c, ast.ClassDef)]

    def _headers(self) -> list[tuple[ast.ClassDef, int]] | None:
        assert self.units is not None
        out: list[tuple[ast.ClassDef, int]] = []
        for unit in self.units:
            if "class_definition" not in unit.kinds:
                continue
            header = self._header_text(unit) if len(unit.kinds) == 1 else None
            try:
                body = ast.parse(header).body if header is not None else None
            except (SyntaxError, ValueError):
                body = None
            if body is None or len(body) != 1 or not isinstance(body[0], ast.ClassDef):
                return None  # read it whole
            out.append((body[0], unit.end + 1))
        return out

    def _header_text(self, unit: Unit) -> str | None:
        """The unit's text up to the `:` that ends its class header, then `pass`, after as many blank lines
        as precede the unit (so line numbers are the text's); None when the tokens do not show one."""
        lines = self.lines[unit.start : unit.end + 1]
        source = iter(line + "\n" for line in lines)
        depth = 0
        seen_class = False
        try:
            for token in tokenize.generate_tokens(lambda: next(source, "")):
                if token.type != tokenize.OP and not (token.type == tokenize.NAME and token.string == "class"):
                    continue
                if token.string == "class":
                    seen_class = seen_class or depth == 0
                elif token.string in "([{":
                    depth += 1
                elif token.string in ")]}":
                    depth -= 1
                elif token.string == ":" and depth == 0 and seen_class:
                    row, col = token.end
                    head = [*lines[: row - 1], lines[row - 1][:col]]
                    return "\n" * unit.start + "\n".join(head) + " pass\n"
        except (tokenize.TokenError, SyntaxError):
            return None
        return None

    # -- facts --------------------------------------------------------------------------------------

    def imports(self) -> dict[tuple[str, str | None], str]:
        """Top-level imports: (module, name or None) -> the local name bound; empty when the text does
        not parse. A new dict per call (callers extend it)."""
        if self._imports is None:
            found: dict[tuple[str, str | None], str] = {}
            try:
                self.module([])  # raises for a text that does not parse
                statements = list(self.top_level(lambda u: not IMPORT_KINDS.isdisjoint(u.kinds)))
            except (SyntaxError, ValueError):
                statements = []
            for node in statements:
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        # `import torch.nn.functional` binds `torch`; the dotted path is usable as is.
                        found[(alias.name, None)] = alias.asname or alias.name
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    for alias in node.names:
                        if alias.name != "*":
                            found[(node.module, alias.name)] = alias.asname or alias.name
            self._imports = found
        return dict(self._imports)

    def taken(self) -> frozenset[str]:
        """Every identifier-like word of the text (except the module path of `from m import`)."""
        if self._taken is None:
            # The module path of `from torch import nn` binds no name, so it must not make `torch` look taken.
            self._taken = frozenset(_IDENT.findall(_FROM_MODULE.sub("from _ import", self.text)))
        return self._taken

    def takes(self, word: str) -> bool:
        """`word in self.taken()`, answered by searching the text for that word alone (listing every word
        of a 100 KB text costs ~1 ms; a strategy asks about a few names)."""
        known = self._words.get(word)
        if known is None:
            known = self._words[word] = self._takes(word)
        return known

    def _takes(self, word: str) -> bool:
        if not _IDENT.fullmatch(word):
            return False
        # `taken` reads the text with each `from m import` header replaced by `from _ import`: the words
        # of a header's module path are gone, and `from`, `_` and `import` are there.
        if word in ("from", "_", "import") and _FROM_MODULE.search(self.text):
            return True
        text = self.text
        for m in re.finditer(re.escape(word) + r"(?![A-Za-z0-9_])", text):
            at = m.start()
            before = at
            while before and text[before - 1] in _DIGITS:
                before -= 1
            if before and text[before - 1] in _WORD_CHARS:
                continue  # inside a longer word (`findall` reads a word after digits alone: `3x` holds `x`)
            if not self._in_from_header(at, m.end()):
                return True
        return False

    def _in_from_header(self, start: int, end: int) -> bool:
        """Whether text[start:end] lies inside one `from m import` header that `taken` replaces."""
        if self._from_spans is None:
            found = list(_FROM_MODULE.finditer(self.text))
            self._from_spans = ([m.start() for m in found], [m.end() for m in found])
        starts, ends = self._from_spans
        i = bisect.bisect_right(starts, start) - 1
        return i >= 0 and end <= ends[i]

    def span(self, node: ast.stmt | ast.expr) -> Span:
        """The internal span (0-based lines, code-point columns) of an `ast` node of this text (whose columns
        are UTF-8 byte offsets)."""
        lines = self.lines

        def col(line: int, byte_col: int) -> int:
            return len(lines[line].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

        end = (node.end_lineno or node.lineno) - 1
        return Span(node.lineno - 1, col(node.lineno - 1, node.col_offset), end, col(end, node.end_col_offset or 0))

    def segment(self, node: ast.AST) -> str | None:
        """`ast.get_source_segment(self.text, node)`, without splitting the whole text again per call (that
        split is a Python loop over every character: ~2 ms per call on a 100 KB modeling file)."""
        first_line: int | None = getattr(node, "lineno", None)
        last_line: int | None = getattr(node, "end_lineno", None)
        start: int | None = getattr(node, "col_offset", None)
        end: int | None = getattr(node, "end_col_offset", None)
        if first_line is None or last_line is None or start is None or end is None:
            return None
        first, last = first_line - 1, last_line - 1
        if self._source_lines is None:
            # Without a `\r` the text's lines are `self.lines`, ends cut off; else as `ast` splits them, with
            # their ends (the regex's split costs ~1.5 ms on a 100 KB file, once per text).
            self._source_lines = [] if "\r" not in self.text else _SOURCE_LINE.findall(self.text)
        if not self._source_lines:
            plain = self.lines
            if first == last:
                return plain[first].encode()[start:end].decode()
            return "\n".join([plain[first].encode()[start:].decode(), *plain[first + 1 : last],
                              plain[last].encode()[:end].decode()])
        lines = self._source_lines
        if first == last:
            return lines[first].encode()[start:end].decode()
        head = lines[first].encode()[start:].decode()
        tail = lines[last].encode()[:end].decode()
        return "".join([head, *lines[first + 1 : last], tail])

    def statement_index(self, first: int, last: int) -> StatementIndex:
        """The statement blocks of the top-level statements covering lines `first`..`last`."""
        tree = self.module(range(first, last + 1) if self.units is not None else None)
        hit = self._indexes.get(id(tree))
        if hit is not None and hit[0] is tree:
            return hit[1]
        index = StatementIndex(tree.body, self.lines)
        self._indexes[id(tree)] = (tree, index)
        return index

    def parses(self) -> str | None:
        """None when the text parses, else `the file does not parse: <msg> (line <n>)`."""
        try:
            self.module([])
            if self.units is None:
                self.whole()
        except SyntaxError as exc:
            return f"the file does not parse: {exc.msg} (line {exc.lineno})"
        return None


class _Uncut(Exception):
    """A unit does not parse alone although the whole text does: read the text whole."""


class StatementIndex:
    """Statements by block, as 0-based inclusive line ranges, of some top-level statements.

    Built from Python's `ast` (libcst's position metadata gave the same blocks at 25x the cost; libcst
    is no longer a dependency). Blocks as libcst drew them: an indented suite is a block, a suite on its
    header's line (`if x: y`) is not; statements sharing a line (`a; b`) are one statement; a decorated definition starts at its `def`/`class` line;
    an `elif` clause's body is a block of its own. Built over a run of consecutive top-level statements,
    it answers `region` for lines inside them exactly as the whole module's index would.
    """

    def __init__(self, body: Sequence[ast.stmt], lines: Sequence[str]) -> None:
        self._lines = lines
        self.blocks: list[list[tuple[int, int]]] = []
        self._collect(body)

    def _collect(self, body: Sequence[ast.stmt]) -> None:
        block: list[tuple[int, int]] = []
        for stmt in body:
            start, end = stmt.lineno - 1, (stmt.end_lineno or stmt.lineno) - 1
            if block and block[-1][1] == start and self._shares_line(stmt):
                block[-1] = (block[-1][0], max(block[-1][1], end))
            else:
                block.append((start, end))
        self.blocks.append(block)
        for stmt in body:
            for child in self._child_blocks(stmt):
                self._collect(child)

    def _shares_line(self, stmt: ast.stmt) -> bool:
        return bool(self._lines[stmt.lineno - 1][: stmt.col_offset].strip())

    def _child_blocks(self, stmt: ast.stmt) -> list[Sequence[ast.stmt]]:
        """The indented suites directly inside a compound statement."""
        out: list[Sequence[ast.stmt]] = []
        body = getattr(stmt, "body", None)
        if isinstance(body, list):
            out.append(body)
        orelse = getattr(stmt, "orelse", None) or []
        if isinstance(stmt, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If) and \
                self._lines[orelse[0].lineno - 1][orelse[0].col_offset:].startswith("elif"):
            out.extend(self._child_blocks(orelse[0]))
        elif orelse:
            out.append(orelse)
        for handler in getattr(stmt, "handlers", None) or ():
            out.append(handler.body)
        if getattr(stmt, "finalbody", None):
            out.append(stmt.finalbody)  # type: ignore[attr-defined]
        for case in getattr(stmt, "cases", None) or ():
            out.append(case.body)
        return [b for b in out if b and not self._shares_line(b[0])]

    def region(self, first_line: int, last_line: int) -> bool:
        """Whether lines first..last are exactly a run of consecutive statements of one block."""
        for block in self.blocks:
            starts = [s for s, _ in block]
            if first_line in starts:
                i = starts.index(first_line)
                for _, end in block[i:]:
                    if end == last_line:
                        return True
                    if end > last_line:
                        break
        return False


def block_with(body: list[ast.stmt], line: int) -> list[ast.stmt] | None:
    """The statement list (`body` or one nested in it) holding a statement that starts on `line` (1-based)."""
    for stmt in body:
        if stmt.lineno == line:
            return body
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    found = block_with(inner, line)
                    if found is not None:
                        return found
            return None
    return None
