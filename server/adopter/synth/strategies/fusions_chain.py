"""Shared plumbing of the fusion strategies: collapse a matched op chain into one expression.

A fusion match is a chain of ops whose last op computes the value the rest of the code uses. The
chain is rewritten by replacing that last op's call expression (inside its statement) with the fused
expression and deleting the earlier statements that only computed intermediates of the chain. The
rule's guards guarantee those intermediates are not used after the match; this module checks the
textual shape (each deleted statement is exactly `name = <op>`, on its own lines, in the same block)
and declines otherwise. Helper functions synthesized into the user's file are added once: an existing
definition carrying the same tag is reused.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence

from adopter.dsl.types import Expr, Op, OpKind, Ref, Span
from adopter.parsed import Unit
from adopter.synth.registry import SynthContext


def _pos(line: int, col: int) -> tuple[int, int]:
    return (line, col)


def _start(span: Span) -> tuple[int, int]:
    return (span.start_line, span.start_col)


def _end(span: Span) -> tuple[int, int]:
    return (span.end_line, span.end_col)


def binding_path(ctx: SynthContext, var: str) -> str:
    """The source text naming the submodule a pattern variable bound: its attribute path
    (`self.dropout`), or, for an element of a module list chosen at run time (the analysis writes
    `self.layers[*]`), the expression the matched call uses (`self.layers[i]`)."""
    value = ctx.binding(var)
    if isinstance(value, str):
        if "[*]" not in value:
            return value
        written = _callee_text(ctx, value)
        if written is not None:
            return written
        ctx.decline(f"${var} is an element of {value.split('[', 1)[0]} chosen at run time, and its call "
                    "could not be read")
    ctx.decline(f"${var} is not bound to a submodule")
    raise AssertionError  # decline never returns


def _callee_text(ctx: SynthContext, target: str) -> str | None:
    """How the match's call of submodule `target` spells the module (`self.layers[i]` in
    `self.layers[i](h)`), when every such call spells it the same way."""
    spellings = set()
    for op in ctx.finding.match.ops:
        if op.kind is OpKind.MODULE and op.target == target:
            text = ctx.text(op.span).strip()
            try:
                node = ast.parse(text, mode="eval").body
            except SyntaxError:
                return None
            if not isinstance(node, ast.Call):
                return None
            spellings.add(ast.get_source_segment(text, node.func))
    return spellings.pop() if len(spellings) == 1 and None not in spellings else None


def activation_path(ctx: SynthContext, act: str, out: str) -> str:
    """The submodule computing the activation: `$act`'s binding, or the module the canonical form
    respelled as a function (`self.act = nn.GELU()` is `F.gelu` in the match)."""
    value = ctx.binding(act)
    if isinstance(value, str):
        return value
    op = op_producing(ctx, out)
    origin = op.origin if op is not None else None
    if origin is not None and origin.kind is OpKind.MODULE and origin.target.startswith("self.") and "[" not in origin.target:
        return origin.target
    ctx.decline("the activation is a function call, not a submodule; the fused helper takes a module")
    raise AssertionError  # decline never returns


def op_producing(ctx: SynthContext, var: str) -> Op | None:
    """The matched op whose output pattern variable `var` bound, if any."""
    value = ctx.binding(var)
    if not isinstance(value, Ref):
        return None
    for op in ctx.finding.match.ops:
        if value.name in op.outputs:
            return op
    return None


def _call_parts(ctx: SynthContext, op: Op) -> list[str]:
    """Source text of an op's operands, in `Op.args` order (receiver first for methods)."""
    text = ctx.text(op.span)
    wrapped = f"({text})"
    try:
        node = ast.parse(wrapped, mode="eval").body
    except SyntaxError:
        return []
    parts: list[ast.expr] = []
    if isinstance(node, ast.Call):
        if (op.origin or op).kind is OpKind.METHOD and isinstance(node.func, ast.Attribute):
            parts.append(node.func.value)
        parts.extend(node.args)
    elif isinstance(node, ast.BinOp):
        parts.extend([node.left, node.right])
    elif isinstance(node, ast.UnaryOp):
        parts.append(node.operand)
    elif isinstance(node, ast.Subscript):
        parts.extend([node.value, node.slice])
    return [ast.get_source_segment(wrapped, p) or "" for p in parts]


