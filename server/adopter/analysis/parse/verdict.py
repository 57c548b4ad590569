"""Knowing that an edited text is broken without parsing all of it.

tree-sitter's incremental re-parse of a text a keystroke broke can re-read most of the file in error
recovery (7-16 ms on 100 KB when a letter, a space, `(` or `.` lands at the start of a statement), although
a broken text needs only the verdict: `salvage` reads the text, not that tree. So the re-parse is given a
small budget (`parse_within`), and when it runs over, `certainly_broken` may decide the verdict from the
top-level statements the edit touched, parsed alone.

Why that is sound. Let the old text be `P + R0 + S`, parsed clean, where `R0` runs from the start of the
top-level statement the change begins in to the start of a later one, `S`, that is a `def`, a `class`, or a
decorator (or to the end), and the new text `P + R1 + S`. If the new text parsed clean, `R1` would be a run
of whole top-level statements of it, so `R1` alone would parse clean:
- At `R1`'s start the scanner is at column 0 outside any bracket or string in both readings, and the last
  statement of `P` ends there (it did in the old text), unless `R1`'s first code line is indented or starts
  an `else`/`elif`/`except`/`finally` clause: then the region starts one statement higher.
- At its end: tree-sitter-python skips a line break wherever its grammar cannot end a statement (`x = 1 +`
  at the end of a line continues on the next), so `R1` may end with a statement still open. The tokens `S`
  starts with cannot continue one: `def` and `class` continue no statement, and a decorator line (`@` as
  the matrix product, at most) is followed by a `def` or `class` line. A bracket open at `R1`'s end cannot
  close in `S` (its brackets balance: it was whole statements). A string open at the end (and a backslash
  continuation) cannot occur: strings, comments and backslashes keep their extent when the changed bytes
  (removed and inserted) hold no quote, backslash, `#`, brace (f-string fields), line break or `@`, and do
  not touch a string's prefix (`_neutral`); else the slow way. A decorator at `R1`'s end takes the next
  definition in.
So `R1` broken alone means the new text is broken. Anything else goes the slow way: the whole re-parse.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from tree_sitter import Node, Parser, Tree

from adopter.analysis.parse.read_input import Reader
from adopter.analysis.parse.source import is_broken

# How many progress reports (one per ~100 parse actions, ~30 per ms here) an incremental re-parse may take
# before `certainly_broken` is asked (~2.5 ms): a keystroke's re-parse that reuses the tree takes 10-25, one
# that re-reads a 100 KB file in error recovery 150-450; the region parse costs 0.2-2.5 ms.
BUDGET = 80

_NOT_NEUTRAL = re.compile(rb"[\"'`\\#{}@\n\r\f]")
_PREFIXED = re.compile(rb"[A-Za-z]*[\"'`]")  # a string prefix (or none) and its quote right after the change
_CLAUSE = re.compile(rb"(?:else|elif|except|finally)\b")
_DEFINITION = re.compile(rb"(?:def|class|async[ \t]+def)\b|@")  # a top-level statement no open statement continues into
_SPACE = b" \t\f\r"
_NEXT_CODE = re.compile(rb"(?:[ \t]*\r?\n)*?([ \t]|[^ \t\r\n])")  # (a line of spaces only counts as indented)
_TEXT = frozenset({"string", "string_start", "string_content", "string_end", "comment"})
# Statement parts that start a line of their own: a clause of a compound statement, a decorator.
_CLAUSES = frozenset({"elif_clause", "else_clause", "except_clause", "finally_clause", "decorator"})


def parse_within(parser: Parser, data: bytes, old_tree: Tree, budget: int | None = None) -> Tree | None:
    """`parser.parse(data, old_tree)`, or None when it takes more than `budget` progress reports (`BUDGET`
    by default): the parser then holds the parse where it stopped, for `resume` (or `parser.reset()`)."""
    limit = BUDGET if budget is None else budget
    reports = 0

    def over(_offset: int, _has_error: bool) -> bool:
        nonlocal reports
        reports += 1
        return reports > limit

    reader = Reader(data)
    try:
        return parser.parse(reader, old_tree, progress_callback=over)
    except ValueError:  # cancelled by `over`
        return None
    finally:
        reader.release()


def resume(parser: Parser, data: bytes, old_tree: Tree) -> Tree:
    """Finish the parse `parse_within` stopped (same `data` and `old_tree`)."""
    reader = Reader(data)
    try:
        return parser.parse(reader, old_tree)
    finally:
        reader.release()


def breaks_indentation(old: bytes, tree: Tree, start: int, old_end: int, new: bytes, new_end: int) -> bool:
    """Whether the change inserts code at column 0 of an indented line of code, or of an empty line before
    one (`tree`: `old`'s), which ends every block above it, or into the indentation of a line that starts a
    statement (`_dedents_statement`): tree-sitter's re-parse then re-reads the rest of the file in error
    recovery. A guess, not a verdict: such a change is first tried with `certainly_broken`, before any
    re-parse."""
    if not (old_end == start and new[start:new_end].strip()):
        return False
    if not (start == 0 or old[start - 1] == 0x0A):
        return _dedents_statement(old, tree, start, new[start:new_end])
    following = _NEXT_CODE.match(old, start)  # the first character of the next non-empty line
    if following is None or following.group(1) not in (b" ", b"\t"):
        return False
    node = tree.root_node.descendant_for_byte_range(start, start)
    return node is None or node.type not in _TEXT  # a docstring's line stays a docstring's


def _dedents_statement(old: bytes, tree: Tree, start: int, inserted: bytes) -> bool:
    """Whether `inserted` (code, one line) goes into the indentation of a line of `old` (after column 0, with
    spaces or tabs after it) whose code starts a statement, a clause of one or a decorator (`tree`: `old`'s): the line is
    then less indented than its block (measured on BERT: the re-parse of such an edit runs over its budget, or
    near it, where the statement parsed alone costs a fraction of it)."""
    line = old.rfind(b"\n", 0, start) + 1
    if b"\n" in inserted or old[line:start].strip(_SPACE) or old[start : start + 1] not in (b" ", b"\t"):
        return False
    code = start
    while code < len(old) and old[code] in b" \t":
        code += 1
    if code == len(old) or old[code] in b"#\r\n\\":
        return False
    node = tree.root_node.descendant_for_byte_range(code, code)
    while (node is not None and node.parent is not None and node.parent.start_byte == code
           and node.parent.type not in ("block", "module")):
        node = node.parent
    if node is None or node.parent is None or node.type in _TEXT:
        return False
    return node.parent.type in ("block", "module", "decorated_definition") or node.type in _CLAUSES


def statement_starts(tree: Tree) -> list[int] | None:
    """Where each top-level statement of a clean tree starts (None for a broken tree)."""
    if is_broken(tree):
        return None
    return [c.start_byte for c in tree.root_node.named_children if c.type != "comment"]


def certainly_broken(old: bytes, starts: list[int], new: bytes, start: int, old_end: int, new_end: int,
                     parser: Parser) -> bool:
    """Whether `new` is broken, known from the top-level statements that `old[start:old_end]` ->
    `new[start:new_end]` touches, parsed alone; `old` parsed clean, with its statements at `starts`. False
    means "not known" (see the module docstring)."""
    if not (_neutral(old, start, old_end) and _neutral(new, start, new_end)):
        return False
    k = bisect_right(starts, start) - 1
    a = starts[k] if k >= 0 else 0
    if a > 0 and not _opens_statement(new, a):  # the statement above may continue into the region
        a = starts[k - 1] if k >= 1 else 0
    j = bisect_right(starts, old_end)
    delta = len(new) - len(old)
    while j < len(starts) and (_DEFINITION.match(old, starts[j]) is None
                               or _decorator_last(new, a, starts[j] + delta)):
        j += 1  # to a definition, not decorated by the region's last line
    end = starts[j] + delta if j < len(starts) else len(new)
    region = new[a:end]
    if end < len(new) and region.rstrip(b" \t\r\n\f").endswith(b"\\"):
        return False
    return is_broken(parser.parse(region))


def _neutral(data: bytes, start: int, end: int) -> bool:
    """Whether changing `data[start:end]` leaves where strings, comments and continuations are: no quote,
    backslash, `#`, brace (f-string fields), `@`, line break in it, and no string prefix right after it."""
    return _NOT_NEUTRAL.search(data, start, end) is None and _PREFIXED.match(data, end) is None


def _opens_statement(data: bytes, at: int) -> bool:
    """Whether the first code line from line start `at` starts at column 0 and does not continue a compound
    statement above (`else:` and the like)."""
    n = len(data)
    while at < n:
        end = data.find(b"\n", at)
        end = n if end < 0 else end
        body = data[at:end].lstrip(_SPACE)
        if body and not body.startswith(b"#"):
            return data[at] not in _SPACE and _CLAUSE.match(data, at) is None
        at = end + 1
    return True


def _decorator_last(data: bytes, a: int, end: int) -> bool:
    """Whether the last code line of `data[a:end]` starts with `@` (a decorator, or text that might be)."""
    while end > a:
        start = data.rfind(b"\n", a, end - 1) + 1 if end - 1 > a else a
        start = max(start, a)
        body = data[start:end].strip(b" \t\f\r\n")
        if body and not body.startswith(b"#"):
            return body.startswith(b"@")
        end = start
    return False


_DEFINITIONS = frozenset({"function_definition", "class_definition", "decorated_definition"})
_BLANK = b" \t\r\f\v"
_WORD = re.compile(rb"\w*\Z")
_SPACES = re.compile(rb" *\Z")


def seldom_breaks(old: bytes, start: int, old_end: int, new: bytes, new_end: int) -> bool:
    """Whether the change is one that seldom breaks a text: letters, digits or `_` typed into or removed from a
    name or number (a word byte beside the change), or spaces typed or removed beside a non-word byte (`a  = 1`).
    A guess that only orders the work (`method_text`'s parse is then not tried first), never a verdict."""
    # (not `old[start - 1 : start]` at 0: compiled, a negative start is not read from the end)
    beside = (old[start - 1 : start] if start > 0 else b"") + old[old_end : old_end + 1]
    if _WORD.match(old, start, old_end) and _WORD.match(new, start, new_end):
        return any(c == 0x5F or chr(c).isalnum() for c in beside)
    if _SPACES.match(old, start, old_end) and _SPACES.match(new, start, new_end):
        return not all(c == 0x5F or chr(c).isalnum() for c in beside)
    return False


def method_text(old: bytes, tree: Tree, new: bytes, start: int, old_end: int, new_end: int) -> tuple[bytes, int] | None:
    """The method of a top-level class that the change `old[start:old_end]` -> `new[start:new_end]` lies in, as
    `new` reads it, and its column, when that text broken alone (`is_broken(parse(text), column)`) means `new`
    is broken; else None. `tree`: `old`'s. The text runs from the method's first line (a decorator's) to the
    line break before the class's next definition, as `salvage` cuts a class's statements, so the masking of
    a broken `new` finds its verdict.

    Why that is sound (`certainly_broken`'s argument, one block down). `old` = `P + R0 + S` without a syntax
    error, `R0` = the method `D` at column `k` (and the blank and comment lines after it), `S` = the class's next
    `def`, `class` or decorator line, at column `k`; `new` = `P + R1 + S`. The change is neutral (`_neutral`:
    no line break, no quote, backslash, `#`, brace or `@`, no string prefix after it: strings, comments and
    continuations keep their extents) and lies after `D`'s header, so `P` and the header are unchanged: a parse
    of `new` is where a parse of `old` was at `D`'s first line, at a statement of the class body with the
    indentation stack `[0, k]`; read alone, `R1` starts at column `k` with the stack `[0]`. After the header
    both push the body's indentation `m > k`. Every line of `R1` after the header is blank, a comment or at
    column `m` or more (spaces only): the scanner's INDENT, DEDENT and NEWLINE there compare the line with the
    top of the stack and pop while it is deeper than the line, and never pop below `m`, so both readings get
    the same tokens to `R1`'s end. (A line left of `m` is what makes them differ: at column 6 of a method
    whose body is at 8, in a class at 4, the whole text pops to the class's 4 and tree-sitter takes the line
    as a statement of the class without an error, while `R1` alone pops to 0 and has a module-level statement
    at column 6, an unexpected indent; so does an `if` body at 6 under an `if` at 8.) Were `new` without an
    error, `S`'s first token (`def`, `class`, `@` followed by a `def` or `class` line) could continue nothing
    of `R1`: no bracket open (a definition inside brackets is an error), no statement left open, so `R1` ends
    `D` whole; alone, the same tokens then the end of the text end it as well, with `D` the one module-level
    statement at column `k`. So `R1` broken alone means `new` has an error.
    """
    if tree.root_node.has_error or not (_neutral(old, start, old_end) and _neutral(new, start, new_end)):
        return None
    at = max(start - 1, 0)  # the byte before the change: one typed at the end of a line is in that line's statement
    node = tree.root_node.descendant_for_byte_range(at, at + 1)
    top: Node | None = None  # the class's top-level statement (its decorators included)
    while node is not None and top is None:  # up to a statement of the body of a top-level class
        parent = node.parent
        if parent is None:
            return None
        owner = parent.parent
        if parent.type == "block" and owner is not None and owner.type == "class_definition":
            if owner.parent is not None and owner.parent.type == "decorated_definition":
                owner = owner.parent
            if owner.parent is not None and owner.parent.type == "module":
                top = owner
                break
        node = parent
    if node is None or top is None:
        return None
    function = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
    if function is None or function.type != "function_definition":
        return None
    first = old.rfind(b"\n", 0, node.start_byte) + 1
    column = node.start_byte - first
    following, below = _next_statement(node), column
    if following is None:  # the class's last statement: what follows the class
        following, below = _next_statement(top), 0
    if following is not None and following.type not in _DEFINITIONS:
        return None
    body = function.child_by_field_name("body")
    if body is None:
        return None
    body_line = old.rfind(b"\n", 0, body.start_byte) + 1
    if following is None:
        after = len(old)  # the end of the text
    else:
        after = old.rfind(b"\n", 0, following.start_byte) + 1  # the line `S` starts
        if old[after : following.start_byte] != b" " * below:
            return None
    if (old[first : node.start_byte].strip(b" ") or body_line <= node.start_byte
            or old[body_line : body.start_byte].strip(b" ")):
        return None  # (a definition's first line starts with it; the body on lines of its own)
    if start < body_line or old_end >= after:
        return None  # the change is in the header or on `S`'s line
    # To the line break before `S` (`salvage` cuts a statement there), or to the end of the text.
    end = after + len(new) - len(old) - (1 if following is not None else 0)
    lines = new[body_line:end].split(b"\n")
    code = lines[0].lstrip(b" ")
    indent = len(lines[0]) - len(code)
    if indent <= column or not code.strip(_BLANK) or code.startswith(b"#"):
        return None  # (the body's first line: its first statement's, unless the change emptied it)
    for line in lines:
        code = line.lstrip(b" ")
        if len(line) - len(code) >= indent and code[:1] not in (b"\t", b"\f", b"\v"):
            continue
        if code.strip(_BLANK) and not code.startswith(b"#"):
            return None  # code left of the body's column (or after a tab or form feed)
    return new[first:end], column


def _next_statement(node: Node) -> Node | None:
    """The next named sibling of `node` that is not a comment."""
    following = node.next_named_sibling
    while following is not None and following.type == "comment":
        following = following.next_named_sibling
    return following


# Where the indentation of a line between statements lies: in a module, a block, or a compound statement or
# clause outside its header's brackets (not in an expression, a bracket, a string or a continuation).
_BETWEEN_STATEMENTS = frozenset({
    "module", "block", "class_definition", "function_definition", "decorated_definition", "if_statement",
    "elif_clause", "else_clause", "for_statement", "while_statement", "try_statement", "except_clause",
    "except_group_clause", "finally_clause", "with_statement", "match_statement", "case_clause",
})
_WHITE = frozenset(b" \t\r\n\f\v")


def left_of_block(old: bytes, tree: Tree, start: int, old_end: int, new: bytes, new_end: int) -> bool:
    """Whether `new` is known broken, without a parse, because the change types code into the indentation of
    a line inside a top-level statement's body, left of that body's column but not at column 0 (`tree`:
    `old`'s, which must parse clean; False means "not known").

    Why that is sound. Let the change insert one line's worth of neutral code (`_neutral`: no line break,
    quote, backslash, `#`, brace or `@`) at column `j > 0` of line `L`, after spaces only, its first byte not
    a space and not starting `else`/`elif`/`except`/`finally`; let the indentation of `L` lie, in `old`'s
    tree, directly in a block `B` (or a statement around it) of the top-level statement `T`, with no
    expression, bracket or string around it and no backslash before `L`'s line break, and let `B` be the
    outermost block of `T` holding it, whose first statement starts a line of its own (spaces before it) at
    column `k > j`, on a line before `L`. Everything before `L` is unchanged, so a parse of `new` reaches the
    line break before `L` as one of `old` did: between statements, outside brackets and strings, with
    tree-sitter-python's indentation stack `[0, k, ...]` (`k` pushed by `B`'s INDENT, `B` still open, every
    level above it greater). At that line break the scanner measures `L`'s column `j` (comment lines between
    only put it off) and, while `j` is below the top of the stack, emits a DEDENT that pops it: where the
    grammar allows none that is an error; the levels `k` and above all lie above `j`, so the pops end at
    `[0]`, `T` complete (its next token would have to be a clause keyword). `L`'s first token then starts a
    module-level statement at column `j`: the unexpected indent `is_broken` reads. Either way `new` is
    broken. A line left of the body's column but right of the level below (columns `k..m-1` of a method
    whose body is at `m`, in a class at `k`) is not covered: the pops stop at `k` and tree-sitter takes the
    line as a statement of that block without an error (see `method_text`)."""
    if old_end != start or new_end <= start or start == 0:
        return False
    line = old.rfind(b"\n", 0, start) + 1
    column = start - line
    if column == 0 or old[line:start].strip(b" ") or not new[start:start + 1].strip():
        return False
    if not _neutral(new, start, new_end) or _CLAUSE.match(new, start) is not None:
        return False
    before = line - 1  # the last byte before `L`'s line that is not white space must not be a backslash
    while before >= 0 and old[before] in _WHITE:
        before -= 1
    if before >= 0 and old[before] == 0x5C:
        return False
    node: Node | None = tree.root_node.descendant_for_byte_range(start - 1, start)  # a space of `L`'s indentation
    if node is None or node.type not in _BETWEEN_STATEMENTS:
        return False
    block: Node | None = None  # the outermost block of the top-level statement holding it
    while node is not None and node.type != "module":
        if node.type == "block":
            block = node
        node = node.parent
    if block is None or node is None:
        return False
    first = block.named_children[0] if block.named_child_count else None
    while first is not None and first.type == "comment":
        first = first.next_named_sibling
    if first is None or first.start_byte >= line:
        return False  # (`B`'s first statement on `L` or below: no level pushed for it before `L`)
    first_line = old.rfind(b"\n", 0, first.start_byte) + 1
    if old[first_line : first.start_byte].strip(b" ") or first.start_byte - first_line <= column:
        return False
    return not is_broken(tree)

