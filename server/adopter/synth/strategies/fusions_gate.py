"""Gated-MLP fusion (family 14): `down(act(gate(x)) * up(x))` with gate and up as one GEMM."""

from __future__ import annotations

import ast
import re

from adopter.dsl.types import Binding, Ctor, OpKind, Span
from adopter.engine.types import Finding
from adopter.synth.registry import Declined, SynthContext, strategy
from adopter.synth.strategies.checkpoint_hooks import ensure_checkpoint_hooks
from adopter.synth.strategies.fusions_chain import (
    activation_path,
    binding_path,
    ensure_helper,
    is_simple,
    op_producing,
    rewrite_chain,
    value_text,
)

# The functions `act` may be passed as to the helper: one argument in, the activation out.
_ACT_FUNCTIONS = frozenset({"torch.nn.functional.silu", "torch.nn.functional.gelu"})

_GATED = '''
def gated_activation(gate_up, act):
    """`act(gate) * up` from one fused gate+up projection (adopter: gated-activation)."""
    gate, up = gate_up.chunk(2, dim=-1)
    return act(gate) * up
'''

def _binding_for(ctx: SynthContext, attr_path: str) -> Binding:
    attr = attr_path.removeprefix("self.")
    for binding in ctx.finding.match.bindings:
        if binding.attr == attr:
            return binding
    ctx.decline(f"no __init__ binding found for {attr_path}")
    raise AssertionError


def _linear_call(ctx: SynthContext, binding: Binding) -> ast.Call:
    if not isinstance(binding.value, Ctor) or binding.condition is not None or "[" in binding.attr:
        ctx.decline(f"self.{binding.attr} is not bound unconditionally to a Linear")
    text = ctx.statement_text(binding.span)
    try:
        stmt = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        ctx.decline(f"cannot read the binding of self.{binding.attr}")
        raise AssertionError from None
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
        ctx.decline(f"self.{binding.attr} is not bound by a plain constructor call")
        raise AssertionError
    return stmt.value


def _activation(ctx: SynthContext) -> str:
    """What the helper is handed as `act`: the activation submodule, or the function a one-argument call
    names (`F.silu(gate(x))` passes `F.silu`, which the helper calls the same way)."""
    op = op_producing(ctx, "a")
    origin = (op.origin or op) if op is not None else None
    if (op is not None and origin is not None and origin.kind is OpKind.FUNCTION and op.target in _ACT_FUNCTIONS
            and len(origin.args) == 1 and not origin.kwargs and not op.kwargs):
        try:
            node = ast.parse(ctx.text(op.span).strip(), mode="eval").body
        except SyntaxError:
            node = None
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            callee = ast.get_source_segment(ctx.text(op.span).strip(), node.func)
            if callee and is_simple(callee):
                return callee
    if op is not None and origin is not None and origin.kind is OpKind.FUNCTION and op.target in _ACT_FUNCTIONS:
        wrapped = _bound_activation(ctx.text(op.span).strip())
        if wrapped is not None:
            return wrapped
    return activation_path(ctx, "act", "a")


def _bound_activation(text: str) -> str | None:
    """`F.gelu(gate, approximate=self.config.gelu_approximate)` as the one-argument function the helper
    calls, `lambda gate: F.gelu(gate, approximate=self.config.gelu_approximate)`: the other arguments
    are names, attributes or constants (read when the helper calls it, as the original read them)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or not node.args or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    rest = [*node.args[1:], *(k.value for k in node.keywords)]
    if any(k.arg is None for k in node.keywords) or not all(
            isinstance(v, ast.Constant) or is_simple(ast.unparse(v)) for v in rest):
        return None
    taken = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    param = next(name for name in ("gate", "gate_", "g", "g_") if name not in taken)
    first = node.args[0]
    lines = text.split("\n")

    start = _offset(lines, first.lineno, first.col_offset)
    end = _offset(lines, first.end_lineno or first.lineno, first.end_col_offset or 0)
    return f"lambda {param}: {text[:start]}{param}{text[end:]}"


def _offset(lines: list[str], line: int, col: int) -> int:
    """ast's (1-based line, UTF-8 column) -> the index into the text of `lines`."""
    return sum(len(x) + 1 for x in lines[: line - 1]) + len(lines[line - 1].encode("utf-8")[:col].decode("utf-8"))


