"""Family 9: three q/k/v `nn.Linear` projections of one input fused into one GEMM.

`self.q = Linear(d, n); self.k = Linear(d, n); self.v = Linear(d, n)` becomes one
`self.qkv = Linear(d, 3 * n)` whose output is chunked into q, k, v in forward. Checkpoints: the
fused module's `state_dict()` still emits the separate `q/k/v.weight|bias` keys (a state-dict post
hook splits the fused tensors), and `load_state_dict` accepts both the separate keys (a load pre
hook concatenates them) and the fused ones, so checkpoints move freely between the original and the
rewritten model, with `strict=True`.
"""

from __future__ import annotations

import ast
import re

from adopter.dsl.types import Binding, Ctor, Op, OpKind, Span
from adopter.parsed import ParsedText
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.checkpoint_hooks import ensure_checkpoint_hooks, ensure_split_checkpoint_hooks
from adopter.synth.strategies.fusions_chain import is_simple


@strategy("fuse_qkv")
def fuse_qkv(ctx: SynthContext) -> None:
    """Fuse the matched q/k/v Linears into one, with checkpoint-compatible state-dict hooks."""
    linears = [op for op in ctx.finding.match.ops if op.kind == OpKind.MODULE]
    if len(linears) != 3:
        ctx.decline("the match does not hold exactly three projections")
    bindings = [_binding_of(ctx, op) for op in linears]
    if any(b.condition for b in bindings):
        ctx.decline("a projection is bound under a condition in __init__")
    ctor_texts = {_ctor_key(b) for b in bindings}
    parsed = ctx.text_index
    own = [*(op.stmt_span for op in linears), *(b.span for b in bindings)]
    try:  # the class of the match (the top-level statements holding its lines), not the whole file
        tree = parsed.module(line for s in own for line in range(s.start_line, s.end_line + 1))
    except SyntaxError as err:
        ctx.decline(f"the file does not parse ({err.msg}, line {err.lineno})")
        return
    # Equal constructors: one Linear(in, 3 * out) chunked in three. Constructors that differ only in
    # out_features (grouped-query attention: fewer key/value heads): one Linear(in, q + k + v) split by
    # the three widths, kept in an attribute beside it.
    widths = None if len(ctor_texts) == 1 else _out_widths(ctx, bindings)
    if len(ctor_texts) != 1 and widths is None:
        ctx.decline("the three Linears differ in more than their out_features (input size, bias or other arguments)")
    attrs = [b.attr for b in bindings]
    arguments = _argument_run(ctx, linears) if len({op.stmt_span for op in linears}) == 1 else None
    statements = _forward_statements(ctx, tree, linears) if arguments is None else None
    _refuse_other_uses(ctx, attrs, own)

    cls = _enclosing_class(parsed, tree, bindings[0].span.start_line + 1)
    fused = _fresh_attr(cls, "qkv")
    ordered = sorted(bindings, key=lambda b: (b.span.start_line, b.span.start_col))
    consecutive = _consecutive(parsed, tree, [b.span for b in ordered])
    parts = ", ".join(f'"{a}"' for a in attrs)
    if widths is None:
        hooks = ensure_checkpoint_hooks(ctx)
        first = ordered[0]
        code = f'self.{fused} = {_tripled_ctor(ctx, first)}\n{hooks}(self, "{fused}", ({parts}))'
        split = "chunk(3, dim=-1)"
    else:
        hooks = ensure_split_checkpoint_hooks(ctx)
        # The widths are read where the last projection was built (every name they use is bound there).
        first = ordered[0] if consecutive else ordered[-1]
        if not consecutive:
            _refuse_rebound_between(ctx, parsed, tree, ordered, widths)
        sizes = _fresh_attr(cls, f"{fused}_sizes")
        code = (f"self.{sizes} = ({', '.join(widths)})\n"
                f"self.{fused} = {_resized_ctor(ctx, bindings[0], f'sum(self.{sizes})')}\n"
                f'{hooks}(self, "{fused}", ({parts}), self.{sizes})')
        split = f"split(self.{sizes}, dim=-1)"
    if consecutive:
        ctx.replace_statements([ordered[0].span, ordered[-1].span], code)
    else:
        ctx.replace_binding(first.span, code)
        for b in bindings:
            if b is not first:
                ctx.replace_binding(b.span, "")
    if arguments is not None:
        ctx.replace_expression(arguments, f"*self.{fused}({_input_text(ctx, linears[0])}).{split}")
    elif statements is not None:
        ctx.replace_statements(statements, _projection_code(ctx, linears, fused, split))
    else:
        _apart_projection_edits(ctx, linears, fused, split)


