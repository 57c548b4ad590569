"""Statements in the flow analysis: assignments, augmented assignments, returns and the walk over a body.

`if` and loops are handed to `ControlFlow` (`control.py`), expressions to `ExpressionFlow`. A
`return` inside an inlined callee binds the call's outputs: when it returns one of the callee's locals,
the ops that computed it are renamed to write the output directly (`renaming.py`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.canonical.axes import trailing_axes
from adopter.analysis.canonical.ranks import STARRED_UNPACK
from adopter.analysis.canonical.spellings import CHOOSE, LOCAL_FUNCTIONS
from adopter.analysis.flow.aliases import alias_reading
from adopter.analysis.flow.calls import argument_nodes, small_helper, written_by_adopter
from adopter.analysis.flow.fstrings import bind_constant
from adopter.analysis.flow.parts import Calls, Control, Expressions, Statements
from adopter.analysis.flow.renaming import rename_in_callee
from adopter.analysis.flow.returns import tuple_items
from adopter.analysis.flow.state import (
    FUNCTION_OP,
    IDENTIFIER,
    OPERATOR_OP,
    EnvVal,
    FlowState,
    LocalFunction,
    ModuleFunction,
    Submodule,
    as_value,
)
from adopter.analysis.names.assignments import element_pairs, read_assignment, target_leaves
from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import Branch, Expr, Loop, Op, Ref, Return, Stmt, Value

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_SPLATS = ("list_splat_pattern", "list_splat")  # `*rest` as a target, in any of its spellings


class StatementFlow(Statements):
    """Walks the statements of the current frame's body, binding names and emitting ops."""

    control: Control  # set by FlowAnalysis: `if` and loops hold bodies walked here
    calls: Calls  # set by FlowAnalysis: `map(f, (a, b))` inlines `f` for each element

    def __init__(self, state: FlowState, expressions: Expressions) -> None:
        self.state = state
        self.src = state.src
        self.expressions = expressions

    def run(self, stmts: list[Node]) -> None:
        """Walk a body until it ends or the current path stops (a `return` or `raise`)."""
        state = self.state
        i = 0
        while i < len(stmts):
            if state.terminated:
                return
            stmt = stmts[i]
            i += 1
            if stmt.type == "if_statement":
                if self.control.branch(stmt, stmts[i:]):
                    return
                continue
            self._stmt(stmt)

    def statement(self, stmt: Node, rest: list[Node]) -> bool:
        """Walk one statement of a body (`run`'s step); `rest` are the statements after it. True when the
        statement walked `rest` too (an `if` inside an inlined callee: `Control.branch`)."""
        if stmt.type == "if_statement":
            return self.control.branch(stmt, rest)
        self._stmt(stmt)
        return False

    def _stmt(self, stmt: Node) -> None:
        state = self.state
        kind = stmt.type
        if kind == "expression_statement":
            state.stmt_node, state.stmt_span = stmt, None
            for expr in stmt.named_children:
                self._expression_stmt(expr)
        elif kind == "return_statement":
            state.stmt_node, state.stmt_span = stmt, None
            self._return(stmt)
        elif kind == "raise_statement":
            state.terminated = True
        elif kind == "if_statement":
            self.control.branch(stmt, [])
        elif kind in ("for_statement", "while_statement"):
            self.control.loop(stmt)
        elif kind == "with_statement":
            body = stmt.child_by_field_id(Field.BODY)
            if body is not None:
                self.run(body.named_children)
        elif kind == "try_statement":
            for child in stmt.named_children:
                if child.type == "block":
                    self.run(child.named_children)
                elif child.type in ("else_clause", "finally_clause"):
                    for inner in child.named_children:
                        if inner.type == "block":
                            self.run(inner.named_children)
        elif kind == "function_definition":
            name_node = stmt.child_by_field_id(Field.NAME)
            if name_node is not None:  # a local closure (T5's `shape`/`project`): inlined where called
                name = self.src.text(name_node)
                state.local_functions[stmt.start_byte] = stmt
                state.frame.env[name] = LocalFunction(stmt.start_byte, name)
                state.closure_frames[stmt.start_byte] = state.frame
        elif kind == "decorated_definition":
            name_node = (stmt.child_by_field_id(Field.DEFINITION) or stmt).child_by_field_id(Field.NAME)
            if name_node is not None:  # decorated: we cannot tell what calling it does
                name = self.src.text(name_node)
                state.frame.env[name] = Ref(state.define(name))

    def _expression_stmt(self, expr: Node) -> None:
        kind = expr.type
        if kind == "assignment":
            self._assignment(expr)
        elif kind == "augmented_assignment":
            self._augmented(expr)
        else:
            self.expressions.value(expr)

    def _assignment(self, node: Node) -> None:
        read = read_assignment(node)
        if read is None:
            return
        state, expressions, src = self.state, self.expressions, self.src
        targets, right = read
        flat = target_leaves(targets[0])
        names = _names(flat, src)
        pairs = element_pairs(flat, right)
        # `a, b = x, y`: pairwise, right-hand sides evaluated first.
        if pairs is not None:
            if names is not None:
                used = {m.group(0) for m in IDENTIFIER.finditer(src.text(right))}
                if used.isdisjoint(names):
                    # No target is read on the right: each value can be produced under its target's name.
                    for (t, v_node), name in zip(pairs, names):
                        out = state.define(name)
                        v = expressions.value(v_node, (out,))
                        self._bind_target(t, v, produced=isinstance(v, Ref) and v.name == out)
                    return
            values = [expressions.value(v_node) for _, v_node in pairs]
            for (t, _), v in zip(pairs, values):
                self._bind_target(t, v, produced=False)
            return
        if names is not None and len(flat) > 1 and (mapped := self._mapped(right, len(flat))) is not None:
            # `q, k = map(l2norm, (q, k))`, `q, k, v = map(lambda t: rearrange(t, ...), (q, k, v))`: the
            # function applied to each element in turn, each result under its target's name.
            function, elements = mapped
            inputs: list[Value] = [as_value(expressions.value(e)) for e in elements]
            for t, name, element in zip(flat, names, inputs):
                out = state.define(name)
                result = self._apply(function, element, (out,))
                self._bind_target(t, result, produced=isinstance(result, Ref) and result.name == out)
            return
        if names is not None:
            outs = tuple([state.define(name) for name in names])
            v = expressions.value(right, outs)
            if len(flat) > 1 and any(t.parent is not None and t.parent.type in _SPLATS for t in flat):
                _mark_starred(state.block, outs)
            produced = isinstance(v, Ref) and v.name == outs[0]
            if len(flat) == 1:
                self._bind_target(flat[0], v, produced)
            else:
                for t, name in zip(flat, names):
                    self._bind_target(t, Ref(state.define(name)), True)
            for extra in targets[1:]:
                leaves = target_leaves(extra)
                if produced and len(flat) == 1 and len(leaves) == 1 and leaves[0].type == "identifier":
                    # `k = v = q if kv is None else kv`: one object under both names. The second name is
                    # passed the value by a transparent `choose` (names are not versions: `k = self.key(k)`
                    # rebinds the first before the second is read). A plain name on the right stays unlinked.
                    name = self.src.text(leaves[0])
                    out = state.define(name)
                    state.emit(OPERATOR_OP, CHOOSE[1], (as_value(v),), (), leaves[0], (out,))
                    self._bind_target(leaves[0], Ref(out), produced=True)
                    continue
                for t in leaves:
                    self._bind_target(t, v, produced=False)
            return
        v = expressions.value(right)
        for t in flat:
            self._bind_target(t, v, produced=False)

    def _mapped(self, right: Node, count: int) -> tuple[Node, list[Node]] | None:
        """(function, elements) of `map(f, (a, b, ...))` with `count` elements, where `f` is a lambda of one
        parameter or a same-file function the flow inlines; else None."""
        if right.type != "call" or self.src.text(right.child_by_field_id(Field.FUNCTION) or right) != "map":
            return None
        args = [a for a in argument_nodes(right) if a.type != "comment"]
        if len(args) != 2 or args[1].type not in ("tuple", "list"):
            return None
        elements = [e for e in args[1].named_children if e.type != "comment"]
        if len(elements) != count or any(e.type in ("list_splat", "parenthesized_list_splat") for e in elements):
            return None
        function = args[0]
        if function.type == "lambda":
            ps = function.child_by_field_id(Field.PARAMETERS)
            names = [c for c in (ps.named_children if ps is not None else ())]
            if len(names) != 1 or names[0].type != "identifier" or function.child_by_field_id(Field.BODY) is None:
                return None
            return function, elements
        if function.type == "identifier" and self._helper(self.src.text(function)) is not None:
            return function, elements
        return None

    def _helper(self, name: str) -> Node | None:
        """The same-file function a call of `name` inlines here (as `CallFlow` does), else None."""
        state = self.state
        if state.lookup(name) is not None:
            return None
        function = state.symbols.function_node(name)
        if function is None or (state.class_name is None and not small_helper(function)):
            return None
        return None if written_by_adopter(function, self.src) else function

    def _apply(self, function: Node, v: Value, outs: tuple[str, ...]) -> EnvVal:
        """`function` (a lambda of one parameter or a same-file helper) applied to the value `v`."""
        state = self.state
        if function.type == "lambda":
            ps = function.child_by_field_id(Field.PARAMETERS)
            body = function.child_by_field_id(Field.BODY)
            assert ps is not None and body is not None
            param = self.src.text(ps.named_children[0])
            env = state.frame.env
            saved = env.get(param)
            env[param] = v
            block, start = state.block, len(state.block)
            try:
                return self.expressions.value(body, outs)
            finally:
                if saved is None:
                    env.pop(param, None)
                else:
                    env[param] = saved
                # The lambda's ops share the `map` statement with the other elements' ops: marked, so a
                # rewrite never edits that statement for one of them (`adopter.engine.sites`).
                mark = Op(FUNCTION_OP, "map", (), (), (), self.src.span(function), state.stmt_span
                          or self.src.span(function), ())
                block[start:] = _marked(block[start:], mark)
        name = self.src.text(function)
        helper = self._helper(name)
        assert helper is not None
        return self.calls.inline(helper, name, function, outs, ([v], []))

    def _held_function(self, text: str) -> str | None:
        """The module-level function `self.<attr>` holds (`idioms.function_attributes`), else None."""
        state = self.state
        owner, _, attr = text.partition(".")
        if not attr or owner != state.frame.self_name or attr not in state.function_attrs:
            return None
        function, nested = state.function_attrs[attr]
        name = function.child_by_field_id(Field.NAME)
        return self.src.text(name) if name is not None and not nested else None

    def _bind_target(self, target: Node, v: EnvVal, produced: bool) -> None:
        state = self.state
        if target.type == "identifier":
            name = self.src.text(target)
            unique = state.define(name)
            bind_constant(state.frame.constants, name, v)
            # Locals keep their own names (faithful to the source); only module references and values
            # whose name cannot be redefined later (temporaries, an inlined callee's locals) alias.
            if isinstance(v, Expr) and v.text.isidentifier() and self._helper(v.text) is not None:
                v = ModuleFunction(v.text)  # `attention_interface = eager_attention_forward`: called below
            elif isinstance(v, Expr) and (held := self._held_function(v.text)) is not None:
                v = ModuleFunction(held)  # `swiglu_fn = self.swiglu` with `self.swiglu = swiglu` in `__init__`
            elif isinstance(v, Expr) and _DOTTED.fullmatch(v.text) and state.symbols.qualify(v.text) in LOCAL_FUNCTIONS:
                # `softmax = torch.softmax`, `ce = F.cross_entropy`: a call of the local is the function's
                state.frame.env[name] = v
                return
            elif isinstance(v, Expr) and "range(" in v.text and trailing_axes(v.text):
                state.frame.env[name] = v  # `dims = [-(i + 1) for i in range(n)]`: the axes, read where used
                return
            if produced or isinstance(v, (Submodule, ModuleFunction)) or (
                isinstance(v, Ref) and (v.name == unique or v.name in state.callee_locals or v.name.startswith("%"))
            ):
                state.frame.env[name] = v
            else:
                if isinstance(v, Ref) and state.paths and name in state.frame.params:
                    # `if context is None: context = x`: on this path the argument is another value. A
                    # `choose` (as one alternative of `x if context is None else context`) passes it on,
                    # so data flow after the join sees `x` on this path and the argument on the others.
                    # Locals (`if cross: residual = h`) stay silent: a later plain `residual = h` emits no
                    # op, so a `choose` here would still reach past it.
                    state.emit(OPERATOR_OP, CHOOSE[1], (v,), (), target, (unique,))
                elif isinstance(v, Ref) and self._input_alias(v, name, target, state):
                    # `values = keys`: a second name for the forward's argument, bound nowhere else (slp's
                    # attention; `flow.aliases`); a `choose` passes the argument on, so a projection of
                    # either name projects the one input.
                    state.emit(OPERATOR_OP, CHOOSE[1], (v,), (), target, (unique,))
                state.frame.env[name] = Ref(unique)
        elif target.type == "subscript":
            container = target.child_by_field_id(Field.VALUE)
            if container is None:
                return
            holder = self.expressions.value(container)
            if isinstance(holder, Ref):
                index = self.expressions.index(target)
                state.emit(OPERATOR_OP, "setitem", (holder, index, as_value(v)), (), target, (holder.name,))

    def _input_alias(self, v: Ref, name: str, target: Node, state: FlowState) -> bool:
        """`input_alias` in the analysed forward, noting the top-level statement as one whose walk reads the
        statements after it (`FlowState.looked_ahead`: a resumed walk restores no checkpoint past it)."""
        frame = state.frame
        if not frame.root or v.name not in frame.params or name in frame.params:
            return False
        decided, ahead = alias_reading(v, name, target, frame.params, frame.root, self.src)
        if ahead and (state.looked_ahead is None or state.top_statement < state.looked_ahead):
            state.looked_ahead = state.top_statement
        return decided

    def _augmented(self, node: Node) -> None:
        state = self.state
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        op = node.child_by_field_id(Field.OPERATOR)
        if left is None or right is None or op is None:
            return
        current = as_value(self.expressions.value(left))
        value = as_value(self.expressions.value(right))
        symbol = self.src.text(op).rstrip("=")
        if left.type == "identifier" and (isinstance(current, Ref) or isinstance(value, Ref)):
            name = self.src.text(left)
            out = state.define(name)
            state.emit(OPERATOR_OP, symbol, (current, value), (), node, (out,))
            state.frame.env[name] = Ref(out)

    def _return(self, stmt: Node) -> None:
        state, expressions = self.state, self.expressions
        expr = stmt.named_children[0] if stmt.named_child_count else None
        nodes: list[Node] = []
        if expr is not None:
            nodes = list(expr.named_children) if expr.type == "expression_list" else [expr]
        frame = state.frame
        if frame.root:
            values = tuple(as_value(expressions.value(n)) for n in nodes)
            state.block.append(Return(values, self.src.span(stmt)))
            state.terminated = state.returned = True
            return
        if not frame.outs:  # a nested call: its value gets a temporary, numbered when it is made
            if len(nodes) == 1:
                v = expressions.value(nodes[0])
                if isinstance(v, Ref) and v.name.startswith("%"):
                    frame.outs = (v.name,)
                    frame.returns.append({v.name: v})
                else:
                    frame.outs = (state.temp(),)
                    frame.returns.append({frame.outs[0]: self._bind_return(frame.outs[0], v)})
                state.terminated = state.returned = True
                return
            frame.outs = (state.temp(),)
        outs = frame.outs
        if len(outs) > 1 and len(nodes) == 1:
            nodes = tuple_items(nodes[0], len(outs)) or nodes
        if len(outs) == 1 and len(nodes) > 1:
            values_ = [as_value(expressions.value(n)) for n in nodes]
            state.emit(OPERATOR_OP, "tuple", tuple(values_), (), expr or stmt, outs)
            frame.returns.append({outs[0]: Ref(outs[0])})
        elif len(outs) == 1 and len(nodes) == 1:
            frame.returns.append({outs[0]: self._bind_return(outs[0], expressions.value(nodes[0], outs))})
        elif len(outs) == len(nodes) and outs:
            results = [expressions.value(n) for n in nodes]
            frame.returns.append({o: self._bind_return(o, v) for o, v in zip(outs, results)})
        else:
            for n in nodes:
                expressions.value(n)
            frame.returns.append({o: Ref(o) for o in outs})
        state.terminated = state.returned = True

    def _bind_return(self, out: str, v: EnvVal) -> EnvVal:
        """Make the callee's returned value available to the caller under `out`."""
        if isinstance(v, Ref):
            if v.name == out:
                return v
            name = v.name
            frame = self.state.frame
            local = name.startswith("%") or name in frame.renames.values()
            if local and rename_in_callee(self.state, name, out):
                return Ref(out)
            return v if local else Ref(out)
        return v


