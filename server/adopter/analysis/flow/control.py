"""Control flow in the flow analysis: `if`/`elif`/`else` as `Branch`es, `for`/`while` as `Loop`s.

Each path of an `if` is walked with its own copy of the environment; where paths join, a name bound
differently on some path refers to itself afterwards. What a path bound it to stays visible: a name
rebound to another name (`if context is None: context = x`) got a `choose` op on that path
(`StatementFlow._bind_target`), and a name holding a same-file function on some paths only
(`attention_interface = eager_attention_forward`, rebound under `if`) holds it under those paths' tests
(`ModuleFunction`), so its call inlines the function on them. A loop over a submodule container
(`for layer in self.layers`) binds its variable to the container's items (`self.layers[*]`), so calls
of it are module ops.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.flow.calls import argument_nodes
from adopter.analysis.flow.fstrings import joined_constants
from adopter.analysis.flow.parts import Control, Expressions, Statements
from adopter.analysis.flow.state import MAX_NESTING, EnvVal, FlowState, ModuleFunction, Submodule
from adopter.analysis.names.assignments import target_leaves
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field
from adopter.dsl.types import Branch, Loop, Ref, Stmt

MAX_UNROLLED = 8  # items of a literal list a loop is unrolled over (a stem's three conv-BN pairs, not a table)
_EARLY_EXITS = frozenset({"break_statement", "continue_statement", "return_statement", "yield"})
_ITERATION = frozenset({"range", "enumerate", "zip", "reversed", "sorted", "list", "tuple", "iter"})
_CONTAINER_METHODS = frozenset({"values", "children", "modules", "items"})


def _functions_at_join(merged: dict[str, EnvVal], envs: list[dict[str, EnvVal]], conditions: tuple[str, ...]) -> None:
    """A local holding one same-file function on some paths of an `if` and no function on the others
    holds it under those paths' tests after the join (`ModuleFunction.on`), not an unknown value."""
    # Only a local some path holds a function can change: found in one pass over the paths' functions,
    # not by asking every path of every merged local (most joins hold no function at all).
    functions = {key for env in envs for key, v in env.items() if isinstance(v, ModuleFunction)}
    for key in [k for k in merged if k in functions] if functions else ():
        value = merged[key]
        if not isinstance(value, Ref):
            continue
        held = [env.get(key) for env in envs]
        names = {v.name for v in held if isinstance(v, ModuleFunction)}
        if len(names) != 1 or any(isinstance(v, ModuleFunction) and v.conditions for v in held):
            continue
        name = names.pop()
        on = tuple(k for k, v in enumerate(held) if v == ModuleFunction(name))
        merged[key] = ModuleFunction(name, conditions, on)


def _leaves_early(node: Node) -> bool:
    """Whether a loop body holds `break`, `continue`, `return` or `yield` (outside nested functions)."""
    if node.type in _EARLY_EXITS:
        return True
    return any(_leaves_early(c) for c in node.named_children
               if c.type not in ("function_definition", "class_definition", "lambda"))