def _with_out_features(text: str, call: ast.Call, out: ast.expr, replacement: str, indent: str) -> str:
    """The constructor call `call` of the statement `text` with its out_features argument `out` replaced, on
    as many lines as it is written (`nn.Linear(\n    dim,\n    inner_dim,\n)`): the lines after the first lose
    the statement's indentation `indent`, which the edit gives back to every line."""
    lines = text.split("\n")
    start = _offset(lines, call.lineno, call.col_offset)
    end = _offset(lines, call.end_lineno or call.lineno, call.end_col_offset or 0)
    at = _offset(lines, out.lineno, out.col_offset)
    stop = _offset(lines, out.end_lineno or out.lineno, out.end_col_offset or 0)
    new_call = text[start:at] + replacement + text[stop:end]
    first, *rest = new_call.split("\n")
    return "\n".join([first, *(line.removeprefix(indent) for line in rest)])


def _inheriting_sites(ctx: SynthContext, gate: Binding, up: Binding) -> list[Finding]:
    """The other sites of this rule whose gate and up are these very bindings (a subclass's forward on the
    inherited projections), in the same roles."""
    own = ctx.finding.span
    found = []
    for other in ctx.findings:
        if other.rule_id != ctx.finding.rule_id or other.span == own:
            continue
        sub = SynthContext(ctx.source, other, ctx.rule, ctx.target, ctx.findings, ctx.text_index)
        try:
            pair = (_binding_for(sub, binding_path(sub, "gate")), _binding_for(sub, binding_path(sub, "up")))
        except Declined:
            continue
        if (pair[0].span, pair[1].span) == (gate.span, up.span):
            found.append(other)
        elif {pair[0].span, pair[1].span} & {gate.span, up.span}:
            ctx.decline(f"another gated MLP uses self.{gate.attr} or self.{up.attr} in another role")
    return found


def _uses(source: str, attr: str) -> int:
    return len(re.findall(rf"\.{re.escape(attr)}\b", source))


def _parameter_uses(ctx: SynthContext, binding: Binding) -> tuple[list[Span], int]:
    """Each line's stretch of `self.<attr>.weight` / `.bias` handed as the first argument to a
    `torch.nn.init` function inside the class that binds `attr` (one span per line, from the first to the
    last), outside the binding itself; and how many there are (fewer than the other uses: some use is of
    another kind). Only `torch.nn.init`: it writes into a view as into the tensor, where an initialiser
    that reads flags off the tensor (transformers' `_is_hf_initialized`) would not see them on a slice."""
    lines = ctx.source.split("\n")
    first, last = _class_lines(ctx, binding.span.start_line)
    inits = {"torch.nn.init", "nn.init"} | {local for (module, name), local in ctx.text_index.imports().items()
                                            if (module, name) in (("torch.nn", "init"), ("torch.nn.init", None))}
    callee = "|".join(re.escape(i) for i in sorted(inits))
    read = re.compile(rf"(?<![\w.])(?:{callee})\.\w+\(\s*(self\.{re.escape(binding.attr)}\.(?:weight|bias)\b)(?!\.)")
    spans: list[Span] = []
    count = 0
    for line in range(first, last + 1):
        if binding.span.start_line <= line <= binding.span.end_line:
            continue
        code = lines[line].split("#")[0]
        found = list(read.finditer(code))
        count += len(found)
        if found:
            spans.append(Span(line, found[0].start(1), line, found[-1].end(1)))
    return spans, count


def _class_lines(ctx: SynthContext, line: int) -> tuple[int, int]:
    """The first and last line (0-based) of the top-level class holding `line`."""
    try:  # the class headers only: a class's last line may then be a comment after its last statement,
        classes = ctx.text_index.class_headers()  # which holds no use (the caller reads code before `#`)
    except SyntaxError:
        ctx.decline("the file does not parse")
    for node, end in classes:
        if node.lineno - 1 <= line <= end - 1:
            return node.lineno - 1, end - 1
    ctx.decline("the projection is not bound inside a top-level class")
    raise AssertionError


