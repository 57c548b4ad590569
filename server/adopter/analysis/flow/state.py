"""The state one flow analysis shares between its parts, and the primitives they all use.

A `FlowState` holds the activation frames (the analysed function and the callees inlined into it), the
blocks being filled, the op budget and the names in use; it defines locals, emits ops, looks names up
and renders source text in the caller's terms. `forward.py` says how the parts that read and write it
(statements, control flow, expressions, calls) fit together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from adopter.analysis.flow.foreign import BaseMethods, Reading
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText
from adopter.analysis.scope.classes import ClassTable

# The members of `OpKind` and `ParamKind`, read once in `dsl.types` (the flow names a kind at every op it emits
# and every parameter it binds); re-exported for the flow's other modules.
from adopter.dsl.types import CALL_OP as CALL_OP
from adopter.dsl.types import FUNCTION_OP as FUNCTION_OP
from adopter.dsl.types import KEYWORD_ONLY as KEYWORD_ONLY
from adopter.dsl.types import METHOD_OP as METHOD_OP
from adopter.dsl.types import MODULE_OP as MODULE_OP
from adopter.dsl.types import OPERATOR_OP as OPERATOR_OP
from adopter.dsl.types import POSITIONAL as POSITIONAL
from adopter.dsl.types import VAR_KEYWORD as VAR_KEYWORD
from adopter.dsl.types import VAR_POSITIONAL as VAR_POSITIONAL
from adopter.dsl.types import (
    Binding,
    Ctor,
    Expr,
    Init,
    Kwarg,
    Op,
    OpKind,
    Problem,
    Ref,
    Severity,
    Span,
    Stmt,
    Value,
)

MAX_INLINE_DEPTH = 4
MAX_OPS = 4000
MAX_NESTING = 12


IDENTIFIER = re.compile(r"(?<![\w.%\"'])[A-Za-z_]\w*")


@dataclass(frozen=True)
class Submodule:
    """A submodule reference in forward: `self.query`, `self.layer[*]` (a loop variable over it)."""

    path: str


@dataclass(frozen=True)
class LocalFunction:
    """A function defined inside the analysed function (a closure), by its start byte."""

    key: int
    name: str


@dataclass(frozen=True)
class ModuleFunction:
    """A same-file module-level function held by a local (`attention_interface = eager_attention_forward`).

    With `conditions`, the local holds it only on the alternatives `on` of an `if` with those tests, and
    another value (`ALL_ATTENTION_FUNCTIONS[...]`) on the others; without, on every path.
    """

    name: str
    conditions: tuple[str, ...] = ()
    on: tuple[int, ...] = ()


EnvVal = Value | Submodule | LocalFunction | ModuleFunction


@dataclass
class Frame:
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
    # local name -> the string constant(s) it is bound to (`eq = 'b j d' if k.ndim == 3 else 'b h j d'`),
    # None once bound to two different ones or to anything else (`adopter.analysis.flow.fstrings`)
    constants: dict[str, str | None] = field(default_factory=dict)
    # the parameter a module-level function is handed the module as (`eager_attention_forward(self, ...)`)
    handed: str | None = None
    params: frozenset[str] = frozenset()  # the function's parameters (`self` left out)


# `Op.origin.target` prefix of a submodule call made in a module-level function handed the module: the
# op reads `self.attn_dropout` where the source says `module.attn_dropout`.
HANDED = "handed the module"


def handed_reason(ops: tuple[Op, ...]) -> str | None:
    """Why a match with a submodule call read through a function handed the module has no automatic fix:
    a rewrite would write `self.<attr>` where that function has no `self`."""
    for op in ops:
        if op.origin is not None and op.origin.target.startswith(HANDED + ": ") and not op.via:
            # the function's own `self`: a method written outside its class, read where it is defined
            return (f"`{op.target}` is a layer of the module this method written outside its class runs on, "
                    f"which nothing in this file binds, so what it computes is unknown; rewrite it by hand")
        if op.origin is not None and op.origin.target.startswith(HANDED + ": "):
            return (f"`{op.origin.target[len(HANDED) + 2:]}` is the module handed to the function that holds "
                    f"the match (`{op.via[-1] if op.via else '?'}`), read as `self`; rewrite it by hand")
    return None


# `Op.origin.target` prefix of a submodule called through the variable of a loop unrolled over a literal list
# of submodules (`for conv, bn in [(self.conv1, self.bn1), ...]: bn(conv(x))`): the op reads `self.conv1` where
# the source says `conv`, and the same statement runs every item.
UNROLLED = "an item of the loop over"


def unrolled_reason(ops: tuple[Op, ...]) -> str | None:
    """Why a match with a submodule called through an unrolled loop's variable has no automatic fix: one
    statement runs each item of the list, so a rewrite naming the first item's layers would be wrong."""
    for op in ops:
        if op.origin is not None and op.origin.target.startswith(UNROLLED + ": "):
            return (f"the layers are called through the variables of a loop over {op.origin.target[len(UNROLLED) + 2:]}, "
                    f"so one statement runs each item; rewrite it by hand")
    return None


