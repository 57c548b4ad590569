"""Applying recorded edits to source text: line-exact splices at statement boundaries.

Only the lines an edit names change; everything else (formatting, comments) is copied byte for byte.
Python's parser tells where statements start and end and which block they belong to, so an edit that
would cut a statement in half, or span two blocks, is refused instead of producing broken code.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from adopter.dsl.types import Span
from adopter.parsed import IMPORT_KINDS, ParsedText, StatementIndex, Unit
from adopter.synth.registry import Edits, ImportEdit, ModuleCodeEdit

__all__ = ["ApplyError", "Splice", "StatementIndex", "apply_edits", "render_import"]


class ApplyError(Exception):
    """An edit cannot be applied (overlap, not at statement boundaries, unparsable source)."""


@dataclass(frozen=True, slots=True)
class Splice:
    """Replace lines [start, end) (0-based) with `lines`; start == end inserts before `start`."""

    start: int
    end: int
    lines: tuple[str, ...]
    order: int = 0  # tie-break for insertions at the same place


def render_import(edit: ImportEdit) -> str:
    """The import statement for `edit`."""
    if edit.name is None:
        return f"import {edit.module}" + (f" as {edit.alias}" if edit.alias else "")
    return f"from {edit.module} import {edit.name}" + (f" as {edit.alias}" if edit.alias else "")


def _indent_code(code: str, indent: str) -> tuple[str, ...]:
    if not code.strip():  # a statement removed: its lines go, no blank line is left in its place
        return ()
    lines = textwrap.dedent(code).strip("\n").split("\n")
    return tuple((indent + line) if line.strip() else "" for line in lines)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _import_anchor(parsed: ParsedText, lines: Sequence[str] = ()) -> int:
    """The 0-based line after which new imports go: after the leading imports (or the docstring, or
    the header comments: shebang, encoding, licence)."""
    anchor = 0
    while anchor < len(lines) and lines[anchor].startswith("#"):
        anchor += 1

    def may_lead(i: int, unit: Unit) -> bool:  # only an import, or a docstring first, moves the anchor
        return unit.kinds[0] in IMPORT_KINDS or (i == 0 and unit.kinds[0] == "expression_statement")

    for i, node in enumerate(parsed.leading(may_lead)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            anchor = node.end_lineno or node.lineno
        elif i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            anchor = node.end_lineno or node.lineno
        else:
            break
    return anchor


def _class_end(parsed: ParsedText, name: str) -> int | None:
    for node in parsed.top_level(lambda unit: unit.defines("class_definition", name)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node.end_lineno
    return None


def _statement_lines(lines: list[str], span: Span) -> None:
    before = lines[span.start_line][: span.start_col]
    after = lines[span.end_line][span.end_col :]
    if before.strip() or (after.strip() and not after.strip().startswith("#")):
        raise ApplyError(f"the statement at line {span.start_line + 1} shares its line with other code")


def apply_edits(source: str | ParsedText, all_edits: Sequence[Edits]) -> str:
    """Apply every recorded edit to `source` (a text, or its `ParsedText`); raise `ApplyError` when they
    overlap or misfit."""
    parsed = source if isinstance(source, ParsedText) else ParsedText.of(source)
    crlf = "\r\n" in parsed.text
    if crlf:
        parsed = ParsedText.of(parsed.text.replace("\r\n", "\n"))
    try:
        parsed.module([])  # a text read whole raises here when it does not parse
        return _apply(parsed, all_edits, crlf)
    except SyntaxError as exc:
        raise ApplyError(f"the file does not parse: {exc.msg} (line {exc.lineno})") from exc


def _apply(parsed: ParsedText, all_edits: Sequence[Edits], crlf: bool) -> str:
    lines = list(parsed.lines)
    splices: list[Splice] = []
    order = 0

    for edits in all_edits:
        for st in edits.statements:
            first = min(st.spans, key=lambda s: (s.start_line, s.start_col))
            last = max(st.spans, key=lambda s: (s.end_line, s.end_col))
            _statement_lines(lines, first)
            _statement_lines(lines, last)
            if not parsed.statement_index(first.start_line, last.end_line).region(first.start_line, last.end_line):
                raise ApplyError(f"lines {first.start_line + 1}-{last.end_line + 1} are not whole statements "
                                 "of one block")
            indent = _indent_of(lines[first.start_line])
            splices.append(Splice(first.start_line, last.end_line + 1, _indent_code(st.code, indent)))
        for ex in edits.expressions:
            head = lines[ex.span.start_line][: ex.span.start_col]
            tail = lines[ex.span.end_line][ex.span.end_col :]
            body = ex.code.split("\n")
            body[0] = head + body[0]
            body[-1] = body[-1] + tail
            splices.append(Splice(ex.span.start_line, ex.span.end_line + 1, tuple(body)))
        for b in edits.bindings:
            _statement_lines(lines, b.span)
            if not parsed.statement_index(b.span.start_line, b.span.end_line).region(b.span.start_line,
                                                                                     b.span.end_line):
                raise ApplyError(f"line {b.span.start_line + 1} is not a whole __init__ statement")
            indent = _indent_of(lines[b.span.start_line])
            code = _indent_code(b.code, indent)
            if b.after:
                order += 1
                splices.append(Splice(b.span.end_line + 1, b.span.end_line + 1, code, order))
            else:
                splices.append(Splice(b.span.start_line, b.span.end_line + 1, code))

    imports: list[str] = []
    for edits in all_edits:
        for imp in edits.imports:
            stmt = render_import(imp)
            if stmt not in imports:
                imports.append(stmt)
    if imports:
        at = _import_anchor(parsed, lines)
        splices.append(Splice(at, at, tuple(imports), -1))

    added: dict[str, str] = {}
    for edits in all_edits:
        for mc in edits.module_code:
            if mc.name in added:
                if added[mc.name] != mc.code:
                    raise ApplyError(f"two fixes add different definitions named {mc.name}")
                continue
            added[mc.name] = mc.code
            splices.append(_module_code_splice(parsed, lines, mc, 1000 + len(added)))

    return _splice(lines, splices, crlf)


def _module_code_splice(parsed: ParsedText, lines: Sequence[str], mc: ModuleCodeEdit, order: int) -> Splice:
    at: int | None = None
    if mc.after_class is not None:
        at = _class_end(parsed, mc.after_class)
        if at is None:
            raise ApplyError(f"class {mc.after_class} not found for new code {mc.name}")
    if at is None:
        at = _import_anchor(parsed, lines)
    return Splice(at, at, ("", "", *_indent_code(mc.code, "")), order)


def _splice(lines: list[str], splices: list[Splice], crlf: bool) -> str:
    # Fixes of several sites may record the same replacement (one Sequential's callee for each of its
    # Conv -> BatchNorm pairs): identical replacements are one edit, not an overlap.
    replacements = {s for s in splices if s.start < s.end}
    insertions = [s for s in splices if s.start == s.end]
    ordered = sorted([*replacements, *insertions], key=lambda s: (s.start, s.end, s.order))
    prev_end = -1
    for s in ordered:
        if s.start < prev_end:
            raise ApplyError(f"two edits overlap at line {s.start + 1}")
        prev_end = max(prev_end, s.end)
    out: list[str] = []
    pos = 0
    for s in ordered:
        out.extend(lines[pos : s.start])
        out.extend(s.lines)
        pos = max(pos, s.end)
    out.extend(lines[pos:])
    result = "\n".join(out)
    return result.replace("\n", "\r\n") if crlf else result
