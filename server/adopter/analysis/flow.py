"""Control and data flow of `forward` (and of plain functions) as a tree of operator applications.

Nested calls are hoisted, in Python's evaluation order, into temporaries `%1`, `%2`, ...;
`self.method(...)` and module-level helpers of the same file are inlined (bounded depth, recursion-safe)
with their parameters renamed to the argument values and their locals renamed apart from the caller's;
`if`/`elif`/`else` and conditional expressions give `Branch`es, loops give `Loop`s.

Conventions beyond `adopter.dsl.types`:
- a starred argument `*xs` is `Ref("*xs")` (or `Expr("*...")`), a `**kw` argument is `Kwarg("**", value)`;
- tuple/list displays holding tracked values are packed by an `operator tuple`/`list` op;
- `x[i] = v` is `operator setitem(x, i, v)` with output `x`; `x += y` is `operator +(x, y)` with output `x`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from tree_sitter import Node

from adopter.analysis.assignments import element_pairs, read_assignment, target_leaves
from adopter.analysis.classes import ClassTable
from adopter.analysis.naming import is_opaque_function
from adopter.analysis.signature import function_name, params
from adopter.analysis.source import Field, SourceText
from adopter.analysis.spellings import CHOOSE
from adopter.analysis.symbols import ModuleSymbols, dotted_text
from adopter.dsl.types import (
    Branch,
    Expr,
    Forward,
    Kwarg,
    Loop,
    Op,
    OpKind,
    Param,
    ParamKind,
    Problem,
    Ref,
    Return,
    Severity,
    Span,
    Stmt,
    Value,
)

MAX_INLINE_DEPTH = 4
MAX_OPS = 4000
MAX_NESTING = 12

# Attributes of a tensor that are metadata, not data: reading them is not an op worth a node.
_META_ATTRS = frozenset({"dtype", "device", "is_cuda", "requires_grad", "layout", "is_sparse", "grad_fn"})
_BINARY = frozenset({"+", "-", "*", "/", "@", "**", "//", "%", "&", "|", "^", "<<", ">>"})
_COMPARE = frozenset({"<", ">", "==", "!=", "<=", ">="})
_IDENTIFIER = re.compile(r"(?<![\w.%\"'])[A-Za-z_]\w*")
_ITERATION = frozenset({"range", "enumerate", "zip", "reversed", "sorted", "list", "tuple", "iter"})
_CONTAINER_METHODS = frozenset({"values", "children", "modules", "items"})


@dataclass(frozen=True)
class _Module:
    """A submodule reference in forward: `self.query`, `self.layer[*]` (a loop variable over it)."""

    path: str


@dataclass(frozen=True)
class _LocalFunction:
    """A function defined inside the analysed function (a closure), by its start byte."""

    key: int
    name: str


EnvVal = Value | _Module | _LocalFunction


@dataclass
class _Frame:
    """One function activation: the analysed function itself or an inlined callee."""

    key: int
    owner: str | None  # the class defining the method (for super()), None for functions
    self_name: str | None
    via: tuple[str, ...]
    env: dict[str, EnvVal]
    outs: tuple[str, ...] = ()
    root: bool = False
    renames: dict[str, str] = field(default_factory=dict)  # local name -> its unique name
    rewrite: dict[str, str] = field(default_factory=dict)  # unique name -> name after return binding
    start: tuple[int, int] = (0, 0)  # (index in live lists, position) where the callee's ops begin
    returns: list[dict[str, EnvVal]] = field(default_factory=list)


class _Truncated(Exception):
    """Raised when a function exceeds the op budget; the analysis keeps what it has."""


def _as_value(v: EnvVal) -> Value:
    if isinstance(v, _Module):
        return Expr(v.path)
    if isinstance(v, _LocalFunction):
        return Expr(v.name)
    return v


def _rename_value(v: Value, old: str, new: str) -> Value:
    """`v` with the local `old` renamed to `new`; `v` itself when it does not mention `old`."""
    if isinstance(v, Ref):
        if v.name == old:
            return Ref(new)
        if v.name == "*" + old:
            return Ref("*" + new)
    elif old in v.text:  # `x.dtype` kept as text
        text = re.sub(rf"(?<![\w%]){re.escape(old)}(?!\w)", new, v.text)
        return v if text == v.text else Expr(text)
    return v


def _rename_values(values: tuple[Value, ...], old: str, new: str) -> tuple[Value, ...]:
    renamed = tuple(_rename_value(v, old, new) for v in values)
    return values if all(a is b for a, b in zip(renamed, values)) else renamed


def _rename_block(block: tuple[Stmt, ...], old: str, new: str) -> tuple[Stmt, ...]:
    renamed = tuple(_rename_stmt(s, old, new) for s in block)
    return block if all(a is b for a, b in zip(renamed, block)) else renamed


def _rename_stmt(stmt: Stmt, old: str, new: str) -> Stmt:
    """`stmt` with the local `old` renamed to `new`; `stmt` itself (no copy) when nothing changes:
    a callee's returned local is renamed in every statement emitted since the call began."""
    if isinstance(stmt, Op):
        args = _rename_values(stmt.args, old, new)
        kwargs = stmt.kwargs
        if any(_rename_value(k.value, old, new) is not k.value for k in kwargs):
            kwargs = tuple(Kwarg(k.name, _rename_value(k.value, old, new)) for k in kwargs)
        outputs = tuple(new if o == old else o for o in stmt.outputs) if old in stmt.outputs else stmt.outputs
        if args is stmt.args and kwargs is stmt.kwargs and outputs is stmt.outputs:
            return stmt
        return replace(stmt, args=args, kwargs=kwargs, outputs=outputs)
    if isinstance(stmt, Branch):
        paths = tuple(_rename_block(p, old, new) for p in stmt.paths)
        if all(a is b for a, b in zip(paths, stmt.paths)):
            return stmt
        return replace(stmt, paths=paths)
    if isinstance(stmt, Loop):
        body = _rename_block(stmt.body, old, new)
        return stmt if body is stmt.body else replace(stmt, body=body)
    values = _rename_values(stmt.values, old, new)
    return stmt if values is stmt.values else replace(stmt, values=values)