class Truncated(Exception):
    """Raised when a function exceeds the op budget; the analysis keeps what it has."""


def as_value(v: EnvVal) -> Value:
    """The value an op argument or a return holds: a submodule or closure by its text."""
    if isinstance(v, Submodule):
        return Expr(v.path)
    # a tuple, not `LocalFunction | ModuleFunction`: that builds a `types.UnionType` at every call
    if isinstance(v, (LocalFunction, ModuleFunction)):
        return Expr(v.name)
    return v


class FlowState:
    """Everything the parts of one `FlowAnalysis` read and change while it walks a function."""

    def __init__(
        self,
        src: SourceText,
        symbols: ModuleSymbols,
        table: ClassTable | None,
        class_name: str | None,
        module_attrs: frozenset[str],
        problems: list[Problem],
        stateless: dict[str, tuple[str, Node]],
    ) -> None:
        self.src = src
        self.symbols = symbols
        self.table = table
        self.class_name = class_name
        self.module_attrs = module_attrs
        # Items of list-built Sequentials at evident positions (`features[0]`, `positioned_items`): a literal
        # index of one names that item (`self.features[0]`); any other index is each item (`[*]`).
        self.positioned: frozenset[str] = frozenset()
        # Attributes bound only to `nn.Parameter(...)` (`parameter_attrs`): tensors, so `self.w.softmax(-1)`
        # is a tensor method, not a call of a submodule's method.
        self.parameters: frozenset[str] = frozenset()
        # Submodules of a same-file class with no state and a forward that never reads `self` (a
        # custom activation: `self.act = GEGLU()`): attr -> (class, forward node), inlined where called.
        self.stateless = stateless
        # Attributes `__init__` binds to a same-file function (`self.activation_func = swiglu`,
        # `idioms.function_attributes`): attr -> (function node, defined in `__init__`), inlined where called.
        self.function_attrs: dict[str, tuple[Node, bool]] = {}
        # Submodules whose forward returns its input plus a term not computed from it
        # (`names.bias_forward`): `s = self.cpb(s)` is `s + term`.
        self.bias_attrs: frozenset[str] = frozenset()
        # Methods of the analysed class's bases of other files (`flow.foreign`), and the analysed file's reading
        # while one of them is walked (None while the walk reads the analysed file)
        self.base_methods: BaseMethods | None = None
        self.home: Reading | None = None
        self.problems = problems
        self.counter = 0
        self.ops = 0
        self.nesting = 0
        self.paths = 0  # how many `if` alternatives enclose the statement being walked
        # The names in use, in the order first used (a dict for its order: `flow.resume` keeps a prefix of it)
        self.names: dict[str, None] = {}
        self.live: list[list[Stmt]] = []
        self.block: list[Stmt] = []
        self.frames: list[Frame] = []
        # Submodules bound to the variables of a loop being unrolled -> the loop's iterable, as written
        self.unrolled: dict[str, str] = {}
        # (label, statement span) of each call the root function inlines (`Forward.calls`)
        self.calls: list[tuple[str, Span]] = []
        # (via, result names, statement span, enclosing `if` alternatives) of every inlined call, at any depth
        # (`Forward.applications`); the alternatives of the `if`s being walked: (the `if`'s start byte, index)
        self.applications: list[tuple[tuple[str, ...], tuple[str, ...], Span, tuple[tuple[int, int], ...]]] = []
        self.alternatives: list[tuple[int, int]] = []
        self.frame = Frame(-1, None, None, (), {}, root=True)
        self.terminated = False  # the current path stopped (return or raise)
        self.returned = False  # the current path stopped at a return
        # The span of the statement being analysed, computed when its first op is emitted (many
        # statements emit none): `stmt_span` is None until then, `stmt_node` says which statement.
        self.stmt_span: Span | None = Span(0, 0, 0, 0)
        self.stmt_node: Node | None = None
        self.callee_locals: dict[str, None] = {}  # unique names of inlined callees' locals, in order
        # The analysed function's own top-level statement being walked, and the first of them whose walk read the
        # statements after it (`flow.aliases`): a walk resumed later restores no checkpoint past that one.
        self.top_statement = 0
        self.looked_ahead: int | None = None
        self.local_functions: dict[int, Node] = {}
        # the frame each closure was defined in (by start byte): its `self` and locals, wherever it is called
        self.closure_frames: dict[int, Frame] = {}

    def define(self, name: str) -> str:
        """The unique name a local `name` of the current frame is stored under."""
        frame = self.frame
        if frame.root:
            self.names[name] = None
            return name
        unique = frame.renames.get(name)
        if unique is None:
            unique = name
            n = 2
            while unique in self.names:
                unique = f"{name}_{n}"
                n += 1
            frame.renames[name] = unique
            self.names[unique] = None
            self.callee_locals[unique] = None
        hops = 0
        while unique in frame.rewrite and hops < 8:  # renamed to the call's output by a `return`
            unique = frame.rewrite[unique]
            hops += 1
        return unique

    def temp(self) -> str:
        """A fresh temporary `%n` for the value of a nested call."""
        self.counter += 1
        name = f"%{self.counter}"
        self.names[name] = None
        return name

    def emit(
        self,
        kind: OpKind,
        target: str,
        args: tuple[Value, ...],
        kwargs: tuple[Kwarg, ...],
        node: Node,
        outs: tuple[str, ...] | None,
    ) -> Ref:
        """Append an op to the current block; its value is the first output (a temporary if none)."""
        self.ops += 1
        if self.ops > MAX_OPS:
            raise Truncated
        outputs = outs if outs else (self.temp(),)
        stmt_span = self.stmt_span
        if stmt_span is None:
            assert self.stmt_node is not None
            stmt_span = self.stmt_span = self.src.span(self.stmt_node)
        span = self.src.span(node)
        origin: Op | None = None
        if kind is MODULE_OP:
            frames = self.frames
            handed = frames[0].handed if len(frames) == 1 else next(
                (f.handed for f in frames if f.handed is not None), None)
            if handed is not None:
                origin = Op(FUNCTION_OP, f"{HANDED}: {handed}", args, kwargs, outputs, span, stmt_span,
                            self.frame.via)
            elif target in self.unrolled:
                origin = Op(FUNCTION_OP, f"{UNROLLED}: {self.unrolled[target]}", args, kwargs, outputs, span,
                            stmt_span, self.frame.via)
        self.block.append(Op(kind, target, args, kwargs, outputs, span, stmt_span, self.frame.via, origin=origin))
        return Ref(outputs[0])

    def is_self(self, node: Node) -> bool:
        """Whether `node` is the current method's `self` parameter."""
        name = self.frame.self_name
        return name is not None and node.type == "identifier" and self.src.text(node) == name

    def lookup(self, name: str) -> EnvVal | None:
        """What a name of the current frame holds, following renames made by a callee's `return`."""
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

    def text(self, node: Node) -> str:
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
            if isinstance(v, Submodule):
                return v.path
            if isinstance(v, Expr):
                return v.text if v.text.replace(".", "").replace("_", "").isalnum() else f"({v.text})"
            return m.group(0)

        return IDENTIFIER.sub(substitute, text)

    def limit_problem(self, message: str, node: Node | None) -> None:
        """Report that an analysis limit cut the walk short at `node`."""
        span = self.src.span(node) if node is not None else None
        self.problems.append(Problem(message, span, self.src.path, Severity.INFO, "analysis-limit"))


