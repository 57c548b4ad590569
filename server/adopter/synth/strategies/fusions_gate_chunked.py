"""Gated MLP from one projection (family 14, chunked): `x, gate = h.chunk(2, dim=-1)` then `x * act(gate)`.

The projection is already one GEMM. What a fused SwiGLU/GEGLU kernel saves besides launches is memory:
autograd keeps `act(gate)` (half the size of `h`) for the product's backward. The helper written here is
an autograd function that keeps only `h` and recomputes `act(gate)` in backward (what Liger's kernels do
on CUDA). The parameters are untouched (same module tree, same state dict), and the activation is the
callable the user's code calls (`F.gelu`, `self.activation`, a method), so what it computes is unchanged.
"""

from __future__ import annotations

import ast
import re

from adopter.dsl.types import Op, OpKind, Ref, Span
from adopter.engine.split_sites import GATE_SPLIT_REASON
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.fusions_chain import is_simple

_TAG = "fused-gated-activation"

_HELPER = '''
class FusedGatedActivation({torch}.autograd.Function):
    """`x * act(gate)` for `x, gate = h.chunk(2, dim=-1)` (`gate=0`: the gate is the first half), keeping
    only `h` for backward (adopter: fused-gated-activation-function).

    Autograd would also keep `act(gate)`, half the size of `h`; backward recomputes it instead (the
    trade Liger's fused SwiGLU/GEGLU kernels make on CUDA). For a stock SiLU or GELU the product is made in
    place and backward writes both halves of the gradient into one buffer with the kernels autograd runs
    (`silu_backward`, `gelu_backward`); any other activation is called again in backward and differentiated
    by autograd. Either way the gradients come from the same operations as without this function; with
    `create_graph=True` backward runs the original operations again.
    """

    @staticmethod
    def stock(act):
        """(functional form, its backward kernel, keyword arguments) of a stock SiLU or GELU, else None."""
        functional = {torch}.nn.functional
        if act is functional.silu or (type(act) is {torch}.nn.SiLU and not act.inplace):
            return functional.silu, {torch}.ops.aten.silu_backward.grad_input, {}
        if act is functional.gelu:
            return functional.gelu, {torch}.ops.aten.gelu_backward.grad_input, {"approximate": "none"}
        if type(act) is {torch}.nn.GELU:
            return functional.gelu, {torch}.ops.aten.gelu_backward.grad_input, {"approximate": act.approximate}
        return None

    @staticmethod
    def forward(ctx, h, act, gate):
        parts = h.chunk(2, dim=-1)
        ctx.act, ctx.gate = act, gate
        ctx.save_for_backward(h)
        stock = FusedGatedActivation.stock(act)
        if stock is not None:
            function, _, kwargs = stock
            return function(parts[gate], **kwargs).mul_(parts[1 - gate])
        return parts[1 - gate] * act(parts[gate])

    @staticmethod
    def backward(ctx, grad):
        (h,) = ctx.saved_tensors
        if {torch}.is_grad_enabled():  # `create_graph=True`: backward must itself be differentiable
            with {torch}.enable_grad():
                parts = h.chunk(2, dim=-1)
                out = parts[1 - ctx.gate] * ctx.act(parts[ctx.gate])
            return {torch}.autograd.grad(out, h, grad, create_graph=True)[0], None, None
        parts = h.chunk(2, dim=-1)
        x, g = parts[1 - ctx.gate], parts[ctx.gate]
        stock = FusedGatedActivation.stock(ctx.act)
        result = {torch}.empty_like(h)
        halves = result.chunk(2, dim=-1)
        if stock is None:
            with {torch}.enable_grad():
                g = g.detach().requires_grad_()
                a = ctx.act(g)
            if a.dtype == result.dtype:
                {torch}.mul(grad, a.detach(), out=halves[1 - ctx.gate])
            else:
                halves[1 - ctx.gate].copy_(grad * a.detach())
            (grad_gate,) = {torch}.autograd.grad(a, g, (grad * x).to(a.dtype))
            del a
            halves[ctx.gate].copy_(grad_gate)
            return result, None, None
        function, derivative, kwargs = stock
        {torch}.mul(grad, function(g, **kwargs), out=halves[1 - ctx.gate])
        derivative(grad * x, g, **kwargs, grad_input=halves[ctx.gate])
        return result, None, None


def fused_gated_activation(h, act, gate=1):
    """`x * act(gate)` for `x, gate = h.chunk(2, dim=-1)` (`gate=0`: the gate is the first half), keeping
    only `h` for backward in training (adopter: fused-gated-activation).

    Without gradients, under torch.compile (which fuses this itself) or for an odd last axis it computes
    the product as written.
    """
    if (h.shape[-1] % 2 or not (h.requires_grad and {torch}.is_grad_enabled())
            or {torch}.compiler.is_compiling()):
        parts = h.chunk(2, dim=-1)
        return parts[1 - gate] * act(parts[gate])
    return FusedGatedActivation.apply(h, act, gate)
'''


