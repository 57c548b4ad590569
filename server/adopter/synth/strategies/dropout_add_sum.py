"""Family 5: where the residual sum of dropout-add-LayerNorm is read after the norm (a pre-norm block's
residual stream), which names the fused call must bind to keep it, read from the statements themselves."""

from __future__ import annotations

import ast
from itertools import pairwise

from adopter.dsl.types import OpKind, Span
from adopter.parsed import block_with
from adopter.synth.registry import SynthContext

# (name bound to the normalised value, names bound to the sum, spans of the first and last statement replaced,
# the norm's statement with the norm call replaced by that name where the norm is part of a larger statement)
SumPlan = tuple[str, list[str], list[Span], str | None]


def sum_plan(ctx: SynthContext) -> SumPlan | None:
    """None when no statement reads the sum outside the chain (the plain fused call does); else how to
    bind it. Declines when a statement between the chain's steps reads a value of the chain other than as
    `alias = sum` (it would see a value the fused call no longer makes), or when the sum is read after the
    norm but the statements are not three plain assignments in one block."""
    ops = list(ctx.finding.match.ops)
    add = next((op for op in ops if op.kind is OpKind.OPERATOR and op.target == "+"), None)
    norm = ops[-1]
    if add is None:
        return None
    try:
        tree = ctx.text_index.module([add.stmt_span.start_line])
    except SyntaxError:
        return None
    func = _function_at(ctx, tree, add.stmt_span.start_line + 1)
    if func is None:
        return None
    block = block_with(func.body, add.stmt_span.start_line + 1)
    if block is None:
        return None
    lines = {op.stmt_span.start_line + 1 for op in ops}
    first, last = min(lines), norm.stmt_span.start_line + 1
    add_stmt = next((s for s in block if s.lineno == add.stmt_span.start_line + 1), None)
    total = _assigned_name(add_stmt) if add_stmt is not None and add_stmt.lineno != last else None
    if add_stmt is None or total is None:
        return None  # the sum has no name of its own (`norm(h + r)`): nothing can read it elsewhere
    drop_names = {name for s in block if s.lineno in lines and s.lineno < add_stmt.lineno
                  and (name := _assigned_name(s)) is not None}
    aliases: list[str] = []
    others: list[int] = []  # lines of other statements between the steps
    region = [s for s in block if first <= s.lineno <= last]
    if any((a.end_lineno or a.lineno) == b.lineno for a, b in pairwise(region)):
        ctx.decline("a statement of the pattern shares its line with other code")
    for stmt in region:
        if stmt.lineno in lines:
            continue
        alias = _assigned_name(stmt)
        if (stmt.lineno > add_stmt.lineno and alias is not None and isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Name) and stmt.value.id == total):
            aliases.append(alias)
            continue
        read = _reads(stmt) & ({total} | drop_names)
        if read:
            ctx.decline(f"line {stmt.lineno} reads `{min(read)}` between the statements to fuse; the fused call "
                        "would not make that value there")
        others.append(stmt.lineno)
    norm_stmt = region[-1] if region else None
    if norm_stmt is None or norm_stmt.lineno != last:
        norm_stmt = None
    out = _assigned_name(norm_stmt) if norm_stmt is not None else None
    end = (norm_stmt.end_lineno or last) if norm_stmt is not None else last
    after = _reads_after(func, end)
    # The norm inside a larger statement (`h = h + self.ff(self.norm(h))`, wav2vec2's stable-layer-norm
    # layer): the rest of that statement may read the sum, which the fused call must then bind as well.
    nested = norm_stmt is not None and not _is_whole_value(ctx, norm_stmt, norm.span)
    rest_reads = _reads_outside(ctx, norm_stmt, norm.span) if nested and norm_stmt is not None else set()
    wanted = [n for n in dict.fromkeys([total, *aliases]) if n in rest_reads or (n in after and (nested or n != out))]
    # A name the chain binds before the sum (the dropout's output under its own name) must not be read later.
    for name in sorted(drop_names - {total, *aliases} - ({out} if out and not nested else set())):
        if name in after or name in rest_reads:
            ctx.decline(f"`{name}` (the dropout's output) is also read after the chain; fusing would lose it")
    if not wanted:
        return None
    if nested and norm_stmt is not None:
        early = _calls_before(ctx, norm_stmt, norm.span)
        if early:
            ctx.decline(f"the norm's statement calls `{early}` before the norm; the fused call would run it after")
        fresh = ctx.fresh_name("normed")
        return fresh, wanted, [ctx.text_index.span(region[0]), norm.stmt_span], _with_call_replaced(ctx, norm_stmt, norm.span,
                                                                                          fresh)
    if others:  # the fused call below replaces every statement from the first step to the norm
        ctx.decline(f"line {others[0]} sits between the statements to fuse and does other work; the fused call "
                    "that keeps the residual sum would replace it")
    if out is None or norm_stmt is None:
        ctx.decline(f"`{total}` (the residual sum) is read after the norm, which is not a plain `name = norm(...)` "
                    "statement; the fused call cannot bind both")
        raise AssertionError
    return out, wanted, [ctx.text_index.span(region[0]), norm.stmt_span], None


def _is_whole_value(ctx: SynthContext, stmt: ast.stmt, call: Span) -> bool:
    """Whether `stmt` is `name = <the call at call>`."""
    return (isinstance(stmt, ast.Assign) and _assigned_name(stmt) is not None
            and ctx.text_index.span(stmt.value) == call)


def _reads_outside(ctx: SynthContext, stmt: ast.stmt, call: Span) -> set[str]:
    """Names `stmt` reads outside the expression at `call`."""
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and not call.contains(ctx.text_index.span(n))}


def _calls_before(ctx: SynthContext, stmt: ast.stmt, call: Span) -> str | None:
    """The text of a call in `stmt` that runs before the expression at `call` (it ends before it starts), if any."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            span = ctx.text_index.span(node)
            if (span.end_line, span.end_col) <= (call.start_line, call.start_col):
                return ast.get_source_segment(ctx.source, node) or "a function"
    return None


def _assigned_name(stmt: ast.stmt) -> str | None:
    """`name` of a statement `name = <value>`, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _reads_after(func: ast.AST, line: int) -> set[str]:
    """Names read on the lines after `line` in the function (any path: a read there may see the sum)."""
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.lineno > line}


def _function_at(ctx: SynthContext, tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best = None
    for node in ctx.text_index.statements(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (node.end_lineno or 0):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def _with_call_replaced(ctx: SynthContext, stmt: ast.stmt, call: Span, name: str) -> str:
    """The text of `stmt` (from its first line, unindented) with the expression at `call` replaced by `name`."""
    lines = ctx.source.split("\n")
    first, last = stmt.lineno - 1, (stmt.end_lineno or stmt.lineno) - 1
    if not (first <= call.start_line and call.end_line <= last):
        ctx.decline("the norm call is not inside its statement")
    text = lines[first : last + 1]
    head, tail = text[call.start_line - first][: call.start_col], text[call.end_line - first][call.end_col :]
    text[call.start_line - first : call.end_line - first + 1] = [head + name + tail]
    indent = _indent(text[0])
    return "\n".join(line.removeprefix(indent) for line in text)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]
