"""Where a file names each function, read per top-level statement and remembered by its text: a keystroke
re-reads only the statement it is in.

The callee check (`engine.called_elsewhere`) asks, on every analysis of a file with a fixable site in a helper,
where the file uses the helper's name. Parsing and walking the whole file for it cost 60-90 ms per keystroke on
a 100 KB file; the table of one top-level statement depends on its text alone (its lines counted from its first),
so the file's table is the tables of its statements, each parsed once per text.

The fact it rests on: where the text is cut at lines that begin at column 0 with code (not a comment, a closing
bracket, nor `else`/`elif`/`except`/`finally`, which continue the statement above; decorators stay with what they
decorate), and each piece parses on its own, the file's module body is the pieces' bodies one after another:
a piece that parses ends outside any bracket, string and backslash continuation, so the tokens of the next piece
are read from a fresh line at indentation 0 in both, and a statement cannot run on past a line at column 0 that
does not continue it. A piece that does not parse (a cut inside a string written at column 0) is joined with the
next; where the rest of the file does not parse either, neither does the file (the same argument, run backwards).
"""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict
from collections.abc import Sequence

from adopter.analysis.parse.words import whole_words

PARSE_ERRORS = (SyntaxError, ValueError, RecursionError)  # what `ast.parse` raises on text that is not Python
_CONTINUED = ("else", "elif", "except", "finally")
_NOT_CODE = ("", " ", "\t", "\x0c", "#", ")", "]", "}")
_JOINS = 4  # pieces joined one by one before the rest of the file is parsed as one
_REMEMBERED = 1024  # statement tables a memo keeps (the top-level statements of a few dozen files)


class StatementUses:
    """The uses of names in one parsed text, lines as `ast` counts them in it: `name` (a function), `obj.name`
    (with the class around it when `obj` is `self` or `cls`, and the name the receiver's chain starts at),
    the functions defined and their classes, class bases, `__all__`'s strings and the names imports bind.

    The functions, bases, exports and imports are read from the statements alone, when the table is made. The
    uses of names (every expression) are read the first time a name the text holds is asked (`uses`): the check
    asks only for its callees' names, which few statements of a file hold; a name that is not a whole word of
    the text (ASCII: a non-ASCII identifier can stand for an ASCII name, `ａttend` for `attend`) has no use in
    it (`_lacks`)."""

    def __init__(self, tree: ast.Module, text: str | None = None) -> None:
        self.defs: list[tuple[str, int, int, str | None]] = []  # (name, first line, last line, its class)
        self.bases: dict[str, set[str]] = {}
        self.exported: set[str] = set()
        self.modules: set[str] = set()
        self._statements(tree.body, [])
        # the text the tree was parsed from, parsed again when a use is first asked (None: read them now)
        self._text = text
        # ASCII text, where a name that is not a whole word of it has no use in it (`_lacks`)
        self._data = text.encode() if text is not None and text.isascii() else None
        self._uses: tuple[dict[str, list[tuple[int, bool]]],
                          dict[str, list[tuple[int, bool, str | None, str | None]]]] | None = (
            _read_uses(tree) if text is None else None)

    @property
    def names(self) -> dict[str, list[tuple[int, bool]]]:
        """Bare name -> (line, called)."""
        return self._read()[0]

    @property
    def attrs(self) -> dict[str, list[tuple[int, bool, str | None, str | None]]]:
        """Attribute -> (line, called, the class around it when its receiver is `self` or `cls`, the name the
        receiver's chain starts at): a use on an imported module (`F.gelu`) is dropped by the file's imports."""
        return self._read()[1]

    def names_of(self, name: str) -> list[tuple[int, bool]]:
        """The uses of the bare name `name`."""
        if self._lacks(name):
            return []
        return self._read()[0].get(name, [])

    def attrs_of(self, name: str) -> list[tuple[int, bool, str | None, str | None]]:
        """The uses of the attribute `name`."""
        if self._lacks(name):
            return []
        return self._read()[1].get(name, [])

    def _lacks(self, name: str) -> bool:
        """Whether the uses are not read yet and the identifier `name` is no whole word of the ASCII text
        (`parse.words.whole_words`). Every use of a name (an `ast.Name`, the attribute of an `ast.Attribute`) in
        ASCII text that parses is one: the tokenizer reads an identifier as the longest run of letters, digits
        and `_`, so one beside it would be part of the token; and a number written against a name (`1if`) parses
        only where the name is a keyword, never a `Name` or an attribute. `_attn` inside
        `self._attn_implementation` is no use of `_attn`."""
        data = self._data
        return self._uses is None and data is not None and next(whole_words(data, name.encode()), -1) < 0

    def _read(self) -> tuple[dict[str, list[tuple[int, bool]]],
                             dict[str, list[tuple[int, bool, str | None, str | None]]]]:
        uses = self._uses
        if uses is None:  # two threads may both read it: the same tables, either kept
            uses = self._uses = _read_uses(ast.parse(self._text or ""))
        return uses

    def _statements(self, body: Sequence[ast.AST], classes: list[tuple[str, bool]]) -> None:
        """Functions, bases, exports and imports of `body` and the statements in it, in `ast`'s order (the
        walk's: a function's definition before the ones in its body); `classes` as `_UseWalk` keeps it."""
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                in_body = bool(classes) and classes[-1][1]
                self.defs.append((node.name, node.lineno, node.end_lineno or node.lineno,
                                  classes[-1][0] if in_body else None))
                classes.append((classes[-1][0] if classes else "", False))
                self._statements(node.body, classes)
                classes.pop()
                continue
            if isinstance(node, ast.ClassDef):
                self.bases.setdefault(node.name, set()).update(
                    _last(ast.unparse(b)) for b in node.bases if isinstance(b, ast.Name | ast.Attribute))
                classes.append((node.name, True))
                self._statements(node.body, classes)
                classes.pop()
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                self.modules.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Assign):
                self._exports(node.targets, node.value)
            elif isinstance(node, ast.AugAssign):
                self._exports([node.target], node.value)
            for field in _HOLDERS:  # `try`: body, handlers, else, finally, as `ast` orders its fields
                inner = getattr(node, field, None)
                if inner:
                    self._statements(inner, classes)

    def _exports(self, targets: Sequence[ast.expr], value: ast.expr) -> None:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                value, ast.List | ast.Tuple | ast.Set):
            self.exported.update(e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))


