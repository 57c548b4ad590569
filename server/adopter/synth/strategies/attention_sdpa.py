"""Family 10: a hand-written attention chain replaced by one `scaled_dot_product_attention` call.

The chain is `matmul(q, kᵀ)` → optional scale (`/ c` or `* c`) → optional mask (a `masked_fill`, or one or
more additive terms) → softmax over the last dim → optional dropout → `matmul(·, v)`. The strategy rebuilds
the call from the source text of the chain's external inputs (q, k, v, mask, scale, dropout) and declines
whenever the rewrite could change what the code computes: the probabilities or scores are used outside the
chain (returned, multiplied by a head mask), a statement between the steps reads the scores, an added term is
computed from the scores, or the scale is a tensor computed at run time. SDPA adds a float `attn_mask` to the
scaled scores, so several additive terms (a relative position bias and a shared bias) are summed into that one
mask, each under the `if` it was added under. Other statements between the steps stay where they are, each mask
step becoming a binding of the mask in its place (`attention_mask_plan`); a large finite fill goes through
`attention_masks.masked_fill_attention`; keys laid out (..., d, n), values multiplied from the left and
einsums in another axis order are transposed to SDPA's layout (`attention_layouts`). The source around the
chain is read by `attention_site`; this module classifies the chain, checks the site and writes the call.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence

from adopter.analysis.canonical.normalise import layouts_by_path, matmul_plan, summed_axes
from adopter.dsl.types import Expr, Op, OpKind, Ref
from adopter.engine.split_sites import product_outside, product_outside_reason
from adopter.parsed import walk
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.attention_layouts import einsum_equation, einsum_layout
from adopter.synth.strategies.attention_mask_plan import MaskPlan
from adopter.synth.strategies.attention_masks import ensure_helper
from adopter.synth.strategies.attention_site import Chain
from adopter.synth.strategies.attention_text import is_flag, is_keyword, names_read, offset, paren_test

_MATMUL = {(OpKind.FUNCTION, "torch.matmul"), (OpKind.OPERATOR, "@"), (OpKind.METHOD, "matmul")}
_SOFTMAX = {"torch.nn.functional.softmax", "torch.softmax"}
_FP32 = frozenset({"torch.float32", "torch.float"})
_LINE = 100  # longest line the rewritten call may make before it is split one argument per line


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
    if chain.reshapes:
        # open_clip's `attn.view(N, H, L, L) * logit_scale` then `.view(-1, L, L)`: the call would have to take
        # the product in the layout the scale is applied in.
        ctx.decline(f"the scores are reshaped between the steps (`{ctx.text(chain.reshapes[0].span)}`); "
                    "rewrite it by hand")
        return
    if site.in_place:
        sources = [*inputs, *((t, op) for t, op in ((dropout, chain.dropout), (args[-1], chain.scale)) if op)]
        site.check_read_where_written(sources)
    else:
        site.check_inputs_unchanged(args)
    last = chain.out.stmt_span
    text = ctx.statement_text(last)
    start = offset(text, last, chain.out.span.start_line, chain.out.span.start_col)
    end = offset(text, last, chain.out.span.end_line, chain.out.span.end_col)
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
        tests = [paren_test(t) for t in dict.fromkeys(site.fallback)]
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
        elif op.kind == OpKind.METHOD and op.target in ("view", "reshape") and chain.transpose is not None and any(
                isinstance(a, Ref) and a.name in chain.transpose.outputs for a in op.args[:1]):
            # GPT-2's `key.transpose(-1, -2).reshape(-1, dk, k_len)` (heads folded into the batch for baddbmm)
            return "the keys are reshaped after their transpose; rewrite it by hand"
        elif op.kind == OpKind.METHOD and op.target in ("view", "reshape"):
            chain.reshapes.append(op)  # the scores reshaped around the scale (declined after the scale is read)
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
    order = {id(op): i for i, op in enumerate(ops)}  # the match lists the steps in the chain's order
    added = [op for op in (chain.mask, *chain.biases) if op is not None and op.target == "+"]
    scale = chain.scale
    if scale is not None and any(order[id(op)] < order[id(scale)] and any(
            isinstance(a, Ref) and a.name in op.outputs for a in scale.args) for op in added):
        # `(q·kᵀ + pos) / c` (Transformer-XL's relative-position scores): SDPA adds its mask after the scale,
        # so the term would have to be scaled too.
        return "an additive term is added before the scale (relative-position scores); rewrite it by hand"
    extra = [k for k in chain.softmax.kwargs if k.name != "dim"]
    if extra and not (len(extra) == 1 and extra[0].name == "dtype" and isinstance(extra[0].value, Expr)
                      and extra[0].value.text in _FP32):
        return f"the softmax takes `{', '.join(k.name for k in extra)}` other than an fp32 dtype, which SDPA does not"
    scores_eq, out_eq = einsum_equation(chain.scores), einsum_equation(chain.out)
    for equation in (scores_eq, out_eq):
        if equation is not None and summed_axes(equation) is not None:
            # bitnet's grouped-query scores `"b g h n d, b h s d -> b h n s"` sum the query groups away: one
            # SDPA call would need the queries summed first, which changes their rounding.
            return (f"the einsum `{equation}` sums an axis of one operand away (grouped-query scores summed over "
                    "the groups); scaled_dot_product_attention does not, so rewrite it by hand")
        if equation is not None and layouts_by_path(equation):
            # audiocraft's `f"{query_layout},{key_layout}-> b h t k"`, the layout chosen by an `if`: the chain
            # was read on one path; one SDPA call would need the tensors permuted differently on each.
            return (f"the einsum's equation is chosen at run time (`{equation}`), a different axis order on "
                    "each path; rewrite it by hand")
    outside = product_outside((chain.scores, chain.out), chain.softmax)
    if outside is not None:
        # squeezebert's `self.matmul_qk(q, k)`, a module whose forward is `return torch.matmul(a, b)`: the
        # product's statement is the callee's, shared by every call of it; one call cannot stand in there.
        return product_outside_reason(outside)
    for plan, equation in (((False, True), scores_eq), ((False, False), out_eq)):
        if equation is not None and (matmul_plan(equation) or (None, None))[:2] != plan:
            # q·kᵀ must read q and k as (..., n, d), and probs·v read v as (..., n, d), as SDPA takes them;
            # an einsum naming every axis in another order is permuted to that layout (and the output back).
            layout = einsum_layout(scores_eq, out_eq)
            if layout is None:
                return (f"the einsum `{equation}` lays its operands out differently from what "
                        "scaled_dot_product_attention takes; rewrite it by hand")
            chain.perms, chain.out_perm = layout
            break
    return chain


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


class _Site(MaskPlan):
    """The source around one chain: the block it lives in, and the texts of its inputs. The checks that decide whether SDPA may stand in."""

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
                    and isinstance(stmt.test.op, ast.Not) and is_flag(stmt.test.operand)
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
                if isinstance(parent, ast.IfExp | ast.If) and is_flag(parent.test) and (
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
                expr = ast.parse(text.split("=", 1)[1] if is_keyword(text) else text, mode="eval").body
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

    def check_read_where_written(self, sources: list[tuple[str, Op]]) -> None:
        """Each input of the call (q, k, v, the scale, the dropout) is read at the end of the range, where the
        step it comes from read it earlier: decline when a statement at or after that step rebinds (or changes
        in place) a name it reads."""
        stores = self._stores_in_range()
        for text, op in sources:
            body = text.split("=", 1)[1] if is_keyword(text) else text
            names = names_read(body)  # none when it does not parse: nothing to check
            line = op.stmt_span.start_line + 1
            for name, at in stores:
                if name in names and at >= line:
                    self.ctx.decline(f"`{name}` is rebound on line {at}, after the chain reads it on line {line}; one "
                                     "call at the end would read the new value")
