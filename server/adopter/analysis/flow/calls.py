"""Calls in the flow analysis: what a call is (module, function, method) and inlining same-file callees.

`self.method(...)`, `super().method(...)`, module-level helpers of the same file, local closures,
stateless submodules and methods passed as callbacks (`checkpoint(self.block, x)`) are inlined: their
ops appear in the caller with `via` naming the call, their parameters bound to the arguments and their
locals renamed apart from the caller's. Depth is bounded and recursion stops at the first repeat; a callee
that calls itself is inlined with its parameters unbound (its own calls pass other values than the caller's).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from adopter.analysis.canonical.spellings import CHOOSE
from adopter.analysis.flow.foreign import FOREIGN, PinnedText, Reading
from adopter.analysis.flow.parts import Calls, Expressions, Statements
from adopter.analysis.flow.state import (
    CALL_OP,
    FUNCTION_OP,
    KEYWORD_ONLY,
    MAX_INLINE_DEPTH,
    MAX_NESTING,
    METHOD_OP,
    MODULE_OP,
    OPERATOR_OP,
    POSITIONAL,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    EnvVal,
    FlowState,
    Frame,
    LocalFunction,
    ModuleFunction,
    Submodule,
    as_value,
)
from adopter.analysis.names.bias_forward import bias_term
from adopter.analysis.names.naming import is_opaque_function
from adopter.analysis.names.signature import params
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.dsl.types import Branch, Expr, Kwarg, Param, Ref, Stmt, Value


def argument_nodes(call: Node) -> list[Node]:
    """The argument nodes of a call, comments left out."""
    args = call.child_by_field_id(Field.ARGUMENTS)
    if args is None:
        return []
    return [a for a in args.named_children if a.type != "comment"]


class CallFlow(Calls):
    """Evaluates calls of the current frame: emits the call's op, or inlines the callee's body."""

    statements: Statements  # set by FlowAnalysis: an inlined callee's body is walked there

    def __init__(self, state: FlowState, expressions: Expressions) -> None:
        self.state = state
        self.src = state.src
        self.expressions = expressions

    def args(self, call: Node) -> tuple[list[Value], list[Kwarg], bool]:
        """Positional and keyword arguments (evaluated in order), and whether all are opaque."""
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        args: list[Value] = []
        kwargs: list[Kwarg] = []
        if args_node is None:
            return args, kwargs, True
        if args_node.type == "generator_expression":
            return [Expr(self.state.text(args_node))], kwargs, True
        expressions = self.expressions
        opaque = True  # every value an Expr (computed here rather than by a second pass)
        for a in args_node.named_children:
            kind = a.type
            if kind == "comment":
                continue
            if kind == "keyword_argument":
                name = a.child_by_field_id(Field.NAME)
                value_node = a.child_by_field_id(Field.VALUE)
                if name is not None and value_node is not None:
                    v = as_value(expressions.value(value_node))
                    opaque = opaque and isinstance(v, Expr)
                    kwargs.append(Kwarg(self.src.text(name), v))
            elif kind == "dictionary_splat":
                inner = a.named_children[0] if a.named_child_count else a
                v = as_value(expressions.value(inner))
                opaque = opaque and isinstance(v, Expr)
                kwargs.append(Kwarg("**", v))
            elif kind == "list_splat":
                inner = a.named_children[0] if a.named_child_count else a
                v = as_value(expressions.value(inner))
                if isinstance(v, Ref):
                    opaque = False
                    args.append(Ref("*" + v.name))
                else:
                    args.append(Expr("*" + v.text))
            else:
                v = as_value(expressions.value(a))
                opaque = opaque and isinstance(v, Expr)
                args.append(v)
        return args, kwargs, opaque

    def call(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        """Evaluate a call expression."""
        state = self.state
        func = node.child_by_field_id(Field.FUNCTION)
        if func is None:
            return Expr(state.text(node))
        if func.type == "attribute":
            obj = func.child_by_field_id(Field.OBJECT)
            attr_node = func.child_by_field_id(Field.ATTRIBUTE)
            if obj is not None and attr_node is not None:
                return self._attribute_call(node, obj, self.src.text(attr_node), outs)
        if func.type == "identifier":
            if state.is_self(func) and state.table is not None and state.class_name is not None:
                # `self(x)` in a method (a loss method calling the model) runs the module's forward.
                found = state.table.find_method(state.class_name, "forward")
                if found is not None:
                    return self._inline(found[0], found[1], "self.forward", node, outs, bound=True)
            return self._name_call(node, self.src.text(func), outs)
        callee = self.expressions.value(func)
        args, kwargs, opaque = self.args(node)
        if isinstance(callee, Submodule):
            return state.emit(MODULE_OP, callee.path, tuple(args), tuple(kwargs), node, outs)
        if isinstance(callee, Expr) and opaque:
            return Expr(state.text(node))
        target = callee.name if isinstance(callee, Ref) else self.src.norm(func)
        return state.emit(CALL_OP, target, tuple(args), tuple(kwargs), node, outs)

    def _attribute_call(self, node: Node, obj: Node, attr: str, outs: tuple[str, ...] | None) -> EnvVal:
        state = self.state
        frame = state.frame
        # super().method(...)
        if obj.type == "call" and self.src.text(obj).replace(" ", "") == "super()":
            if state.table is not None and frame.owner is not None and state.class_name is not None:
                found = state.table.find_method(state.class_name, attr, after=frame.owner)
                if found is not None:
                    return self._inline(found[0], found[1], f"super().{attr}", node, outs, bound=True)
            args, kwargs, _ = self.args(node)
            return state.emit(CALL_OP, f"super().{attr}", tuple(args), tuple(kwargs), node, outs)
        # self.method(...) / self.submodule(...)
        if state.is_self(obj):
            if attr not in state.module_attrs and state.home is not None and state.home.table is not None and (
                    state.home.class_name is not None):
                # in a base's method (`flow.foreign`): the analysed class's own definition wins
                found = state.home.table.find_method(state.home.class_name, attr)
                if found is not None:
                    return self._inline(found[0], found[1], f"self.{attr}", node, outs, bound=True,
                                        reading=state.home)
            if attr not in state.module_attrs and state.table is not None and state.class_name is not None:
                found = state.table.find_method(state.class_name, attr)
                if found is not None:
                    return self._inline(found[0], found[1], f"self.{attr}", node, outs, bound=True)
                foreign = state.base_methods(attr) if state.base_methods is not None else None
                if foreign is not None:
                    return self._inline(foreign.owner, foreign.node, f"self.{attr}{FOREIGN}{foreign.cls}", node, outs,
                                        bound=True, reading=Reading(foreign.symbols.src, foreign.symbols, foreign.table,
                                                                    foreign.cls))
            if attr in state.stateless and frame.root:
                owner, forward = state.stateless[attr]
                return self._inline(owner, forward, f"self.{attr}", node, outs, bound=True)
            if attr in state.function_attrs and attr not in state.module_attrs and frame.root:
                # `self.activation_func = swiglu` in `__init__`: the call is the function's; one defined in
                # `__init__` sees that `self` as the module (`idioms.function_attributes`).
                function, nested = state.function_attrs[attr]
                return self._inline(None, function, f"self.{attr}", node, outs, bound=False,
                                    closure_self=frame.self_name if nested else None)
            args, kwargs, _ = self.args(node)
            if attr in state.bias_attrs and args and isinstance(args[0], Ref):
                # its forward returns its input plus a term not computed from it (`names.bias_forward`)
                return state.emit(OPERATOR_OP, "+", (args[0], Expr(bias_term(attr))), (), node, outs)
            return state.emit(MODULE_OP, f"self.{attr}", tuple(args), tuple(kwargs), node, outs)
        # self.sub.child(...): a submodule of a submodule
        if obj.type == "attribute":
            inner_obj = obj.child_by_field_id(Field.OBJECT)
            inner_attr = obj.child_by_field_id(Field.ATTRIBUTE)
            if inner_obj is not None and inner_attr is not None and state.is_self(inner_obj):
                sub = self.src.text(inner_attr)
                if sub in state.module_attrs and sub not in state.parameters:
                    args, kwargs, _ = self.args(node)
                    path = f"self.{sub}" if attr == "forward" else f"self.{sub}.{attr}"
                    return state.emit(MODULE_OP, path, tuple(args), tuple(kwargs), node, outs)
        # a qualified function: torch.matmul, F.softmax, nn.functional.softmax, math.sqrt
        # `dotted_text`'s answer, without a call for the receivers it reads at its first test (most are a name)
        kind = obj.type
        dotted = self.src.text(obj) if kind == "identifier" else (
            dotted_text(obj, self.src) if kind == "attribute" else None)
        if dotted is not None:
            root = dotted.split(".")[0]
            if root not in frame.env and root != frame.self_name:
                own = self._class_function(dotted, attr)
                if own is not None:
                    return self._inline(own[0], own[1], f"{dotted}.{attr}", node, outs, bound=True)
                qualified = state.symbols.qualify(f"{dotted}.{attr}")
                called_back = self._callback_call(node, outs)
                if called_back is not None:
                    return called_back
                args, kwargs, opaque = self.args(node)
                if opaque and is_opaque_function(qualified):
                    return Expr(state.text(node))
                return state.emit(FUNCTION_OP, qualified, tuple(args), tuple(kwargs), node, outs)
        receiver = self.expressions.value(obj)
        if isinstance(receiver, (LocalFunction, ModuleFunction)):
            receiver = Expr(receiver.name)
        if isinstance(receiver, Submodule):
            args, kwargs, _ = self.args(node)
            path = receiver.path if attr == "forward" else f"{receiver.path}.{attr}"
            return state.emit(MODULE_OP, path, tuple(args), tuple(kwargs), node, outs)
        args, kwargs, opaque = self.args(node)
        if isinstance(receiver, Expr) and opaque and not self._is_parameter(receiver):
            return Expr(state.text(node))
        return state.emit(METHOD_OP, attr, (receiver, *args), tuple(kwargs), node, outs)

    def _class_function(self, name: str, attr: str) -> tuple[str, Node] | None:
        """The same-file class `name`'s staticmethod or classmethod `attr` (`CosSinRoPE._rotate_half(x)`,
        called through the class), else None: a plain method called through its class takes its instance
        as the first argument, which inlining as a bound call would drop."""
        symbols = self.state.symbols
        table = self.state.table
        if table is None or "." in name or name in symbols.imports or name in symbols.aliases:
            return None
        if not symbols.has_class(name):
            return None
        found = table.find_method(name, attr)
        if found is None:
            return None
        decorators = _decorators(found[1], self.src)
        return found if "staticmethod" in decorators or "classmethod" in decorators else None

    def _is_parameter(self, v: Expr) -> bool:
        """`self.weight`, `self.q_proj.weight`: tensors held by the module (bound in __init__)."""
        if not v.text.startswith("self."):
            return False
        attr = v.text[5:].split(".")[0].split("[")[0]
        return attr in self.state.module_attrs

    def _name_call(self, node: Node, name: str, outs: tuple[str, ...] | None) -> EnvVal:
        state = self.state
        v = state.lookup(name)
        if isinstance(v, LocalFunction):
            # Called where it was defined or, handed to a same-file helper (`apply(x, norm)`), inside it:
            # either way it sees the `self` and locals of the function that defined it.
            defined = state.closure_frames.get(v.key, state.frame)
            return self._inline(defined.owner, state.local_functions[v.key], v.name, node, outs, bound=False,
                                closure_self=defined.self_name, closure=defined)
        if isinstance(v, ModuleFunction):
            return self._module_function_call(node, name, v, outs)
        if isinstance(v, Expr) and v.text.startswith("self.") and v.text[5:].split("[")[0] in state.module_attrs:
            v = Submodule(v.text)  # a submodule passed in as an argument (`proj_layer(hidden_states)`)
        if isinstance(v, Submodule):
            args, kwargs, _ = self.args(node)
            return state.emit(MODULE_OP, v.path, tuple(args), tuple(kwargs), node, outs)
        if isinstance(v, Ref):
            args, kwargs, _ = self.args(node)
            return state.emit(CALL_OP, v.name, tuple(args), tuple(kwargs), node, outs)
        if isinstance(v, Expr):
            name = v.text
        if v is None or name.replace(".", "").replace("_", "").isalnum():
            # Helpers are inlined into methods; into a module-level function (analysed on its own, as is
            # the helper) only a small one (`rotate_half` in `apply_rotary_pos_emb`), whose ops complete a
            # site of the caller: a site wholly inside the helper keeps the helper's spans and is reported
            # once (`adopter.engine.sites` keeps one finding per rule and spans).
            function = state.symbols.function_node(name) if v is None else None
            if function is not None and state.class_name is None and not small_helper(function):
                function = None
            if function is not None and written_by_adopter(function, self.src):
                function = None  # a fix's own helper: the kernel call it stands for, not the user's code
            if function is not None:
                return self._function(function, name, node, outs)
            same_file_class = state.symbols.has_class(name)
            qualified = name if same_file_class else state.symbols.qualify(name)
            if not same_file_class:
                called_back = self._callback_call(node, outs)
                if called_back is not None:
                    return called_back
            args, kwargs, opaque = self.args(node)
            if opaque and not same_file_class and is_opaque_function(qualified):
                return Expr(state.text(node))
            return state.emit(FUNCTION_OP, qualified, tuple(args), tuple(kwargs), node, outs)
        args, kwargs, _ = self.args(node)
        return state.emit(CALL_OP, name, tuple(args), tuple(kwargs), node, outs)

    def _module_function_call(self, node: Node, name: str, v: ModuleFunction, outs: tuple[str, ...] | None
                              ) -> EnvVal:
        """A call through a local holding a same-file function: inlined as a call of the function. When
        the local holds it on some alternatives of an `if` only (`attention_interface` is
        `eager_attention_forward` unless the config names a library kernel), the call is a branch with
        those tests: the function inlined on its alternatives, the call as written on the others."""
        state = self.state
        function = state.symbols.function_node(v.name)
        if function is None:
            args, kwargs, _ = self.args(node)
            return state.emit(CALL_OP, name, tuple(args), tuple(kwargs), node, outs)
        if not v.conditions:
            return self._function(function, v.name, node, outs)
        out = outs or (state.temp(),)
        parent = state.block
        paths: list[list[Stmt]] = []
        first_live = len(state.live)
        state.nesting += 1
        try:
            for alt in range(len(v.conditions)):
                lst: list[Stmt] = []
                state.live.append(lst)
                state.block = lst
                paths.append(lst)
                if alt in v.on:
                    result = self._function(function, v.name, node, out)
                    if isinstance(result, Ref) and result.name != out[0]:
                        state.emit(OPERATOR_OP, CHOOSE[1], (result,), (), node, out[:1])
                else:
                    args, kwargs, _ = self.args(node)
                    state.emit(CALL_OP, name, tuple(args), tuple(kwargs), node, out)
        finally:
            state.nesting -= 1
            del state.live[first_live:]
            state.block = parent
        state.block.append(Branch(v.conditions, tuple(tuple(p) for p in paths), self.src.span(node)))
        return Ref(out[0])

    def _function(self, function: Node, label: str, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        """Inline a call of a same-file module-level function. Handed the module itself first
        (`eager_attention_forward(self, query, ...)`), its first parameter is read as `self`, so that
        `module.attn_dropout(w)` is the submodule's call."""
        nodes = argument_nodes(node)
        ps = params(function, self.src)
        if nodes and self.state.is_self(nodes[0]) and ps and ps[0].kind == POSITIONAL:
            args, kwargs, _ = self.args(node)
            return self._inline(None, function, label, node, outs, bound=True, call_args=(args[1:], kwargs),
                                handed=ps[0].name)
        return self._inline(None, function, label, node, outs, bound=False)

    def inline(self, function: Node, label: str, node: Node, outs: tuple[str, ...] | None,
               call_args: tuple[list[Value], list[Kwarg]]) -> EnvVal:
        """A same-file function called with values already evaluated (`map(l2norm, (q, k))`)."""
        return self._inline(None, function, label, node, outs, bound=False, call_args=call_args)

    def _callback_call(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal | None:
        """A function of another module called with a method of `self` as a callback.

        `apply_chunking_to_forward(self.ff_chunk, size, dim, x)` and
        `torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)` call the callback with
        the tensors passed after it; the callback is inlined with those tracked values (Refs) as its
        arguments, so its ops and sites appear in this forward. None when no argument is such a callback.
        """
        state = self.state
        if state.table is None or state.class_name is None:
            return None
        arg_nodes = [a for a in argument_nodes(node) if a.type != "keyword_argument"]
        for i, a in enumerate(arg_nodes):
            if a.type != "attribute":
                continue
            obj, attr_node = a.child_by_field_id(Field.OBJECT), a.child_by_field_id(Field.ATTRIBUTE)
            if obj is None or attr_node is None or not state.is_self(obj):
                continue
            attr = self.src.text(attr_node)
            if attr in state.module_attrs:
                continue
            found = state.table.find_method(state.class_name, attr)
            if found is None:
                continue
            tensors: list[Value] = []
            for later in arg_nodes[i + 1 :]:
                v = self.expressions.value(later)
                if isinstance(v, Ref):
                    tensors.append(v)
            return self._inline(found[0], found[1], f"self.{attr}", node, outs, bound=True,
                                call_args=(tensors, []))
        return None

    def _handed_closures(self, node: Node) -> dict[int, LocalFunction]:
        """The positional arguments of a call written at `node` that name a closure of the caller
        (`map_first(x, norm)`), by position: the callee's parameter then holds the closure itself, so that
        calling it (`fn(x)`) inlines the closure's body."""
        out: dict[int, LocalFunction] = {}
        positional = [a for a in argument_nodes(node) if a.type not in ("keyword_argument", "dictionary_splat")]
        for i, a in enumerate(positional):
            held = self.state.lookup(self.src.text(a)) if a.type == "identifier" else None
            if isinstance(held, LocalFunction):
                out[i] = held
        return out

    def _inline(
        self,
        owner: str | None,
        function: Node,
        label: str,
        node: Node,
        outs: tuple[str, ...] | None,
        bound: bool,
        closure_self: str | None = None,
        closure: Frame | None = None,
        call_args: tuple[list[Value], list[Kwarg]] | None = None,
        handed: str | None = None,
        reading: Reading | None = None,
    ) -> EnvVal:
        """Inline a call of a same-file method or function: its ops appear here, `via` naming it.

        `call_args` replaces the arguments written at `node` (a callback called by another function).
        `reading`: the file the callee is defined in, when it is not the one being walked (`flow.foreign`).
        """
        if reading is None:
            return self._inline_here(owner, function, label, node, outs, bound, closure_self, closure, call_args,
                                     handed)
        state = self.state
        if call_args is None:
            args, kwargs, _ = self.args(node)  # written in the caller's file
            call_args = (args, kwargs)
        saved = (Reading(state.src, state.symbols, state.table, state.class_name), state.home)
        if reading is state.home:  # back in the analysed file (its override of a method a base's method calls)
            if state.stmt_span is None and state.stmt_node is not None:
                state.stmt_span = self.src.span(state.stmt_node)  # the base's statement: the pinned span
            self._read(reading)
            state.home = None
        else:
            pin = state.src.pinned if isinstance(state.src, PinnedText) else (
                state.stmt_span or self.src.span(state.stmt_node) if state.stmt_node is not None else None)
            if pin is None:
                return state.emit(CALL_OP, label, tuple(call_args[0]), tuple(call_args[1]), node, outs)
            if state.home is None:
                state.home = saved[0]
            self._read(Reading(PinnedText(reading.src, pin), reading.symbols, reading.table, reading.class_name))
        try:
            return self._inline_here(owner, function, label, node, outs, bound, closure_self, closure, call_args,
                                     handed)
        finally:
            self._read(saved[0])
            state.home = saved[1]

    def _read(self, reading: Reading) -> None:
        """Walk on in `reading`'s file: every part reads text through its source, names through its symbols."""
        state = self.state
        state.src = self.src = self.expressions.src = self.statements.src = reading.src
        self.statements.control.src = reading.src
        state.symbols, state.table, state.class_name = reading.symbols, reading.table, reading.class_name

    def _inline_here(
        self,
        owner: str | None,
        function: Node,
        label: str,
        node: Node,
        outs: tuple[str, ...] | None,
        bound: bool,
        closure_self: str | None = None,
        closure: Frame | None = None,
        call_args: tuple[list[Value], list[Kwarg]] | None = None,
        handed: str | None = None,
    ) -> EnvVal:
        state = self.state
        key = function.start_byte
        recursive = any(f.key == key for f in state.frames)
        if call_args is not None:
            args, kwargs = call_args
        else:
            args, kwargs, _ = self.args(node)
        if recursive or len(state.frames) > MAX_INLINE_DEPTH or state.nesting >= MAX_NESTING:
            kind = CALL_OP if bound else FUNCTION_OP
            return state.emit(kind, label, tuple(args), tuple(kwargs), node, outs)
        if len(state.frames) == 1 and state.stmt_node is not None:
            # A call the analysed function itself makes: the site of the callee's ops runs at this statement.
            called_at = state.stmt_span or self.src.span(state.stmt_node)
            if (label, called_at) not in state.calls:
                state.calls.append((label, called_at))
        if state.stmt_node is not None:
            state.applications.append(((*state.frame.via, label), tuple(outs or ()),
                                       state.stmt_span or self.src.span(state.stmt_node), tuple(state.alternatives)))
        ps = list(params(function, self.src))
        self_name: str | None = closure_self
        decorators = _decorators(function, self.src) if bound else ()
        if "staticmethod" in decorators:
            bound = False
        if bound and ps:
            if "classmethod" not in decorators:
                self_name = ps[0].name
            ps = ps[1:]
        # A callee that calls itself also runs with what its own calls pass (`refine(s.unsqueeze(0), n - 1)`): the
        # caller's values, their ranks and constants, are not the only ones its parameters take, so none is bound.
        fresh = self._calls_itself(function, label)
        call_outs = outs or ()
        state.names.update(dict.fromkeys(call_outs))
        # A closure sees the locals of the function it was defined in (it is called from there).
        env: dict[str, EnvVal] = dict(closure.env) if closure is not None else {}
        positional = [p for p in ps if p.kind == POSITIONAL]
        starred = any(isinstance(a, (Ref, Expr)) and _name_of(a).startswith("*") for a in args)
        by_name = {k.name: k.value for k in kwargs if k.name != "**"}
        unbound: list[Param] = []
        handed_closures = self._handed_closures(node) if call_args is None and not starred else {}
        for i, p in enumerate(positional):
            if fresh:
                unbound.append(p)
            elif i in handed_closures:
                env[p.name] = handed_closures[i]
            elif i < len(args) and not starred:
                env[p.name] = args[i]
            elif p.name in by_name:
                env[p.name] = by_name[p.name]
            else:
                unbound.append(p)
        for p in ps:
            if p.kind == KEYWORD_ONLY:
                if p.name in by_name and not fresh:
                    env[p.name] = by_name[p.name]
                else:
                    unbound.append(p)
        frame = Frame(
            key,
            owner,
            self_name,
            (*state.frame.via, label),
            env,
            outs=call_outs,
            start=(_index_of(state.live, state.block), len(state.block)),
            handed=handed,
            params=frozenset(p.name for p in ps),
        )
        state.frames.append(frame)
        state.frame = frame
        saved_span, saved_node = state.stmt_span, state.stmt_node
        saved_terminated, saved_returned = state.terminated, state.returned
        state.terminated = state.returned = False
        try:
            for p in ps:
                if p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
                    env[p.name] = Ref(state.define(p.name))
            for p in unbound:
                env[p.name] = Expr(p.default) if p.default is not None and not fresh else Ref(state.define(p.name))
            body = function.child_by_field_id(Field.BODY)
            if body is not None:
                self.statements.run(body.named_children)
        finally:
            state.frames.pop()
            state.frame = state.frames[-1]
            state.stmt_span, state.stmt_node = saved_span, saved_node
            state.terminated, state.returned = saved_terminated, saved_returned
        return _call_result(frame, frame.outs)

    def _calls_itself(self, function: Node, label: str) -> bool:
        """Whether the body of the callee inlined as `label` (`refine`, `self.refine`) calls it by that name."""
        body = function.child_by_field_id(Field.BODY)
        if body is None or label.startswith("super()"):
            return False
        name = label.rsplit(".", 1)[-1].encode()
        if self.src.data.find(name, body.start_byte, body.end_byte) < 0:  # the common case: no text, no pattern
            return False
        # The body's code only: a comment naming the call (`# unlike self._attn(q, k, 1)`) is no call of it.
        pattern = re.compile(rb"(?<![\w.])" + re.escape(label.encode()) + rb"\s*\(")
        return pattern.search(code_bytes(self.src, body)) is not None


def _call_result(frame: Frame, outs: tuple[str, ...]) -> EnvVal:
    """The value of an inlined call: what every `return` bound to its first output, else that output."""
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


MAX_SMALL_HELPER = 6  # statements: a helper like `rotate_half` (2-4), not a whole computation
_COMPOUND = frozenset({"if_statement", "for_statement", "while_statement", "with_statement", "try_statement",
                       "function_definition", "class_definition", "decorated_definition", "match_statement"})


ADOPTER_TAG = "(adopter: "  # in the docstring of every helper function a fix writes (synth strategies)


def written_by_adopter(function: Node, src: SourceText) -> bool:
    """Whether `function` is a helper a fix wrote (`gated_activation`, `fused_linear_gelu`, ...): its
    docstring carries the `(adopter: <tag>)` marker. Such a helper is the fused kernel's call site, so its
    callers do not inline it (a rule would otherwise find the pattern the fix just replaced)."""
    body = function.child_by_field_id(Field.BODY)
    first = body.named_children[0] if body is not None and body.named_child_count else None
    if first is None or first.type != "expression_statement" or first.named_child_count != 1:
        return False
    doc = first.named_children[0]
    return doc.type == "string" and ADOPTER_TAG in src.text(doc)


def small_helper(function: Node) -> bool:
    """Whether a module-level helper is small enough to inline into another module-level function:
    at most `MAX_SMALL_HELPER` statements (a docstring aside), none compound."""
    body = function.child_by_field_id(Field.BODY)
    if body is None:
        return False
    stmts = [s for s in body.named_children if s.type != "comment" and not (
        s.type == "expression_statement" and s.named_child_count == 1 and s.named_children[0].type == "string")]
    return len(stmts) <= MAX_SMALL_HELPER and not any(s.type in _COMPOUND for s in stmts)

