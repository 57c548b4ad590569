"""Source input for the analysis: decoding checks, the shared tree-sitter parser, node text and spans."""

from __future__ import annotations

import re
import sys
from bisect import bisect_left
from typing import Final

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Tree

from adopter.analysis.parse.words import WordIndex, whole_word_at
from adopter.dsl.types import Problem, Severity, Span
from adopter.positions import LineIndex

MAX_BYTES = 5 * 1024 * 1024
MAX_SYNTAX_PROBLEMS = 20

_LANGUAGE: Language | None = None


def language() -> Language:
    """The tree-sitter Python language (loaded once)."""
    global _LANGUAGE
    if _LANGUAGE is None:
        _LANGUAGE = Language(tree_sitter_python.language())
    return _LANGUAGE


def _field(name: str) -> int:
    fid = language().field_id_for_name(name)
    if fid is None:
        raise RuntimeError(f"tree-sitter-python has no field {name!r}")
    return fid


class Field:
    """tree-sitter field ids (`node.child_by_field_id(Field.FUNCTION)` skips the by-name lookup)."""

    VALUE: Final = _field('value')
    BODY: Final = _field('body')
    NAME: Final = _field('name')
    RIGHT: Final = _field('right')
    OBJECT: Final = _field('object')
    FUNCTION: Final = _field('function')
    ATTRIBUTE: Final = _field('attribute')
    ARGUMENTS: Final = _field('arguments')
    LEFT: Final = _field('left')
    CONDITION: Final = _field('condition')
    CONSEQUENCE: Final = _field('consequence')
    OPERATOR: Final = _field('operator')
    DEFINITION: Final = _field('definition')
    KEY: Final = _field('key')
    ALIAS: Final = _field('alias')
    SUPERCLASSES: Final = _field('superclasses')
    SUBSCRIPT: Final = _field('subscript')
    PARAMETERS: Final = _field('parameters')
    MODULE_NAME: Final = _field('module_name')
    ARGUMENT: Final = _field('argument')
    ALTERNATIVE: Final = _field('alternative')


def new_parser() -> Parser:
    """A fresh tree-sitter parser for Python (parsers are not shared between documents)."""
    return Parser(language())


def check_input(source: str | bytes, path: str | None) -> tuple[bytes | None, Problem | None]:
    """The UTF-8 bytes of `source`, or a Problem saying why it cannot be analysed."""
    if isinstance(source, str):
        if "\x00" in source:
            return None, _input_problem("binary file (contains NUL characters); not analysed", path)
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError as exc:
            return None, _input_problem(f"text cannot be encoded as UTF-8 ({exc.reason}); not analysed", path)
    else:
        data = bytes(source)
        if b"\x00" in data:
            return None, _input_problem("binary file (contains NUL bytes); not analysed", path)
    if len(data) > MAX_BYTES:
        return None, _input_problem(
            f"file too large ({len(data)} bytes > {MAX_BYTES}); not analysed", path, "too-large"
        )
    if not isinstance(source, str):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n")
            return None, _input_problem(
                f"not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start}, line "
                f"{line + 1}); not analysed",
                path,
                "not-utf8",
            )
    return data, None


def _input_problem(message: str, path: str | None, code: str = "binary") -> Problem:
    return Problem(message, None, path, Severity.ERROR, code)


def normalise(text: str) -> str:
    """The normalised form of expression source text: one line, single spaces, no padding in brackets."""
    if "\n" not in text and "\t" not in text and "  " not in text:
        return text
    # As `re.sub(r"\s+", " ", text).strip()`: `str.split` cuts at the characters `\s` matches (`str.isspace`),
    # 4x faster (issue 22; `tests/analysis/test_word_start_search.py`).
    text = " ".join(text.split())
    # As `re.sub(r", ([)\]}])", r"\1", text)`, then `([(\[{]) ` and ` ([)\]}])` the same way: a `sub` with a group
    # template runs Python code per call and per match (issue 20). Exact: the text holds no two spaces in a row,
    # so no removal makes a new match of these patterns (`tests/analysis/test_normalise_replace.py`).
    if ", " in text:
        text = text.replace(", )", ")").replace(", ]", "]").replace(", }", "}")
    if "( " in text or "[ " in text or "{ " in text:
        text = text.replace("( ", "(").replace("[ ", "[").replace("{ ", "{")
    if " )" in text or " ]" in text or " }" in text:
        text = text.replace(" )", ")").replace(" ]", "]").replace(" }", "}")
    return text


_SHARE = False
_SHARED_LENGTH = 48


def share_names(on: bool = True) -> None:
    """Share the short node texts (names, attributes, literals) of every analysis in the process: one string
    per distinct text instead of one per occurrence. For the language server, which keeps the analyses of
    every open document (3 MB of repeated strings over the 20 largest transformers files); a batch run
    drops each file's analysis after it and is better off without the extra look-up."""
    global _SHARE
    _SHARE = on