def _ops(ctx: SynthContext) -> tuple[Op, Op, Op]:
    """The chunk op, the activation op and the product op of the match (the projection stays)."""
    ops = ctx.finding.match.ops
    chunk = next((op for op in ops if (op.kind is OpKind.METHOD and op.target in ("chunk", "torch.chunk"))
                  or (op.kind is OpKind.FUNCTION and op.target == "torch.chunk")), None)
    if chunk is None:
        ctx.decline("the halves are not made by `.chunk(2, dim=-1)` (a `.split` is left as written)")
    product = ops[-1]
    if product.kind is not OpKind.OPERATOR or product.target != "*":
        ctx.decline("the gated product is not a `*`")
    after = ops[ops.index(chunk) + 1 : -1]
    act = next((op for op in after if op.outputs
                and any(isinstance(a, Ref) and a.name in op.outputs for a in product.args)
                and any(isinstance(a, Ref) and a.name in chunk.outputs for a in op.args)), None)
    if act is None:
        ctx.decline("cannot find the activation of the gate")
    return chunk, act, product


def _chunk_parts(ctx: SynthContext, chunk: Op) -> tuple[list[str], str]:
    """The names `A, B = H.chunk(2, dim=-1)` binds, and the text of `H`."""
    text = ctx.statement_text(chunk.stmt_span).strip()
    try:
        stmt = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        ctx.decline("cannot read the statement that splits the projection")
        raise AssertionError from None
    if (not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Tuple)
            or len(stmt.targets[0].elts) != 2 or not all(isinstance(e, ast.Name) for e in stmt.targets[0].elts)):
        ctx.decline("the halves are not bound to two plain names by one statement")
        raise AssertionError
    call = stmt.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or call.func.attr != "chunk":
        ctx.decline("the statement that splits the projection does more than `h.chunk(2, dim=-1)`")
        raise AssertionError
    args = list(call.args)
    receiver = call.func.value
    if ast.unparse(receiver) in ("torch",) and args:  # torch.chunk(h, 2, dim=-1)
        receiver = args.pop(0)
    dims = [k.value for k in call.keywords if k.arg == "dim"] + args[1:]
    other = [k for k in call.keywords if k.arg not in ("dim",)]
    if (len(args) < 1 or ast.unparse(args[0]) != "2" or len(dims) != 1 or ast.unparse(dims[0]) != "-1" or other
            or len(args) > 2):
        ctx.decline("the projection is not split by `.chunk(2, dim=-1)`")
    h = ast.get_source_segment(text, receiver) or ""
    if not h:
        ctx.decline("cannot read the split value")
    names = [e.id for e in stmt.targets[0].elts if isinstance(e, ast.Name)]
    return names, h