def value_text(ctx: SynthContext, var: str) -> str:
    """Source text of what pattern variable `var` bound, usable as an expression where the match is.

    Opaque expressions give their text; a value produced inside the match gives the source of the
    expression that produced it; any other value gives the source text of the operand slot of a
    matched op it feeds. Reading the operand from the source (not the analysis' name) matters in
    inlined helpers, whose parameters the analysis renamed to the caller's arguments.
    """
    value = ctx.binding(var)
    if value is None:
        ctx.decline(f"pattern variable ${var} is not bound")
    if isinstance(value, str):
        return value
    if isinstance(value, Expr):
        return value.text
    assert isinstance(value, Ref)
    ops = ctx.finding.match.ops
    # The value an operand slot reads is the one written last before the first op that reads it. A name is
    # not one value: a local is rebound (`h = h + f(h)`), and an inlined helper's returned local takes the
    # call's temporary name (`%18`) at every binding, so the op writing the sum can also read the residual
    # under the same name. The first op writing the name is not, then, what the operand holds.
    first_read = next((i for i, op in enumerate(ops) if value in op.args), None)
    if first_read is None:
        producer = op_producing(ctx, var)
    else:
        producer = next((op for op in reversed(ops[:first_read]) if value.name in op.outputs), None)
    if producer is not None and value.name.startswith("%"):
        return ctx.text(producer.span)
    for op in ops[first_read or 0:]:
        if value in op.args:  # the operand as the source spells it there
            parts = _call_parts(ctx, op)
            i = op.args.index(value)
            if i < len(parts) and parts[i]:
                return parts[i]
        if value.name in op.outputs:
            break  # a later read would be of another value under the same name
    if not value.name.startswith("%"):
        return value.name
    ctx.decline(f"cannot find the source text of ${var}")
    raise AssertionError