# The fields of a statement (and of an `except` arm, a `case`) that hold statements, in `ast`'s field order.
_HOLDERS = ("body", "handlers", "orelse", "finalbody", "cases")


def _read_uses(tree: ast.Module) -> tuple[dict[str, list[tuple[int, bool]]],
                                          dict[str, list[tuple[int, bool, str | None, str | None]]]]:
    walk = _UseWalk(tree)
    return walk.names, walk.attrs


class _UseWalk(ast.NodeVisitor):
    """The uses of bare names and attributes in a tree (`StatementUses.names`, `.attrs`)."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, list[tuple[int, bool]]] = {}
        self.attrs: dict[str, list[tuple[int, bool, str | None, str | None]]] = {}
        self._called: set[int] = set()
        self._classes: list[tuple[str, bool]] = []  # (the class `self` is an instance of, "" if none; a class body)
        self.visit(tree)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._classes.append((node.name, True))
        self.generic_visit(node)
        self._classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        # `self` in a method (and in the functions nested in it) is an instance of the class around
        self._classes.append((self._classes[-1][0] if self._classes else "", False))
        self.generic_visit(node)
        self._classes.pop()

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        # a method, not `visit_AsyncFunctionDef = visit_FunctionDef`: the compiled class (mypyc) has no such alias
        self.visit_FunctionDef(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._called.add(id(node.func))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.names.setdefault(node.id, []).append((node.lineno, id(node) in self._called))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        root = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(node.ctx, ast.Store):  # `self.attend = ...` names the instance's own attribute
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            around = self._classes[-1][0] if own and self._classes and self._classes[-1][0] else None
            self.attrs.setdefault(node.attr, []).append(
                (node.lineno, id(node) in self._called, around, root.id if isinstance(root, ast.Name) else None))
        self.generic_visit(node)


class FileUses:
    """A file's uses of names (`StatementUses` of each piece, lines counted from the file's first as `ast` does),
    read only for the names asked."""

    def __init__(self, parts: list[tuple[int, StatementUses]]) -> None:
        self.parts = parts  # (lines before the piece, its table)
        self.modules: set[str] = set()
        self.exported: set[str] = set()
        self.bases: dict[str, set[str]] = {}
        for _, t in parts:
            self.modules |= t.modules
            self.exported |= t.exported
            for cls, bases in t.bases.items():
                self.bases.setdefault(cls, set()).update(bases)

    def names_of(self, name: str) -> list[tuple[int, bool]]:
        """Each use of the bare name: (line, called)."""
        return [(line + before, called) for before, t in self.parts for line, called in t.names_of(name)]

    def attrs_of(self, name: str) -> list[tuple[int, bool, str | None]]:
        """Each use of the attribute on a receiver that is not an imported module: (line, called, the class
        around it when the receiver is `self` or `cls`)."""
        return [(line + before, called, around) for before, t in self.parts
                for line, called, around, root in t.attrs_of(name) if root is None or root not in self.modules]

    def defs(self) -> list[tuple[str, int, int, str | None]]:
        """Every function defined, in the order written: (name, first line, last line, its class)."""
        return [(name, first + before, last + before, cls) for before, t in self.parts
                for name, first, last, cls in t.defs]


class StatementMemo:
    """The tables of the pieces a session has read, by their text (and that a piece does not parse), newest
    kept: owned by the caller that reads one document's successive texts (`adopter.session.Session`), so that a
    keystroke re-reads only its statement. Thread-safe."""

    def __init__(self, size: int = _REMEMBERED) -> None:
        self.size = size
        self._tables: OrderedDict[str, StatementUses | None] = OrderedDict()  # None: the piece does not parse
        self._lock = threading.Lock()

    def table(self, piece: str, last: bool) -> StatementUses | None:
        """The table of a piece; None where it does not parse, unless it is the file's last piece (then the error
        is the file's, and is raised)."""
        with self._lock:
            known = piece in self._tables
            hit = self._tables.get(piece)
            if known:
                self._tables.move_to_end(piece)
        if known and (hit is not None or not last):
            return hit
        table: StatementUses | None = None
        try:
            table = StatementUses(ast.parse(piece), piece)
        except PARSE_ERRORS:
            if last:
                raise
        with self._lock:
            self._tables[piece] = table
            while len(self._tables) > self.size:
                self._tables.popitem(last=False)
        return table


