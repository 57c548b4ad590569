"""Family 10: a hand-written attention chain replaced by one `scaled_dot_product_attention` call.

The chain is `matmul(q, kᵀ)` → optional scale (`/ c` or `* c`) → optional mask (a `masked_fill`, or one or
more additive terms) → softmax over the last dim → optional dropout → `matmul(·, v)`. The strategy rebuilds
the call from the source text of the chain's external inputs (q, k, v, mask, scale, dropout) and declines
whenever the rewrite could change what the code computes: the probabilities or scores are used outside the
chain (returned, multiplied by a head mask), a statement between the steps reads the scores, an added term is
computed from the scores, or the scale is a tensor computed at run time. SDPA adds a float `attn_mask` to the
scaled scores, so several additive terms (a relative position bias and a shared bias) are summed into that one
mask, each under the `if` it was added under. Other statements between the steps stay where they are, each mask
step becoming a binding of the mask in its place (`_Site._plan_in_place`); a large finite fill goes through
`attention_masks.masked_fill_attention`; keys laid out (..., d, n), values multiplied from the left and
einsums in another axis order are transposed to SDPA's layout.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from adopter.analysis.canonical.normalise import matmul_plan
from adopter.dsl.types import Expr, Op, OpKind, Ref, Span
from adopter.parsed import walk
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.attention_masks import ensure_helper, fill_kind

_MATMUL = {(OpKind.FUNCTION, "torch.matmul"), (OpKind.OPERATOR, "@"), (OpKind.METHOD, "matmul")}
# Spellings of a matrix product whose operands the canonical pass may read through inserted transposes.
_PRODUCTS = frozenset({("operator", "@"), ("function", "torch.matmul"), ("method", "matmul"),
                       ("function", "torch.bmm"), ("method", "bmm")})
_SOFTMAX = {"torch.nn.functional.softmax", "torch.softmax"}
_LAST_TWO = ({"-1", "-2"}, {"2", "3"})
_MINUS_INF = frozenset({'float("-inf")', '-float("inf")', "-math.inf", "-torch.inf", "-np.inf", "-numpy.inf"})
_FP32 = frozenset({"torch.float32", "torch.float"})
_LINE = 100  # longest line the rewritten call may make before it is split one argument per line


@dataclass
class Chain:
    """The ops of a matched attention chain, by role."""

    scores: Op
    out: Op
    softmax: Op
    transpose: Op | None = None
    scale: Op | None = None
    mask: Op | None = None
    dropout: Op | None = None
    biases: list[Op] = field(default_factory=list)  # further `+ term` steps after the first (`mask`)
    # einsum products in another axis order: how to permute q, k, v to SDPA's layout, and its output back
    perms: list[tuple[int, ...] | None] = field(default_factory=lambda: [None, None, None])
    out_perm: tuple[int, ...] | None = None


@strategy("sdpa_chain")
def sdpa_chain(ctx: SynthContext) -> None:
    """Replace the matched manual attention chain with `scaled_dot_product_attention`."""
    chain = _classify(ctx.finding.match.ops)
    if isinstance(chain, str):
        ctx.decline(chain)
        return
    try:  # the top-level statement holding the chain (every function around it is in it)
        tree = ctx.text_index.module([chain.scores.stmt_span.start_line])
    except SyntaxError as err:
        ctx.decline(f"the file does not parse ({err.msg}, line {err.lineno})")
        return
    site = _Site(ctx, tree, chain)
    site.check()
    functional = _functional(ctx)
    inputs = [(site.arg(chain.scores, 0), chain.scores), (site.key(), chain.scores), (site.value(), chain.out)]
    args = [site.permuted_input(text, i) for i, (text, _) in enumerate(inputs)]
    kind, mask = site.mask_argument()
    callee = f"{functional}.scaled_dot_product_attention"
    if kind == "masked":  # a large finite fill: the helper that treats fully masked rows as the original does
        callee = ensure_helper(ctx, functional)
        args.append(mask)
    elif mask:
        args.append(f"attn_mask={mask}")
    dropout = site.dropout_kwarg()
    if dropout:
        args.append(dropout)
    args.append(f"scale={site.scale()}")
    if site.in_place:
        sources = [*inputs, *((t, op) for t, op in ((dropout, chain.dropout), (args[-1], chain.scale)) if op)]
        site.check_read_where_written(sources)
    else:
        site.check_inputs_unchanged(args)
    last = chain.out.stmt_span
    text = ctx.statement_text(last)
    start = _offset(text, last, chain.out.span.start_line, chain.out.span.start_col)
    end = _offset(text, last, chain.out.span.end_line, chain.out.span.end_col)
    after = site.output_permutation()
    call = f"{callee}({', '.join(args)}){after}"
    extra = 8 if site.fallback else 0  # the call sits one level deeper, under `else:`
    if len(ctx.line_indent(last)) + extra + start + len(call) + len(text[end:].split("\n")[0]) > _LINE:
        # One argument per line, like black and ruff format a call that does not fit.
        call = f"{callee}(\n" + "".join(f"    {a},\n" for a in args) + f"){after}"
    prelude = site.in_place_text() if site.in_place else site.prelude
    statement = prelude + text[:start] + call + text[end:]
    if site.fallback:
        # Kept as written where SDPA cannot stand in (the probabilities asked for, a head mask given, ...).
        tests = [_paren_test(t) for t in dict.fromkeys(site.fallback)]
        condition = " or ".join(tests)
        if len(ctx.line_indent(last)) + len(condition) + 4 > _LINE:  # one operand per line, as ruff formats it
            condition = "(\n    " + "\n    or ".join(tests) + "\n)"
        statement = (f"if {condition}:\n" + textwrap.indent(site.kept_text(), "    ") + "\nelse:\n"
                     + textwrap.indent(statement, "    "))
    ctx.replace_statements(site.range_spans(), statement)


def _classify(ops: Sequence[Op]) -> Chain | str:
    """Give each matched op its role, or say why the match is not an attention chain."""
    matmuls = [op for op in ops if (op.kind, op.target) in _MATMUL]
    softmaxes = [op for op in ops if op.kind == OpKind.FUNCTION and op.target in _SOFTMAX]
    if len(matmuls) != 2 or len(softmaxes) != 1:
        return "the match is not one matmul → softmax → matmul chain"
    chain = Chain(scores=matmuls[0], out=matmuls[1], softmax=softmaxes[0])
    for op in ops:
        if op.kind == OpKind.METHOD and op.target in ("transpose", "mT") and chain.transpose is None:
            chain.transpose = op
        elif op.kind == OpKind.OPERATOR and op.target in ("/", "*") and chain.scale is None:
            chain.scale = op
        elif chain.mask is None and (
            (op.kind == OpKind.OPERATOR and op.target == "+")
            or (op.kind == OpKind.METHOD and op.target == "masked_fill")
        ):
            chain.mask = op
        elif op.kind == OpKind.OPERATOR and op.target == "+" and chain.mask is not None \
                and chain.mask.target == "+":
            # A second additive term (a relative position bias and a shared bias): SDPA's float mask is
            # added to the scaled scores, so the sum of the terms is the one mask.
            chain.biases.append(op)
        elif (op.kind == OpKind.MODULE) or (op.kind == OpKind.FUNCTION and op.target.endswith("dropout")):
            chain.dropout = op
        elif op not in (chain.scores, chain.out, chain.softmax):
            # An additive term beside a boolean `masked_fill`, a `torch.where` mask, ...: SDPA takes one
            # mask; rewriting without this step would change what the code computes.
            return f"the chain has a step SDPA's one call does not take (`{op.target}`); rewrite it by hand"
    extra = [k for k in chain.softmax.kwargs if k.name != "dim"]
    if extra and not (len(extra) == 1 and extra[0].name == "dtype" and isinstance(extra[0].value, Expr)
                      and extra[0].value.text in _FP32):
        return f"the softmax takes `{', '.join(k.name for k in extra)}` other than an fp32 dtype, which SDPA does not"
    scores_eq, out_eq = _einsum_equation(chain.scores), _einsum_equation(chain.out)
    for plan, equation in (((False, True), scores_eq), ((False, False), out_eq)):
        if equation is not None and (matmul_plan(equation) or (None, None))[:2] != plan:
            # q·kᵀ must read q and k as (..., n, d), and probs·v read v as (..., n, d), as SDPA takes them;
            # an einsum naming every axis in another order is permuted to that layout (and the output back).
            layout = _einsum_layout(scores_eq, out_eq)
            if layout is None:
                return (f"the einsum `{equation}` lays its operands out differently from what "
                        "scaled_dot_product_attention takes; rewrite it by hand")
            chain.perms, chain.out_perm = layout
            break
    return chain


def _letters(equation: str) -> tuple[list[str], str] | None:
    """The operands' and the output's axis letters of a two-operand einsum naming every axis (no `...`)."""
    text = equation.strip()
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        return None
    body = text[1:-1].replace(" ", "")
    if body.count("->") != 1 or "." in body:
        return None
    lhs, out = body.split("->")
    operands = lhs.split(",")
    if len(operands) != 2 or not all(s.isalpha() and len(set(s)) == len(s) for s in (*operands, out)):
        return None
    return operands, out


def _einsum_layout(scores_eq: str | None, out_eq: str | None) -> tuple[list[tuple[int, ...] | None], tuple[int, ...] | None] | None:
    """For the chain's einsum products with their axes in another order than SDPA's (`"nqhd,nkhd->nhqk"` and
    `"nhql,nlhd->nqhd"`): the permutations bringing q, k and v to (batch..., n, d) and the one bringing SDPA's
    (batch..., n, e) output to the einsum's output order (None where the order already holds). The scores
    must come out as (batch..., i, j), which the mask, the softmax over the last axis and the probabilities'
    product read; every batch axis must be named by every operand. None for any other layout."""
    perms: list[tuple[int, ...] | None] = [None, None, None]
    batch: list[str] | None = None
    i = j = None
    if scores_eq is None:
        batch_len = None
    else:
        read = _letters(scores_eq)
        if read is None:
            return None
        (a, b), s = read
        contracted = [c for c in a if c in b and c not in s]
        only_a, only_b = [c for c in a if c not in b], [c for c in b if c not in a]
        if len(contracted) != 1 or len(only_a) != 1 or len(only_b) != 1 or s[-2:] != only_a[0] + only_b[0]:
            return None
        batch, i, j, c = list(s[:-2]), only_a[0], only_b[0], contracted[0]
        if sorted(a) != sorted([*batch, i, c]) or sorted(b) != sorted([*batch, j, c]):
            return None
        perms[0], perms[1] = _perm(a, [*batch, i, c]), _perm(b, [*batch, j, c])
        batch_len = len(batch)
    out_perm: tuple[int, ...] | None = None
    if out_eq is not None:
        read = _letters(out_eq)
        if read is None:
            return None
        (p, v), o = read
        if batch_len is not None and len(p) != batch_len + 2:
            return None
        pb, pi, pj = list(p[:-2]), p[-2], p[-1]
        es = [c for c in v if c not in p]
        if len(es) != 1 or pj not in v or pj in o or pi in v or pi not in o:
            return None
        e = es[0]
        if sorted(v) != sorted([*pb, pj, e]) or sorted(o) != sorted([*pb, pi, e]):
            return None
        perms[2] = _perm(v, [*pb, pj, e])
        out_perm = _perm("".join([*pb, pi, e]), list(o))
    return perms, out_perm


def _perm(source: str, target: list[str]) -> tuple[int, ...] | None:
    """The `permute` dims bringing axes `source` to the order `target`; None when it is the same order."""
    order = tuple(source.index(x) for x in target)
    return None if order == tuple(range(len(source))) else order


def _permuted(text: str, perm: tuple[int, ...] | None) -> str:
    """`text` with its axes permuted: `.transpose(a, b)` for one swap, else `.permute(...)`."""
    if perm is None:
        return text
    moved = [k for k, d in enumerate(perm) if d != k]
    if len(moved) == 2:
        return f"{_paren(text)}.transpose({moved[0]}, {moved[1]})"
    return f"{_paren(text)}.permute({', '.join(map(str, perm))})"


def _einsum_equation(op: Op) -> str | None:
    """The equation of the `einsum` (torch's or einops') a canonical op was written as, else None."""
    origin = op.origin
    if origin is None or origin.kind != OpKind.FUNCTION or origin.target not in ("torch.einsum", "einops.einsum"):
        return None
    equation = origin.args[-1] if origin.target == "einops.einsum" else origin.args[0]
    return equation.text if isinstance(equation, Expr) else None


def _functional(ctx: SynthContext) -> str:
    """The local name of `torch.nn.functional`, importing it as `F` when the file has no name for it."""
    imports = ctx.text_index.imports()
    for key, suffix in (
        (("torch.nn.functional", None), ""),
        (("torch.nn", "functional"), ""),
        (("torch", "nn"), ".functional"),
    ):
        if key in imports:
            return imports[key] + suffix
    return ctx.add_import("torch.nn.functional", alias="F")


def _offset(text: str, stmt: Span, line: int, col: int) -> int:
    """The index in `text` (the source of statement `stmt`) of the position (line, col)."""
    lines = text.split("\n")
    rel = line - stmt.start_line
    base = sum(len(x) + 1 for x in lines[:rel])
    return base + (col - stmt.start_col if rel == 0 else col)


def _expr_parts(text: str) -> tuple[ast.expr, str]:
    """Parse an expression's source (possibly spanning lines) for reading its operands; an augmented
    assignment (`attn += mask`) reads as the operation it performs (`attn + mask`)."""
    wrapped = "(" + text + "\n)"
    try:
        return ast.parse(wrapped, mode="eval").body, wrapped
    except SyntaxError:
        stmt = ast.parse(text).body
        if len(stmt) != 1 or not isinstance(stmt[0], ast.AugAssign):
            raise
        node = ast.BinOp(left=stmt[0].target, op=stmt[0].op, right=stmt[0].value)
        return ast.copy_location(node, stmt[0]), text


class _Site:
    """The source around one chain: the block it lives in, and the texts of its inputs."""

    def __init__(self, ctx: SynthContext, tree: ast.Module, chain: Chain) -> None:
        self.ctx = ctx
        self.chain = chain
        self.ops = list(ctx.finding.match.ops)
        self.tree = tree
        self.func, self.block = self._enclosing(chain.scores.stmt_span.start_line + 1)
        # A layout op of the keys in a statement of its own (`k = k.permute(0, 2, 3, 1)`) stays as written: the
        # call reads the product's operand, so that statement is not a step of the chain.
        # (with the keys' scale when the same statement scales them: `k = ....permute(0, 2, 3, 1) * scale`).
        layout = chain.transpose.stmt_span if chain.transpose is not None and _is_layout(
            chain.transpose, chain.scores) and chain.transpose.stmt_span != chain.scores.stmt_span else None
        outside = [op for op in self.ops if layout is not None and op.stmt_span == layout]
        self.scaled_outside = chain.scale is not None and chain.scale in outside
        if any(op is not chain.transpose and not (op is chain.scale and any(
                isinstance(a, Ref) and chain.transpose is not None and a.name in chain.transpose.outputs
                for a in op.args)) for op in outside):
            ctx.decline("the keys' layout statement holds other steps of the chain; rewrite it by hand")
        lines = {op.stmt_span.start_line + 1 for op in self.ops if op not in outside}
        # `bmm(v, p.permute(0, 2, 1))`: the canonical pass reads it as `transpose(p @ transpose(v))`, the product's
        # operands no longer the call's (the call's first is v, its second the transposed probabilities).
        origin = chain.out.origin
        self.values_left = bool(
            origin is not None and (origin.kind.value, origin.target) in _PRODUCTS and len(origin.args) == 2
            and len(chain.out.args) == 2 and origin.args[0] != chain.out.args[0] and origin.args[1] != chain.out.args[1])
        first = min(lines)
        last = chain.out.stmt_span.start_line + 1
        self.range = [
            s for s in self.block if s.end_lineno is not None and s.end_lineno >= first and s.lineno <= last
        ]
        self.matched_lines = lines
        self.fallback: list[str] = []  # conditions under which the range is kept as it is
        self.guards: dict[int, str] = {}  # the line of an additive step -> the test of the `if` it sits under
        self.prelude = ""  # statements before the call that sum the additive terms into the float mask
        self.mask_guarded = False  # the one mask step sits under `if <its mask> is not None:`
        # Other statements between the steps stay where they are, the mask bound where its steps were
        # (`_plan_in_place`); the call's inputs are then checked where they are read (`check_read_where_written`).
        self.in_place = False
        self._mask_in_place: tuple[str, str] = ("", "")
        self._writes: list[tuple[str, int]] = []  # names a kept statement rebinds or changes in place, with the line
        self._masks: list[tuple[str, str, int, bool]] = []  # (kind: "term"/"inf"/"finite", text, line, under an if)
        self._chunks: list[tuple[str, str | None]] = []  # (text, the mask text a binding chunk stands for)
        self._mask_var = ""
        self._mask_state = "none"  # what the mask variable holds: nothing yet, a tensor, or maybe None
        self._func_nodes: tuple[ast.AST, ...] | None = None
        self._parents: dict[ast.AST, ast.AST] | None = None
        self._range_names: frozenset[str] | None = None

    def _walk_func(self) -> tuple[ast.AST, ...]:
        """`ast.walk(self.func)` listed once per site (the checks walk the function once per name)."""
        if self._func_nodes is None:
            self._func_nodes = walk(self.func)
        return self._func_nodes

    def _parent_of(self) -> dict[ast.AST, ast.AST]:
        """Each node of the function -> the node holding it, built once per site."""
        if self._parents is None:
            parents: dict[ast.AST, ast.AST] = {}
            for above in self._walk_func():
                for child in ast.iter_child_nodes(above):
                    parents[child] = above
            self._parents = parents
        return self._parents

    def _enclosing(self, line: int) -> tuple[ast.FunctionDef, list[ast.stmt]]:
        """The innermost function and statement list whose statements include `line` directly."""
        best: tuple[ast.FunctionDef, list[ast.stmt]] | None = None
        for node in self.ctx.text_index.statements(self.tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            if not (node.lineno <= line <= (node.end_lineno or node.lineno)):
                continue
            found = _block_with(node.body, line)
            if found is not None and (best is None or node.lineno >= best[0].lineno):
                best = (node, found)
        if best is None:
            self.ctx.decline("the chain is not inside a function body")
            raise AssertionError("unreachable")
        return best

    # -- checks ------------------------------------------------------------------------------------

    def check(self) -> None:
        """Decline unless replacing the range with one call computes exactly what it computed, or keeping the
        range as it is under the conditions that need it (`self.fallback`) and the call otherwise does."""
        ctx, chain = self.ctx, self.chain
        if not self.range or self.range[-1].lineno != chain.out.stmt_span.start_line + 1:
            ctx.decline("the chain's steps are not in one block of statements")
        starts = [stmt.lineno for stmt in self.range]
        if len(set(starts)) != len(starts) or any(
                (a.end_lineno or a.lineno) == b.lineno for a, b in zip(self.range, self.range[1:])):
            # `y = 2; scores = q @ k.T`: the statement beside a step would be replaced with it.
            ctx.decline("a statement of the chain shares its line with other code; rewrite it by hand")
        pending: list[ast.stmt] = []
        skippable: list[str] = []
        for stmt in self.range:
            if stmt.lineno in self.matched_lines:
                continue
            if self._is_mask_guard(stmt) or self._is_stable_shift(stmt) or self._is_term_guard(stmt):
                continue
            test = self._skippable_test(stmt)
            if test is not None:
                # `if head_mask is not None: probs = probs * head_mask`, `if self.save_attn: ...`: the
                # original runs when the condition holds, SDPA when it does not (where the body is skipped).
                skippable.append(test)
                continue
            pending.append(stmt)
        if pending:
            self._go_in_place()
        self._check_results_unused()
        if not self.in_place:
            self.fallback.extend(skippable)
            if self.fallback and "output_attentions" not in self.fallback:
                # Kept under a condition only beside `output_attentions`: that is the path detection knows as
                # the one kept for the probabilities; elsewhere the statements must stay where they are.
                self.fallback.clear()
                self._go_in_place()
        if self.in_place:
            if self.fallback:
                stmt = pending[0]
                ctx.decline(f"line {stmt.lineno} (`{ast.unparse(stmt).splitlines()[0]}`) sits between the chain's "
                            "steps beside the path kept for `output_attentions`; rewrite it by hand")
            self._plan_in_place()
        if any(k.name == "dtype" for k in chain.softmax.kwargs) or self._upcast_input():
            self._check_cast_back()
        if self.fallback:
            self._check_fallback_layout()

    def _skippable_test(self, stmt: ast.stmt) -> str | None:
        """The test of `if <test>: ...` (no else) between the steps that holds none of the chain's steps and
        reads nothing the range binds, with no call: evaluated before the range it has the same value, and
        when it is false the statement does nothing. Else None."""
        if not isinstance(stmt, ast.If) or stmt.orelse:
            return None
        end = stmt.end_lineno or stmt.lineno
        if any(stmt.lineno <= line <= end for line in self.matched_lines):
            return None
        bound = self._defined_in_range()
        pure = (ast.Name, ast.Attribute, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Constant, ast.Load,
                ast.cmpop, ast.boolop, ast.unaryop)
        for node in ast.walk(stmt.test):
            if not isinstance(node, pure) or (isinstance(node, ast.Name) and node.id in bound):
                return None
        text = self.ctx.text_index.segment(stmt.test) or ast.unparse(stmt.test)
        return " ".join(text.split()) if "\n" in text else text

    def _check_fallback_layout(self) -> None:
        """The kept statements are re-indented under `if`: decline where that would change a line's text
        (a continuation line less indented than the block, as in a multi-line string)."""
        lines = self.ctx.source.split("\n")
        first, last = self.range[0].lineno - 1, (self.range[-1].end_lineno or self.range[-1].lineno) - 1
        indent = self.range[0].col_offset
        for line in lines[first:last + 1]:
            if line.strip() and len(line) - len(line.lstrip()) < indent:
                self.ctx.decline("a line of the chain is indented less than its block (a multi-line string?); "
                                 "it cannot be kept under a condition unchanged")
        head = lines[first].encode("utf-8")[:indent].decode("utf-8", errors="ignore")
        last_stmt = self.range[-1]
        tail = lines[last].encode("utf-8")[last_stmt.end_col_offset or 0:].decode("utf-8", errors="ignore")
        if head.strip() or (tail.strip() and not tail.strip().startswith("#")):
            self.ctx.decline("a statement of the chain shares its line with other code; it cannot be kept under a "
                             "condition unchanged")
        out = self.chain.out.stmt_span
        if out.start_line != out.end_line:
            self.ctx.decline("the chain's last statement spans lines; it cannot be kept under a condition")

    def kept_text(self) -> str:
        """The source lines of the range (comments between included), dedented to the block."""
        lines = self.ctx.source.split("\n")
        first, last = self.range[0].lineno - 1, (self.range[-1].end_lineno or self.range[-1].lineno) - 1
        indent = self.range[0].col_offset
        return "\n".join(line[indent:] if line.strip() else "" for line in lines[first:last + 1])

    def _check_results_unused(self) -> None:
        """Decline when the probabilities (or another value of the chain) are read after it: SDPA does not
        return them. Checked first: it is why the site has no fix whatever else sits between the steps.
        With an `output_attentions` parameter whose truth guards every such read (`... if output_attentions
        else ...`, `if output_attentions:`, or after `if not output_attentions: probs = None`), the range is
        kept for `output_attentions` and SDPA runs otherwise, as transformers' own SDPA classes do."""
        chain = self.chain
        defined = self._defined_in_range()
        out_names = self._out_names()
        flag = "output_attentions" in {a.arg for a in self.func.args.args + self.func.args.kwonlyargs}
        gated = False
        for name, line in self._used_after(defined - out_names):
            what = "attention probabilities" if name in self._names_of(chain.softmax) else "intermediate"
            if flag and self._guarded_by_flag(name, line):
                gated = True
                continue
            returned = any(isinstance(node, ast.Return) and node.lineno == line and node.value is not None
                           and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value))
                           for node in self._walk_func())
            if returned and not flag:
                self.ctx.decline(
                    f"the {what} `{name}` are returned (line {line}) and this function has no `output_attentions` "
                    "flag to keep them only on request; SDPA does not compute them (a caller that asks for "
                    "them would get none): switch to the library's SDPA path instead (transformers: "
                    "attn_implementation=\"sdpa\")")
            self.ctx.decline(
                f"the {what} `{name}` are used after the chain (line {line}) where `output_attentions` does not "
                "guard the read; SDPA does not return them" if flag else
                f"the {what} `{name}` are used after the chain (line {line}); SDPA does not return them"
            )
        if gated:
            self.fallback.append("output_attentions")

    def _guarded_by_flag(self, name: str, line: int) -> bool:
        """Whether every read of `name` on `line` happens only when `output_attentions` is true, or after an
        `if not output_attentions: name = None` in the chain's block (the value is None on the SDPA path
        in the original too)."""
        end = self.range[-1].end_lineno or self.range[-1].lineno
        for stmt in self.block:
            if stmt.lineno <= end or stmt.lineno >= line:
                continue
            if (isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.test, ast.UnaryOp)
                    and isinstance(stmt.test.op, ast.Not) and _is_flag(stmt.test.operand)
                    and any(isinstance(b, ast.Assign) and isinstance(b.value, ast.Constant) and b.value.value is None
                            and any(isinstance(t, ast.Name) and t.id == name for t in b.targets) for b in stmt.body)):
                return True
        parents = self._parent_of()
        reads = [n for n in self._walk_func() if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load) and n.lineno == line]
        for read in reads:
            node: ast.AST = read
            guarded = False
            while node in parents:
                parent = parents[node]
                if isinstance(parent, ast.IfExp | ast.If) and _is_flag(parent.test) and (
                        node is parent.body or (isinstance(parent.body, list) and node in parent.body)):
                    guarded = True
                    break
                node = parent
            if not guarded:
                return False
        return bool(reads)

    def check_inputs_unchanged(self, args: list[str]) -> None:
        """Decline when a statement of the range before the last binds a name the call reads: the call
        stands at the last statement, where that name may hold another value than where the chain read it
        (the engine lets this strategy judge values with another definition on another path by the text
        at the site, so this is what keeps that text meaning the same value)."""
        bound: dict[str, int] = {}
        for stmt in self.range[:-1]:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    bound.setdefault(node.id, node.lineno)
        for text in args:
            try:
                expr = ast.parse(text.split("=", 1)[1] if _is_keyword(text) else text, mode="eval").body
            except SyntaxError:
                continue
            for node in ast.walk(expr):
                if isinstance(node, ast.Name) and node.id in bound:
                    self.ctx.decline(f"`{node.id}` is rebound on line {bound[node.id]} inside the chain and read "
                                     "by it; one call at the end would read the new value")

    def _upcast_input(self) -> bool:
        """Whether the softmax's input is written `x.float()` (the cast the canonical form looks through)."""
        node = self._softmax_call()
        first = node.args[0] if node is not None and node.args else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "softmax":
            first = node.func.value  # `x.float().softmax(-1)`
        return (isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and not first.args
                and first.func.attr == "float")

    def _softmax_call(self) -> ast.Call | None:
        """The softmax call in its statement's syntax tree."""
        softmax = self.chain.softmax
        stmt = next((s for s in self.range if s.lineno == softmax.stmt_span.start_line + 1), None)
        for node in ast.walk(stmt) if stmt is not None else ():
            # `softmax(...).to(dtype)` starts where the softmax does: the call whose function is the softmax.
            name = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else (
                node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else "")
            if isinstance(node, ast.Call) and name.lower() == "softmax" and (node.lineno, node.col_offset) == (
                    softmax.span.start_line + 1, self._byte_col(softmax.span.start_line, softmax.span.start_col)):
                return node
        return None

    def _byte_col(self, line: int, col: int) -> int:
        return len(self.ctx.source.split("\n")[line][:col].encode("utf-8"))

    def _check_cast_back(self) -> None:
        """An fp32 softmax (`dtype=torch.float32`, or of `x.float()`) whose probabilities are cast straight back
        (`.to(q.dtype)`, `.type_as(x)`): the probabilities then multiply v in v's dtype, as SDPA's do. SDPA's
        kernels keep the scores and the softmax in fp32 too (the math kernel up-casts half-precision inputs,
        the fused ones accumulate in fp32), so the rewrite is at least as precise; `adopter verify --dtype
        bf16` measures the difference on the user's class. Without the cast back, decline: the fp32
        probabilities would promote or reject v's dtype."""
        call = self._softmax_call()
        stmt = next((s for s in self.range if s.lineno == self.chain.softmax.stmt_span.start_line + 1), None)
        parent = None
        for node in ast.walk(stmt) if stmt is not None and call is not None else ():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.value is call:
                parent = node
        if parent is None or not isinstance(parent.func, ast.Attribute):
            self.ctx.decline("the softmax runs in fp32 and its probabilities are not cast back to the input's "
                             "dtype (`.to(q.dtype)`); SDPA returns the input's dtype")
            return
        attr, args = parent.func.attr, parent.args
        back = (attr == "type_as" and len(args) == 1) or (
            attr == "to" and len(args) == 1 and not parent.keywords
            and isinstance(args[0], ast.Attribute) and args[0].attr == "dtype")
        if not back:
            self.ctx.decline(f"the fp32 softmax is followed by `.{attr}(...)`, not a cast back to the input's "
                             "dtype (`.to(q.dtype)`, `.type_as(x)`); SDPA returns the input's dtype")

    def _is_stable_shift(self, stmt: ast.stmt) -> bool:
        """`s = s - s.amax(dim=-1, keepdim=True)` (also `.detach()`, `s.max(-1, keepdim=True)[0]` or
        `.values`) on the softmax's input: a softmax over the last axis is the same without it, and SDPA
        computes it stably, so the statement goes with the chain."""
        first = self.chain.softmax.args[0] if self.chain.softmax.args else None
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(first, Ref) and stmt.targets[0].id == first.name):
            return False
        name = first.name
        value = stmt.value
        if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Sub) and isinstance(value.left, ast.Name)
                and value.left.id == name):
            return False
        shift = value.right
        if isinstance(shift, ast.Call) and isinstance(shift.func, ast.Attribute) and shift.func.attr == "detach" \
                and not shift.args and not shift.keywords:
            shift = shift.func.value
        values = False
        if isinstance(shift, ast.Subscript) and isinstance(shift.slice, ast.Constant) and shift.slice.value == 0:
            shift, values = shift.value, True
        elif isinstance(shift, ast.Attribute) and shift.attr == "values":
            shift, values = shift.value, True
        if not (isinstance(shift, ast.Call) and isinstance(shift.func, ast.Attribute)
                and shift.func.attr == ("max" if values else "amax")
                and isinstance(shift.func.value, ast.Name) and shift.func.value.id == name):
            return False
        args = [ast.unparse(a) for a in shift.args]
        kwargs = {k.arg: ast.unparse(k.value) for k in shift.keywords}
        dim = args[0] if args else kwargs.get("dim")
        keep = args[1] if len(args) > 1 else kwargs.get("keepdim")
        return dim == "-1" and keep == "True" and len(args) + len(kwargs) == 2

    def _additive(self) -> list[Op]:
        """The chain's additive steps (`scores + term`), in order; empty when the mask is a `masked_fill`."""
        mask = self.chain.mask
        return [mask, *self.chain.biases] if mask is not None and mask.target == "+" else []

    def _is_term_guard(self, stmt: ast.stmt) -> bool:
        """`if <test>: scores = scores + <term>` (no else) around one additive step, when the chain has more
        than one or the test is not `<term> is not None`: the test must read no name the range binds and call
        nothing (`self.table is not None`, `bias is not None`), so evaluated before the call it has the value
        it had where the step ran. Recorded in `self.guards`: the term joins the mask only when it holds."""
        if not isinstance(stmt, ast.If) or stmt.orelse or len(stmt.body) != 1:
            return False
        lines = {op.stmt_span.start_line + 1: op for op in self._additive()}
        if stmt.body[0].lineno not in lines:
            return False
        test = self._skippable_test(ast.If(test=stmt.test, body=[], orelse=[], lineno=stmt.lineno,
                                           end_lineno=stmt.lineno, col_offset=0))
        if test is None:
            return False
        self.guards[stmt.body[0].lineno] = test
        return True

    def _term_text(self, op: Op) -> str:
        """The added term of an additive step: the operand not computed by the chain, which must read no
        name the range binds (a term computed from the scores is no mask SDPA could take)."""
        incoming = {o for other in self.ops if other is not op for o in other.outputs}
        text = None
        for index, value in enumerate(op.args):
            if not (isinstance(value, Ref) and value.name in incoming):
                text = self.operand(op, index)
                break
        if text is None:
            self.ctx.decline("both operands of the mask addition come from the chain")
            raise AssertionError("unreachable")
        bound = self._defined_in_range()
        names = _names_read(text)
        if names & bound:
            self.ctx.decline(f"the added term `{text}` reads `{min(names & bound)}`, which the chain computes; "
                             "SDPA's mask cannot depend on the scores")
        return text

    def _bias_name(self) -> str:
        """A name for the summed mask that the function does not use."""
        used = {n.id for n in self._walk_func() if isinstance(n, ast.Name)}
        used |= {a.arg for a in self._walk_func() if isinstance(a, ast.arg)}
        name = "attn_bias"
        while name in used:
            name += "_"
        return name

    def _sum_terms(self) -> str:
        """The float mask for more than one additive step, or one under a condition other than `x is not
        None`: a plain sum when no step is conditional, else a name the prelude binds (None when no term is
        added, as the original then adds nothing)."""
        steps = [(self._term_text(op), self.guards.get(op.stmt_span.start_line + 1)) for op in self._additive()]
        if all(guard is None for _, guard in steps):
            return " + ".join(_paren_sum(text) for text, _ in steps)
        name = self._bias_name()
        lines = [f"{name} = None"] if steps[0][1] is not None else []
        state = "none"  # what the name holds before the step: None, a tensor, or either
        for text, guard in steps:
            step = {"none": f"{name} = {text}", "set": f"{name} = {name} + {_paren_sum(text)}",
                    "maybe": f"{name} = {text} if {name} is None else {name} + {_paren_sum(text)}"}[state]
            if guard is None:
                lines.append(step)
                state = "set"
            else:
                lines += [f"if {guard}:", f"    {step}"]
                state = "set" if state == "set" else "maybe"
        self.prelude = "\n".join(lines) + "\n"
        return name

    def _is_mask_guard(self, stmt: ast.stmt) -> bool:
        """`if <mask> is not None: scores = scores + <mask>` around the chain's one mask step."""
        mask = self.chain.mask
        if mask is None or self.chain.biases or not isinstance(stmt, ast.If) or stmt.orelse:
            return False
        if not (len(stmt.body) == 1 and stmt.body[0].lineno == mask.stmt_span.start_line + 1):
            return False
        test = stmt.test
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            return False
        guarded = ast.unparse(test.left) == ast.unparse(ast.parse(self._mask_text(), mode="eval").body)
        self.mask_guarded = self.mask_guarded or guarded
        return guarded

    def _go_in_place(self) -> None:
        """From here on the range's other statements stay: the chain's values are the names its steps bind."""
        self.in_place = True
        self.guards.clear()
        steps: set[str] = set()
        for stmt in self.range:
            for node in walk(stmt):
                if isinstance(node, ast.stmt) and node.lineno in self.matched_lines and not isinstance(node, ast.If):
                    steps |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                elif isinstance(node, ast.stmt) and self._is_stable_shift(node):
                    steps |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self._range_names = frozenset(steps)

    def _defined_in_range(self) -> set[str]:
        if self._range_names is None:  # the range is fixed at construction; asked once per statement between
            self._range_names = frozenset(node.id for stmt in self.range for node in walk(stmt)
                                          if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
        return set(self._range_names)

    def _out_names(self) -> set[str]:
        stmt = self.range[-1]
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}

    def _names_of(self, op: Op) -> set[str]:
        stmt = next((s for s in self.range if s.lineno == op.stmt_span.start_line + 1), None)
        if isinstance(stmt, ast.Assign):
            return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        return set()

    def _used_after(self, names: set[str]) -> list[tuple[str, int]]:
        """Loads of `names` in the function after the replaced range (returns, head masks, outputs)."""
        end = self.range[-1].end_lineno or self.range[-1].lineno
        hits = []
        for node in self._walk_func():
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id in names
                and node.lineno > end
            ):
                hits.append((node.id, node.lineno))
        return sorted(hits, key=lambda h: h[1])

    # -- texts of the inputs ------------------------------------------------------------------------

    def range_spans(self) -> list[Span]:
        """The spans of the first and last statements replaced (the framework replaces first .. last)."""
        return [_stmt_span(self.ctx.source, self.range[0]), self.chain.out.stmt_span]

    def operand(self, op: Op, index: int) -> str:
        """The source text of the `index`-th value argument of `op` (the receiver is 0 for methods)."""
        node, wrapped = _expr_parts(self.ctx.text(op.span))
        parts: list[ast.expr]
        if isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Call):
            parts = list(node.args)
            origin = op.origin or op
            if origin.kind == OpKind.METHOD and isinstance(node.func, ast.Attribute):
                parts = [node.func.value, *parts]
            elif _einsum_equation(op) is not None:
                # einsum's tensors without the equation; the transpose it implies reads the second one.
                tensors = parts[1:] if origin.target == "torch.einsum" else parts[:-1]
                if len(tensors) == 1 and isinstance(tensors[0], ast.List | ast.Tuple):
                    tensors = list(tensors[0].elts)  # `torch.einsum(eq, [a, b])`
                parts = tensors[1:] if op.target == "transpose" else tensors
        elif isinstance(node, ast.Attribute) and (op.origin or op).target in ("mT", "getattr"):  # `k.mT`
            parts = [node.value]
        else:
            self.ctx.decline(f"cannot read the operands of `{self.ctx.text(op.span)}`")
            raise AssertionError("unreachable")
        if index >= len(parts):
            self.ctx.decline(f"`{self.ctx.text(op.span)}` has no operand {index}")
        return ast.get_source_segment(wrapped, parts[index]) or ast.unparse(parts[index])

    def _produced(self, value: object) -> Op | None:
        if isinstance(value, Ref):
            return next((op for op in self.ops if value.name in op.outputs), None)
        return None

    def arg(self, op: Op, index: int) -> str:
        """An external input of the chain (q or v): its source text; decline for values the chain makes."""
        if self._produced(op.args[index]) is not None:
            self.ctx.decline(f"operand {index} of `{self.ctx.text(op.span)}` is computed inside the chain")
        return self.operand(op, index)

    def permuted_input(self, text: str, index: int) -> str:
        """q, k or v (`index` 0, 1, 2) as SDPA takes it: permuted when an einsum names its axes in another order."""
        return _permuted(text, self.chain.perms[index])

    def output_permutation(self) -> str:
        """What brings SDPA's output to the order the probabilities' einsum wrote (empty when it is SDPA's), or
        transposes it back when the values multiplied the transposed probabilities from the left."""
        if self.values_left:
            return ".transpose(-2, -1)"
        return _permuted("x", self.chain.out_perm)[1:] if self.chain.out_perm is not None else ""

    def value(self) -> str:
        """v as SDPA takes it: the product's right operand, or, for `bmm(v, pᵀ)` (channels-first values
        multiplied from the left by the transposed probabilities, which is `(p @ vᵀ)ᵀ`), `v.transpose(-2, -1)`."""
        if self.values_left:
            return f"{_paren(self.operand(self.chain.out, 0))}.transpose(-2, -1)"
        return self.arg(self.chain.out, 1)

    def key(self) -> str:
        """k itself: the receiver of the matched transpose of the last two dims."""
        chain = self.chain
        kt = chain.scores.args[1]
        producer = self._produced(kt)
        if self.scaled_outside and producer is chain.scale:
            producer = chain.transpose
        if producer is None or producer is not chain.transpose:
            self.ctx.decline("kᵀ is not a transpose of the last two dims inside the match")
            raise AssertionError("unreachable")
        if _is_layout(producer, chain.scores) or (self.scaled_outside and chain.transpose is not None
                                                  and _is_layout(chain.transpose, chain.scores)):
            # Keys laid out (..., d, n) (`k.permute(0, 2, 3, 1)`, `rearrange(k, "... -> b h d n")`, a local already
            # channels-first): the product reads `kᵀ` as written, and SDPA's k is its transpose.
            return f"{_paren(self.operand(chain.scores, 1))}.transpose(-2, -1)"
        if producer.target == "transpose":
            dims = {a.text for a in producer.args[1:] if isinstance(a, Expr)}
            if len(producer.args) != 3 or dims not in _LAST_TWO:
                self.ctx.decline(f"`{self.ctx.text(producer.span)}` does not swap the last two dims")
        return self.operand(producer, 0)

    def _mask_text(self) -> str:
        mask = self.chain.mask
        assert mask is not None
        incoming = {o for op in self.ops if op is not mask for o in op.outputs}
        for index, value in enumerate(mask.args):
            if not (isinstance(value, Ref) and value.name in incoming):
                return self.operand(mask, index)
        self.ctx.decline("both operands of the mask addition come from the chain")
        raise AssertionError("unreachable")

    def mask_argument(self) -> tuple[str, str]:
        """How the call takes the chain's mask: ("attn_mask", text) for SDPA's `attn_mask`, ("masked", text) for
        the positions a large finite value fills (the `masked_fill_attention` helper's argument), ("", "")
        for none."""
        if self.in_place:
            return self._mask_in_place
        mask = self.chain.mask
        if mask is None:
            return "", ""
        if mask.target != "masked_fill":
            if self.chain.biases or self.guards:
                return "attn_mask", self._sum_terms()
            return "attn_mask", self._mask_text()
        if len(mask.args) != 3 or mask.kwargs:
            self.ctx.decline(f"`{self.ctx.text(mask.span)}` is not masked_fill(condition, value)")
        cond = self.operand(mask, 1)
        kind = self._fill_kind(self.operand(mask, 2))
        if kind == "finite":
            # Under `if <cond> is not None:` the helper takes the None the original skips the step for.
            return "masked", cond
        # scores.masked_fill(cond, -inf) drops the keys where cond holds: SDPA's boolean mask says which keys
        # take part, so it is ~cond (None where the step is skipped for a None mask).
        return "attn_mask", (f"None if {cond} is None else ~{_paren(cond)}" if self.mask_guarded
                             else f"~{_paren(cond)}")

    def _fill_kind(self, fill: str) -> str:
        """"inf" or "finite" (see `attention_masks.fill_kind`); decline for another fill value."""
        kind = fill_kind(fill, self._bound_values)
        if kind is None:
            flat = " ".join(fill.split())
            self.ctx.decline(f"the scores are filled with `{flat}`, neither -inf nor a large negative number "
                             "(at most -1e4, or -torch.finfo(dtype).max): SDPA's mask drops the keys instead")
        return kind or ""

    def _bound_values(self, node: ast.expr) -> list[ast.expr] | None:
        """Every value a local name (in this function) or a `self.` attribute (in this class) is assigned;
        None when it is bound any other way (a parameter, a loop, an unpacking) or nowhere."""
        if isinstance(node, ast.Name):
            scope: ast.AST = self.func
            if node.id in {a.arg for a in (*self.func.args.args, *self.func.args.kwonlyargs, *self.func.args.posonlyargs)}:
                return None
            key = node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            cls = self._class_node()
            if cls is None:
                return None
            scope, key = cls, "self." + node.attr
        else:
            return None
        values: list[ast.expr] = []
        for sub in ast.walk(scope):
            if isinstance(sub, ast.Assign):
                if any(ast.unparse(t) == key for t in sub.targets):
                    if len(sub.targets) != 1:
                        return None
                    values.append(sub.value)
                elif any(key in {ast.unparse(n) for n in ast.walk(t) if isinstance(n, ast.Name | ast.Attribute)}
                         for t in sub.targets):
                    return None  # unpacked into it
            elif isinstance(sub, ast.AugAssign | ast.AnnAssign | ast.For | ast.With | ast.NamedExpr):
                targets = [sub.target] if not isinstance(sub, ast.With) else [i.optional_vars for i in sub.items
                                                                              if i.optional_vars is not None]
                if any(key in {ast.unparse(n) for n in ast.walk(t) if isinstance(n, ast.Name | ast.Attribute)}
                       for t in targets):
                    if isinstance(sub, ast.AnnAssign) and sub.value is not None and ast.unparse(sub.target) == key:
                        values.append(sub.value)
                        continue
                    return None
        return values or None

    # -- the range's other statements, kept where they are ---------------------------------------------

    def _plan_in_place(self) -> None:
        """Rewrite the range statement by statement: the steps go, each mask step becomes a binding of the
        mask where it was (`masked = cond`, under the `if` it sat in), and every other statement stays where
        it is when it reads no value of the chain and changes none of the call's inputs (checked by
        `check_read_where_written` once the call's arguments are known). A value filling the scores that is
        computed from them only for its dtype (`mask_value = -torch.finfo(sim.dtype).max`) goes too."""
        scores = self._scores_name()
        dropped = self._dropped_fills()
        for stmt in self.range[:-1]:
            if stmt.lineno in self.matched_lines:
                self._bind_steps(stmt, conditional=False)
                continue
            if self._is_stable_shift(stmt) or stmt in dropped or self._is_probabilities_layout(stmt):
                continue
            extra = self._extra_fill(stmt, scores)
            if extra is not None:
                self._bind(extra[0], extra[1], stmt.lineno, conditional=False)
                continue
            if isinstance(stmt, ast.If) and not stmt.orelse and self._holds_steps(stmt, scores):
                self._bind_block(stmt, scores, dropped)
                continue
            self._keep(stmt)
        kinds = {kind for kind, *_ in self._masks}
        if len(kinds) > 1:
            self.ctx.decline("the scores are masked in ways SDPA's one mask cannot combine (" + " and ".join(sorted(
                {"an added term" if k == "term" else "a -inf fill" if k == "inf" else "a finite fill" for k in kinds}))
                + ")")
        self._mask_in_place = self._final_mask(kinds.pop() if kinds else "")

    def _is_probabilities_layout(self, stmt: ast.stmt) -> bool:
        """`p = p.permute(0, 2, 1)` (or `.transpose(-2, -1)`, `.mT`) of the probabilities, read only by the
        values' product from the left (`bmm(v, p)`): the call transposes v and its output instead."""
        if not (self.values_left and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            return False
        name = stmt.targets[0].id
        value = stmt.value
        base = value.func.value if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) else (
            value.value if isinstance(value, ast.Attribute) and value.attr == "mT" else None)
        if not isinstance(base, ast.Name) or base.id not in self._defined_in_range():
            return False
        if isinstance(value, ast.Call):
            assert isinstance(value.func, ast.Attribute)
            dims = [ast.unparse(a) for a in value.args]
            if not ((value.func.attr == "permute" and len(dims) == 3 and dims == ["0", "2", "1"])
                    or (value.func.attr == "transpose" and sorted(dims) in (["-1", "-2"], ["1", "2"]))):
                return False
        try:
            read = self.operand(self.chain.out, 1).strip()
        except AssertionError:
            return False
        later = [n for n in self._walk_func() if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                 and n.lineno > stmt.lineno]
        return read == name and all(n.lineno == self.chain.out.stmt_span.start_line + 1 for n in later)

    def _scores_name(self) -> str | None:
        """The name the softmax reads the scores from, as written (extra `name = name.masked_fill(...)` steps
        the match did not include rebind it)."""
        if not self.chain.softmax.args:
            return None
        try:
            text = self.operand(self.chain.softmax, 0)
        except AssertionError:
            return None
        return text if text.isidentifier() else None

    def _holds_steps(self, stmt: ast.If, scores: str | None) -> bool:
        """Whether an `if` (no else) holds a step of the chain or an extra fill of the scores."""
        end = stmt.end_lineno or stmt.lineno
        return any(stmt.lineno <= line <= end for line in self.matched_lines) or any(
            self._extra_fill(sub, scores) is not None for sub in stmt.body)

    def _extra_fill(self, stmt: ast.stmt, scores: str | None) -> tuple[str, str] | None:
        """`scores = scores.masked_fill(cond, value)` (or `scores.masked_fill_(cond, value)`) that the match did
        not include, between the product and the softmax: ("inf" / "finite", cond's text). None otherwise."""
        if scores is None or stmt.lineno in self.matched_lines:
            return None
        call = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == scores and isinstance(stmt.value, ast.Call):
            call, method = stmt.value, "masked_fill"
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call, method = stmt.value, "masked_fill_"
        if call is None or not (isinstance(call.func, ast.Attribute) and call.func.attr == method
                                and isinstance(call.func.value, ast.Name) and call.func.value.id == scores
                                and len(call.args) == 2 and not call.keywords):
            return None
        if not (self.chain.scores.stmt_span.start_line + 1 < stmt.lineno < self.chain.softmax.stmt_span.start_line + 1):
            return None
        cond = self.ctx.text_index.segment(call.args[0]) or ast.unparse(call.args[0])
        fill = self.ctx.text_index.segment(call.args[1]) or ast.unparse(call.args[1])
        return self._fill_kind(fill), cond

    def _dropped_fills(self) -> set[ast.stmt]:
        """`name = <fill>` statements of the range that read the chain's values (only their `dtype`) and whose
        name only the fills read: the helper or SDPA's mask stands for the fill, so they go with the steps."""
        steps = self._defined_in_range()
        fills: set[str] = set()
        for op in (self.chain.mask,):
            if op is not None and op.target == "masked_fill" and len(op.args) == 3:
                fills.add(self.operand(op, 2).strip())
        scores = self._scores_name()
        for stmt in self.range:
            for sub in [stmt, *(stmt.body if isinstance(stmt, ast.If) else [])]:
                extra = sub if isinstance(sub, ast.Assign | ast.Expr) else None
                call = extra.value if extra is not None else None
                if isinstance(call, ast.Call) and self._extra_fill(extra, scores) is not None:  # type: ignore[arg-type]
                    fills.add(ast.unparse(call.args[1]))
        dropped: set[ast.stmt] = set()
        for stmt in self.range:
            for sub in [stmt, *(stmt.body if isinstance(stmt, ast.If) and not stmt.orelse else [])]:
                if not (isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name)
                        and sub.targets[0].id in fills):
                    continue
                reads = _chain_reads(sub.value, steps)
                if not reads or any(kind != "dtype" for kind in reads):
                    continue
                name = sub.targets[0].id
                uses = [n for n in self._walk_func() if isinstance(n, ast.Name) and n.id == name
                        and isinstance(n.ctx, ast.Load)]
                end = self.range[-1].end_lineno or self.range[-1].lineno
                # read only as a fill of this chain's steps: a fill elsewhere would lose its value
                fill_uses = [n for n in uses if self._reads_as_fill(n) and sub.lineno < n.lineno <= end]
                if len(uses) != len(fill_uses):
                    continue
                dropped.add(sub)
        return dropped

    def _reads_as_fill(self, name: ast.Name) -> bool:
        """Whether a read of a name is the fill value of a `masked_fill` call."""
        parent = self._parent_of().get(name)
        return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
                and parent.func.attr in ("masked_fill", "masked_fill_") and len(parent.args) == 2
                and parent.args[1] is name)

    def _bind_steps(self, stmt: ast.stmt, conditional: bool) -> None:
        """The mask steps a matched statement holds, as bindings of the mask at that statement."""
        for op in self._mask_ops():
            if op.stmt_span.start_line + 1 != stmt.lineno:
                continue
            if op.target == "masked_fill":
                if len(op.args) != 3 or op.kwargs:
                    self.ctx.decline(f"`{self.ctx.text(op.span)}` is not masked_fill(condition, value)")
                self._bind(self._fill_kind(self.operand(op, 2)), self.operand(op, 1), stmt.lineno, conditional)
            else:
                self._bind("term", self._term_text(op), stmt.lineno, conditional)

    def _mask_ops(self) -> list[Op]:
        mask = self.chain.mask
        return [mask, *self.chain.biases] if mask is not None else []

    def _bind(self, kind: str, text: str, line: int, conditional: bool) -> None:
        """Accumulate one mask step into the mask variable, at the step's place."""
        steps = self._defined_in_range()
        read = _names_read(text)
        if read & steps:
            self.ctx.decline(f"the mask `{text}` reads `{min(read & steps)}`, which the chain computes; SDPA's mask "
                             "cannot depend on the scores")
        self._masks.append((kind, text, line, conditional))
        if not self._mask_var:
            self._mask_var = self._fresh_local("attn_bias" if kind == "term" else "masked")
        var, join = self._mask_var, "+" if kind == "term" else "|"
        operand = _paren_sum(text) if kind == "term" else _paren(text)
        if self._mask_state == "none":
            code = f"{var} = {text}"
            if conditional:
                self._chunks.append((f"{var} = None", None))
        elif self._mask_state == "set":
            code = f"{var} = {var} {join} {operand}"
        else:
            code = f"{var} = {text} if {var} is None else {var} {join} {operand}"
        self._mask_state = "maybe" if conditional and self._mask_state != "set" else "set"
        self._chunks.append((code, text))

    def _bind_block(self, stmt: ast.If, scores: str | None, dropped: set[ast.stmt]) -> None:
        """An `if <test>:` (no else) holding mask steps and other statements: kept, each step a binding."""
        steps = self._defined_in_range()
        reads = {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)} & steps
        if reads:
            self.ctx.decline(f"the test of line {stmt.lineno} reads `{min(reads)}`, which the chain computes")
        body_first = stmt.body[0].lineno
        if body_first == stmt.lineno:
            self.ctx.decline(f"line {stmt.lineno} holds a step on the `if` line; rewrite it by hand")
        lines = self.ctx.source.split("\n")
        indent = stmt.col_offset
        header = "\n".join(line[indent:] if line.strip() else "" for line in lines[self._comment_start(stmt):body_first - 1])
        outer = self._chunks
        self._chunks = []
        state = self._mask_state
        for sub in stmt.body:
            end = sub.end_lineno or sub.lineno
            if any(sub.lineno <= line <= end for line in self.matched_lines):
                if sub.lineno not in self.matched_lines or isinstance(sub, ast.If | ast.For | ast.While | ast.With):
                    self.ctx.decline(f"a step of the chain sits deeper inside the `if` of line {stmt.lineno}")
                if not any(op.stmt_span.start_line + 1 == sub.lineno for op in self._mask_ops()) or any(
                        op.stmt_span.start_line + 1 == sub.lineno for op in self.ops if op not in self._mask_ops()):
                    self.ctx.decline(f"a step other than the mask sits under the `if` of line {stmt.lineno}")
                self._bind_steps(sub, conditional=True)
                continue
            if sub in dropped:
                continue
            extra = self._extra_fill(sub, scores)
            if extra is not None:
                self._bind(extra[0], extra[1], sub.lineno, conditional=True)
                continue
            self._keep(sub)
        inner = self._chunks
        self._chunks = outer
        pre = [c for c in inner if c[0].endswith(" = None") and c[1] is None and state == "none"]
        body = [c for c in inner if c not in pre]
        self._chunks.extend(pre)
        text = header + "\n" + "\n".join(textwrap.indent(c[0], "    ") for c in body)
        self._chunks.append((text, None))

    def _keep(self, stmt: ast.stmt) -> None:
        """A statement between the steps that stays where it is: it must read and write no value of the chain
        and leave the function only through the chain's end."""
        steps = self._defined_in_range()
        first = ast.unparse(stmt).splitlines()[0]
        for node in ast.walk(stmt):
            if isinstance(node, ast.Return | ast.Yield | ast.YieldFrom | ast.Break | ast.Continue | ast.Global
                          | ast.Nonlocal | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Await):
                self.ctx.decline(f"line {stmt.lineno} (`{first}`) sits between the chain's steps and changes where "
                                 "the function goes; rewrite it by hand")
            if isinstance(node, ast.Name) and node.id in steps:
                what = "reads" if isinstance(node.ctx, ast.Load) else "rebinds"
                self.ctx.decline(f"line {stmt.lineno} (`{first}`) sits between the chain's steps and {what} "
                                 f"`{node.id}`, a value of the chain; it would be lost")
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                self._writes.append((node.id, node.lineno))
            elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
                root = _root_name(node)
                if root is not None:
                    self._writes.append((root, node.lineno))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
                root = _root_name(node.func.value)
                if root is not None:
                    self._writes.append((root, node.lineno))  # `q.mul_(2)` changes q in place
            elif isinstance(node, ast.keyword) and node.arg == "out":
                self.ctx.decline(f"line {stmt.lineno} (`{first}`) writes into a tensor (`out=`) between the "
                                 "chain's steps; rewrite it by hand")
        self._chunks.append((self._source_of(stmt), None))

    def _source_of(self, stmt: ast.stmt) -> str:
        """A statement's lines as written, with the comment lines just above it, dedented to its block."""
        lines = self.ctx.source.split("\n")
        first = self._comment_start(stmt)
        indent = stmt.col_offset
        last = (stmt.end_lineno or stmt.lineno) - 1
        for line in lines[first:last + 1]:
            if line.strip() and len(line) - len(line.lstrip()) < indent:
                self.ctx.decline(f"line {stmt.lineno} has a line indented less than its block (a multi-line "
                                 "string?); it cannot be kept unchanged")
        return "\n".join(line[indent:] if line.strip() else "" for line in lines[first:last + 1])

    def _comment_start(self, stmt: ast.stmt) -> int:
        """The 0-based first line of a kept statement with the comment lines just above it (inside the range)."""
        lines = self.ctx.source.split("\n")
        first = stmt.lineno - 1
        while first > self.range[0].lineno - 1 and (not lines[first - 1].strip()
                                                     or lines[first - 1].strip().startswith("#")):
            first -= 1
        while first < stmt.lineno - 1 and not lines[first].strip():
            first += 1
        return first

    def _final_mask(self, kind: str) -> tuple[str, str]:
        """The call's mask once every step is bound: inlined when there is one unconditional step whose names
        nothing rebinds after it, else the mask variable."""
        if not self._masks:
            return "", ""
        masks = self._masks
        text = self._mask_var
        maybe_none = self._mask_state == "maybe"
        if len(masks) == 1 and not masks[0][3]:
            _, only, line, _ = masks[0]
            names = {n.id for n in ast.walk(ast.parse(only, mode="eval").body) if isinstance(n, ast.Name)}
            if not any(n in names and at >= line for n, at in self._stores_in_range()):
                self._chunks = [c for c in self._chunks if c[1] != only]
                text = only
        if kind == "term":
            return "attn_mask", text
        if kind == "finite":
            return "masked", text
        return "attn_mask", (f"None if {text} is None else ~{_paren(text)}" if maybe_none else f"~{_paren(text)}")

    def _stores_in_range(self) -> list[tuple[str, int]]:
        """Every (name, line) a statement of the range before its last binds or changes in place."""
        out = list(self._writes)
        for stmt in self.range[:-1]:
            for node in walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                    out.append((node.id, node.lineno))
        return out

    def check_read_where_written(self, sources: list[tuple[str, Op]]) -> None:
        """Each input of the call (q, k, v, the scale, the dropout) is read at the end of the range, where the
        step it comes from read it earlier: decline when a statement at or after that step rebinds (or changes
        in place) a name it reads."""
        stores = self._stores_in_range()
        for text, op in sources:
            body = text.split("=", 1)[1] if _is_keyword(text) else text
            names = _names_read(body)  # none when it does not parse: nothing to check
            line = op.stmt_span.start_line + 1
            for name, at in stores:
                if name in names and at >= line:
                    self.ctx.decline(f"`{name}` is rebound on line {at}, after the chain reads it on line {line}; one "
                                     "call at the end would read the new value")

    def in_place_text(self) -> str:
        """The rewritten statements before the call (each ending with a newline)."""
        return "".join(text + "\n" for text, _ in self._chunks)

    def _fresh_local(self, base: str) -> str:
        """A name the function does not use (nor the file: `ctx.fresh_name`)."""
        used = {n.id for n in self._walk_func() if isinstance(n, ast.Name)}
        used |= {a.arg for a in self._walk_func() if isinstance(a, ast.arg)}
        name = base
        while name in used:
            name += "_"
        return name

    def scale(self) -> str:
        """SDPA's `scale`: 1/c for `/ c`, c for `* c`, 1.0 when the chain does not scale."""
        op = self.chain.scale
        if op is None or self.scaled_outside:  # the keys are scaled where they are laid out: `k` holds the scale
            return "1.0"
        scores_out = set(self.chain.scores.outputs)
        index = 1 if isinstance(op.args[0], Ref) and op.args[0].name in scores_out else 0
        if op.target == "/" and index == 0:
            self.ctx.decline("the scores are the divisor, not the dividend")
        value = op.args[index]
        text = self.operand(op, index)
        if isinstance(value, Ref) and not _is_plain_number(text):
            self.ctx.decline(f"the scale `{text}` is a value computed at run time, SDPA needs a float")
        self._refuse_tensor_attributes(text)
        return f"1.0 / {_paren(text)}" if op.target == "/" else text

    def _refuse_tensor_attributes(self, text: str) -> None:
        """Decline when the scale reads a `self.` attribute the class binds to a call that makes no Python
        number (a learned `nn.Parameter` temperature, a tensor) or registers as a buffer or parameter:
        SDPA's `scale` is a Python float."""
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            return
        attrs = {sub.attr for sub in ast.walk(node) if isinstance(sub, ast.Attribute)
                 and isinstance(sub.value, ast.Name) and sub.value.id == "self"}
        cls = self._class_node()
        for sub in ast.walk(cls) if cls is not None and attrs else ():
            if isinstance(sub, ast.Assign | ast.AnnAssign) and sub.value is not None:
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                named = {t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                         and t.value.id == "self"} & attrs
                calls = [c for c in ast.walk(sub.value) if isinstance(c, ast.Call) and not _number_call(c)]
                if named and calls:  # `nn.Parameter(...)`, `torch.tensor(...)`; `qk_scale or d ** -0.5` is fine
                    self.ctx.decline(f"the scale `self.{min(named)}` is bound to `{ast.unparse(sub.value)[:60]}` "
                                     f"(line {sub.lineno}), not a number; SDPA's scale must be a Python float")
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr in ("register_buffer", "register_parameter") and sub.args \
                    and isinstance(sub.args[0], ast.Constant) and sub.args[0].value in attrs:
                self.ctx.decline(f"the scale `self.{sub.args[0].value}` is a registered tensor (line {sub.lineno}); "
                                 "SDPA's scale must be a Python float")

    def _class_node(self) -> ast.ClassDef | None:
        """The class holding the chain's function."""
        return next(
            (
                n
                for n in self.ctx.text_index.statements(self.tree)
                if isinstance(n, ast.ClassDef) and n.lineno <= self.func.lineno <= (n.end_lineno or n.lineno)
            ),
            None,
        )

    def dropout_kwarg(self) -> str:
        op = self.chain.dropout
        if op is None:
            return ""
        if op.kind == OpKind.MODULE:
            return f"dropout_p={op.target}.p if self.training else 0.0" if self._is_dropout(op.target) else ""
        node, wrapped = _expr_parts(self.ctx.text(op.span))
        assert isinstance(node, ast.Call)
        kw = {k.arg: ast.get_source_segment(wrapped, k.value) for k in node.keywords if k.arg}
        p = kw.get("p") or (ast.get_source_segment(wrapped, node.args[1]) if len(node.args) > 1 else "0.5")
        training = kw.get("training") or (
            ast.get_source_segment(wrapped, node.args[2]) if len(node.args) > 2 else "True"
        )
        return f"dropout_p={p} if {training} else 0.0"

    def _is_dropout(self, target: str) -> bool:
        """Whether `self.x` is bound to `nn.Dropout` in the class's `__init__` (else decline)."""
        attr = target.removeprefix("self.")
        for binding in self.ctx.finding.match.bindings:
            if binding.attr == attr:
                return True
        cls = self._class_node()
        for node in ast.walk(cls) if cls is not None else ():
            if (
                isinstance(node, ast.Assign)
                and any(ast.unparse(t) == target for t in node.targets)
                and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func).split(".")[-1] == "Dropout"
            ):
                return True
        self.ctx.decline(f"`{target}` is not an nn.Dropout bound in __init__; its drop rate is unknown")
        return False