class ControlFlow(Control):
    """Walks `if` statements and loops of the current frame into `Branch` and `Loop` statements."""

    def __init__(self, state: FlowState, expressions: Expressions, statements: Statements) -> None:
        self.state = state
        self.src = state.src
        self.expressions = expressions
        self.statements = statements

    def branch(self, stmt: Node, rest: list[Node]) -> bool:
        """An if/elif/else as a Branch. Returns whether `rest` (the following statements) was consumed:
        inside an inlined callee, statements after an `if` with an early `return` belong to the
        alternatives that did not return (so that every return binds the call's outputs)."""
        state = self.state
        if state.nesting >= MAX_NESTING:
            self._nesting_problem(stmt)
            return False
        conditions: list[str] = []
        bodies: list[Node | None] = []
        test = stmt.child_by_field_id(Field.CONDITION)
        conditions.append(state.text(test) if test is not None else "?")
        bodies.append(stmt.child_by_field_id(Field.CONSEQUENCE))
        if test is not None and b":=" in code_bytes(self.src, test):
            # A walrus in the test binds a value the branches use. Other calls in tests (shape
            # checks before a `raise`) are left out: they would split op chains the rules match.
            state.stmt_node, state.stmt_span = test, None
            self.expressions.value(test)
        has_else = False
        for clause in stmt.children_by_field_name("alternative"):
            if clause.type == "elif_clause":
                t = clause.child_by_field_id(Field.CONDITION)
                conditions.append(state.text(t) if t is not None else "?")
                bodies.append(clause.child_by_field_id(Field.CONSEQUENCE))
            else:
                has_else = True
                conditions.append("else")
                bodies.append(clause.child_by_field_id(Field.BODY))
        if not has_else:
            conditions.append("else")
            bodies.append(None)
        span = self.src.span(stmt)
        frame = state.frame
        base_env, base_constants = frame.env, frame.constants
        parent = state.block
        results: list[tuple[list[Stmt], dict[str, EnvVal], bool]] = []
        constants: list[dict[str, str | None]] = []
        state.nesting += 1
        state.paths += 1
        first_live = len(state.live)
        any_return = False
        try:
            for index, body in enumerate(bodies):
                lst: list[Stmt] = []
                state.live.append(lst)
                state.block = lst
                frame.env = dict(base_env)
                frame.constants = dict(base_constants)  # each path its own (`fstrings.joined_constants`)
                state.terminated = state.returned = False
                if body is not None:
                    state.alternatives.append((stmt.start_byte, index))
                    try:
                        self.statements.run(body.named_children)
                    finally:
                        state.alternatives.pop()
                any_return = any_return or state.returned
                results.append((lst, frame.env, state.terminated))
                constants.append(frame.constants)
            consumed = False
            if not frame.root and rest and any_return and not all(r[2] for r in results):
                consumed = True
                for k, (lst, env, done) in enumerate(results):
                    if done:
                        continue
                    state.block = lst
                    frame.env, frame.constants = env, constants[k]
                    state.terminated = state.returned = False
                    state.alternatives.append((stmt.start_byte, k))
                    try:
                        self.statements.run(rest)
                    finally:
                        state.alternatives.pop()
                    results[k] = (lst, frame.env, state.terminated)
                    constants[k] = frame.constants
        finally:
            state.nesting -= 1
            state.paths -= 1
            del state.live[first_live:]
            state.block = parent
        open_envs = [env for _, env, done in results if not done] or [env for _, env, _ in results]
        frame.constants = joined_constants(
            [c for c, (_, _, done) in zip(constants, results) if not done] or constants, tuple(conditions))
        frame.env = self._merge_envs(open_envs)
        if len(open_envs) == len(results) > 1:
            _functions_at_join(frame.env, open_envs, tuple(conditions))
        state.terminated = all(done for _, _, done in results)
        state.returned = state.terminated and any_return
        if any(lst for lst, _, _ in results):
            state.block.append(Branch(tuple(conditions), tuple(tuple(lst) for lst, _, _ in results), span))
        return consumed

    def loop(self, stmt: Node) -> None:
        """A `for` or `while` loop as a Loop, its targets bound inside the body only."""
        state = self.state
        if state.nesting >= MAX_NESTING:
            self._nesting_problem(stmt)
            return
        frame = state.frame
        span = self.src.span(stmt)
        targets: list[str] = []
        over: str | None = None
        module_targets: dict[int, str] = {}
        if stmt.type == "for_statement":
            left = stmt.child_by_field_id(Field.LEFT)
            right = stmt.child_by_field_id(Field.RIGHT)
            if self._unrolled(stmt, left, right):
                return
            iterable = state.text(right) if right is not None else "?"
            flat = target_leaves(left) if left is not None else []
            names = [self.src.text(t) for t in flat if t.type == "identifier"]
            if right is not None:
                over, module_targets = self._loop_over(right, len(names))
                if over is None and not self._builtin_iteration(right):
                    state.stmt_span = span
                    self.expressions.value(right)
            targets = names
        else:
            cond = stmt.child_by_field_id(Field.CONDITION)
            iterable = state.text(cond) if cond is not None else "?"
        base_env = frame.env
        parent = state.block
        lst: list[Stmt] = []
        state.live.append(lst)
        state.block = lst
        frame.env = dict(base_env)
        for k, name in enumerate(targets):
            unique = state.define(name)
            frame.env[name] = Submodule(module_targets[k]) if k in module_targets else Ref(unique)
        saved_terminated = state.terminated
        state.nesting += 1
        try:
            body = stmt.child_by_field_id(Field.BODY)
            if body is not None:
                self.statements.run(body.named_children)
        finally:
            state.nesting -= 1
            state.live.pop()
            state.block = parent
        state.terminated = saved_terminated
        loop_env = frame.env
        frame.env = self._merge_envs([base_env, {k: v for k, v in loop_env.items() if k not in targets or k in base_env}])
        unique_targets = tuple(frame.renames.get(t, t) for t in targets)
        state.block.append(Loop(unique_targets, iterable, over, tuple(lst), span))

    def _unrolled(self, stmt: Node, left: Node | None, right: Node | None) -> bool:
        """`for conv, bn in [(self.conv1, self.bn1), (self.conv2, self.bn2)]: x = bn(conv(x))` (OpenAI CLIP's
        ModifiedResNet stem): a loop over a literal list or tuple of the module's submodules (or of tuples of
        them, one per target) runs its body once per item, the targets bound to that item's submodules, as if
        written out. Each statement of the body then runs once per item at the same source span, so a site in it
        is one site there. Not for a body that leaves the loop early (`break`, `continue`, `return`, `yield`),
        an `else` clause, more than `MAX_UNROLLED` items, or any item that is not a submodule."""
        if left is None or right is None or right.type not in ("list", "tuple") or stmt.child_by_field_id(
                Field.ALTERNATIVE) is not None:
            return False
        names = target_leaves(left)
        if not names or any(t.type != "identifier" for t in names):
            return False
        items = right.named_children
        if not items or len(items) > MAX_UNROLLED:
            return False
        bound: list[list[str]] = []
        for item in items:
            parts = item.named_children if len(names) > 1 and item.type in ("tuple", "parenthesized_expression") \
                else [item]
            found = [path for p in parts if (path := self._submodule_path(p)) is not None]
            if len(parts) != len(names) or len(found) != len(parts):
                return False
            bound.append(found)
        body = stmt.child_by_field_id(Field.BODY)
        if body is None or _leaves_early(body):
            return False
        state = self.state
        frame = state.frame
        saved = state.unrolled
        listed = " ".join(self.src.text(right).split())
        state.unrolled = {**saved, **{p: f"`{listed}`" for paths in bound for p in paths}}
        try:
            for paths in bound:
                for target, path in zip(names, paths, strict=True):
                    state.define(self.src.text(target))
                    frame.env[self.src.text(target)] = Submodule(path)
                self.statements.run(body.named_children)
        finally:
            state.unrolled = saved
        return True

    def _submodule_path(self, node: Node) -> str | None:
        """`self.conv1` when the module binds `conv1` to a layer, else None."""
        if node.type != "attribute":
            return None
        obj = node.child_by_field_id(Field.OBJECT)
        attr = node.child_by_field_id(Field.ATTRIBUTE)
        if obj is None or attr is None or not self.state.is_self(obj):
            return None
        name = self.src.text(attr)
        return f"self.{name}" if name in self.state.module_attrs else None

    def _merge_envs(self, envs: list[dict[str, EnvVal]]) -> dict[str, EnvVal]:
        """The environment after paths join: a name bound differently (or not at all) on some path
        refers to itself afterwards."""
        first = envs[0]
        if len(envs) == 1:
            return first
        renames = self.state.frame.renames
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
        self.state.limit_problem(
            f"control flow nested deeper than {MAX_NESTING} levels; inner statements not analysed", stmt
        )

    def _container_path(self, node: Node) -> str | None:
        """`self.layers` (also sliced, `.values()`, or a local alias of it) → `"self.layers"`."""
        if node.type == "attribute":  # self.layers, self.text_model.encoder.layer
            dotted = dotted_text(node, self.src)
            self_name = self.state.frame.self_name
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
                inner = argument_nodes(node)
                return self._container_path(inner[0]) if len(inner) == 1 else None
        if node.type == "identifier":
            v = self.state.frame.env.get(self.src.text(node))
            if isinstance(v, Submodule) and not v.path.endswith("[*]"):
                return v.path
        return None

    def _builtin_iteration(self, node: Node) -> bool:
        """`range(n)`, `enumerate(x)`, `zip(a, b)`: iteration helpers whose call is not an op."""
        if node.type != "call":
            return False
        func = node.child_by_field_id(Field.FUNCTION)
        return func is not None and func.type == "identifier" and self.src.text(func) in _ITERATION

    def _loop_over(self, right: Node, n_targets: int) -> tuple[str | None, dict[int, str]]:
        path = self._container_path(right)
        if path is not None:
            items = right.type == "call" and self.src.text(right).rstrip().endswith(".items()")
            if n_targets > 1 and right.type == "attribute":
                # `for attn, ff in self.layers`: each item is a list of modules, unpacked in order.
                return path, {k: f"{path}[*][{k}]" for k in range(n_targets)}
            return path, {(1 if items and n_targets > 1 else 0): f"{path}[*]"}
        if right.type == "call":
            func = right.child_by_field_id(Field.FUNCTION)
            fname = self.src.text(func) if func is not None else ""
            args = argument_nodes(right)
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