def file_uses(text: str, memo: StatementMemo | None = None) -> FileUses:
    """The uses of names in `text`, each piece's table taken from `memo` where it has read the piece before (none:
    every piece read now); raises what `ast.parse(text)` raises where the text does not parse."""
    memo = memo if memo is not None else StatementMemo()
    pieces = _pieces(text)
    parts: list[tuple[int, StatementUses]] = []
    i = 0
    while i < len(pieces):
        before, piece = pieces[i]
        j = i + 1
        table = memo.table(piece, last=j == len(pieces))
        while table is None:  # a cut the file does not have: join the next piece, then the rest
            j = j + 1 if j - i <= _JOINS else len(pieces)
            piece = "".join(p for _, p in pieces[i:j])
            table = memo.table(piece, last=j == len(pieces))
        parts.append((before, table))
        i = j
    return FileUses(parts)


def _pieces(text: str) -> list[tuple[int, str]]:
    """`text` cut before each line at column 0 that may begin a statement: (lines before the piece, its text)."""
    if ("\r" in text and text.count("\r") != text.count("\r\n")) or "barry_as_FLUFL" in text:
        return [(0, text)]  # a lone `\r` ends a line for Python, not for `split`; that future changes the grammar
    lines = text.split("\n")
    starts = [0]
    decorated = False
    for n in range(1, len(lines)):
        line = lines[n]
        if line[:1] in _NOT_CODE:
            continue
        if not decorated and not _continues(line):
            starts.append(n)
        decorated = line[0] == "@"
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    ends = [*starts[1:], len(lines)]
    return [(s, text[offsets[s]:offsets[e] if e < len(lines) else len(text)]) for s, e in zip(starts, ends)]


def _continues(line: str) -> bool:
    """Whether a line at column 0 continues the statement above (`else:`, `except E:`)."""
    for word in _CONTINUED:
        if line.startswith(word) and (len(line) == len(word) or not (line[len(word)].isalnum()
                                                                   or line[len(word)] == "_")):
            return True
    return False


def _last(label: str) -> str:
    return label.rsplit(".", 1)[-1]