def _chain_reads(expr: ast.expr, names: set[str]) -> list[str]:
    """How `expr` reads each of `names` it reads: "dtype" for `name.dtype`, "value" for any other read."""
    parents = {child: node for node in ast.walk(expr) for child in ast.iter_child_nodes(node)}
    out = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in names:
            parent = parents.get(node)
            out.append("dtype" if isinstance(parent, ast.Attribute) and parent.attr == "dtype" else "value")
    return out


def _root_name(node: ast.expr) -> str | None:
    """The name an attribute or subscript chain starts from (`q` for `q[0].data`), else None."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_layout(transpose: Op, scores: Op) -> bool:
    """Whether the chain's kᵀ is a layout the source wrote without a transpose: the keys' last two axes swapped
    by a `permute` or `rearrange` (the canonical pass reads it as that layout and a transpose), or a local
    already laid out (..., d, n) that the product reads as it is (two transposes inserted at the product)."""
    origin = transpose.origin
    if origin is None:
        return False
    if origin.target in ("permute", "einops.rearrange"):
        return True
    return (origin.kind.value, origin.target) in _PRODUCTS and transpose.span == scores.span


def _block_with(body: list[ast.stmt], line: int) -> list[ast.stmt] | None:
    """The statement list (this one or a nested one) holding a statement that starts on `line`."""
    for stmt in body:
        if stmt.lineno == line:
            return body
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    found = _block_with(inner, line)
                    if found is not None:
                        return found
            return None
    return None


def _stmt_span(source: str, stmt: ast.stmt) -> Span:
    """The internal span (0-based lines, code-point columns) of an `ast` statement (UTF-8 columns)."""
    lines = source.split("\n")

    def col(line: int, byte_col: int) -> int:
        return len(lines[line].encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))

    end_line = (stmt.end_lineno or stmt.lineno) - 1
    return Span(
        stmt.lineno - 1,
        col(stmt.lineno - 1, stmt.col_offset),
        end_line,
        col(end_line, stmt.end_col_offset or 0),
    )


def _is_plain_number(text: str) -> bool:
    """A scale computed from numbers, settings and sizes (`math.sqrt(k.size(-1))`), not a tensor op."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    allowed = (
        ast.Constant,
        ast.BinOp,
        ast.UnaryOp,
        ast.operator,
        ast.unaryop,
        ast.Call,
        ast.Attribute,
        ast.Name,
        ast.Load,
        ast.Subscript,
        ast.Slice,
    )
    for sub in ast.walk(node):
        if not isinstance(sub, allowed):
            return False
        if isinstance(sub, ast.Call) and not _number_call(sub):
            return False
        if isinstance(sub, ast.Subscript) and not (
            isinstance(sub.value, ast.Attribute) and sub.value.attr == "shape"
        ):
            return False
    return True