@strategy("fuse_gate_up")
def fuse_gate_up(ctx: SynthContext) -> None:
    """Fuse the gate and up Linears of a gated MLP into one (`$gate`, `$up`, `$act`, `$x`)."""
    gate_path = binding_path(ctx, "gate")
    up_path = binding_path(ctx, "up")
    act = _activation(ctx)
    x = value_text(ctx, "x")
    if not is_simple(x):
        ctx.decline(f"the MLP input `{x}` is an expression")
    gate, up = _binding_for(ctx, gate_path), _binding_for(ctx, up_path)
    gate_call, up_call = _linear_call(ctx, gate), _linear_call(ctx, up)
    gate_text = ctx.statement_text(gate.span)
    if ast.dump(gate_call) != ast.dump(up_call):
        ctx.decline("the gate and up projections are built with different arguments")
    # Other uses of the separate layers would break, except their weight and bias read through `self.` in
    # this class (an `init_weights` that sets the gate's init): those become the fused tensors' halves.
    # Gated-MLP sites of subclasses that inherit these projections (litgpt's GemmaMLP(LLaMAMLP) with
    # another activation) are fused with them: their forwards are rewritten by the same fix.
    siblings = _inheriting_sites(ctx, gate, up)
    views: list[tuple[Binding, list[Span]]] = []
    for binding in (gate, up):
        extra = _uses(ctx.source, binding.attr) - 2 - len(siblings)
        spans, reads = _parameter_uses(ctx, binding) if extra else ([], 0)
        if reads != extra:
            ctx.decline(f"self.{binding.attr} is used elsewhere in the file; fusing it would break that code")
        views.append((binding, spans))
    out_node = gate_call.args[1] if len(gate_call.args) >= 2 else None
    keyword = next((k for k in gate_call.keywords if k.arg == "out_features"), None)
    if out_node is None and keyword is not None:
        out_node = keyword.value
    if out_node is None or len(gate_call.args) < 1:
        ctx.decline("cannot find the Linear's in/out features")
        raise AssertionError
    out_text = ast.get_source_segment(gate_text, out_node) or ""
    fused_out = out_text if is_simple(out_text) else f"({out_text})"
    new_call = _with_out_features(gate_text, gate_call, out_node, f"2 * {fused_out}", ctx.line_indent(gate.span))
    fused_attr = ctx.fresh_name(f"{gate.attr}_{up.attr}".replace("_proj_", "_").replace("proj_", ""))
    hooks = ensure_checkpoint_hooks(ctx)
    helper = ensure_helper(ctx, "gated_activation", "gated-activation", _GATED)
    ctx.replace_binding(gate.span, f"self.{fused_attr} = {new_call}")
    ctx.replace_binding(up.span, f'{hooks}(self, "{fused_attr}", ("{gate.attr}", "{up.attr}"))')
    rewrite_chain(ctx, f"{helper}(self.{fused_attr}({x}), {act})")
    for sibling in siblings:
        other = SynthContext(ctx.source, sibling, ctx.rule, ctx.target, ctx.findings, ctx.text_index)
        other_act, other_x = _activation(other), value_text(other, "x")
        if not is_simple(other_x):
            ctx.decline(f"the MLP input `{other_x}` of the subclass's gated MLP is an expression")
        rewrite_chain(other, f"{helper}(self.{fused_attr}({other_x}), {other_act})")
        ctx.edits.statements.extend(other.edits.statements)
        ctx.edits.expressions.extend(other.edits.expressions)
        ctx.edits.imports.extend(other.edits.imports)
    half = f"self.{fused_attr}.out_features // 2"
    for part, (binding, spans) in enumerate(views):
        rows = f"[: {half}]" if part == 0 else f"[{half} :]"
        for span in spans:
            text = ctx.text(span)
            ctx.replace_expression(span, re.sub(rf"self\.{re.escape(binding.attr)}\.(weight|bias)\b",
                                                rf"self.{fused_attr}.\1{rows}", text))
