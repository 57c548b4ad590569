"""Control and data flow of `forward` (and of plain functions) as a tree of operator applications.

Nested calls are hoisted, in Python's evaluation order, into temporaries `%1`, `%2`, ...;
`self.method(...)` and module-level helpers of the same file are inlined (bounded depth, recursion-safe)
with their parameters renamed to the argument values and their locals renamed apart from the caller's;
`if`/`elif`/`else` and conditional expressions give `Branch`es, loops give `Loop`s.

Conventions beyond `adopter.dsl.types`:
- a starred argument `*xs` is `Ref("*xs")` (or `Expr("*...")`), a `**kw` argument is `Kwarg("**", value)`;
- tuple/list displays holding tracked values are packed by an `operator tuple`/`list` op;
- `x[i] = v` is `operator setitem(x, i, v)` with output `x`; `x += y` is `operator +(x, y)` with output `x`.

The analysis is split by what it reads, each part a class holding the one `FlowState` it shares with
the others (`state.py`: frames, open blocks, op budget; defining, emitting, looking up):
- `StatementFlow` (`statements.py`): bodies, assignments, returns (`names/assignments.py` reads targets);
- `ControlFlow` (`control.py`): `if`/`elif`/`else`, loops, environments where paths join;
- `ExpressionFlow` (`values.py`): attribute reads, subscripts, operators, displays;
- `CallFlow` (`calls.py`): calls, and inlining same-file callees (`renaming.py` renames
  a callee's returned local to the call's output).
The parts call one another through the interface of `parts.py` (`Expressions`, `Calls`, `Statements`,
`Control`), so no part module imports another.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.flow.calls import CallFlow
from adopter.analysis.flow.control import ControlFlow
from adopter.analysis.flow.state import MAX_OPS, EnvVal, FlowState, Frame, Truncated
from adopter.analysis.flow.statements import StatementFlow
from adopter.analysis.flow.values import ExpressionFlow
from adopter.analysis.names.signature import function_name, params
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Forward, Problem, Ref, Span


class FlowAnalysis:
    """Builds the `Forward` of one function (a method of an analysed class, or a module-level function)."""

    def __init__(
        self,
        src: SourceText,
        symbols: ModuleSymbols,
        table: ClassTable | None,
        class_name: str | None,
        module_attrs: frozenset[str],
        problems: list[Problem],
        stateless: dict[str, tuple[str, Node]] | None = None,
        positioned: frozenset[str] = frozenset(),
        parameters: frozenset[str] = frozenset(),
    ) -> None:
        self.state = FlowState(src, symbols, table, class_name, module_attrs, problems, stateless or {})
        self.state.positioned = positioned
        self.state.parameters = parameters
        expressions = ExpressionFlow(self.state)
        calls = CallFlow(self.state, expressions)
        self._statements = StatementFlow(self.state, expressions)
        control = ControlFlow(self.state, expressions, self._statements)
        # The parts recurse into each other (an expression may be a call, an inlined call has a body,
        # an `if` holds statements): these links point back up the order the parts are built in. Each
        # part holds the others as the interfaces of `parts.py` only, so no part module imports another.
        expressions.calls = calls
        calls.statements = self._statements
        self._statements.control = control
        self._statements.calls = calls

    def function(self, node: Node, owner: str | None, display_name: str | None = None, self_at: int = 0) -> Forward:
        """The Forward of the `def` at `node`; `owner` is its class when it is a method. `self_at`: the
        parameter in the role of `owner`'s `self` (1 for an attention processor's `attn`: `idioms.processors`);
        the parameters before it are not shown."""
        src = self.state.src
        ps = params(node, src)
        self_name = ps[self_at].name if owner is not None and len(ps) > self_at else None
        shown = ps[self_at + 1:] if self_name is not None else ps
        env: dict[str, EnvVal] = {}
        for p in shown:
            env[p.name] = Ref(p.name)
            self.state.names.add(p.name)
        frame = Frame(node.start_byte, owner, self_name, (), env, root=True, params=frozenset(env))
        body = node.child_by_field_id(Field.BODY)
        self._run_root(frame, body.named_children if body is not None else [], function_name(node, src))
        name = display_name or function_name(node, src)
        return Forward(name, shown, tuple(self.state.block), src.span(node), calls=tuple(self.state.calls),
                       applications=tuple(self.state.applications))

    def statements(self, stmts: list[Node], name: str, span: Span) -> Forward:
        """Top-level script code as a Forward named `name` (e.g. `<module>`)."""
        frame = Frame(-1, None, None, (), {}, root=True)
        self._run_root(frame, stmts, name)
        return Forward(name, (), tuple(self.state.block), span, calls=tuple(self.state.calls),
                       applications=tuple(self.state.applications))

    def _run_root(self, frame: Frame, stmts: list[Node], name: str) -> None:
        state = self.state
        state.frames = [frame]
        state.calls = []
        state.applications = []
        state.alternatives = []
        state.frame = frame  # the innermost frame (kept as an attribute: read on every expression)
        state.block = []
        state.live = [state.block]
        try:
            self._statements.run(stmts)
        except Truncated:
            state.limit_problem(
                f"{name}: more than {MAX_OPS} operations; the rest of the body is not analysed",
                stmts[0] if stmts else None,
            )
            # Close any blocks left open by the interruption: the root block is what we keep.
            state.block = state.live[0]