def _marked(stmts: list[Stmt], mark: Op) -> list[Stmt]:
    """The statements with every op's `origin` set to `mark` where it has none."""
    out: list[Stmt] = []
    for stmt in stmts:
        if isinstance(stmt, Op):
            out.append(stmt if stmt.origin is not None else replace(stmt, origin=mark))
        elif isinstance(stmt, Branch):
            out.append(replace(stmt, paths=tuple(tuple(_marked(list(p), mark)) for p in stmt.paths)))
        elif isinstance(stmt, Loop):
            out.append(replace(stmt, body=tuple(_marked(list(stmt.body), mark))))
        else:
            out.append(stmt)
    return out


def _mark_starred(block: list[Stmt], outs: tuple[str, ...]) -> None:
    """`b, *rest = x.shape`: the op just emitted for the value, when it binds `outs`, gets an origin saying a target
    is starred, so the number of names is not read as the number of items (`ranks.unpacked_rank`)."""
    if block and isinstance(op := block[-1], Op) and op.outputs == outs and op.origin is None:
        block[-1] = replace(op, origin=Op(OPERATOR_OP, STARRED_UNPACK, op.args, op.kwargs, op.outputs, op.span,
                                          op.stmt_span, op.via))


def _names(leaves: list[Node], src: SourceText) -> list[str] | None:
    """The names the leaves of a target are, when every leaf is a plain name; else None."""
    # A loop rather than `all(...)` and a generator: this runs for every assignment.
    names: list[str] = []
    for t in leaves:
        if t.type != "identifier":
            return None
        names.append(src.text(t))
    return names