class SourceText:
    """One parsed source: its bytes, its tree, and conversions from nodes to text and spans."""

    __slots__ = ("_found", "_string", "ascii", "data", "index", "memo", "path", "tree", "words")

    def __init__(self, data: bytes, tree: Tree, path: str | None, words: WordIndex | None = None) -> None:
        self.data = data
        self.ascii = data.isascii()
        # For ASCII sources byte offsets are string indices: slicing the decoded text once is cheaper
        # than slicing and decoding bytes for every node.
        self._string = data.decode("ascii") if self.ascii else None
        self.tree = tree
        self.path = path
        self.index = LineIndex(data)
        self.memo: dict[tuple[str, int], object] = {}  # per-file memo of derived facts (e.g. parameters)
        self._found: dict[bytes, list[int]] = {}  # where each word `contains` was asked about occurs
        # A document's word index carried from its previous text (`WordIndex.moved`), for `data` itself.
        if words is not None and words.data is not data and words.data != data:
            raise ValueError("the word index is not of this text")
        self.words = words

    def raw(self, node: Node) -> bytes:
        return self.data[node.start_byte : node.end_byte]

    def positions(self, word: bytes) -> list[int]:
        """The offsets of `word` in the text, ascending (from the document's carried word index when there
        is one, else one scan of the file per word)."""
        found = self.words.positions(word) if self.words is not None else self._found.get(word)
        if found is None:
            found = self._found[word] = []
            at = self.data.find(word)
            while at >= 0:
                found.append(at)
                at = self.data.find(word, at + 1)
        return found

    def contains(self, node: Node, word: bytes) -> bool:
        """`word in self.raw(node)`, from one scan of the file per word instead of a copy and a scan of
        every node asked about (the analysis asks it of every class and method at every keystroke)."""
        found = self.positions(word)
        k = bisect_left(found, node.start_byte)
        return k < len(found) and found[k] + len(word) <= node.end_byte

    def contains_word(self, node: Node, word: bytes) -> bool:
        """Whether `word` occurs in `node`'s text as a whole word (`words.whole_word_at`: no ASCII letter, digit or
        `_` touches it), from the file's occurrences of `word` (`positions`); a keyword of the node's, `class` of a
        class definition, is one."""
        found = self.positions(word)
        end = node.end_byte
        size = len(word)
        data = self.data
        for k in range(bisect_left(found, node.start_byte), len(found)):
            at = found[k]
            if at + size > end:
                return False
            if whole_word_at(data, at, at + size):
                return True
        return False

    def occurs(self, word: bytes) -> bool:
        """`word in self.data` (from the document's carried word index when there is one)."""
        return self.words.occurs(word) if self.words is not None else word in self.data

    def text(self, node: Node) -> str:
        """The exact source text of `node` (a short one shared with equal texts, with `share_names`)."""
        string = self._string
        if string is not None:
            text = string[node.start_byte : node.end_byte]
        else:
            text = self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")
        if _SHARE and len(text) <= _SHARED_LENGTH:
            return sys.intern(text)
        return text

    def norm(self, node: Node) -> str:
        """The normalised source text of `node`, comments removed."""
        # Not memoised: only ~9 % of the calls over the corpus repeat a range, less than a key costs.
        text = self.text(node)
        if "\n" in text:
            if "#" in text:
                text = " ".join(self._tokens(node))
        elif "\t" not in text and "  " not in text:
            return text  # `normalise`'s own first test, without the call: most node texts are one short line
        return normalise(text)

    def _tokens(self, node: Node) -> list[str]:
        out: list[str] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "comment":
                continue
            if n.child_count == 0 or n.type == "string":
                out.append(self.text(n))
            else:
                stack.extend(reversed(n.children))
        return out

    def span(self, node: Node) -> Span:
        if self.ascii:
            start, end = node.start_point, node.end_point
            return Span(start[0], start[1], end[0], end[1])
        return self.index.span(node.start_point, node.end_point)


def descendants(node: Node) -> list[Node]:
    """`node` and every named node under it (depth first, last child first)."""
    out: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.named_children)
    return out


def unexpected_indents(tree: Tree, indent: int = 0) -> list[Node]:
    """Module-level statements that do not start at column `indent` (0 for a file; a method's column
    for a method parsed on its own): Python's "unexpected indent", which tree-sitter accepts without an
    ERROR node (a letter typed at column 0 inside a class ends the class there, and the methods below
    it surface as indented module-level code)."""
    return [c for c in tree.root_node.named_children if c.start_point[1] != indent and c.type != "comment"]


def is_broken(tree: Tree, indent: int = 0) -> bool:
    """Whether Python would reject the parsed text: a syntax error or an unexpected indent."""
    return tree.root_node.has_error or bool(unexpected_indents(tree, indent))