def _activation_callee(ctx: SynthContext, product: Op, gate: str, value: str) -> str:
    """The callable the product applies to the gate (`F.gelu`, `self.activation`, `self.gelu`), from the
    product's text `value * callee(gate)` (either order)."""
    text = ctx.text(product.span).strip()
    try:
        node = ast.parse(f"({text})", mode="eval").body
    except SyntaxError:
        ctx.decline("cannot read the gated product")
        raise AssertionError from None
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Mult):
        ctx.decline("the gated product is not one `*`")
        raise AssertionError
    for call, other in ((node.right, node.left), (node.left, node.right)):
        if (isinstance(other, ast.Name) and other.id == value and isinstance(call, ast.Call)
                and len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Name)
                and call.args[0].id == gate):
            callee = ast.unparse(call.func)
            if is_simple(callee):
                return callee
    ctx.decline("the product is not `x * act(gate)` with the activation called on the gate alone")
    raise AssertionError


def _check_names(ctx: SynthContext, chunk: Span, product: Span, names: list[str], h: str) -> None:
    """Nothing but the product reads the halves, and the split value is not rebound before it."""
    lines = ctx.source.split("\n")
    if chunk.end_line >= product.start_line:
        ctx.decline("the split and the product are not separate statements in order")
    if ctx.line_indent(chunk) != ctx.line_indent(product):
        ctx.decline("the split and the product are in different blocks")
    for line in range(chunk.end_line + 1, product.start_line):
        code = lines[line].split("#")[0]
        if code.strip() and len(code) - len(code.lstrip()) <= len(ctx.line_indent(chunk)):
            ctx.decline(f"line {line + 1} sits between the split and the product")
    product_text = ctx.statement_text(product)
    tree = _function_of(ctx, product.start_line)
    end = (tree.end_lineno or tree.lineno) - 1 if tree is not None else product.end_line
    bound = re.match(r"\s*([A-Za-z_]\w*)\s*=[^=]", product_text)
    try:
        parsed = ast.parse(product_text.strip()).body
    except SyntaxError:
        ctx.decline("cannot read the product's statement")
    if len(parsed) != 1 or not isinstance(parsed[0], (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Expr)):
        ctx.decline("the product is not in a simple statement")
    loads = [n.id for n in ast.walk(parsed[0]) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    if tree is not None:
        # In a loop, a half read before the split is the previous iteration's value: the split must stay.
        for node in ast.walk(tree):
            if (isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.lineno - 1 <= chunk.start_line
                    <= (node.end_lineno or node.lineno) - 1):
                for line in range(node.lineno - 1, chunk.start_line):
                    code = lines[line].split("#")[0]
                    if any(re.search(rf"(?<![\w.]){re.escape(n)}\b", code) for n in names):
                        ctx.decline(f"line {line + 1} reads a half in the loop around the split")
    for name in names:
        pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
        if loads.count(name) != 1:
            ctx.decline(f"`{name}` is read more than once in the product's statement")
        if bound is not None and bound.group(1) == name:
            continue
        for line in range(product.end_line + 1, end + 1):
            if pattern.search(lines[line].split("#")[0]):
                ctx.decline(f"`{name}` is also read on line {line + 1}; without the split it would hold another value")


def _function_of(ctx: SynthContext, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:  # only the top-level unit holding the line is parsed (the whole file when it is not cut)
        body = list(ctx.text_index.top_level(lambda unit: unit.start <= line <= unit.end))
    except (SyntaxError, ValueError):
        return None
    best = None
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno - 1 <= line
                <= (node.end_lineno or node.lineno) - 1 and (best is None or node.lineno > best.lineno)):
            best = node
    return best


def existing_helper(ctx: SynthContext, tag: str) -> str | None:
    """The name of a top-level function of the file whose docstring carries `(adopter: <tag>)`."""
    marker = f"(adopter: {tag})"
    if marker not in ctx.source:
        return None
    try:
        tree = ast.parse(ctx.source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and marker in (ast.get_docstring(node) or ""):
            return node.name
    return None


def _ensure_helper(ctx: SynthContext) -> str:
    found = existing_helper(ctx, _TAG)
    if found is not None:
        return found
    torch = ctx.add_import("torch")
    cls = ctx.fresh_name("FusedGatedActivation")
    code = _HELPER.replace("{torch}", torch).replace("FusedGatedActivation", cls)
    return ctx.add_module_code(code, name="fused_gated_activation")


@strategy("gated_chunked")
def gated_chunked(ctx: SynthContext) -> None:
    """`x, gate = h.chunk(2, dim=-1)` + `x * act(gate)` → `fused_gated_activation(h, act)`."""
    chunk, act, product = _ops(ctx)
    if chunk.via != product.via:
        ctx.decline(GATE_SPLIT_REASON)
    # Inside an `nn.Sequential` only a split and a product spliced from a stateless item's forward are edited
    # (in the item class, whose lines they keep); the Sequential's own children stay as built.
    if any(op.origin is not None and op.origin.kind is OpKind.MODULE and (not op.via or op.kind is OpKind.MODULE)
           for op in (chunk, product)):
        ctx.decline("the split or the product is a child of an nn.Sequential, not a statement of a forward")
    names, h = _chunk_parts(ctx, chunk)
    gate_arg = act.args[0] if act.args else None
    if not isinstance(gate_arg, Ref) or gate_arg.name not in chunk.outputs:
        ctx.decline("the activation does not read a half of the projection")
        raise AssertionError
    gate_index = list(chunk.outputs).index(gate_arg.name)
    gate, value = names[gate_index], names[1 - gate_index]
    if gate == value:
        ctx.decline("both halves are bound to one name")
    callee = _activation_callee(ctx, product, gate, value)
    if callee in (gate, value):
        ctx.decline("the activation is a half of the projection")
    if re.search(rf"(?<![\w.])(?:{re.escape(gate)}|{re.escape(value)})\b", callee):
        ctx.decline("the activation reads a half of the projection")
    # The split value is now computed at the product, after what the statement evaluates before it: that
    # must not be a call (a completed call before the product would now run before the projection).
    before = ctx.text(Span(product.stmt_span.start_line, product.stmt_span.start_col, product.span.start_line,
                           product.span.start_col))
    if not is_simple(h) and ")" in before:
        ctx.decline("the product's statement calls code before the product; the split value would be computed "
                    "after it")
    _check_names(ctx, chunk.stmt_span, product.stmt_span, names, h)
    if not _statement_alone(ctx, chunk.stmt_span):
        ctx.decline("the split shares its line with other code")
    helper = _ensure_helper(ctx)
    gate_kw = "" if gate_index == 1 else ", gate=0"
    # The region from the split to the product's statement, without the split's lines (only blank lines
    # and comments sit between: `_check_names`), the product replaced by the helper's call.
    lines = ctx.source.split("\n")
    stmt, expr = product.stmt_span, product.span
    tail = lines[stmt.start_line : stmt.end_line + 1]
    tail[-1] = tail[-1][: stmt.end_col]
    if expr.start_line == expr.end_line:
        row = tail[expr.start_line - stmt.start_line]
        tail[expr.start_line - stmt.start_line] = (row[: expr.start_col] + f"{helper}({h}, {callee}{gate_kw})"
                                                   + row[expr.end_col :])
    else:
        first, last = expr.start_line - stmt.start_line, expr.end_line - stmt.start_line
        joined = tail[first][: expr.start_col] + f"{helper}({h}, {callee}{gate_kw})" + tail[last][expr.end_col :]
        tail[first : last + 1] = [joined]
    middle = lines[chunk.stmt_span.end_line + 1 : stmt.start_line]
    indent = ctx.line_indent(stmt)
    code = [line.removeprefix(indent) for line in [*middle, *tail]]
    code[len(middle)] = code[len(middle)].lstrip(" \t")
    ctx.replace_statements([chunk.stmt_span, stmt], "\n".join(code).strip("\n"))


def _statement_alone(ctx: SynthContext, span: Span) -> bool:
    lines = ctx.source.split("\n")
    return not lines[span.start_line][: span.start_col].strip() and (
        not lines[span.end_line][span.end_col:].split("#")[0].strip())
