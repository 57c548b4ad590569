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
from adopter.analysis.flow.foreign import BaseMethods
from adopter.analysis.flow.parts import Calls, Control, Statements
from adopter.analysis.flow.resume import Checkpoint, NodeAt, Walk, find_node, node_at
from adopter.analysis.flow.state import (
    MAX_OPS,
    POSITIONAL,
    EnvVal,
    FlowState,
    Frame,
    LocalFunction,
    Truncated,
)
from adopter.analysis.flow.statements import StatementFlow
from adopter.analysis.flow.values import ExpressionFlow
from adopter.analysis.names.signature import function_name, params
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Forward, Problem, Ref, Span

# What a part links to between walks (`FlowAnalysis._unlink`): the interfaces themselves, which do nothing.
_UNLINKED_CALLS = Calls()
_UNLINKED_STATEMENTS = Statements()
_UNLINKED_CONTROL = Control()


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
        function_attrs: dict[str, tuple[Node, bool]] | None = None,
        bias_attrs: frozenset[str] = frozenset(),
        base_methods: BaseMethods | None = None,
    ) -> None:
        self.state = FlowState(src, symbols, table, class_name, module_attrs, problems, stateless or {})
        self.state.base_methods = base_methods
        self.state.positioned = positioned
        self.state.parameters = parameters
        self.state.function_attrs = function_attrs or {}
        self.state.bias_attrs = bias_attrs
        self._expressions = ExpressionFlow(self.state)
        self._calls = CallFlow(self.state, self._expressions)
        self._statements = StatementFlow(self.state, self._expressions)
        self._control = ControlFlow(self.state, self._expressions, self._statements)
        # The walk of `function(record=True)`, with its checkpoints, for the next walk to resume (`resume.py`).
        self.walk: Walk | None = None
        self._stmt_node: tuple[Node | None, NodeAt | None] = (None, None)  # the last one a checkpoint found

    def function(self, node: Node, owner: str | None, display_name: str | None = None, self_at: int = 0, *,
                 resume: Walk | None = None, record: bool = False) -> Forward:
        """The Forward of the `def` at `node`; `owner` is its class when it is a method. `self_at`: the
        parameter in the role of `owner`'s `self` (1 for an attention processor's `attn`: `idioms.processors`);
        the parameters before it are not shown.

        `resume`: an earlier walk of this function, built with the same inputs (owner, the attributes and
        submodules the constructor was given): the walk goes on from its last checkpoint that this text
        still reaches (`adopter.analysis.flow.resume`), with the same result as a walk from the start.
        `record`: keep this walk in `walk` (only while `symbols.consulted` records the names looked up)."""
        src = self.state.src
        ps = params(node, src)
        self_name = ps[self_at].name if owner is not None and len(ps) > self_at else None
        handed: str | None = None
        if owner is None and ps and ps[0].name == "self" and ps[0].kind == POSITIONAL:
            # A method written outside its class (put on instances with `types.MethodType`, or on the class by
            # a patching registry): its `self` is the module it runs on, read as a module handed to a function
            # (`Frame.handed`), so `self.attn_drop(p)` is a call of one of its layers, which no `__init__` here
            # binds (a match through it has no automatic fix: `handed_reason`).
            self_name = handed = ps[0].name
        shown = ps[self_at + 1:] if self_name is not None else ps
        env: dict[str, EnvVal] = {}
        for p in shown:
            env[p.name] = Ref(p.name)
            self.state.names[p.name] = None
        frame = Frame(node.start_byte, owner, self_name, (), env, root=True, params=frozenset(env), handed=handed)
        body = node.child_by_field_id(Field.BODY)
        stmts = body.named_children if body is not None else []
        self._link()
        try:
            if (resume is None and not record) or body is None:
                self._run_root(frame, stmts, function_name(node, src))
            else:
                self._resumed_root(frame, node, body, stmts, function_name(node, src), resume, record)
        finally:
            self._unlink()
        name = display_name or function_name(node, src)
        return Forward(name, shown, tuple(self.state.block), src.span(node), calls=tuple(self.state.calls),
                       applications=tuple(self.state.applications))

    def statements(self, stmts: list[Node], name: str, span: Span) -> Forward:
        """Top-level script code as a Forward named `name` (e.g. `<module>`)."""
        frame = Frame(-1, None, None, (), {}, root=True)
        self._link()
        try:
            self._run_root(frame, stmts, name)
        finally:
            self._unlink()
        return Forward(name, (), tuple(self.state.block), span, calls=tuple(self.state.calls),
                       applications=tuple(self.state.applications))

    def _link(self) -> None:
        """Link the parts for a walk. They recurse into each other (an expression may be a call, an inlined
        call has a body, an `if` holds statements): these links point back up the order the parts are built
        in. Each part holds the others as the interfaces of `parts.py` only, so no part module imports
        another."""
        self._expressions.calls = self._calls
        self._calls.statements = self._statements
        self._statements.control = self._control
        self._statements.calls = self._calls

    def _unlink(self) -> None:
        """Undo `_link` once a walk is done: linked, the parts are a reference cycle that holds the walk's
        state (and its source and tables) until the next garbage collection, which then has it all to walk."""
        self._expressions.calls = _UNLINKED_CALLS
        self._calls.statements = _UNLINKED_STATEMENTS
        self._statements.control = _UNLINKED_CONTROL
        self._statements.calls = _UNLINKED_CALLS

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

    def _resumed_root(self, frame: Frame, node: Node, body: Node, stmts: list[Node], name: str,
                      resume: Walk | None, record: bool) -> None:
        """`_run_root` over a function's body, restoring `resume`'s last checkpoint this text reaches and
        keeping this walk's checkpoints in `self.walk` (`record`)."""
        state = self.state
        state.frames = [frame]
        state.calls = []
        state.applications = []
        state.alternatives = []
        state.frame = frame
        state.block = []
        state.live = [state.block]
        before = len(state.problems)
        record = record and state.symbols.consulted is not None
        start = self._restore(resume, frame, node, body, stmts) if resume is not None else None
        checkpoints: list[Checkpoint] | None = None
        if record:  # the walk resumed keeps its checkpoints before this one, but not where its bytes moved
            checkpoints = [c for c in resume.checkpoints if c.statement < start.statement] if (
                resume is not None and start is not None and resume.start == node.start_byte) else []
        try:
            self._walk(stmts, start.statement if start is not None else 0, checkpoints, before)
        except Truncated:
            state.limit_problem(
                f"{name}: more than {MAX_OPS} operations; the rest of the body is not analysed",
                stmts[0] if stmts else None,
            )
            state.block = state.live[0]
        if checkpoints is not None:
            data = state.src.data
            fingerprint = state.symbols.fingerprint
            self.walk = Walk(
                node.start_byte, data[node.start_byte : body.start_byte],
                tuple([(s.type, s.start_byte, s.end_byte, data[s.start_byte : s.end_byte], s.start_point[0])
                       for s in stmts]),
                tuple(checkpoints), tuple(state.names), tuple(state.callee_locals), tuple(state.block),
                tuple(state.calls), tuple(state.applications),
                tuple(state.problems[before:]),
                {n: fingerprint(n) for n in state.symbols.consulted or ()},
                start.statement if start is not None else 0,
                state.looked_ahead,
            )

    def _walk(self, stmts: list[Node], start: int, checkpoints: list[Checkpoint] | None, before: int) -> None:
        """`StatementFlow.run` over the function's own body from statement `start`, with a checkpoint
        before each statement (`checkpoints`, when kept) that the state allows."""
        state = self.state
        statements = self._statements
        # Reset here, not in `_resumed_root`: mypy narrows an attribute assigned None there to None for the rest of
        # that function, and the mypyc build then rejects the int the walk stored when `Walk` reads it.
        state.looked_ahead = None
        i = start
        while i < len(stmts):
            if state.terminated:
                return
            stmt = stmts[i]
            state.top_statement = i
            if checkpoints is not None and stmt.type != "comment":  # a comment changes nothing: none before it
                taken = self._checkpoint(i, before, checkpoints[-1] if checkpoints else None)
                if taken is not None:
                    checkpoints.append(taken)
            i += 1
            if statements.statement(stmt, stmts[i:] if stmt.type == "if_statement" else []):
                return

    def _checkpoint(self, index: int, before: int, last: Checkpoint | None) -> Checkpoint | None:
        """The state before the function's own statement `index`, or None where it holds more than a
        checkpoint keeps (an inlined callee's frame or closure, an open block, a loop being unrolled)."""
        state = self.state
        frame = state.frame
        if (len(state.frames) != 1 or state.nesting or state.paths or len(state.live) != 1
                or state.block is not state.live[0] or state.alternatives or state.unrolled or frame.renames
                or frame.rewrite or frame.returns or frame.outs or frame.handed is not None
                or any(f is not frame for f in state.closure_frames.values())):
            return None
        consulted = state.symbols.consulted
        assert consulted is not None
        # Consulted names and closures only grow: an unchanged size is the last checkpoint's.
        seen = last.consulted if last is not None and len(last.consulted) == len(consulted) else frozenset(consulted)
        closures = last.closures if last is not None and len(last.closures) == len(state.local_functions) else tuple(
            [node_at(n) for n in state.local_functions.values()])
        node = state.stmt_node
        if node is not self._stmt_node[0]:
            self._stmt_node = (node, node_at(node) if node is not None else None)
        return Checkpoint(
            index, state.counter, state.ops, len(state.names), len(state.callee_locals), len(state.block),
            len(state.calls), len(state.applications), len(state.problems) - before, state.terminated,
            state.returned, state.stmt_span, self._stmt_node[1], dict(frame.env), dict(frame.constants), closures,
            seen,
        )

    def _restore(self, walk: Walk, frame: Frame, node: Node, body: Node, stmts: list[Node]) -> Checkpoint | None:
        """Restore the state of `walk`'s last checkpoint that this function's text reaches (the same header
        and statements before it, at the same bytes but for one shift of them all, as an edit above the
        function makes; the names consulted before it unchanged); None when none does (the walk starts from
        the first statement)."""
        state = self.state
        data = state.src.data
        delta = node.start_byte - walk.start
        if walk.head != data[node.start_byte : body.start_byte]:
            return None
        same = 0
        for old, new in zip(walk.statements, stmts, strict=False):
            if old[0] != new.type or old[1] + delta != new.start_byte or old[2] + delta != new.end_byte or old[
                    4] != new.start_point[0] or old[3] != data[new.start_byte : new.end_byte]:
                break
            same += 1
        fingerprint = state.symbols.fingerprint
        for checkpoint in reversed(walk.checkpoints):
            if checkpoint.statement > same or checkpoint.statement == 0:
                continue
            if walk.looked_ahead is not None and checkpoint.statement > walk.looked_ahead:
                continue  # a statement before it read the statements after it (`flow.aliases`)
            if any(fingerprint(n) != walk.fingerprints.get(n) for n in checkpoint.consulted):
                continue
            # `if` alternatives are named by byte: those of a callee inlined before the checkpoint may have
            # moved otherwise than the function (the callee is read elsewhere in the file); only the
            # function's own move with it.
            applications = walk.applications[: checkpoint.applications]
            limit = walk.statements[checkpoint.statement][1]
            if any(not walk.start <= at < limit for application in applications for at, _ in application[3]):
                continue
            stmt_node = find_node(node, _moved(checkpoint.stmt_node, delta)) if checkpoint.stmt_node else None
            closures = {at[1] + delta: find_node(node, _moved(at, delta)) for at in checkpoint.closures}
            if (checkpoint.stmt_node is not None and stmt_node is None) or any(
                    n is None for n in closures.values()):
                continue
            state.counter, state.ops = checkpoint.counter, checkpoint.ops
            state.names = dict.fromkeys(walk.names[: checkpoint.names])
            state.block = list(walk.block[: checkpoint.block])
            state.live = [state.block]
            state.calls = list(walk.calls[: checkpoint.calls])
            state.applications = list(applications) if not delta else [
                (via, outs, span, tuple((at + delta, k) for at, k in alternatives))
                for via, outs, span, alternatives in applications]
            state.problems.extend(walk.problems[: checkpoint.problems])
            state.terminated, state.returned = checkpoint.terminated, checkpoint.returned
            state.stmt_span, state.stmt_node = checkpoint.stmt_span, stmt_node
            frame.env = dict(checkpoint.env) if not delta else {
                name: LocalFunction(v.key + delta, v.name) if isinstance(v, LocalFunction) else v
                for name, v in checkpoint.env.items()}
            frame.constants = dict(checkpoint.constants)
            state.callee_locals = dict.fromkeys(walk.callee_locals[: checkpoint.callee_locals])
            state.local_functions = {key: n for key, n in closures.items() if n is not None}
            state.closure_frames = {key: frame for key in closures}
            if state.symbols.consulted is not None:
                state.symbols.consulted |= checkpoint.consulted
            return checkpoint
        return None


def _moved(at: NodeAt, delta: int) -> NodeAt:
    return (at[0], at[1] + delta, at[2] + delta)