def syntax_problems(tree: Tree, src: SourceText, indent: int = 0) -> list[Problem]:
    """One Problem per outermost ERROR or MISSING region of the tree, and per unexpectedly indented
    module-level statement (capped)."""
    problems: list[Problem] = []
    for node in unexpected_indents(tree, indent)[:MAX_SYNTAX_PROBLEMS]:
        problems.append(Problem("syntax error: unexpected indent", src.span(node), src.path, Severity.ERROR,
                                "syntax-error"))
    root = tree.root_node
    if not root.has_error:
        return problems
    problems_before = len(problems)
    stack = [root]
    while stack and len(problems) < MAX_SYNTAX_PROBLEMS:
        node = stack.pop()
        if node.is_error:
            snippet = normalise(src.text(node))[:40]
            problems.append(
                Problem(f"syntax error near {snippet!r}", src.span(node), src.path, Severity.ERROR, "syntax-error")
            )
            continue
        if node.is_missing:
            problems.append(
                Problem(f"syntax error: missing {node.type!r}", src.span(node), src.path, Severity.ERROR, "syntax-error")
            )
            continue
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    if len(problems) == problems_before:
        # The tree has an error but no ERROR or MISSING node is reachable (a missing newline between
        # two statements on one line): report it at the innermost statement that holds the error.
        node = root
        while True:
            inner = [c for c in node.children if c.has_error]
            if not inner:
                break
            node = inner[0]
        problems.append(Problem("syntax error", src.span(node), src.path, Severity.ERROR, "syntax-error"))
    return problems


MAX_REPAIRS = 4


_TOKENS = re.compile(
    rb"#[^\n]*"
    rb'|[rRbBuUfF]{0,2}"""[\s\S]*?"""'
    rb"|[rRbBuUfF]{0,2}'''[\s\S]*?'''"
    rb'|[rRbBuUfF]{0,2}"(?:\\.|[^"\\\n])*"'
    rb"|[rRbBuUfF]{0,2}'(?:\\.|[^'\\\n])*'"
    rb"|[()\[\]{}]"
)
_CLOSES = {ord(")"): ord("("), ord("]"): ord("["), ord("}"): ord("{")}


def _unbalanced_bracket(data: bytes, start: int, end: int) -> int | None:
    """The offset of the bracket that breaks the region `start:end`, or None when all balance.

    A closer that does not match the innermost opener blames that opener (an extra `(` typed inside a
    list); openers left at the end blame the innermost one (an unclosed call). Strings and comments are
    skipped, so their brackets do not count.
    """
    stack: list[tuple[int, int]] = []  # (bracket byte, offset)
    for m in _TOKENS.finditer(data, start, end):
        b = data[m.start()]
        if m.end() - m.start() != 1 or b not in b"()[]{}":
            continue
        if b in b"([{":
            stack.append((b, m.start()))
        elif stack and stack[-1][0] == _CLOSES[b]:
            stack.pop()
        elif stack:
            return stack[-1][1]
        else:
            return m.start()
    return stack[-1][1] if stack else None


def _multiline_error(tree: Tree) -> Node | None:
    """The first ERROR node spanning several lines (an unclosed bracket swallowing what follows)."""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error and node.end_point[0] > node.start_point[0]:
            return node
        stack.extend(reversed([c for c in node.children if c.has_error]))
    return None


def repair(data: bytes, tree: Tree) -> tuple[bytes, Tree]:
    """A text and tree for analysis where multi-line error regions no longer swallow later code.

    tree-sitter recovers from most errors locally, but an unclosed bracket can pull the following
    classes into one ERROR node. Blanking the line where such a region starts (spaces, same length,
    so every position stays valid) and re-parsing isolates the broken statement. The original tree
    still gives the syntax problems.
    """
    parser: Parser | None = None
    for _ in range(MAX_REPAIRS):
        node = _multiline_error(tree)
        if node is None:
            break
        culprit = _unbalanced_bracket(data, node.start_byte, node.end_byte)
        at = node.start_byte if culprit is None else culprit
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        # Keep the indentation, blank the statement's first line.
        indent = len(data[start:end]) - len(data[start:end].lstrip(b" \t"))
        data = data[: start + indent] + b" " * (end - start - indent) + data[end:]
        # Re-parse incrementally: only the region around the blanked line is rebuilt. The caller's
        # tree (kept by the incremental document) must stay as it was, so the edit goes to a copy.
        row = data.count(b"\n", 0, start)
        tree = tree.copy()
        tree.edit(
            start_byte=start + indent,
            old_end_byte=end,
            new_end_byte=end,
            start_point=(row, indent),
            old_end_point=(row, end - start),
            new_end_point=(row, end - start),
        )
        parser = parser or new_parser()
        tree = parser.parse(data, tree)
    return data, tree
