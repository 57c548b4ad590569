"""Family 5: a dropout-add chain just before an `if` whose branch applies the LayerNorm (torchaudio's
`layer_norm_first` switch, Whisper's optional cross-attention). The chain moves into each branch: fused
with the norm in the branch that has it, kept as written in the other (an `else:` is added when there is
none), so every path computes what it computed before."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from adopter.dsl.types import Span
from adopter.parsed import block_with
from adopter.synth.registry import SynthContext
from adopter.synth.strategies.dropout_add_sum import (
    _assigned_name,
    _function_at,
    _indent,
    _reads,
    _reads_after,
    _with_call_replaced,
)

_STRADDLE = "the match straddles if/else branches; no single place to rewrite it"
# Expressions an `if` test may be made of for the chain to move past it: reading them runs no user code
# that could draw random numbers (the dropout's mask) or change the chain's inputs.
_INERT = (ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Load, ast.Is,
          ast.IsNot, ast.Eq, ast.NotEq, ast.And, ast.Or, ast.Not)


@dataclass(frozen=True, slots=True)
class Fusion:
    """One branch's fused statement: `out, *sums = fused(..., norm, ...)`, then `rest` (the norm's statement
    with its call replaced by `out`, when it does more), in place of 0-based lines `first`..`last`."""

    norm: str
    out: str
    sums: tuple[str, ...]
    rest: str | None
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class BranchPlan:
    """How to rewrite a chain that precedes the `if` holding its norm; `spans` are the first chain
    statement and the `if` statement."""

    fusions: tuple[Fusion, ...]
    spans: tuple[Span, Span]
    chain: tuple[int, int]  # 0-based first and last line of the chain's statements
    other: int | None  # 0-based line the chain is copied before in the other branch; -1: add an `else:`;
    # None: the other branch has its own fusion
    other_indent: str
    if_end: int  # 0-based last line of the `if` statement


def branch_plan(ctx: SynthContext, binding_text: str) -> BranchPlan | None:
    """None when the match's statements are in one block (the usual rewrite applies); a plan when the chain
    ends right before an `if` whose body or `else` starts with the norm; declines any other straddle."""
    ops = list(ctx.finding.match.ops)
    norm = ops[-1]
    norm_line = norm.stmt_span.start_line + 1
    chain_lines = sorted({op.stmt_span.start_line + 1 for op in ops[:-1] if not norm.span.contains(op.span)})
    if not chain_lines:
        return None
    try:
        tree = ctx.text_index.module([norm.stmt_span.start_line, chain_lines[0] - 1])
    except SyntaxError:
        ctx.decline(_STRADDLE)
    func = _function_at(ctx, tree, norm_line)
    if func is None:
        ctx.decline(_STRADDLE)
    norm_block = block_with(func.body, norm_line)
    block = block_with(func.body, chain_lines[0])
    if block is None or norm_block is None:
        ctx.decline(_STRADDLE)
    if block is norm_block or all(block_with(func.body, line) is norm_block for line in chain_lines):
        return None
    stmts = [s for s in block if s.lineno in chain_lines]
    if len(stmts) != len(chain_lines):
        ctx.decline(_STRADDLE)
    first, last = block.index(stmts[0]), block.index(stmts[-1])
    if last - first + 1 != len(stmts) or any(_assigned_name(s) is None for s in stmts):
        ctx.decline(f"{_STRADDLE} (the chain's statements are not consecutive `name = ...` statements)")
    bound = {n for s in stmts if (n := _assigned_name(s)) is not None}
    touched = bound | {n for s in stmts for n in _reads(s)}
    ifs = next((s for s in block[last + 1 :] if isinstance(s, ast.If)
                and s.lineno <= norm_line <= (s.end_lineno or s.lineno)), None)
    if ifs is None or norm_block not in (ifs.body, ifs.orelse):
        ctx.decline(f"{_STRADDLE} (the norm is not at the top of a branch of the `if` after the chain)")
    for stmt in block[last + 1 : block.index(ifs)]:
        if not _inert_assignment(stmt) or (_reads(stmt) | _bound(stmt)) & touched:
            ctx.decline(f"{_STRADDLE} (line {stmt.lineno}, between the chain and the `if`, is not a plain "
                        "assignment independent of the chain)")
    if not all(isinstance(n, _INERT) for n in ast.walk(ifs.test)) or _reads(ifs.test) & bound:
        ctx.decline(f"{_STRADDLE} (the `if` test at line {ifs.lineno} reads the chain or calls code)")
    if ifs.orelse and len(ifs.orelse) == 1 and isinstance(ifs.orelse[0], ast.If):
        ctx.decline(f"{_STRADDLE} (an `elif` chain)")
    total = _assigned_name(stmts[-1])
    assert total is not None
    for name in sorted(bound - {total}):
        if name in _reads_after(func, stmts[-1].end_lineno or stmts[-1].lineno):
            ctx.decline(f"`{name}` (the dropout's output) is also read after the chain; fusing would lose it")
    index = norm_block.index(next(s for s in norm_block if s.lineno == norm_line))
    matched = _fusion(ctx, func, norm_block, index, total, norm.span, binding_text)
    if matched is None:
        ctx.decline(f"line {norm_line}: the statements before the norm in its branch are not `alias = {total}`")
    other_block = ifs.orelse if norm_block is ifs.body else ifs.body
    other = _other_fusion(ctx, tree, func, other_block, total)
    lines = ctx.source.split("\n")
    other_indent = _indent(lines[ifs.body[0].lineno - 1]) if not other_block else _indent(
        lines[other_block[0].lineno - 1])
    return BranchPlan(
        fusions=(matched,) if other is None else (matched, other), spans=(ctx.text_index.span(stmts[0]), ctx.text_index.span(ifs)),
        chain=(stmts[0].lineno - 1, (stmts[-1].end_lineno or stmts[-1].lineno) - 1),
        other=None if other is not None else other_block[0].lineno - 1 if other_block else -1,
        other_indent=other_indent, if_end=(ifs.end_lineno or ifs.lineno) - 1,
    )


def _fusion(ctx: SynthContext, func: ast.AST, block: list[ast.stmt], index: int, total: str, call: Span,
            norm: str) -> Fusion | None:
    """The fused statement replacing `block[:index + 1]` (aliases of the sum, then the norm's statement,
    whose norm call is at `call`); None when a statement before the norm is not an alias."""
    aliases = []
    for stmt in block[:index]:
        if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id == total
                and (alias := _assigned_name(stmt)) is not None):
            return None
        aliases.append(alias)
    norm_stmt = block[index]
    out = _assigned_name(norm_stmt)
    after = _reads_after(func, norm_stmt.end_lineno or norm_stmt.lineno)
    rest = None
    if out is None or not isinstance(norm_stmt, ast.Assign) or ctx.text(call).strip() != (
            ctx.text_index.segment(norm_stmt.value) or "").strip():
        # The norm is part of a larger statement (`x = x + self.ff(self.norm(x))`): the fused call binds the
        # normalised value to a new name and the sum, which that statement may read, to its own.
        out = ctx.fresh_name("normed")
        rest = _with_call_replaced(ctx, norm_stmt, call, out)
        sums = tuple(dict.fromkeys([total, *(a for a in aliases if a in after)]))
    else:
        sums = tuple(n for n in dict.fromkeys([total, *aliases]) if n != out and n in after)
    return Fusion(norm=norm, out=out, sums=sums, rest=rest, first=block[0].lineno - 1,
                  last=(norm_stmt.end_lineno or norm_stmt.lineno) - 1)


def _other_fusion(ctx: SynthContext, tree: ast.Module, func: ast.AST, block: list[ast.stmt],
                  total: str) -> Fusion | None:
    """The fusion in the other branch: its first statement that is not an alias of the sum calls a
    `self.<name>` bound once in `__init__` to an `nn.LayerNorm` on the sum (torchaudio's post-norm
    branch); None when it does not (the chain is then copied there as written)."""
    norms = _layer_norms(tree, func)
    for index, stmt in enumerate(block):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id == total:
            continue
        calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and isinstance(n.func.value, ast.Name) and n.func.value.id == "self" and n.func.attr in norms
                 and len(n.args) == 1 and not n.keywords and isinstance(n.args[0], ast.Name)
                 and n.args[0].id == total]
        if len(calls) != 1 or not isinstance(calls[0].func, ast.Attribute):
            return None
        return _fusion(ctx, func, block, index, total, ctx.text_index.span(calls[0]), f"self.{calls[0].func.attr}")
    return None


def _layer_norms(tree: ast.Module, func: ast.AST) -> set[str]:
    """Attributes the `__init__` of the class holding `func` binds, once, to `nn.LayerNorm(...)`."""
    cls = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and func in c.body), None)
    init = next((f for f in (cls.body if cls else []) if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None:
        return set()
    counts: dict[str, int] = {}
    norms = set()
    value: ast.expr | None
    for node in ast.walk(init):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets, value = [node.target], node.value
        else:
            continue
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                counts[t.attr] = counts.get(t.attr, 0) + 1
                if isinstance(value, ast.Call) and ast.unparse(value.func) in (
                        "nn.LayerNorm", "torch.nn.LayerNorm", "LayerNorm"):
                    norms.add(t.attr)
    return {n for n in norms if counts[n] == 1}


def rewrite_branches(ctx: SynthContext, plan: BranchPlan, fused: Callable[[Fusion], str]) -> None:
    """Replace the chain and the `if` by the `if` with each fusion's statement (`fused` writes it,
    unindented) in its branch, and the chain's own lines at the top of the other branch when it has none."""
    lines = ctx.source.split("\n")
    base = _indent(lines[plan.chain[0]])
    chain = lines[plan.chain[0] : plan.chain[1] + 1]
    region = {i: [lines[i]] for i in range(plan.chain[1] + 1, plan.if_end + 1)}
    for fusion in plan.fusions:
        indent = _indent(lines[fusion.first])
        text = fused(fusion) + ("" if fusion.rest is None else "\n" + fusion.rest)
        region[fusion.first] = [indent + line if line else line for line in text.split("\n")]
        for i in range(fusion.first + 1, fusion.last + 1):
            region[i] = []
    moved = [plan.other_indent + line.removeprefix(base) if line.strip() else "" for line in chain]
    if plan.other == -1:
        region[plan.if_end] = [*region[plan.if_end], f"{base}else:", *moved]
    elif plan.other is not None:
        region[plan.other] = [*moved, *region[plan.other]]
    out = [line for i in sorted(region) for line in region[i]]
    while out and not out[0].strip():  # blank lines between the chain and the `if` lead the replacement
        out.pop(0)
    code = [out[0].lstrip(" \t")] + [line.removeprefix(base) for line in out[1:]]
    ctx.replace_statements(list(plan.spans), "\n".join(code))


