"""The source around one matched attention chain: its block, the statements it spans, the texts of its inputs."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from adopter.analysis.names.bias_forward import is_bias_term
from adopter.dsl.types import Expr, Op, OpKind, Ref, Span
from adopter.parsed import block_with, walk
from adopter.synth.registry import SynthContext
from adopter.synth.strategies.attention_layouts import einsum_equation, is_layout, permuted, product_operands
from adopter.synth.strategies.attention_text import expr_parts, is_plain_number, number_call, paren

_LAST_TWO = ({"-1", "-2"}, {"2", "3"})


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
    reshapes: list[Op] = field(default_factory=list)  # `view`/`reshape` of the scores before or after the scale
    # einsum products in another axis order: how to permute q, k, v to SDPA's layout, and its output back
    perms: list[tuple[int, ...] | None] = field(default_factory=lambda: [None, None, None])
    out_perm: tuple[int, ...] | None = None


class SiteSource:
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
        layout = chain.transpose.stmt_span if chain.transpose is not None and is_layout(
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
        # An einsum that is that product (`einsum("bij,bjk->bik", v, p)`, CompVis) reads the same way.
        origin = chain.out.origin
        operands = product_operands(origin) if origin is not None else ()
        self.values_left = bool(
            len(operands) == 2 and len(chain.out.args) == 2
            and operands[0] != chain.out.args[0] and operands[1] != chain.out.args[1])
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
            found = block_with(node.body, line)
            if found is not None and (best is None or node.lineno >= best[0].lineno):
                best = (node, found)
        if best is None:
            self.ctx.decline("the chain is not inside a function body")
            raise AssertionError("unreachable")
        return best

    def kept_text(self) -> str:
        """The source lines of the range (comments between included), dedented to the block."""
        lines = self.ctx.source.split("\n")
        first, last = self.range[0].lineno - 1, (self.range[-1].end_lineno or self.range[-1].lineno) - 1
        indent = self.range[0].col_offset
        return "\n".join(line[indent:] if line.strip() else "" for line in lines[first:last + 1])

    def _byte_col(self, line: int, col: int) -> int:
        return len(self.ctx.source.split("\n")[line][:col].encode("utf-8"))

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

    def range_spans(self) -> list[Span]:
        """The spans of the first and last statements replaced (the framework replaces first .. last)."""
        return [self.ctx.text_index.span(self.range[0]), self.chain.out.stmt_span]

    def operand(self, op: Op, index: int) -> str:
        """The source text of the `index`-th value argument of `op` (the receiver is 0 for methods)."""
        if any(isinstance(a, Expr) and is_bias_term(a.text) for a in op.args):
            self.ctx.decline(f"`{self.ctx.text(op.span)}` adds a bias its submodule's forward computes; it is no "
                             "value of this function to pass as SDPA's `attn_mask`: rewrite by hand")
        node, wrapped = expr_parts(self.ctx.text(op.span))
        parts: list[ast.expr]
        if isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Call):
            parts = list(node.args)
            origin = op.origin or op
            if origin.kind == OpKind.METHOD and isinstance(node.func, ast.Attribute):
                parts = [node.func.value, *parts]
            elif einsum_equation(op) is not None:
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
        return permuted(text, self.chain.perms[index])

    def output_permutation(self) -> str:
        """What brings SDPA's output to the order the probabilities' einsum wrote (empty when it is SDPA's), or
        transposes it back when the values multiplied the transposed probabilities from the left."""
        if self.values_left:
            return ".transpose(-2, -1)"
        return permuted("x", self.chain.out_perm)[1:] if self.chain.out_perm is not None else ""

    def value(self) -> str:
        """v as SDPA takes it: the product's right operand, or, for `bmm(v, pᵀ)` (channels-first values
        multiplied from the left by the transposed probabilities, which is `(p @ vᵀ)ᵀ`), `v.transpose(-2, -1)`."""
        if self.values_left:
            return f"{paren(self.operand(self.chain.out, 0))}.transpose(-2, -1)"
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
        if is_layout(producer, chain.scores) or (self.scaled_outside and chain.transpose is not None
                                                  and is_layout(chain.transpose, chain.scores)):
            # Keys laid out (..., d, n) (`k.permute(0, 2, 3, 1)`, `rearrange(k, "... -> b h d n")`, a local already
            # channels-first): the product reads `kᵀ` as written, and SDPA's k is its transpose.
            return f"{paren(self.operand(chain.scores, 1))}.transpose(-2, -1)"
        if producer.target == "transpose":
            dims = {a.text for a in producer.args[1:] if isinstance(a, Expr)}
            if len(producer.args) != 3 or dims not in _LAST_TWO:
                self.ctx.decline(f"`{self.ctx.text(producer.span)}` does not swap the last two dims")
        return self.operand(producer, 0)

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

    def _stores_in_range(self) -> list[tuple[str, int]]:
        """Every (name, line) a statement of the range before its last binds or changes in place."""
        out = list(self._writes)
        for stmt in self.range[:-1]:
            for node in walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                    out.append((node.id, node.lineno))
        return out

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
        scores_out = set(self.chain.scores.outputs).union(*(r.outputs for r in self.chain.reshapes))
        index = 1 if isinstance(op.args[0], Ref) and op.args[0].name in scores_out else 0
        if op.target == "/" and index == 0:
            self.ctx.decline("the scores are the divisor, not the dividend")
        value = op.args[index]
        text = self.operand(op, index)
        if isinstance(value, Ref) and not is_plain_number(text):
            self.ctx.decline(f"the scale `{text}` is a value computed at run time, SDPA needs a float")
        self._refuse_tensor_attributes(text)
        self._refuse_tensor_locals(text, set())
        return f"1.0 / {paren(text)}" if op.target == "/" else text

    def _refuse_tensor_locals(self, text: str, seen: set[str]) -> None:
        """Decline when the scale reads a local the function binds to something other than a number
        (open_clip's cosine attention: `logit_scale = torch.clamp(self.logit_scale, max=m).exp()`, a learned
        per-head tensor): SDPA's `scale` is a Python float. Each binding of the local is read the same way."""
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            return
        # a name read as a value (`logit_scale`), not one whose attribute is read (`k.size(-1)`, `x.shape[-1]`:
        # sizes, which `is_plain_number` judges) nor a called function (`math.sqrt`)
        under = {id(sub.value) for sub in ast.walk(node) if isinstance(sub, ast.Attribute)}
        under |= {id(sub.func) for sub in ast.walk(node) if isinstance(sub, ast.Call)}
        names = {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and id(sub) not in under} - seen
        seen |= names
        for sub in self._walk_func() if names else ():
            if not isinstance(sub, ast.Assign | ast.AnnAssign | ast.AugAssign) or sub.value is None:
                continue
            value = sub.value
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            if not any(isinstance(t, ast.Name) and t.id in names for t in targets):
                continue
            bound = ast.unparse(value)
            if not is_plain_number(bound):
                name = next(t.id for t in targets if isinstance(t, ast.Name) and t.id in names)
                shown = bound if len(bound) <= 60 else bound[:57] + "..."
                self.ctx.decline(f"the scale `{name}` is bound to `{shown}` (line {sub.lineno}), not a "
                                 "number; SDPA's scale must be a Python float")
            self._refuse_tensor_attributes(bound)
            self._refuse_tensor_locals(bound, seen)

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
                # the calls only where a scale attribute is bound (`number_call` unparses each call)
                calls = [c for c in ast.walk(sub.value) if isinstance(c, ast.Call) and not number_call(c)] if named else []
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
        node, wrapped = expr_parts(self.ctx.text(op.span))
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