def _number_call(call: ast.Call) -> bool:
    """`math.*(...)`, `float/int/len(...)` and `x.size(...)` / `x.dim()` give Python numbers."""
    func = ast.unparse(call.func)
    if func.startswith("math.") or func in ("float", "int", "len"):
        return True
    return isinstance(call.func, ast.Attribute) and call.func.attr in ("size", "dim")


def _paren_test(text: str) -> str:
    """A condition as an operand of `or`."""
    node = ast.parse(text, mode="eval").body
    return f"({text})" if isinstance(node, ast.BoolOp | ast.IfExp | ast.Lambda | ast.NamedExpr) else text


def _is_flag(node: ast.expr) -> bool:
    """`output_attentions` (the parameter), as a condition."""
    return isinstance(node, ast.Name) and node.id == "output_attentions"


def _is_keyword(text: str) -> bool:
    """Whether a call argument's text is `name=value`."""
    head = text.split("=", 1)[0]
    return "=" in text and head.isidentifier() and not text.split("=", 1)[1].startswith("=")


def _paren_sum(text: str) -> str:
    """A term as an operand of `+` (parenthesised unless it binds at least as tightly)."""
    node = ast.parse(text, mode="eval").body
    loose = isinstance(node, ast.BoolOp | ast.IfExp | ast.Lambda | ast.NamedExpr | ast.Compare) or (
        isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Mult | ast.Div | ast.MatMult | ast.Pow
                                                       | ast.FloorDiv | ast.Mod | ast.Add))
    return f"({text})" if loose else text


def _paren(text: str) -> str:
    node = ast.parse(text, mode="eval").body
    return text if isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Constant) else f"({text})"


def _names_read(text: str) -> set[str]:
    """The names an expression's text reads (none when it does not parse as an expression)."""
    try:
        return {n.id for n in ast.walk(ast.parse(text, mode="eval").body) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()