def _bound(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _inert_assignment(stmt: ast.stmt) -> bool:
    """`name = constant | name | attribute`: runs no code, so the chain may move after it."""
    return (isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
            and all(isinstance(n, ast.Name | ast.Attribute | ast.Constant | ast.Load) for n in ast.walk(stmt.value)))


def rewrite_tail(ctx: SynthContext, norm_text: str, fused: Callable[[Fusion], str], *, both: bool = False) -> bool:
    """The chain ends a branch of an `if` and the norm follows the `if` (Whisper's cross-attention block,
    the fused statement needs the norm inside): the norm's statement (and the aliases of the sum before
    it) moves to the end of each branch, fused in the chain's and in the other when it ends with the same
    chain, appended as written otherwise (an `else:` is added when there is none); with `both`, only when
    both branches end with the chain (a match whose values have another definition on the other path: each
    branch then computes its own, as before). False when the match is not of that shape."""
    ops = list(ctx.finding.match.ops)
    norm = ops[-1]
    norm_line = norm.stmt_span.start_line + 1
    chain_lines = sorted({op.stmt_span.start_line + 1 for op in ops[:-1] if not norm.span.contains(op.span)})
    if not chain_lines:
        return False  # the whole chain is written inside the norm's call (`norm(x + dropout(h))`): no branch to end
    try:
        tree = ctx.text_index.module([norm.stmt_span.start_line, chain_lines[0] - 1])
    except SyntaxError:
        return False
    func = _function_at(ctx, tree, norm_line)
    if func is None:
        return False
    outer = block_with(func.body, norm_line)
    inner = block_with(func.body, chain_lines[0])
    if outer is None or inner is None:
        return False
    ifs = next((s for s in outer if isinstance(s, ast.If) and (inner is s.body or inner is s.orelse)), None)
    if ifs is None or (ifs.orelse and len(ifs.orelse) == 1 and isinstance(ifs.orelse[0], ast.If)):
        return False
    stmts = inner[len(inner) - len(chain_lines):]
    if [s.lineno for s in stmts] != chain_lines or any(_assigned_name(s) is None for s in stmts):
        return False
    total = _assigned_name(stmts[-1])
    bound = {n for s in stmts if (n := _assigned_name(s)) is not None}
    start = outer.index(ifs) + 1
    index = next((i for i, s in enumerate(outer) if s.lineno == norm_line), None)
    if total is None or index is None:
        return False
    if any(name in _reads_after(func, norm.stmt_span.end_line + 1) for name in bound - {total}):
        return False
    moved = outer[start : index + 1]
    lines = ctx.source.split("\n")
    if_indent = _indent(lines[ifs.lineno - 1])
    body_indent = _indent(lines[ifs.body[0].lineno - 1])
    moved_text = lines[moved[0].lineno - 1 : (moved[-1].end_lineno or moved[-1].lineno)]
    fusion = _fusion_after(ctx, func, stmts, moved, total, norm.span, norm_text)
    if fusion is None:
        return False
    other = ifs.orelse if inner is ifs.body else ifs.body
    chain_text = [ln.strip() for s in stmts for ln in lines[s.lineno - 1 : s.end_lineno or s.lineno]]
    other_tail = other[len(other) - len(stmts):] if len(other) >= len(stmts) else []
    same = bool(other_tail) and [ln.strip() for s in other_tail
                                 for ln in lines[s.lineno - 1 : s.end_lineno or s.lineno]] == chain_text
    if both and not same:
        return False
    region = {i: [lines[i]] for i in range(ifs.lineno - 1, (ifs.end_lineno or ifs.lineno))}
    text = fused(fusion) + ("" if fusion.rest is None else "\n" + fusion.rest)
    for tail in ([stmts, other_tail] if same else [stmts]):
        indent = _indent(lines[tail[0].lineno - 1])
        first, last = tail[0].lineno - 1, (tail[-1].end_lineno or tail[-1].lineno) - 1
        region[first] = [indent + ln if ln else ln for ln in text.split("\n")]
        for i in range(first + 1, last + 1):
            region[i] = []
    if not same:
        copy = [body_indent + ln.removeprefix(if_indent) if ln.strip() else "" for ln in moved_text]
        if other:
            end = (other[-1].end_lineno or other[-1].lineno) - 1
            region[end] = [*region[end], *copy]
        else:
            end = (ifs.end_lineno or ifs.lineno) - 1
            region[end] = [*region[end], f"{if_indent}else:", *copy]
    out = [ln for i in sorted(region) for ln in region[i]]
    # Comments between the `if` and the moved statements stay after the `if`, before what follows them.
    out += [ln for ln in lines[(ifs.end_lineno or ifs.lineno) : moved[0].lineno - 1] if ln.strip().startswith("#")]
    code = [out[0].lstrip(" \t")] + [ln.removeprefix(if_indent) for ln in out[1:]]
    ctx.replace_statements([ctx.text_index.span(ifs), ctx.text_index.span(moved[-1])], "\n".join(code))
    return True


def _fusion_after(ctx: SynthContext, func: ast.AST, chain: list[ast.stmt], moved: list[ast.stmt], total: str,
                  call: Span, norm: str) -> Fusion | None:
    """The fused statement for a chain whose aliases and norm (`moved`) follow the `if` it ends a branch
    of: `moved` must be aliases of the sum, then the norm's statement."""
    fusion = _fusion(ctx, func, moved, len(moved) - 1, total, call, norm)
    if fusion is None:
        return None
    return Fusion(norm=fusion.norm, out=fusion.out, sums=fusion.sums, rest=fusion.rest,
                  first=chain[0].lineno - 1, last=(chain[-1].end_lineno or chain[-1].lineno) - 1)
