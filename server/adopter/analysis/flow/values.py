"""Expressions in the flow analysis: the ops an expression performs and the value it yields.

Attribute reads, subscripts, arithmetic, comparisons, displays and conditional expressions are
evaluated here; calls are handed to `CallFlow` (`calls.py`). An expression that touches no
tracked value (a parameter, a local, a temporary) emits nothing and yields its text as an `Expr`.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.canonical.spellings import CHOOSE
from adopter.analysis.flow.fstrings import METHOD_WORD, constant_method, substituted
from adopter.analysis.flow.parts import Calls, Expressions
from adopter.analysis.flow.state import (
    MAX_NESTING,
    OPERATOR_OP,
    EnvVal,
    FlowState,
    LocalFunction,
    ModuleFunction,
    Submodule,
    as_value,
)
from adopter.analysis.names.function_constants import enclosing_function, function_constant
from adopter.analysis.parse.source import Field
from adopter.dsl.types import Branch, Expr, Ref, Stmt, Value

# Attributes of a tensor that are metadata, not data: reading them is not an op worth a node.
_META_ATTRS = frozenset({"dtype", "device", "is_cuda", "requires_grad", "layout", "is_sparse", "grad_fn"})
_BINARY = frozenset({"+", "-", "*", "/", "@", "**", "//", "%", "&", "|", "^", "<<", ">>"})
_COMPARE = frozenset({"<", ">", "==", "!=", "<=", ">="})


class ExpressionFlow(Expressions):
    """Evaluates expressions of the current frame into ops and values."""

    calls: Calls  # set by FlowAnalysis: a call's arguments are expressions, and a call is one

    def __init__(self, state: FlowState) -> None:
        self.state = state
        self.src = state.src

    def value(self, node: Node, outs: tuple[str, ...] | None = None) -> EnvVal:
        """Evaluate an expression: emit the ops it performs, return the value it yields."""
        kind = node.type
        if kind == "identifier":
            name = self.src.text(node)
            held = self.state.frame.constants.get(name)
            if held is not None:
                # `eq = '... i d, ... j d -> ... i j'` then `einsum(eq, q, k)`: the string the local holds, as
                # a literal argument would be (a name bound to anything else, or to two strings, holds None)
                return Expr(held)
            v = self.state.lookup(name)
            return v if v is not None else Expr(name)
        if kind == "call":
            # `layout.replace('t', 'k')` of a local string constant: the constant it makes, no op
            constants = self.state.frame.constants
            # only where the call's source holds the method's name (`fstrings.METHOD_WORD`: one bisect of the
            # file's offsets of it) and a local names a constant (a name bound to anything else holds None)
            made = (constant_method(node, self.state.text, constants.get)
                    if self.src.contains(node, METHOD_WORD) and any(constants.values()) else None)
            return made if made is not None else self.calls.call(node, outs)
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
            return self.value(node.named_children[0], outs)
        if kind == "conditional_expression":
            return self._conditional(node, outs)
        if kind in ("tuple", "list", "expression_list"):
            return self._display(node, outs)
        if kind == "named_expression":
            name_node = node.child_by_field_id(Field.NAME)
            value = node.child_by_field_id(Field.VALUE)
            if name_node is not None and value is not None:
                name = self.src.text(name_node)
                out = self.state.define(name)
                v = self.value(value, (out,))
                self.state.frame.env[name] = v if not isinstance(v, Ref) or v.name == out else Ref(out)
                return v
        if kind == "keyword_argument":
            value = node.child_by_field_id(Field.VALUE)
            return self.value(value) if value is not None else Expr(self.state.text(node))
        if kind == "string" and node.child_count > 2:
            # `f"b h i d, {kv_einsum_eq} -> b h i j"` with `kv_einsum_eq` a local string constant
            constant = substituted(node, self.state.text, self.state.frame.constants.get)
            if constant is not None:
                return constant
        return Expr(self.state.text(node))

    def index(self, node: Node) -> Value:
        """The index of a subscript `x[i]`: a tracked value, or the text of slices and tuples."""
        subs = [s for s in node.children_by_field_name("subscript") if s.type != "comment"]
        if len(subs) == 1 and subs[0].type not in ("slice", "tuple", "ellipsis"):
            return as_value(self.value(subs[0]))
        return Expr(", ".join(self.state.text(s) for s in subs))

    def _attribute(self, node: Node, outs: tuple[str, ...] | None = None) -> EnvVal:
        state = self.state
        obj = node.child_by_field_id(Field.OBJECT)
        attr_node = node.child_by_field_id(Field.ATTRIBUTE)
        if obj is None or attr_node is None:
            return Expr(state.text(node))
        attr = self.src.text(attr_node)
        if state.is_self(obj):
            path = f"self.{attr}"
            return Submodule(path) if attr in state.module_attrs and attr not in state.parameters else Expr(path)
        receiver = self.value(obj)
        if obj.type == "identifier" and isinstance(receiver, (Expr, ModuleFunction, LocalFunction)):
            # `gelu_accurate._a`: a number the function memoises on itself (`function_constants`)
            held = self._memoised(obj, receiver, attr)
            if held is not None:
                return Expr(held)
        if isinstance(receiver, (LocalFunction, ModuleFunction)):
            receiver = Expr(receiver.name)
        if isinstance(receiver, Ref):
            if attr in _META_ATTRS:
                return Expr(f"{receiver.name}.{attr}")
            return state.emit(OPERATOR_OP, "getattr", (receiver, Expr(attr)), (), node, outs)
        if isinstance(receiver, Submodule):
            return Expr(f"{receiver.path}.{attr}")
        return Expr(f"{receiver.text}.{attr}") if receiver.text.isidentifier() else Expr(state.text(node))

    def _memoised(self, obj: Node, receiver: Expr | ModuleFunction | LocalFunction, attr: str) -> str | None:
        """The constant that the function `obj` names (holding `receiver`) keeps as its attribute `attr`: inside
        a function of that name, that function; else the closure or module-level function it holds."""
        name = self.src.text(obj)
        if not self.src.positions(f"def {name}(".encode()):
            return None  # no function of that name in the file (`torch.float32`, `config.dim`): the usual case
        state = self.state
        function: Node | None = None
        if isinstance(receiver, Expr):
            if receiver.text == name:
                function = enclosing_function(obj, name, self.src)
                if function is None and name in state.symbols.functions:
                    function = state.symbols.function_node(name)
        elif receiver.name == name:
            function = (state.local_functions.get(receiver.key) if isinstance(receiver, LocalFunction)
                        else state.symbols.function_node(name))
        return function_constant(function, attr, self.src) if function is not None else None

    def _subscript(self, node: Node, outs: tuple[str, ...] | None = None) -> EnvVal:
        state = self.state
        value = node.child_by_field_id(Field.VALUE)
        if value is None:
            return Expr(state.text(node))
        container = self.value(value)
        if isinstance(container, Submodule):
            index = self.index(node)
            item = f"{container.path[5:]}[{index.text}]" if isinstance(index, Expr) else ""
            if item in state.positioned:
                return Submodule(f"self.{item}")  # `self.features[0]`: the item built at that position
            return Submodule(container.path if container.path.endswith("[*]") else f"{container.path}[*]")
        if isinstance(container, Ref):
            index = self.index(node)
            return state.emit(OPERATOR_OP, "getitem", (container, index), (), node, outs)
        index = self.index(node)
        if isinstance(index, Ref):
            return state.emit(OPERATOR_OP, "getitem", (as_value(container), index), (), node, outs)
        return Expr(state.text(node))

    def _binary(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        op = node.child_by_field_id(Field.OPERATOR)
        if left is None or right is None or op is None:
            return Expr(self.state.text(node))
        lv = as_value(self.value(left))
        rv = as_value(self.value(right))
        symbol = self.src.text(op)
        if symbol in _BINARY and (isinstance(lv, Ref) or isinstance(rv, Ref)):
            return self.state.emit(OPERATOR_OP, symbol, (lv, rv), (), node, outs)
        return Expr(self.state.text(node))

    def _unary(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        arg = node.child_by_field_id(Field.ARGUMENT)
        op = node.child_by_field_id(Field.OPERATOR)
        if arg is None or op is None:
            return Expr(self.state.text(node))
        v = as_value(self.value(arg))
        symbol = self.src.text(op)
        if isinstance(v, Ref) and symbol != "+":
            return self.state.emit(OPERATOR_OP, "neg" if symbol == "-" else symbol, (v,), (), node, outs)
        return v if symbol == "+" else Expr(self.state.text(node))

    def _comparison(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        operands = [c for c in node.named_children if c.type != "comment"]
        operators = [self.src.text(c) for c in node.children if not c.is_named]
        values = [as_value(self.value(o)) for o in operands]
        if len(values) == 2 and len(operators) == 1 and operators[0] in _COMPARE:
            if any(isinstance(v, Ref) for v in values):
                return self.state.emit(OPERATOR_OP, operators[0], (values[0], values[1]), (), node, outs)
        return Expr(self.state.text(node))

    def _display(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        elements = [c for c in node.named_children if c.type != "comment"]
        if any(e.type in ("list_splat", "dictionary_splat", "parenthesized_list_splat") for e in elements):
            values = [as_value(self.value(e.named_children[0] if e.named_child_count else e)) for e in elements]
        else:
            values = [as_value(self.value(e)) for e in elements]
        if any(isinstance(v, Ref) for v in values):
            kind = "list" if node.type == "list" else "tuple"
            return self.state.emit(OPERATOR_OP, kind, tuple(values), (), node, outs)
        return Expr(self.state.text(node))

    def _conditional(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        state = self.state
        parts = [c for c in node.named_children if c.type != "comment"]
        if len(parts) != 3:
            return Expr(state.text(node))
        if state.nesting >= MAX_NESTING:
            return Expr(state.text(node))
        yes, test, no = parts
        out = outs or (state.temp(),)
        parent = state.block
        blocks: list[list[Stmt]] = []
        values: list[EnvVal] = []
        first_live = len(state.live)
        state.nesting += 1
        try:
            for branch in (yes, no):
                lst: list[Stmt] = []
                state.live.append(lst)
                state.block = lst
                values.append(self.value(branch, out))
                blocks.append(lst)
        finally:
            state.nesting -= 1
            del state.live[first_live:]
            state.block = parent
        if not blocks[0] and not blocks[1]:
            refs = [v for v in values if isinstance(v, Ref)]
            if len(refs) == 2 and refs[0].name != refs[1].name:
                # `kv if cross else hidden`: two values, one per path. Each path passes its value on
                # (a transparent `choose`), so data flow sees both, not just the first.
                for lst, v, branch in zip(blocks, refs, (yes, no)):
                    state.block = lst
                    state.emit(OPERATOR_OP, CHOOSE[1], (v,), (), branch, out)
                state.block = parent
            else:
                return refs[0] if refs else Expr(state.text(node))
        else:
            for lst, value, branch in zip(blocks, values, (yes, no)):
                if not lst and isinstance(value, Ref) and value.name != out[0]:
                    # `h + pos if pos is not None else h`: one path computes, the other passes a name on
                    # (a transparent `choose`), so data flow sees `h` on that path too.
                    state.block = lst
                    state.emit(OPERATOR_OP, CHOOSE[1], (value,), (), branch, out)
            state.block = parent
        state.block.append(
            Branch((state.text(test), "else"), (tuple(blocks[0]), tuple(blocks[1])), self.src.span(node))
        )
        return Ref(out[0])
