"""How the SDPA rewrite passes an attention chain's mask: the additive terms summed, the fills, the mask built in place."""

from __future__ import annotations

import ast
import textwrap

from adopter.analysis.canonical.normalise import swaps_last_two
from adopter.dsl.types import Op, Ref
from adopter.synth.strategies.attention_masks import fill_kind
from adopter.synth.strategies.attention_site import SiteSource
from adopter.synth.strategies.attention_text import chain_reads, names_read, paren, paren_sum, root_name


class MaskPlan(SiteSource):
    """An attention site's mask: what SDPA's `attn_mask` is, and the statements that build it in place."""

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
        names = names_read(text)
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
            return " + ".join(paren_sum(text) for text, _ in steps)
        name = self._bias_name()
        lines = [f"{name} = None"] if steps[0][1] is not None else []
        state = "none"  # what the name holds before the step: None, a tensor, or either
        for text, guard in steps:
            step = {"none": f"{name} = {text}", "set": f"{name} = {name} + {paren_sum(text)}",
                    "maybe": f"{name} = {text} if {name} is None else {name} + {paren_sum(text)}"}[state]
            if guard is None:
                lines.append(step)
                state = "set"
            else:
                lines += [f"if {guard}:", f"    {step}"]
                state = "set" if state == "set" else "maybe"
        self.prelude = "\n".join(lines) + "\n"
        return name

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
        return "attn_mask", (f"None if {cond} is None else ~{paren(cond)}" if self.mask_guarded
                             else f"~{paren(cond)}")

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
        rearranged = self._transposing_rearrange(value)
        if rearranged is not None:
            base = rearranged
        if not isinstance(base, ast.Name) or base.id not in self._defined_in_range():
            return False
        if isinstance(value, ast.Call) and rearranged is None:
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

    def _transposing_rearrange(self, value: ast.expr) -> ast.expr | None:
        """The tensor of `rearrange(p, "b i j -> b j i")` (einops' function, under the name this file imports it
        as), a swap of the last two axes; else None."""
        if not (isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords
                and isinstance(value.args[1], ast.Constant) and isinstance(value.args[1].value, str)):
            return None
        imports = self.ctx.text_index.imports()
        names = {imports.get(("einops", "rearrange")), *(f"{imports[('einops', None)]}.rearrange"
                                                         for _ in [0] if ("einops", None) in imports)}
        if ast.unparse(value.func) not in names or not swaps_last_two(ast.unparse(value.args[1])):
            return None
        return value.args[0]

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
                reads = chain_reads(sub.value, steps)
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
        read = names_read(text)
        if read & steps:
            self.ctx.decline(f"the mask `{text}` reads `{min(read & steps)}`, which the chain computes; SDPA's mask "
                             "cannot depend on the scores")
        self._masks.append((kind, text, line, conditional))
        if not self._mask_var:
            self._mask_var = self._fresh_local("attn_bias" if kind == "term" else "masked")
        var, join = self._mask_var, "+" if kind == "term" else "|"
        operand = paren_sum(text) if kind == "term" else paren(text)
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
                root = root_name(node)
                if root is not None:
                    self._writes.append((root, node.lineno))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
                root = root_name(node.func.value)
                if root is not None:
                    self._writes.append((root, node.lineno))  # `q.mul_(2)` changes q in place
            elif isinstance(node, ast.keyword) and node.arg == "out":
                self.ctx.decline(f"line {stmt.lineno} (`{first}`) writes into a tensor (`out=`) between the "
                                 "chain's steps; rewrite it by hand")
        self._chunks.append((self._source_of(stmt), None))

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
        return "attn_mask", (f"None if {text} is None else ~{paren(text)}" if maybe_none else f"~{paren(text)}")