def _defines(stmt: Stmt, name: str) -> bool:
    if isinstance(stmt, Op):
        return name in stmt.outputs
    if isinstance(stmt, Branch):
        return any(_defines(s, name) for p in stmt.paths for s in p)
    if isinstance(stmt, Loop):
        return any(_defines(s, name) for s in stmt.body)
    return False


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
    ) -> None:
        self.src = src
        self.symbols = symbols
        self.table = table
        self.class_name = class_name
        self.module_attrs = module_attrs
        # Submodules of a same-file class with no state and a forward that never reads `self` (a
        # custom activation: `self.act = GEGLU()`): attr -> (class, forward node), inlined where called.
        self.stateless = stateless or {}
        self.problems = problems
        self.counter = 0
        self.ops = 0
        self.nesting = 0
        self.names: set[str] = set()
        self.live: list[list[Stmt]] = []
        self.block: list[Stmt] = []
        self.frames: list[_Frame] = []
        self.frame = _Frame(-1, None, None, (), {}, root=True)
        self.terminated = False  # the current path stopped (return or raise)
        self.returned = False  # the current path stopped at a return
        # The span of the statement being analysed, computed when its first op is emitted (many
        # statements emit none): `stmt_span` is None until then, `stmt_node` says which statement.
        self.stmt_span: Span | None = Span(0, 0, 0, 0)
        self.stmt_node: Node | None = None
        self.inlined: set[str] = set()  # module-level names of inlined helpers (cache dependencies)
        self.callee_locals: set[str] = set()  # unique names of inlined callees' locals
        self.local_functions: dict[int, Node] = {}

    # -- entry points --------------------------------------------------------------------------------

    def function(self, node: Node, owner: str | None, display_name: str | None = None) -> Forward:
        """The Forward of the `def` at `node`; `owner` is its class when it is a method."""
        ps = params(node, self.src)
        self_name = ps[0].name if owner is not None and ps else None
        shown = ps[1:] if self_name is not None else ps
        env: dict[str, EnvVal] = {}
        for p in shown:
            env[p.name] = Ref(p.name)
            self.names.add(p.name)
        frame = _Frame(node.start_byte, owner, self_name, (), env, root=True)
        body = node.child_by_field_id(Field.BODY)
        self._run_root(frame, body.named_children if body is not None else [], function_name(node, self.src))
        name = display_name or function_name(node, self.src)
        return Forward(name, shown, tuple(self.block), self.src.span(node))

    def statements(self, stmts: list[Node], name: str, span: Span) -> Forward:
        """Top-level script code as a Forward named `name` (e.g. `<module>`)."""
        frame = _Frame(-1, None, None, (), {}, root=True)
        self._run_root(frame, stmts, name)
        return Forward(name, (), tuple(self.block), span)

    def _run_root(self, frame: _Frame, stmts: list[Node], name: str) -> None:
        self.frames = [frame]
        self.frame = frame  # the innermost frame (kept as an attribute: read on every expression)
        self.block = []
        self.live = [self.block]
        try:
            self._stmts(stmts)
        except _Truncated:
            self.problems.append(
                Problem(
                    f"{name}: more than {MAX_OPS} operations; the rest of the body is not analysed",
                    self.src.span(stmts[0]) if stmts else None,
                    self.src.path,
                    Severity.INFO,
                    "analysis-limit",
                )
            )
            # Close any blocks left open by the interruption: the root block is what we keep.
            self.block = self.live[0]

    # -- statements ----------------------------------------------------------------------------------

    def _stmts(self, stmts: list[Node]) -> None:
        i = 0
        while i < len(stmts):
            if self.terminated:
                return
            stmt = stmts[i]
            i += 1
            if stmt.type == "if_statement":
                if self._if(stmt, stmts[i:]):
                    return
                continue
            self._stmt(stmt)

    def _stmt(self, stmt: Node) -> None:
        kind = stmt.type
        if kind == "expression_statement":
            self.stmt_node, self.stmt_span = stmt, None
            for expr in stmt.named_children:
                self._expression_stmt(expr)
        elif kind == "return_statement":
            self.stmt_node, self.stmt_span = stmt, None
            self._return(stmt)
        elif kind == "raise_statement":
            self.terminated = True
        elif kind == "if_statement":
            self._if(stmt, [])
        elif kind in ("for_statement", "while_statement"):
            self._loop(stmt)
        elif kind == "with_statement":
            body = stmt.child_by_field_id(Field.BODY)
            if body is not None:
                self._stmts(body.named_children)
        elif kind == "try_statement":
            for child in stmt.named_children:
                if child.type == "block":
                    self._stmts(child.named_children)
                elif child.type in ("else_clause", "finally_clause"):
                    for inner in child.named_children:
                        if inner.type == "block":
                            self._stmts(inner.named_children)
        elif kind == "function_definition":
            name_node = stmt.child_by_field_id(Field.NAME)
            if name_node is not None:  # a local closure (T5's `shape`/`project`): inlined where called
                name = self.src.text(name_node)
                self.local_functions[stmt.start_byte] = stmt
                self.frame.env[name] = _LocalFunction(stmt.start_byte, name)
        elif kind == "decorated_definition":
            name_node = (stmt.child_by_field_id(Field.DEFINITION) or stmt).child_by_field_id(Field.NAME)
            if name_node is not None:  # decorated: we cannot tell what calling it does
                name = self.src.text(name_node)
                self.frame.env[name] = Ref(self._define(name))

    def _expression_stmt(self, expr: Node) -> None:
        kind = expr.type
        if kind == "assignment":
            self._assignment(expr)
        elif kind == "augmented_assignment":
            self._augmented(expr)
        else:
            self._value(expr)

    def _define(self, name: str) -> str:
        """The unique name a local `name` of the current frame is stored under."""
        frame = self.frame
        if frame.root:
            self.names.add(name)
            return name
        unique = frame.renames.get(name)
        if unique is None:
            unique = name
            n = 2
            while unique in self.names:
                unique = f"{name}_{n}"
                n += 1
            frame.renames[name] = unique
            self.names.add(unique)
            self.callee_locals.add(unique)
        hops = 0
        while unique in frame.rewrite and hops < 8:  # renamed to the call's output by a `return`
            unique = frame.rewrite[unique]
            hops += 1
        return unique

    def _assignment(self, node: Node) -> None:
        read = read_assignment(node)
        if read is None:
            return
        targets, right = read
        flat = target_leaves(targets[0])
        pairs = element_pairs(flat, right)
        # `a, b = x, y`: pairwise, right-hand sides evaluated first.
        if pairs is not None:
            names = {self.src.text(t) for t in flat if t.type == "identifier"}
            used = {m.group(0) for m in _IDENTIFIER.finditer(self.src.text(right))}
            if all(t.type == "identifier" for t in flat) and not names & used:
                # No target is read on the right: each value can be produced under its target's name.
                for t, v_node in pairs:
                    out = self._define(self.src.text(t))
                    v = self._value(v_node, (out,))
                    self._bind_target(t, v, produced=isinstance(v, Ref) and v.name == out)
                return
            values = [self._value(v_node) for _, v_node in pairs]
            for (t, _), v in zip(pairs, values):
                self._bind_target(t, v, produced=False)
            return
        if all(t.type == "identifier" for t in flat):
            outs = tuple(self._define(self.src.text(t)) for t in flat)
            v = self._value(right, outs)
            produced = isinstance(v, Ref) and v.name == outs[0]
            if len(flat) == 1:
                self._bind_target(flat[0], v, produced)
            else:
                for t in flat:
                    self._bind_target(t, Ref(self._define(self.src.text(t))), True)
            for extra in targets[1:]:
                for t in target_leaves(extra):
                    self._bind_target(t, v, produced=False)
            return
        v = self._value(right)
        for t in flat:
            self._bind_target(t, v, produced=False)

    def _bind_target(self, target: Node, v: EnvVal, produced: bool) -> None:
        if target.type == "identifier":
            name = self.src.text(target)
            unique = self._define(name)
            # Locals keep their own names (faithful to the source); only module references and values
            # whose name cannot be redefined later (temporaries, an inlined callee's locals) alias.
            if produced or isinstance(v, _Module) or (
                isinstance(v, Ref) and (v.name == unique or v.name in self.callee_locals or v.name.startswith("%"))
            ):
                self.frame.env[name] = v
            else:
                self.frame.env[name] = Ref(unique)
        elif target.type == "subscript":
            container = target.child_by_field_id(Field.VALUE)
            if container is None:
                return
            holder = self._value(container)
            if isinstance(holder, Ref):
                index = self._index(target)
                self._emit(OpKind.OPERATOR, "setitem", (holder, index, _as_value(v)), (), target, (holder.name,))

    def _augmented(self, node: Node) -> None:
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        op = node.child_by_field_id(Field.OPERATOR)
        if left is None or right is None or op is None:
            return
        current = _as_value(self._value(left))
        value = _as_value(self._value(right))
        symbol = self.src.text(op).rstrip("=")
        if left.type == "identifier" and (isinstance(current, Ref) or isinstance(value, Ref)):
            name = self.src.text(left)
            out = self._define(name)
            self._emit(OpKind.OPERATOR, symbol, (current, value), (), node, (out,))
            self.frame.env[name] = Ref(out)

    def _return(self, stmt: Node) -> None:
        expr = stmt.named_children[0] if stmt.named_child_count else None
        nodes: list[Node] = []
        if expr is not None:
            nodes = list(expr.named_children) if expr.type == "expression_list" else [expr]
        frame = self.frame
        if frame.root:
            values = tuple(_as_value(self._value(n)) for n in nodes)
            self.block.append(Return(values, self.src.span(stmt)))
            self.terminated = self.returned = True
            return
        if not frame.outs:  # a nested call: its value gets a temporary, numbered when it is made
            if len(nodes) == 1:
                v = self._value(nodes[0])
                if isinstance(v, Ref) and v.name.startswith("%"):
                    frame.outs = (v.name,)
                    frame.returns.append({v.name: v})
                else:
                    frame.outs = (self._temp(),)
                    frame.returns.append({frame.outs[0]: self._bind_return(frame.outs[0], v)})
                self.terminated = self.returned = True
                return
            frame.outs = (self._temp(),)
        outs = frame.outs
        if len(outs) == 1 and len(nodes) > 1:
            values_ = [_as_value(self._value(n)) for n in nodes]
            self._emit(OpKind.OPERATOR, "tuple", tuple(values_), (), expr or stmt, outs)
            frame.returns.append({outs[0]: Ref(outs[0])})
        elif len(outs) == 1 and len(nodes) == 1:
            frame.returns.append({outs[0]: self._bind_return(outs[0], self._value(nodes[0], outs))})
        elif len(outs) == len(nodes) and outs:
            results = [self._value(n) for n in nodes]
            frame.returns.append({o: self._bind_return(o, v) for o, v in zip(outs, results)})
        else:
            for n in nodes:
                self._value(n)
            frame.returns.append({o: Ref(o) for o in outs})
        self.terminated = self.returned = True

    def _bind_return(self, out: str, v: EnvVal) -> EnvVal:
        """Make the callee's returned value available to the caller under `out`."""
        if isinstance(v, Ref):
            if v.name == out:
                return v
            name = v.name
            frame = self.frame
            local = name.startswith("%") or name in frame.renames.values()
            if local and self._rename_in_callee(name, out):
                return Ref(out)
            return v if local else Ref(out)
        return v

    def _rename_in_callee(self, old: str, new: str) -> bool:
        frame = self.frame
        lists = self.live[frame.start[0] :]
        found = False
        for k, lst in enumerate(lists):
            begin = frame.start[1] if k == 0 else 0
            if any(_defines(s, old) for s in lst[begin:]):
                found = True
                break
        if not found:
            return False
        for k, lst in enumerate(lists):
            begin = frame.start[1] if k == 0 else 0
            for j in range(begin, len(lst)):
                lst[j] = _rename_stmt(lst[j], old, new)
        frame.rewrite[old] = new
        for key, value in list(frame.env.items()):
            if isinstance(value, Ref) and value.name == old:
                frame.env[key] = Ref(new)
        return True

    def _if(self, stmt: Node, rest: list[Node]) -> bool:
        """An if/elif/else as a Branch. Returns whether `rest` (the following statements) was consumed:
        inside an inlined callee, statements after an `if` with an early `return` belong to the
        alternatives that did not return (so that every return binds the call's outputs)."""
        if self.nesting >= MAX_NESTING:
            self._nesting_problem(stmt)
            return False
        conditions: list[str] = []
        bodies: list[Node | None] = []
        test = stmt.child_by_field_id(Field.CONDITION)
        conditions.append(self._text(test) if test is not None else "?")
        bodies.append(stmt.child_by_field_id(Field.CONSEQUENCE))
        if test is not None and b":=" in self.src.raw(test):
            # A walrus in the test binds a value the branches use. Other calls in tests (shape
            # checks before a `raise`) are left out: they would split op chains the rules match.
            self.stmt_node, self.stmt_span = test, None
            self._value(test)
        has_else = False
        for clause in stmt.children_by_field_name("alternative"):
            if clause.type == "elif_clause":
                t = clause.child_by_field_id(Field.CONDITION)
                conditions.append(self._text(t) if t is not None else "?")
                bodies.append(clause.child_by_field_id(Field.CONSEQUENCE))
            else:
                has_else = True
                conditions.append("else")
                bodies.append(clause.child_by_field_id(Field.BODY))
        if not has_else:
            conditions.append("else")
            bodies.append(None)
        span = self.src.span(stmt)
        frame = self.frame
        base_env = frame.env
        parent = self.block
        results: list[tuple[list[Stmt], dict[str, EnvVal], bool]] = []
        self.nesting += 1
        first_live = len(self.live)
        any_return = False
        try:
            for body in bodies:
                lst: list[Stmt] = []
                self.live.append(lst)
                self.block = lst
                frame.env = dict(base_env)
                self.terminated = self.returned = False
                if body is not None:
                    self._stmts(body.named_children)
                any_return = any_return or self.returned
                results.append((lst, frame.env, self.terminated))
            consumed = False
            if not frame.root and rest and any_return and not all(r[2] for r in results):
                consumed = True
                for k, (lst, env, done) in enumerate(results):
                    if done:
                        continue
                    self.block = lst
                    frame.env = env
                    self.terminated = self.returned = False
                    self._stmts(rest)
                    results[k] = (lst, frame.env, self.terminated)
        finally:
            self.nesting -= 1
            del self.live[first_live:]
            self.block = parent
        open_envs = [env for _, env, done in results if not done] or [env for _, env, _ in results]
        frame.env = self._merge_envs(open_envs)
        self.terminated = all(done for _, _, done in results)
        self.returned = self.terminated and any_return
        if any(lst for lst, _, _ in results):
            self.block.append(Branch(tuple(conditions), tuple(tuple(lst) for lst, _, _ in results), span))
        return consumed

    def _merge_envs(self, envs: list[dict[str, EnvVal]]) -> dict[str, EnvVal]:
        """The environment after paths join: a name bound differently (or not at all) on some path
        refers to itself afterwards."""
        first = envs[0]
        if len(envs) == 1:
            return first
        renames = self.frame.renames
        merged = dict(first)
        for env in envs[1:]:
            if env is first:
                continue
            for key, value in env.items():
                current = merged.get(key)
                if current is not value and current != value:
                    merged[key] = Ref(renames.get(key, key))
            if len(env) != len(merged) or merged.keys() != env.keys():
                for key in merged.keys() - env.keys():
                    merged[key] = Ref(renames.get(key, key))
        return merged

    def _nesting_problem(self, stmt: Node) -> None:
        self.problems.append(
            Problem(
                f"control flow nested deeper than {MAX_NESTING} levels; inner statements not analysed",
                self.src.span(stmt),
                self.src.path,
                Severity.INFO,
                "analysis-limit",
            )
        )

    def _loop(self, stmt: Node) -> None:
        if self.nesting >= MAX_NESTING:
            self._nesting_problem(stmt)
            return
        frame = self.frame
        span = self.src.span(stmt)
        targets: list[str] = []
        over: str | None = None
        module_targets: dict[int, str] = {}
        if stmt.type == "for_statement":
            left = stmt.child_by_field_id(Field.LEFT)
            right = stmt.child_by_field_id(Field.RIGHT)
            iterable = self._text(right) if right is not None else "?"
            flat = target_leaves(left) if left is not None else []
            names = [self.src.text(t) for t in flat if t.type == "identifier"]
            if right is not None:
                over, module_targets = self._loop_over(right, len(names))
                if over is None and not self._builtin_iteration(right):
                    self.stmt_span = span
                    self._value(right)
            targets = names
        else:
            cond = stmt.child_by_field_id(Field.CONDITION)
            iterable = self._text(cond) if cond is not None else "?"
        base_env = frame.env
        parent = self.block
        lst: list[Stmt] = []
        self.live.append(lst)
        self.block = lst
        frame.env = dict(base_env)
        for k, name in enumerate(targets):
            unique = self._define(name)
            frame.env[name] = _Module(module_targets[k]) if k in module_targets else Ref(unique)
        saved_terminated = self.terminated
        self.nesting += 1
        try:
            body = stmt.child_by_field_id(Field.BODY)
            if body is not None:
                self._stmts(body.named_children)
        finally:
            self.nesting -= 1
            self.live.pop()
            self.block = parent
        self.terminated = saved_terminated
        loop_env = frame.env
        frame.env = self._merge_envs([base_env, {k: v for k, v in loop_env.items() if k not in targets or k in base_env}])
        unique_targets = tuple(frame.renames.get(t, t) for t in targets)
        self.block.append(Loop(unique_targets, iterable, over, tuple(lst), span))

    def _container_path(self, node: Node) -> str | None:
        """`self.layers` (also sliced, `.values()`, or a local alias of it) → `"self.layers"`."""
        if node.type == "attribute":  # self.layers, self.text_model.encoder.layer
            dotted = dotted_text(node, self.src)
            self_name = self.frame.self_name
            if dotted is not None and self_name is not None and dotted.startswith(self_name + "."):
                return "self" + dotted[len(self_name) :]
        if node.type == "subscript":
            value = node.child_by_field_id(Field.VALUE)
            return self._container_path(value) if value is not None else None
        if node.type == "call":
            func = node.child_by_field_id(Field.FUNCTION)
            if func is not None and func.type == "attribute":
                method = func.child_by_field_id(Field.ATTRIBUTE)
                obj = func.child_by_field_id(Field.OBJECT)
                if method is not None and obj is not None and self.src.text(method) in _CONTAINER_METHODS:
                    return self._container_path(obj)
            if func is not None and func.type == "identifier" and self.src.text(func) in ("reversed", "list", "iter"):
                inner = self._call_args(node)
                return self._container_path(inner[0]) if len(inner) == 1 else None
        if node.type == "identifier":
            v = self.frame.env.get(self.src.text(node))
            if isinstance(v, _Module) and not v.path.endswith("[*]"):
                return v.path
        return None

    def _builtin_iteration(self, node: Node) -> bool:
        """`range(n)`, `enumerate(x)`, `zip(a, b)`: iteration helpers whose call is not an op."""
        if node.type != "call":
            return False
        func = node.child_by_field_id(Field.FUNCTION)
        return func is not None and func.type == "identifier" and self.src.text(func) in _ITERATION

    def _call_args(self, call: Node) -> list[Node]:
        args = call.child_by_field_id(Field.ARGUMENTS)
        if args is None:
            return []
        return [a for a in args.named_children if a.type != "comment"]

    def _loop_over(self, right: Node, n_targets: int) -> tuple[str | None, dict[int, str]]:
        path = self._container_path(right)
        if path is not None:
            items = right.type == "call" and self.src.text(right).rstrip().endswith(".items()")
            return path, {(1 if items and n_targets > 1 else 0): f"{path}[*]"}
        if right.type == "call":
            func = right.child_by_field_id(Field.FUNCTION)
            fname = self.src.text(func) if func is not None else ""
            args = self._call_args(right)
            if fname == "enumerate" and args:  # enumerate(self.layers), enumerate(zip(self.h, past))
                over, inner = self._loop_over(args[0], n_targets - 1)
                return over, {k + 1: v for k, v in inner.items()}
            if fname == "zip":
                found: dict[int, str] = {}
                first: str | None = None
                for k, a in enumerate(args):
                    p = self._container_path(a)
                    if p is not None:
                        found[k] = f"{p}[*]"
                        first = first or p
                return first, found
        return None, {}

    # -- expressions ---------------------------------------------------------------------------------

    def _temp(self) -> str:
        self.counter += 1
        name = f"%{self.counter}"
        self.names.add(name)
        return name

    def _emit(
        self,
        kind: OpKind,
        target: str,
        args: tuple[Value, ...],
        kwargs: tuple[Kwarg, ...],
        node: Node,
        outs: tuple[str, ...] | None,
    ) -> Ref:
        self.ops += 1
        if self.ops > MAX_OPS:
            raise _Truncated
        outputs = outs if outs else (self._temp(),)
        stmt_span = self.stmt_span
        if stmt_span is None:
            assert self.stmt_node is not None
            stmt_span = self.stmt_span = self.src.span(self.stmt_node)
        self.block.append(Op(kind, target, args, kwargs, outputs, self.src.span(node), stmt_span, self.frame.via))
        return Ref(outputs[0])

    def _is_self(self, node: Node) -> bool:
        name = self.frame.self_name
        return name is not None and node.type == "identifier" and self.src.text(node) == name

    def _lookup(self, name: str) -> EnvVal | None:
        v = self.frame.env.get(name)
        if isinstance(v, Ref):
            rewrite = self.frame.rewrite
            n = v.name
            seen = 0
            while n in rewrite and seen < 8:
                n = rewrite[n]
                seen += 1
            if n != v.name:
                return Ref(n)
        return v

    def _text(self, node: Node) -> str:
        """Normalised source text; inside an inlined callee, its parameters and locals are renamed to
        the caller's values and the unique local names, so the text reads in the caller's terms."""
        text = self.src.norm(node)
        frame = self.frame
        if frame.root or not frame.env:
            return text
        env = frame.env

        def substitute(m: re.Match[str]) -> str:
            v = env.get(m.group(0))
            if isinstance(v, Ref):
                return v.name
            if isinstance(v, _Module):
                return v.path
            if isinstance(v, Expr):
                return v.text if v.text.replace(".", "").replace("_", "").isalnum() else f"({v.text})"
            return m.group(0)

        return _IDENTIFIER.sub(substitute, text)

    def _value(self, node: Node, outs: tuple[str, ...] | None = None) -> EnvVal:
        """Evaluate an expression: emit the ops it performs, return the value it yields."""
        kind = node.type
        if kind == "identifier":
            name = self.src.text(node)
            v = self._lookup(name)
            return v if v is not None else Expr(name)
        if kind == "call":
            return self._call(node, outs)
        if kind == "attribute":
            return self._attribute(node, outs)
        if kind == "subscript":
            return self._subscript(node, outs)
        if kind == "binary_operator":
            return self._binary(node, outs)
        if kind == "unary_operator":
            return self._unary(node, outs)
        if kind == "comparison_operator":
            return self._comparison(node, outs)
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self._value(node.named_children[0], outs)
        if kind == "conditional_expression":
            return self._conditional(node, outs)
        if kind in ("tuple", "list", "expression_list"):
            return self._display(node, outs)
        if kind == "named_expression":
            name_node = node.child_by_field_id(Field.NAME)
            value = node.child_by_field_id(Field.VALUE)
            if name_node is not None and value is not None:
                name = self.src.text(name_node)
                out = self._define(name)
                v = self._value(value, (out,))
                self.frame.env[name] = v if not isinstance(v, Ref) or v.name == out else Ref(out)
                return v
        if kind == "keyword_argument":
            value = node.child_by_field_id(Field.VALUE)
            return self._value(value) if value is not None else Expr(self._text(node))
        return Expr(self._text(node))

    def _attribute(self, node: Node, outs: tuple[str, ...] | None = None) -> EnvVal:
        obj = node.child_by_field_id(Field.OBJECT)
        attr_node = node.child_by_field_id(Field.ATTRIBUTE)
        if obj is None or attr_node is None:
            return Expr(self._text(node))
        attr = self.src.text(attr_node)
        if self._is_self(obj):
            path = f"self.{attr}"
            return _Module(path) if attr in self.module_attrs else Expr(path)
        receiver = self._value(obj)
        if isinstance(receiver, _LocalFunction):
            receiver = Expr(receiver.name)
        if isinstance(receiver, Ref):
            if attr in _META_ATTRS:
                return Expr(f"{receiver.name}.{attr}")
            return self._emit(OpKind.OPERATOR, "getattr", (receiver, Expr(attr)), (), node, outs)
        if isinstance(receiver, _Module):
            return Expr(f"{receiver.path}.{attr}")
        return Expr(f"{receiver.text}.{attr}") if receiver.text.isidentifier() else Expr(self._text(node))

    def _index(self, node: Node) -> Value:
        subs = [s for s in node.children_by_field_name("subscript") if s.type != "comment"]
        if len(subs) == 1 and subs[0].type not in ("slice", "tuple", "ellipsis"):
            return _as_value(self._value(subs[0]))
        return Expr(", ".join(self._text(s) for s in subs))

    def _subscript(self, node: Node, outs: tuple[str, ...] | None = None) -> EnvVal:
        value = node.child_by_field_id(Field.VALUE)
        if value is None:
            return Expr(self._text(node))
        container = self._value(value)
        if isinstance(container, _Module):
            self._index(node)
            return _Module(container.path if container.path.endswith("[*]") else f"{container.path}[*]")
        if isinstance(container, Ref):
            index = self._index(node)
            return self._emit(OpKind.OPERATOR, "getitem", (container, index), (), node, outs)
        index = self._index(node)
        if isinstance(index, Ref):
            return self._emit(OpKind.OPERATOR, "getitem", (_as_value(container), index), (), node, outs)
        return Expr(self._text(node))

    def _binary(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        op = node.child_by_field_id(Field.OPERATOR)
        if left is None or right is None or op is None:
            return Expr(self._text(node))
        lv = _as_value(self._value(left))
        rv = _as_value(self._value(right))
        symbol = self.src.text(op)
        if symbol in _BINARY and (isinstance(lv, Ref) or isinstance(rv, Ref)):
            return self._emit(OpKind.OPERATOR, symbol, (lv, rv), (), node, outs)
        return Expr(self._text(node))

    def _unary(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        arg = node.child_by_field_id(Field.ARGUMENT)
        op = node.child_by_field_id(Field.OPERATOR)
        if arg is None or op is None:
            return Expr(self._text(node))
        v = _as_value(self._value(arg))
        symbol = self.src.text(op)
        if isinstance(v, Ref) and symbol != "+":
            return self._emit(OpKind.OPERATOR, "neg" if symbol == "-" else symbol, (v,), (), node, outs)
        return v if symbol == "+" else Expr(self._text(node))

    def _comparison(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        operands = [c for c in node.named_children if c.type != "comment"]
        operators = [self.src.text(c) for c in node.children if not c.is_named]
        values = [_as_value(self._value(o)) for o in operands]
        if len(values) == 2 and len(operators) == 1 and operators[0] in _COMPARE:
            if any(isinstance(v, Ref) for v in values):
                return self._emit(OpKind.OPERATOR, operators[0], (values[0], values[1]), (), node, outs)
        return Expr(self._text(node))

    def _display(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        elements = [c for c in node.named_children if c.type != "comment"]
        if any(e.type in ("list_splat", "dictionary_splat", "parenthesized_list_splat") for e in elements):
            values = [_as_value(self._value(e.named_children[0] if e.named_child_count else e)) for e in elements]
        else:
            values = [_as_value(self._value(e)) for e in elements]
        if any(isinstance(v, Ref) for v in values):
            kind = "list" if node.type == "list" else "tuple"
            return self._emit(OpKind.OPERATOR, kind, tuple(values), (), node, outs)
        return Expr(self._text(node))

    def _conditional(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        parts = [c for c in node.named_children if c.type != "comment"]
        if len(parts) != 3:
            return Expr(self._text(node))
        if self.nesting >= MAX_NESTING:
            return Expr(self._text(node))
        yes, test, no = parts
        out = outs or (self._temp(),)
        parent = self.block
        blocks: list[list[Stmt]] = []
        values: list[EnvVal] = []
        first_live = len(self.live)
        self.nesting += 1
        try:
            for branch in (yes, no):
                lst: list[Stmt] = []
                self.live.append(lst)
                self.block = lst
                values.append(self._value(branch, out))
                blocks.append(lst)
        finally:
            self.nesting -= 1
            del self.live[first_live:]
            self.block = parent
        if not blocks[0] and not blocks[1]:
            refs = [v for v in values if isinstance(v, Ref)]
            if len(refs) == 2 and refs[0].name != refs[1].name:
                # `kv if cross else hidden`: two values, one per path. Each path passes its value on
                # (a transparent `choose`), so data flow sees both, not just the first.
                for lst, v, branch in zip(blocks, refs, (yes, no)):
                    self.block = lst
                    self._emit(OpKind.OPERATOR, CHOOSE[1], (v,), (), branch, out)
                self.block = parent
            else:
                return refs[0] if refs else Expr(self._text(node))
        self.block.append(
            Branch((self._text(test), "else"), (tuple(blocks[0]), tuple(blocks[1])), self.src.span(node))
        )
        return Ref(out[0])

    # -- calls ---------------------------------------------------------------------------------------

    def _args(self, call: Node) -> tuple[list[Value], list[Kwarg], bool]:
        """Positional and keyword arguments (evaluated in order), and whether all are opaque."""
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        args: list[Value] = []
        kwargs: list[Kwarg] = []
        if args_node is None:
            return args, kwargs, True
        if args_node.type == "generator_expression":
            return [Expr(self._text(args_node))], kwargs, True
        opaque = True  # every value an Expr (computed here rather than by a second pass)
        for a in args_node.named_children:
            kind = a.type
            if kind == "comment":
                continue
            if kind == "keyword_argument":
                name = a.child_by_field_id(Field.NAME)
                value = a.child_by_field_id(Field.VALUE)
                if name is not None and value is not None:
                    v = _as_value(self._value(value))
                    opaque = opaque and isinstance(v, Expr)
                    kwargs.append(Kwarg(self.src.text(name), v))
            elif kind == "dictionary_splat":
                inner = a.named_children[0] if a.named_child_count else a
                v = _as_value(self._value(inner))
                opaque = opaque and isinstance(v, Expr)
                kwargs.append(Kwarg("**", v))
            elif kind == "list_splat":
                inner = a.named_children[0] if a.named_child_count else a
                v = _as_value(self._value(inner))
                if isinstance(v, Ref):
                    opaque = False
                    args.append(Ref("*" + v.name))
                else:
                    args.append(Expr("*" + v.text))
            else:
                v = _as_value(self._value(a))
                opaque = opaque and isinstance(v, Expr)
                args.append(v)
        return args, kwargs, opaque

    def _call(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        func = node.child_by_field_id(Field.FUNCTION)
        if func is None:
            return Expr(self._text(node))
        if func.type == "attribute":
            obj = func.child_by_field_id(Field.OBJECT)
            attr_node = func.child_by_field_id(Field.ATTRIBUTE)
            if obj is not None and attr_node is not None:
                return self._attribute_call(node, obj, self.src.text(attr_node), outs)
        if func.type == "identifier":
            return self._name_call(node, self.src.text(func), outs)
        callee = self._value(func)
        args, kwargs, opaque = self._args(node)
        if isinstance(callee, _Module):
            return self._emit(OpKind.MODULE, callee.path, tuple(args), tuple(kwargs), node, outs)
        if isinstance(callee, Expr) and opaque:
            return Expr(self._text(node))
        target = callee.name if isinstance(callee, Ref) else self.src.norm(func)
        return self._emit(OpKind.CALL, target, tuple(args), tuple(kwargs), node, outs)

    def _attribute_call(self, node: Node, obj: Node, attr: str, outs: tuple[str, ...] | None) -> EnvVal:
        frame = self.frame
        # super().method(...)
        if obj.type == "call" and self.src.text(obj).replace(" ", "") == "super()":
            if self.table is not None and frame.owner is not None and self.class_name is not None:
                found = self.table.find_method(self.class_name, attr, after=frame.owner)
                if found is not None:
                    return self._inline(found[0], found[1], f"super().{attr}", node, outs, bound=True)
            args, kwargs, _ = self._args(node)
            return self._emit(OpKind.CALL, f"super().{attr}", tuple(args), tuple(kwargs), node, outs)
        # self.method(...) / self.submodule(...)
        if self._is_self(obj):
            if attr not in self.module_attrs and self.table is not None and self.class_name is not None:
                found = self.table.find_method(self.class_name, attr)
                if found is not None:
                    return self._inline(found[0], found[1], f"self.{attr}", node, outs, bound=True)
            if attr in self.stateless and frame.root:
                owner, forward = self.stateless[attr]
                return self._inline(owner, forward, f"self.{attr}", node, outs, bound=True)
            args, kwargs, _ = self._args(node)
            return self._emit(OpKind.MODULE, f"self.{attr}", tuple(args), tuple(kwargs), node, outs)
        # self.sub.child(...): a submodule of a submodule
        if obj.type == "attribute":
            inner_obj = obj.child_by_field_id(Field.OBJECT)
            inner_attr = obj.child_by_field_id(Field.ATTRIBUTE)
            if inner_obj is not None and inner_attr is not None and self._is_self(inner_obj):
                sub = self.src.text(inner_attr)
                if sub in self.module_attrs:
                    args, kwargs, _ = self._args(node)
                    path = f"self.{sub}" if attr == "forward" else f"self.{sub}.{attr}"
                    return self._emit(OpKind.MODULE, path, tuple(args), tuple(kwargs), node, outs)
        # a qualified function: torch.matmul, F.softmax, nn.functional.softmax, math.sqrt
        dotted = dotted_text(obj, self.src)
        if dotted is not None:
            root = dotted.split(".")[0]
            if root not in frame.env and root != frame.self_name:
                qualified = self.symbols.qualify(f"{dotted}.{attr}")
                called_back = self._callback_call(node, outs)
                if called_back is not None:
                    return called_back
                args, kwargs, opaque = self._args(node)
                if opaque and is_opaque_function(qualified):
                    return Expr(self._text(node))
                return self._emit(OpKind.FUNCTION, qualified, tuple(args), tuple(kwargs), node, outs)
        receiver = self._value(obj)
        if isinstance(receiver, _LocalFunction):
            receiver = Expr(receiver.name)
        if isinstance(receiver, _Module):
            args, kwargs, _ = self._args(node)
            path = receiver.path if attr == "forward" else f"{receiver.path}.{attr}"
            return self._emit(OpKind.MODULE, path, tuple(args), tuple(kwargs), node, outs)
        args, kwargs, opaque = self._args(node)
        if isinstance(receiver, Expr) and opaque and not self._is_parameter(receiver):
            return Expr(self._text(node))
        return self._emit(OpKind.METHOD, attr, (receiver, *args), tuple(kwargs), node, outs)

    def _is_parameter(self, v: Expr) -> bool:
        """`self.weight`, `self.q_proj.weight`: tensors held by the module (bound in __init__)."""
        if not v.text.startswith("self."):
            return False
        attr = v.text[5:].split(".")[0].split("[")[0]
        return attr in self.module_attrs

    def _name_call(self, node: Node, name: str, outs: tuple[str, ...] | None) -> EnvVal:
        v = self._lookup(name)
        if isinstance(v, _LocalFunction):
            return self._inline(self.frame.owner, self.local_functions[v.key], v.name, node, outs, bound=False,
                                closure_self=self.frame.self_name, closure=True)
        if isinstance(v, Expr) and v.text.startswith("self.") and v.text[5:].split("[")[0] in self.module_attrs:
            v = _Module(v.text)  # a submodule passed in as an argument (`proj_layer(hidden_states)`)
        if isinstance(v, _Module):
            args, kwargs, _ = self._args(node)
            return self._emit(OpKind.MODULE, v.path, tuple(args), tuple(kwargs), node, outs)
        if isinstance(v, Ref):
            args, kwargs, _ = self._args(node)
            return self._emit(OpKind.CALL, v.name, tuple(args), tuple(kwargs), node, outs)
        if isinstance(v, Expr):
            name = v.text
        if v is None or name.replace(".", "").replace("_", "").isalnum():
            # Helpers are inlined into methods only: a module-level function is analysed on its own,
            # so inlining it into another function would report its sites twice.
            inline_helpers = self.class_name is not None
            function = self.symbols.function_node(name) if v is None and inline_helpers else None
            if function is not None:
                self.inlined.add(name)
                return self._inline(None, function, name, node, outs, bound=False)
            same_file_class = self.symbols.has_class(name)
            qualified = name if same_file_class else self.symbols.qualify(name)
            if not same_file_class:
                called_back = self._callback_call(node, outs)
                if called_back is not None:
                    return called_back
            args, kwargs, opaque = self._args(node)
            if opaque and not same_file_class and is_opaque_function(qualified):
                return Expr(self._text(node))
            return self._emit(OpKind.FUNCTION, qualified, tuple(args), tuple(kwargs), node, outs)
        args, kwargs, _ = self._args(node)
        return self._emit(OpKind.CALL, name, tuple(args), tuple(kwargs), node, outs)

    def _callback_call(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal | None:
        """A function of another module called with a method of `self` as a callback.

        `apply_chunking_to_forward(self.ff_chunk, size, dim, x)` and
        `torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)` call the callback with
        the tensors passed after it; the callback is inlined with those tracked values (Refs) as its
        arguments, so its ops and sites appear in this forward. None when no argument is such a callback.
        """
        if self.table is None or self.class_name is None:
            return None
        arg_nodes = [a for a in self._call_args(node) if a.type != "keyword_argument"]
        for i, a in enumerate(arg_nodes):
            if a.type != "attribute":
                continue
            obj, attr_node = a.child_by_field_id(Field.OBJECT), a.child_by_field_id(Field.ATTRIBUTE)
            if obj is None or attr_node is None or not self._is_self(obj):
                continue
            attr = self.src.text(attr_node)
            if attr in self.module_attrs:
                continue
            found = self.table.find_method(self.class_name, attr)
            if found is None:
                continue
            tensors: list[Value] = []
            for later in arg_nodes[i + 1 :]:
                v = self._value(later)
                if isinstance(v, Ref):
                    tensors.append(v)
            return self._inline(found[0], found[1], f"self.{attr}", node, outs, bound=True,
                                call_args=(tensors, []))
        return None

    def _inline(
        self,
        owner: str | None,
        function: Node,
        label: str,
        node: Node,
        outs: tuple[str, ...] | None,
        bound: bool,
        closure_self: str | None = None,
        closure: bool = False,
        call_args: tuple[list[Value], list[Kwarg]] | None = None,
    ) -> EnvVal:
        """Inline a call of a same-file method or function: its ops appear here, `via` naming it.

        `call_args` replaces the arguments written at `node` (a callback called by another function).
        """
        key = function.start_byte
        recursive = any(f.key == key for f in self.frames)
        if call_args is not None:
            args, kwargs = call_args
        else:
            args, kwargs, _ = self._args(node)
        if recursive or len(self.frames) > MAX_INLINE_DEPTH or self.nesting >= MAX_NESTING:
            kind = OpKind.CALL if bound else OpKind.FUNCTION
            return self._emit(kind, label, tuple(args), tuple(kwargs), node, outs)
        ps = list(params(function, self.src))
        self_name: str | None = closure_self
        decorators = _decorators(function, self.src) if bound else ()
        if "staticmethod" in decorators:
            bound = False
        if bound and ps:
            if "classmethod" not in decorators:
                self_name = ps[0].name
            ps = ps[1:]
        call_outs = outs or ()
        self.names.update(call_outs)
        # A closure sees the locals of the function it was defined in (it is called from there).
        env: dict[str, EnvVal] = dict(self.frame.env) if closure else {}
        positional = [p for p in ps if p.kind == ParamKind.POSITIONAL]
        starred = any(isinstance(a, Ref | Expr) and _name_of(a).startswith("*") for a in args)
        by_name = {k.name: k.value for k in kwargs if k.name != "**"}
        unbound: list[Param] = []
        for i, p in enumerate(positional):
            if i < len(args) and not starred:
                env[p.name] = args[i]
            elif p.name in by_name:
                env[p.name] = by_name[p.name]
            else:
                unbound.append(p)
        for p in ps:
            if p.kind == ParamKind.KEYWORD_ONLY:
                if p.name in by_name:
                    env[p.name] = by_name[p.name]
                else:
                    unbound.append(p)
        frame = _Frame(
            key,
            owner,
            self_name,
            (*self.frame.via, label),
            env,
            outs=call_outs,
            start=(_index_of(self.live, self.block), len(self.block)),
        )
        self.frames.append(frame)
        self.frame = frame
        saved_span, saved_node = self.stmt_span, self.stmt_node
        saved_terminated, saved_returned = self.terminated, self.returned
        self.terminated = self.returned = False
        try:
            for p in ps:
                if p.kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD):
                    env[p.name] = Ref(self._define(p.name))
            for p in unbound:
                env[p.name] = Expr(p.default) if p.default is not None else Ref(self._define(p.name))
            body = function.child_by_field_id(Field.BODY)
            if body is not None:
                self._stmts(body.named_children)
        finally:
            self.frames.pop()
            self.frame = self.frames[-1]
            self.stmt_span, self.stmt_node = saved_span, saved_node
            self.terminated, self.returned = saved_terminated, saved_returned
        return self._call_result(frame, frame.outs)

    def _call_result(self, frame: _Frame, outs: tuple[str, ...]) -> EnvVal:
        if not frame.returns or not outs:
            return Expr("None")
        first = frame.returns[0].get(outs[0], Ref(outs[0]))
        if all(r.get(outs[0]) == first for r in frame.returns):
            if len(outs) > 1:
                return Ref(outs[0])
            return first
        return Ref(outs[0])


def _decorators(function: Node, src: SourceText) -> tuple[str, ...]:
    parent = function.parent
    if parent is None or parent.type != "decorated_definition":
        return ()
    return tuple(src.text(d).lstrip("@").strip() for d in parent.named_children if d.type == "decorator")


def _index_of(lists: list[list[Stmt]], target: list[Stmt]) -> int:
    for i, lst in enumerate(lists):
        if lst is target:
            return i
    return len(lists) - 1


def _name_of(v: Value) -> str:
    return v.name if isinstance(v, Ref) else v.text