def is_simple(text: str) -> bool:
    """Whether `text` is a name or an attribute chain (safe to evaluate twice)."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", text) is not None


def functional(ctx: SynthContext) -> str:
    """How to spell `torch.nn.functional` in this file, importing `torch` only when nothing fits."""
    imports = ctx.text_index.imports()
    for (module, name), local in imports.items():
        if module == "torch.nn.functional" and name is None and local != module:
            return local
        if module == "torch.nn" and name == "functional":
            return local
    for (module, name), local in imports.items():
        if module == "torch" and name == "nn":
            return f"{local}.functional"
        if module == "torch.nn" and name is None and local != module:
            return f"{local}.functional"
    return f"{ctx.add_import('torch')}.nn.functional"


def ensure_helper(ctx: SynthContext, name: str, tag: str, code: str) -> str:
    """Add the top-level helper `code` (defining `name`) once per file; return the name to call.

    The helper's docstring carries `(adopter: <tag>)`; a definition with that tag already in the file
    (from an earlier fix) is reused instead of adding a second copy.
    """
    marker = f"(adopter: {tag})"
    parsed = ctx.text_index

    def may_define(unit: Unit) -> bool:  # a docstring holding the marker: in the text, or written escaped
        text = "\n".join(parsed.lines[unit.start : unit.end + 1])
        return unit.defines("function_definition") and (marker in text or "\\" in text)

    try:
        top = list(parsed.top_level(may_define))
    except SyntaxError:
        top = []
    for node in top:
        if isinstance(node, ast.FunctionDef) and marker in (ast.get_docstring(node) or ""):
            return node.name
    return ctx.add_module_code(textwrap.dedent(code), name=name)


def _statement_lines_alone(ctx: SynthContext, span: Span) -> bool:
    """Whether the statement at `span` occupies its lines alone (nothing else before or after)."""
    lines = ctx.lines
    before = lines[span.start_line][: span.start_col]
    after = lines[span.end_line][span.end_col :]
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def _function_end(ctx: SynthContext, line: int) -> int:
    """The last line (0-based) of the innermost function containing `line`."""
    parsed = ctx.text_index
    try:
        tree = parsed.module([line])  # the top-level statement holding `line` holds every function around it
    except SyntaxError:
        return line
    end = line
    best = None
    for node in parsed.statements(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            if node.lineno - 1 <= line <= node.end_lineno - 1 and (best is None or node.lineno > best.lineno):
                best = node
    if best is not None and best.end_lineno is not None:
        end = best.end_lineno - 1
    return end


def _check_dead(ctx: SynthContext, chain: Sequence[Op], deleted: Sequence[Span], final: Op,
                spelled: dict[Span, set[str]]) -> None:
    """Decline when a value computed by a deleted statement is read outside the chain (`spelled`: the
    names each deleted statement binds as written, where the analysis renamed them).

    The rules' guards already ask for this; reading the text as well also catches uses the analysis
    does not model (stores such as `self.cache = h`, `out[0] = h`).
    """
    if not deleted:
        return
    lines = ctx.lines
    chain_lines = {line for op in chain for line in range(op.stmt_span.start_line, op.stmt_span.end_line + 1)}
    last = _function_end(ctx, final.stmt_span.end_line)
    final_outputs = set(final.outputs) | {
        out for op in chain if op.stmt_span == final.stmt_span for out in op.outputs
    }
    bound = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]", ctx.statement_text(final.stmt_span))
    if bound is not None:
        final_outputs.add(bound.group(1))
    # The final statement outside the fused op (`h = h + ff(norm(h))`: the outer `h` is the deleted sum's
    # value, which the fused call no longer binds): a deleted statement's value read there would change.
    final_text = ctx.statement_text(final.stmt_span)
    outside = final_text.replace(ctx.text(final.span), " ", 1)
    if bound is not None:
        outside = outside[bound.end() - 1:]
    for stmt in deleted:
        # What the deleted statement reads is now read at the final statement: it must not change between.
        try:
            reads = {
                n.id
                for n in ast.walk(ast.parse(ctx.statement_text(stmt).strip()))
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            }
        except SyntaxError:
            reads = set()
        for name in reads:
            assign = re.compile(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/@%&|^]|//|\*\*|>>|<<)?=(?!=)")
            for line in range(stmt.end_line + 1, final.stmt_span.start_line):
                if line not in chain_lines and assign.search(lines[line].split("#")[0]):
                    ctx.decline(f"`{name}` is reassigned on line {line + 1}, between the statements to fuse")
        names = {out for op in chain if op.stmt_span == stmt for out in op.outputs if not out.startswith("%")}
        names |= spelled.get(stmt, set())
        for name in names:
            pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
            if pattern.search(outside):
                ctx.decline(f"`{name}` is also read in the fused statement, outside the fused call; fusing would "
                            "change what it holds there")
            stop = final.stmt_span.start_line if name in final_outputs else last + 1
            for line in range(stmt.end_line + 1, stop):
                if line not in chain_lines and pattern.search(lines[line].split("#")[0]):
                    ctx.decline(f"`{name}` is also used on line {line + 1}; fusing would change what it holds")


def rewrite_chain(ctx: SynthContext, new_expr: str, ops: Sequence[Op] | None = None) -> None:
    """Replace the matched chain by `new_expr`, computed where the chain's last op was.

    `ops` defaults to the match's ops; the last one is the op whose value `new_expr` replaces.
    Statements holding only earlier ops of the chain (`name = <op>`) are deleted; ops nested in the
    last op's expression disappear with it. Anything else (a chain op whose statement does more, a
    statement after the last one, a different block) makes the strategy decline.
    """
    chain = list(ops if ops is not None else ctx.finding.match.ops)
    if not chain:
        ctx.decline("the match has no operations")
    final = chain[-1]
    final_stmt = final.stmt_span
    deleted: list[Span] = []
    spelled: dict[Span, set[str]] = {}  # the names each deleted statement binds, as written
    for op in chain[:-1]:
        if final.span.contains(op.span):
            continue
        stmt = op.stmt_span
        if stmt == final_stmt:
            ctx.decline("part of the pattern sits outside the expression being fused")
        if _start(stmt) > _start(final_stmt):
            ctx.decline("the pattern's statements are not in source order")
        if stmt in deleted:
            continue
        # The statement must compute exactly the outermost chain op in it, bound to plain names.
        in_stmt = [o for o in chain[:-1] if o.stmt_span == stmt]
        outers = [o for o in in_stmt if all(o.span.contains(other.span) for other in in_stmt)]
        if not outers:
            ctx.decline("a statement of the pattern computes more than one value of the chain")
        outer = outers[0]
        stmt_text = ctx.statement_text(stmt)
        op_text = ctx.text(outer.span)
        # A helper inlined into the forward binds its locals under renamed or temporary names (`src_3`, `%1`):
        # the statement binds whatever plain names it spells, which the dead-value check below reads as well.
        targets = r"\s*,\s*".join(r"([A-Za-z_]\w*)" for _ in outer.outputs)
        shape = re.fullmatch(rf"\(?\s*{targets}\s*,?\s*\)?\s*=\s*\(?\s*{re.escape(op_text)}\s*\)?", stmt_text, re.S)
        if shape is None:
            ctx.decline("a statement of the pattern does more than compute the fused chain")
            raise AssertionError
        spelled[stmt] = set(shape.groups())
        if not _statement_lines_alone(ctx, stmt) or not _statement_lines_alone(ctx, final_stmt):
            ctx.decline("a statement of the pattern shares its line with other code")
        if ctx.line_indent(stmt) != ctx.line_indent(final_stmt):
            ctx.decline("the pattern's statements are in different blocks")
        deleted.append(stmt)

    _check_dead(ctx, chain, deleted, final, spelled)

    # Rebuild the region from the first deleted statement to the final one.
    first = min([final_stmt, *deleted], key=_start)
    region = Span(first.start_line, first.start_col, final_stmt.end_line, final_stmt.end_col)
    lines = ctx.lines
    indent = ctx.line_indent(first)
    # Edits as (start, end, replacement) in absolute (line, col); applied back to front.
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []
    for stmt in deleted:
        # Delete the statement's whole lines including the trailing newline.
        edits.append((_pos(stmt.start_line, 0), _pos(stmt.end_line + 1, 0), ""))
    edits.append((_start(final.span), _end(final.span), new_expr))
    out_lines = list(lines[region.start_line : region.end_line + 1])
    out_lines[-1] = out_lines[-1][: region.end_col]
    base = region.start_line
    text = "\n".join(out_lines) + "\n"

    def offset(pos: tuple[int, int]) -> int:
        line, col = pos
        if line - base >= len(out_lines):
            return len(text)
        return sum(len(x) + 1 for x in out_lines[: line - base]) + col

    for start, end, repl in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[: offset(start)] + repl + text[offset(end) :]
    # Relative to the block's indentation (the framework indents the code to fit); continuation
    # lines indented less than the block (legal inside brackets) are left as they are.
    code_lines = text.rstrip("\n").split("\n")
    code_lines = [code_lines[0].lstrip(" \t")] + [line.removeprefix(indent) for line in code_lines[1:]]
    ctx.replace_statements([first, final_stmt], "\n".join(code_lines))