def _argument_run(ctx: SynthContext, linears: list[Op]) -> Span:
    """The three projections called in one statement as consecutive positional arguments of one call, in
    the fused order, on one simple input (`self.ma(self.q(x), self.k(x), self.v(x))`): the span from the
    first to the third, which `*self.qkv(x).chunk(3, dim=-1)` replaces (the input read once, not thrice)."""
    stmt = linears[0].stmt_span
    text = ctx.text(stmt)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        ctx.decline("two projections share one statement, which could not be read")
    lines = text.split("\n")

    def at(line: int, offset: int) -> tuple[int, int]:  # ast positions in the statement -> the file's
        col = len(lines[line - 1].encode("utf-8")[:offset].decode("utf-8", errors="replace"))
        return stmt.start_line + line - 1, col + (stmt.start_col if line == 1 else 0)

    wanted = [(op.span.start_line, op.span.start_col, op.span.end_line, op.span.end_col) for op in linears]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for i in range(len(node.args) - 2):
            run = node.args[i : i + 3]
            spans = [(*at(a.lineno, a.col_offset), *at(a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in run]
            if spans == wanted:
                if not is_simple(_input_text(ctx, linears[0])):
                    ctx.decline("the projections' input is an expression, read once per projection")
                return Span(spans[0][0], spans[0][1], spans[2][2], spans[2][3])
    ctx.decline("two projections share one statement, not as three consecutive arguments of one call in q, k, v order")
    raise AssertionError("unreachable")


def _binding_of(ctx: SynthContext, op: Op) -> Binding:
    attr = op.target.removeprefix("self.")
    for b in ctx.finding.match.bindings:
        if b.attr == attr and isinstance(b.value, Ctor):
            return b
    if "[" in attr:  # `self.proj["q"]`: the projections are items of a container built in `__init__`
        container = attr.split("[", 1)[0]
        ctx.decline(f"the projections are items of the container `self.{container}` (looked up by key or "
                    "index); Adopter rewrites only Linears bound to their own attributes: fuse them by hand")
    ctx.decline(f"no __init__ binding of {op.target} belongs to this match")
    raise AssertionError("unreachable")


def _ctor_key(b: Binding) -> str:
    assert isinstance(b.value, Ctor)
    args = ",".join(getattr(a, "text", getattr(a, "name", "")) for a in b.value.args)
    kwargs = ",".join(
        f"{k.name}={getattr(k.value, 'text', getattr(k.value, 'name', ''))}" for k in b.value.kwargs
    )
    return f"{b.value.callee}({args};{kwargs})"


def _forward_statements(ctx: SynthContext, tree: ast.Module, linears: list[Op]) -> list[Span] | None:
    """The first and last of the three projection statements when they are consecutive statements of one
    block; None when they are statements of one block with others between them that the fused
    projection, computed at the first one, cannot change (`_refuse_moved_reads`)."""
    spans = sorted((op.stmt_span for op in linears), key=lambda s: (s.start_line, s.start_col))
    if len(set(spans)) != 3:
        ctx.decline("two projections share one statement")
    block = _block_of(ctx.text_index, tree, spans[0].start_line + 1)
    lines = [s.start_line + 1 for s in spans]
    index = next((i for i, s in enumerate(block) if s.lineno == lines[0]), None)
    if index is not None and [s.lineno for s in block[index : index + 3]] == lines:
        return [spans[0], spans[-1]]
    starts = [s.lineno for s in block]
    if index is None or any(line not in starts for line in lines):
        ctx.decline(
            "the three projections are not consecutive statements of one block "
            f"(lines {', '.join(map(str, lines))}); fuse them by hand"
        )
    between = [s for s in block if lines[0] < s.lineno < lines[-1] and s.lineno not in lines]
    _refuse_moved_reads(ctx, linears, between)
    return None


def _refuse_moved_reads(ctx: SynthContext, linears: list[Op], between: list[ast.stmt]) -> None:
    """Decline when computing the later projections at the first one could change what they compute or
    what a statement between them sees: it names the shared input at all (it could bind it again or
    change it in place, `x.mul_(2)`), or reads or binds a name a later projection statement binds (that
    statement goes; its value is then bound before)."""
    first = min(linears, key=lambda o: (o.stmt_span.start_line, o.stmt_span.start_col))
    source = ast.parse(ctx.text(first.span).strip(), mode="eval").body
    inputs = {n.id for n in ast.walk(source) if isinstance(n, ast.Name)} - {"self"}
    moved = {name for op in linears if op is not first for name in _plain_output(ctx, op)}
    for stmt in between:
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Name):
                continue
            if node.id in moved or node.id in inputs:
                ctx.decline(
                    f"line {stmt.lineno} (`{ast.unparse(stmt).splitlines()[0]}`) between the projections "
                    f"uses `{node.id}`, which the fused projection would change; fuse them by hand"
                )


def _plain_output(ctx: SynthContext, op: Op) -> list[str]:
    """`[name]` when the statement of `op` is just `name = <projection call>`, else []."""
    text = ctx.statement_text(op.stmt_span)
    call = ctx.text(op.span)
    named = len(op.outputs) == 1 and not op.outputs[0].startswith("%")
    if named and re.fullmatch(rf"{re.escape(op.outputs[0])}\s*=\s*\(?\s*{re.escape(call)}\s*\)?", text.strip()):
        return [op.outputs[0]]
    return []


def _projection_parts(ctx: SynthContext, linears: list[Op]) -> dict[int, tuple[str, str | None]]:
    """Per projection op (by id): the name its output gets, and the rest of its statement with that
    name in place of the call (None when the statement is just `name = <call>`)."""
    parts: dict[int, tuple[str, str | None]] = {}
    for op in sorted(linears, key=lambda o: (o.stmt_span.start_line, o.stmt_span.start_col)):
        plain = _plain_output(ctx, op)
        if plain:
            parts[id(op)] = (plain[0], None)
            continue
        text = ctx.statement_text(op.stmt_span)
        call = ctx.text(op.span)
        if text.count(call) != 1:
            ctx.decline(f"cannot locate the projection inside `{text.strip()}`")
        name = ctx.fresh_name(op.target.removeprefix("self.").replace(".", "_") + "_out")
        parts[id(op)] = (name, text.replace(call, name))
    return parts


def _projection_code(ctx: SynthContext, linears: list[Op], fused: str, split: str) -> str:
    """`a, b, c = self.<fused>(x).<split>` plus each statement that used a projection inline."""
    parts = _projection_parts(ctx, linears)
    ordered = sorted(linears, key=lambda o: (o.stmt_span.start_line, o.stmt_span.start_col))
    head = f"{', '.join(parts[id(op)][0] for op in linears)} = self.{fused}({_input_text(ctx, linears[0])}).{split}"
    return "\n".join([head, *(rest for op in ordered if (rest := parts[id(op)][1]) is not None)])


def _apart_projection_edits(ctx: SynthContext, linears: list[Op], fused: str, split: str) -> None:
    """Projections with other statements between them: the fused projection at the first one; each
    later statement that was just `name = <call>` goes, one that used its projection inline stays, with
    the projection's name in place of the call."""
    parts = _projection_parts(ctx, linears)
    ordered = sorted(linears, key=lambda o: (o.stmt_span.start_line, o.stmt_span.start_col))
    head = f"{', '.join(parts[id(op)][0] for op in linears)} = self.{fused}({_input_text(ctx, linears[0])}).{split}"
    first_rest = parts[id(ordered[0])][1]
    ctx.replace_statements([ordered[0].stmt_span], head if first_rest is None else f"{head}\n{first_rest}")
    for op in ordered[1:]:
        ctx.replace_statements([op.stmt_span], parts[id(op)][1] or "")


def _consecutive(parsed: ParsedText, tree: ast.Module, spans: list[Span]) -> bool:
    """Whether `spans` start consecutive statements of one block (the bindings can be one edit)."""
    lines = [s.start_line + 1 for s in spans]
    block = _block_of(parsed, tree, lines[0])
    index = next((i for i, s in enumerate(block) if s.lineno == lines[0]), None)
    return index is not None and [s.lineno for s in block[index : index + len(lines)]] == lines


def _block_of(parsed: ParsedText, tree: ast.Module, line: int) -> list[ast.stmt]:
    """The innermost statement list holding a statement that starts on (1-based) `line`. `tree` holds that
    line's top-level statement; a line that starts a top-level statement is looked up in the whole module."""
    unit = parsed.unit_at(line - 1)
    if unit is not None and parsed.units is not None and parsed.units[unit].start == line - 1:
        tree = parsed.module()
    best: list[ast.stmt] = []
    for node in parsed.statements(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and any(isinstance(s, ast.stmt) and s.lineno == line for s in body):
                best = body
    return best


def _refuse_other_uses(ctx: SynthContext, attrs: list[str], own: list[Span]) -> None:
    """Decline when the separate Linears are used outside the match (pruning, weight tying...).

    Only the top-level statements where one of `attrs` follows a `.` (across blanks, line continuations
    and comments, as Python's tokens allow) can hold such a use; walked as one tree, they give the uses in
    the whole module's walk order (the first is the one reported)."""
    own_lines = {line for s in own for line in range(s.start_line + 1, s.end_line + 2)}
    parsed = ctx.text_index
    text = parsed.text
    uses = re.compile(r"\.(?:\s|\\\r?\n|#[^\n]*)*(?:" + "|".join(re.escape(a) for a in attrs) + r")\b")
    named = [text.count("\n", 0, m.end()) for m in uses.finditer(text)]
    tree = parsed.module(named)
    unrelated: list[tuple[int, int]] | None = None  # listed at the first `self.<attr>` outside the match
    for node in parsed.nodes(tree):
        if isinstance(node, ast.Attribute) and node.attr in attrs and node.lineno not in own_lines:
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                if unrelated is None:
                    unrelated = _unrelated_classes(parsed, min(own_lines))
                if any(first <= node.lineno <= last for first, last in unrelated):
                    continue  # another class's own attribute of that name (BERT's cross-attention `self.query`)
            ctx.decline(
                f"`{ast.unparse(node)}` is also used on line {node.lineno}; the fused layer would break it"
            )


def _unrelated_classes(parsed: ParsedText, line: int) -> list[tuple[int, int]]:
    """The lines (first, last; 1-based) of the file's top-level classes that are neither the class holding
    (1-based) `line`, nor one of its bases or subclasses in the file (by name): their `self` is never an
    instance of it, so their `self.<attr>` is their own attribute. Nested classes are not listed (a use
    there is judged as before). Only the class headers are read (`ParsedText.class_headers`)."""
    classes = parsed.class_headers()
    own = next((c for c, end in classes if c.lineno <= line <= end), None)
    if own is None:
        return []
    bases = {c.name: {ast.unparse(b).rsplit(".", 1)[-1] for b in c.bases} for c, _ in classes}

    def ancestors(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        direct = bases.get(name, set()) - seen
        return direct | {a for d in direct for a in ancestors(d, seen | direct | {name})}

    related = {own.name} | ancestors(own.name) | {c.name for c, _ in classes if own.name in ancestors(c.name)}
    names = [c.name for c, _ in classes]
    return [(c.lineno, end) for c, end in classes if c.name not in related and names.count(c.name) == 1]


def _enclosing_class(parsed: ParsedText, tree: ast.Module, line: int) -> ast.ClassDef | None:
    found = None
    for node in parsed.statements(tree):
        if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno):
            found = node
    return found


def _fresh_attr(cls: ast.ClassDef | None, base: str) -> str:
    taken = set()
    for node in ast.walk(cls) if cls is not None else ():
        if isinstance(node, ast.Attribute):
            taken.add(node.attr)
        elif isinstance(node, ast.FunctionDef):
            taken.add(node.name)
    if base not in taken:
        return base
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"


def _ctor_call(ctx: SynthContext, binding: Binding) -> tuple[str, ast.Call, ast.expr]:
    """The statement text of `binding`, its constructor call and the call's out_features argument."""
    text = ctx.statement_text(binding.span).strip()
    assign = ast.parse(text).body[0]
    if not isinstance(assign, ast.Assign) or not isinstance(assign.value, ast.Call):
        ctx.decline(f"`{text}` is not a plain constructor call")
        raise AssertionError("unreachable")
    call = assign.value
    out_node: ast.expr | None = call.args[1] if len(call.args) > 1 else None
    if out_node is None:
        out_node = next((k.value for k in call.keywords if k.arg == "out_features"), None)
    if out_node is None:
        ctx.decline("cannot find out_features in the Linear constructor")
        raise AssertionError("unreachable")
    return text, call, out_node


def _out_widths(ctx: SynthContext, bindings: list[Binding]) -> list[str] | None:
    """The out_features texts of the three constructors (in `bindings` order) when the constructors are the
    same call but for out_features; None otherwise."""
    shapes = set()
    widths = []
    for b in bindings:
        text, call, out_node = _ctor_call(ctx, b)
        args = [ast.dump(a) for a in call.args if a is not out_node]
        kwargs = sorted((k.arg or "**", ast.dump(k.value)) for k in call.keywords if k.value is not out_node)
        shapes.add((ast.dump(call.func), tuple(args), tuple(kwargs)))
        widths.append(ast.get_source_segment(text, out_node) or ast.unparse(out_node))
    return widths if len(shapes) == 1 else None


def _refuse_rebound_between(ctx: SynthContext, parsed: ParsedText, tree: ast.Module, ordered: list[Binding],
                            widths: list[str]) -> None:
    """Decline when a statement between the first and the last projection's construction binds a name
    (or `self.` attribute) the widths read: they are read at the last one."""
    first, last = ordered[0].span.start_line + 1, ordered[-1].span.start_line + 1
    block = _block_of(parsed, tree, first)
    if last not in {s.lineno for s in block}:
        ctx.decline("the three projections are not built in one block of __init__")
    read = {ast.unparse(n) for w in widths for n in ast.walk(ast.parse(w, mode="eval"))
            if isinstance(n, ast.Name | ast.Attribute)}
    own = {b.span.start_line + 1 for b in ordered}
    for stmt in block:
        if not first < stmt.lineno < last or stmt.lineno in own:
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and ast.unparse(node) in read:
                ctx.decline(f"line {stmt.lineno} binds `{ast.unparse(node)}`, which a projection's width "
                            "reads, between the projections' constructions; fuse them by hand")


def _tripled_ctor(ctx: SynthContext, binding: Binding) -> str:
    """The Linear constructor of `binding` with `out_features` multiplied by 3."""
    text, _, out_node = _ctor_call(ctx, binding)
    out_text = ast.get_source_segment(text, out_node) or ast.unparse(out_node)
    simple = isinstance(out_node, ast.Name | ast.Attribute | ast.Constant)
    return _resized_ctor(ctx, binding, f"3 * {out_text}" if simple else f"3 * ({out_text})")


def _resized_ctor(ctx: SynthContext, binding: Binding, width: str) -> str:
    """The Linear constructor of `binding` with `width` in place of its `out_features`."""
    text, call, out_node = _ctor_call(ctx, binding)
    call_text = ast.get_source_segment(text, call) or ast.unparse(call)
    out_text = ast.get_source_segment(text, out_node) or ast.unparse(out_node)
    offset = _rel_offset(text, call, out_node)
    resized = call_text[:offset] + width + call_text[offset + len(out_text) :]
    if "\n" in resized:  # its continuation lines keep the old statement's indentation: write it anew
        resized = ast.unparse(ast.parse(resized, mode="eval").body)
    return resized


def _rel_offset(text: str, outer: ast.expr, inner: ast.expr) -> int:
    """Offset of `inner` within the source of `outer` (both from `text`)."""
    lines = text.split("\n")

    def absolute(line: int, col: int) -> int:
        return sum(len(x.encode("utf-8")) + 1 for x in lines[: line - 1]) + col

    raw = text.encode("utf-8")
    start = absolute(outer.lineno, outer.col_offset)
    inner_start = absolute(inner.lineno, inner.col_offset)
    return len(raw[start:inner_start].decode("utf-8"))


def _input_text(ctx: SynthContext, op: Op) -> str:
    """The source text of the projections' shared input."""
    node = ast.parse(ctx.text(op.span).strip(), mode="eval").body
    if not isinstance(node, ast.Call) or len(node.args) != 1 or node.keywords:
        ctx.decline(f"`{ctx.text(op.span)}` is not a call on one input")
        raise AssertionError("unreachable")
    return ast.unparse(node.args[0])