# Constructors whose value is a tensor held by the module, not a submodule: a method called on it
# (`self.weights.softmax(-1)`, `self.logit_scale.exp()`) is the tensor's method.
_TENSOR_CTORS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def parameter_attrs(init: Init | None) -> frozenset[str]:
    """The attributes `__init__` binds only to `nn.Parameter(...)` (on every path that binds them)."""
    bindings = init.bindings if init is not None else ()
    tensors = {b.attr for b in bindings if isinstance(b.value, Ctor) and b.value.callee in _TENSOR_CTORS}
    if not tensors:
        return frozenset()
    others = {b.attr for b in bindings if not (isinstance(b.value, Ctor) and b.value.callee in _TENSOR_CTORS)}
    return frozenset(tensors - others)


def positioned_items(init: Init | None) -> frozenset[str]:
    """`attr[k]` for each item of a Sequential bound once, unconditionally, whose first items are at the
    list's own positions (`Ctor.lead`), `attr["key"]` for each literal key of a `ModuleDict` bound so
    (`Ctor.keyed_items`), or whose items are each written in its own call
    (`nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...))`, `_literal`): the indexes the flow keeps literal."""
    bindings = init.bindings if init is not None else ()
    if not any(isinstance(b.value, Ctor) and (b.value.lead or b.value.keys or _literal(b)) for b in bindings):
        return frozenset()
    counts: dict[str, int] = {}
    for b in bindings:
        counts[b.attr] = counts.get(b.attr, 0) + 1
    out: set[str] = set()
    for b in bindings:
        if not isinstance(b.value, Ctor) or b.condition is not None or counts[b.attr] != 1:
            continue
        out.update(f"{b.attr}[{k}]" for k, item in enumerate(b.value.lead) if item is not None)
        out.update(f"{b.attr}[{q}{key}{q}]" for key, _ in b.value.keyed_items() for q in "'\"")
        if _literal(b):
            out.update(f"{b.attr}[{k}]" for k in range(len(b.item_spans)))
    return frozenset(out)


def _literal(b: Binding) -> bool:
    """A Sequential whose items are the calls written in its own statement, one each, in order
    (`InitAnalysis._literal_item_spans`): item k of the Sequential is its k-th argument."""
    return (isinstance(b.value, Ctor) and b.value.callee == "torch.nn.Sequential" and b.value.repeat is None
            and not b.value.lead and len(b.item_spans) == len(b.value.items) > 0
            and all(b.span.contains(s) for s in b.item_spans))
