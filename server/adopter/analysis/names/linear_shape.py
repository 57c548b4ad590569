"""Whether a `forward` applies one of its own layers exactly once to its input, with only elementwise work
around it: the Linear-like wrappers of model code.

    def forward(self, hidden_states):                      # transformers' / timm's Gemma4ClippableLinear
        if self.use_clipped_linears:
            hidden_states = torch.clamp(hidden_states, self.input_min, self.input_max)
        hidden_states = self.linear(hidden_states)
        if self.use_clipped_linears:
            hidden_states = torch.clamp(hidden_states, self.output_min, self.output_max)
        return hidden_states

    def forward(self, x):                                   # litgpt's AdapterV2Linear
        return self.adapter_scale * (self.linear(x) + self.adapter_bias)

`linear_shape` gives the attribute applied (`"linear"`), or None. What it allows, exactly: `forward(self, x)`
with no other parameter; a docstring; assignments to local names and `if` blocks (whose condition calls
nothing) that only re-assign a name to a value of the same kind; one final `return`. Values are built from
the input, local names, attributes (`self.scale`, `x.dtype`), constants, `+ - * /` and unary minus, clamps
(`torch.clamp`/`torch.clip`, `.clamp`/`.clip`, with bounds that do not read the input) and dtype casts
(`.float()`, `.to(...)`, `.type_as(...)`, ...). The one layer call `self.<attr>(v)` takes a value computed
from the input alone, is made once (not inside an `if`), and the return is computed from its output; no value
mixes the input with the layer's output (a residual), and nothing else is called (a second layer, a LoRA
branch, a matmul, a convolution, an attention, a reshape). A forward that only applies the layer, with
nothing around it, is a chain (`forward_shape`), read through where it is called, and not counted here.

Kept apart (it needs only the syntax tree) so that a cached analysis depends on this answer rather than on
the method's text (`ModuleSymbols`, `METHOD_LINEAR`): editing such a forward re-analyses the classes that
use it only when the answer changes.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.forward_shape import chain_shape
from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import Field, SourceText

_CONST, _INPUT, _OUTPUT = 0, 1, 2  # what a value is computed from: neither, the input, the layer's output
_CASTS = frozenset({"float", "half", "bfloat16", "double", "to", "type", "type_as", "contiguous"})
_CLAMPS = frozenset({"clamp", "clip", "clamp_", "clip_"})
_TORCH_CLAMPS = frozenset({"torch.clamp", "torch.clip"})
_ELEMENTWISE = frozenset({"+", "-", "*", "/"})


class _Refused(Exception):
    """The forward does something a Linear-like wrapper does not."""


def linear_shape(function: Node, src: SourceText) -> str | None:
    """The attribute `forward(self, x)` applies once, with only elementwise work around it (see the module
    docstring), or None."""
    # Memoised per file: asked at every binding of the class and for its fingerprint.
    key = ("linear-shape", function.start_byte)
    if key not in src.memo:
        src.memo[key] = _linear_shape(function, src)
    return src.memo[key]  # type: ignore[return-value]


def _linear_shape(function: Node, src: SourceText) -> str | None:
    ps = params(function, src)
    body = function.child_by_field_id(Field.BODY)
    if len(ps) != 2 or ps[1].default is not None or body is None or chain_shape(function, src) is not None:
        return None
    reader = _Reader(ps[0].name, ps[1].name, src)
    stmts = _statements(body)
    if not stmts or stmts[-1].type != "return_statement" or stmts[-1].named_child_count != 1:
        return None
    try:
        for stmt in stmts[:-1]:
            reader.statement(stmt, top=True)
        kind = reader.value(stmts[-1].named_children[0])
    except _Refused:
        return None
    return reader.applied if kind == _OUTPUT and reader.applied is not None else None


def _statements(block: Node) -> list[Node]:
    stmts = [s for s in block.named_children if s.type not in ("comment", "pass_statement")]
    if stmts and stmts[0].type == "expression_statement" and stmts[0].named_children[0].type == "string":
        stmts = stmts[1:]  # the docstring
    return stmts


class _Reader:
    """Reads the forward's statements in order, keeping what each local name is computed from."""

    def __init__(self, me: str, x: str, src: SourceText) -> None:
        self.me, self.src = me, src
        self.names: dict[str, int] = {x: _INPUT}
        self.applied: str | None = None
        self.inside_if = False

    def statement(self, stmt: Node, *, top: bool) -> None:
        if stmt.type == "if_statement" and top:
            self._if(stmt)
            return
        if stmt.type != "expression_statement" or stmt.named_child_count != 1:
            raise _Refused
        assign = stmt.named_children[0]
        left = assign.child_by_field_id(Field.LEFT) if assign.type == "assignment" else None
        right = assign.child_by_field_id(Field.RIGHT) if assign.type == "assignment" else None
        if left is None or right is None or left.type != "identifier":
            raise _Refused  # an augmented assignment, a tuple target, an annotation alone, a bare call
        name, kind = self.src.text(left), self.value(right)
        if self.inside_if and self.names.get(name) != kind:
            raise _Refused  # a branch that changes what the name holds
        self.names[name] = kind

    def _if(self, stmt: Node) -> None:
        condition = stmt.child_by_field_id(Field.CONDITION)
        if condition is None or _has_call(condition):
            raise _Refused
        self.inside_if = True
        blocks = [stmt.child_by_field_id(Field.CONSEQUENCE)]
        for part in stmt.named_children:
            if part.type == "elif_clause":
                raise _Refused
            if part.type == "else_clause":
                blocks.append(part.child_by_field_id(Field.BODY))
        for block in blocks:
            if block is None:
                raise _Refused
            for inner in _statements(block):
                self.statement(inner, top=False)
        self.inside_if = False

    def value(self, node: Node) -> int:
        kind = node.type
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.value(node.named_children[0])
        if kind == "identifier":
            name = self.src.text(node)
            if name == self.me:
                raise _Refused  # `self` itself handed somewhere
            return self.names.get(name, _CONST)
        if kind in ("integer", "float", "true", "false", "none", "string"):
            return _CONST
        if kind == "attribute":
            obj = node.child_by_field_id(Field.OBJECT)
            if obj is not None and _has_call(obj):
                raise _Refused
            return _CONST  # `self.scale`, `x.dtype`: a parameter or metadata
        if kind == "unary_operator":
            operand = node.child_by_field_id(Field.ARGUMENT)
            op = node.child_by_field_id(Field.OPERATOR)
            if operand is None or op is None or self.src.text(op) != "-":
                raise _Refused
            return self.value(operand)
        if kind == "binary_operator":
            op = node.child_by_field_id(Field.OPERATOR)
            left, right = node.child_by_field_id(Field.LEFT), node.child_by_field_id(Field.RIGHT)
            if op is None or left is None or right is None or self.src.text(op) not in _ELEMENTWISE:
                raise _Refused  # `@`, `//`, `**`, ...
            return _joined(self.value(left), self.value(right))
        if kind == "call":
            return self._call(node)
        raise _Refused

    def _call(self, node: Node) -> int:
        func = node.child_by_field_id(Field.FUNCTION)
        args = node.child_by_field_id(Field.ARGUMENTS)
        if func is None or args is None or args.type != "argument_list":
            raise _Refused
        real = [a for a in args.named_children if a.type != "comment"]
        if func.type == "attribute":
            obj = func.child_by_field_id(Field.OBJECT)
            attr = func.child_by_field_id(Field.ATTRIBUTE)
            if obj is None or attr is None:
                raise _Refused
            method = self.src.text(attr)
            if obj.type == "identifier" and self.src.text(obj) == self.me:
                return self._layer(method, real)
            if self.src.text(func).replace(" ", "") in _TORCH_CLAMPS and real:
                return self._clamp(real[0], real[1:])
            if method in _CLAMPS:
                return self._clamp(obj, real)
            if method in _CASTS:
                for a in real:
                    if _has_call(a):
                        raise _Refused
                return self.value(obj)
        raise _Refused

    def _layer(self, attr: str, args: list[Node]) -> int:
        if self.applied is not None or self.inside_if or len(args) != 1 or self.value(args[0]) != _INPUT:
            raise _Refused  # a second layer call, a conditional one, or one on something else than the input
        self.applied = attr
        return _OUTPUT

    def _clamp(self, clamped: Node, bounds: list[Node]) -> int:
        for b in bounds:
            value = b.child_by_field_id(Field.VALUE) if b.type == "keyword_argument" else b
            if value is None or self.value(value) != _CONST:
                raise _Refused  # bounds computed from the input
        return self.value(clamped)


def _joined(a: int, b: int) -> int:
    if {a, b} == {_INPUT, _OUTPUT}:
        raise _Refused  # the input added to (or scaling) the layer's output: a residual, not one layer
    return max(a, b)


def _has_call(node: Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("call", "lambda"):
            return True
        stack.extend(current.named_children)
    return False
