"""Value types of the Adopter DSL: model architectures and rewrite rules, as frozen dataclasses.

Every layer shares these. Collections are tuples, every value is hashable and immutable, and every
element that came from source code keeps its `Span`.

Position convention (the one used everywhere inside Adopter): lines are 0-based, columns are 0-based
offsets in Unicode code points (Python `str` indices) within the line. `adopter.positions` is the one
module that converts to LSP (UTF-16). The DSL's text form prints spans
1-based (`@12:5-12:30`, like compilers do) and the parser converts back.
"""

from __future__ import annotations

import copyreg
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Final


@dataclass(frozen=True, slots=True)
class Span:
    """A source range: 0-based lines, 0-based code-point columns, end exclusive."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int

    def contains(self, other: Span) -> bool:
        return (self.start_line, self.start_col) <= (other.start_line, other.start_col) and (
            other.end_line,
            other.end_col,
        ) <= (self.end_line, self.end_col)


# ---------------------------------------------------------------------------------------------------
# Values flowing between operators
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ref:
    """A data-flow value: a parameter of `forward`, a local variable, or a hoisted temporary.

    Hoisted temporaries (the results of nested calls) are named `%1`, `%2`, ... in evaluation order,
    unique within one method. Source variables keep their source name; a reassignment reuses the
    name, so the definition that reaches a use is the latest one on the path.
    """

    name: str


@dataclass(frozen=True, slots=True)
class Expr:
    """An opaque expression that carries no tracked tensor: a literal, `config.hidden_size`,
    `self.scale`, `-1`, `None`. `text` is the normalised source text."""

    text: str


Value = Ref | Expr


@dataclass(frozen=True, slots=True)
class Kwarg:
    name: str
    value: Value


class OpKind(str, Enum):
    """What an operator node calls."""

    MODULE = "module"  # a submodule bound in __init__: target "self.query", "self.layer[*]"
    FUNCTION = "function"  # a qualified function: "torch.nn.functional.softmax", "math.sqrt"
    METHOD = "method"  # a method on a value: target "transpose"; args[0] is the receiver
    OPERATOR = "operator"  # "+", "-", "*", "/", "@", "**", "//", "neg", "getitem", "getattr"
    CALL = "call"  # a call of something unresolved (a local callable, a parameter): target is its text


# The members, read off the class once. CPython 3.11 reads every attribute of an Enum class through
# `EnumType.__getattr__`'s Python-level hook (~0.3 us, ten times a module global read), and the analysis and the
# engine name a kind at every op they build or test: the hot paths use these constants instead.
MODULE_OP: Final = OpKind.MODULE
FUNCTION_OP: Final = OpKind.FUNCTION
METHOD_OP: Final = OpKind.METHOD
OPERATOR_OP: Final = OpKind.OPERATOR
CALL_OP: Final = OpKind.CALL


@dataclass(frozen=True, slots=True)
class Op:
    """One operator application in `forward`, after hoisting nested calls.

    `outputs` are the names the results are bound to (tuple unpacking gives several). `via` lists the
    inlined callees this op came from, outermost first (`("self._attn",)`, `("rotate_half",)`); empty
    for ops written directly in `forward`. `stmt_span` is the span of the whole source statement the op
    belongs to (where a rewrite must land), `span` that of the call expression itself.
    """

    kind: OpKind
    target: str
    args: tuple[Value, ...]
    kwargs: tuple[Kwarg, ...]
    outputs: tuple[str, ...]
    span: Span
    stmt_span: Span
    via: tuple[str, ...] = ()
    # The op as written, when the canonical pass (`adopter.analysis.canonical.normalise`) changed its spelling:
    # `x.softmax(-1)` is canonical `torch.nn.functional.softmax(x, dim=-1)` with the method call as
    # origin. Rewrites read the source through it; it is not part of the op's identity (nor printed).
    origin: Op | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True, slots=True)
class Branch:
    """Control flow that splits: `if`/`elif`/`else` (or a conditional expression).

    `paths` holds one block per alternative, in source order; an `if` without `else` has an empty
    last path. `conditions` holds the source text of each alternative's test (`"else"` for the last
    when it is an else).
    """

    conditions: tuple[str, ...]
    paths: tuple[Block, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Loop:
    """Iteration, typically over a `ModuleList`: `for i, layer in enumerate(self.layer)`.

    `targets` are the loop variables, `iterable` the source text of what is iterated, `over` the
    attribute path of the iterated module container when there is one (`"self.layer"`), `body` the
    ops of one iteration (a call of `layer` appears as a MODULE op with target `"self.layer[*]"`).
    """

    targets: tuple[str, ...]
    iterable: str
    over: str | None
    body: Block
    span: Span


@dataclass(frozen=True, slots=True)
class Return:
    values: tuple[Value, ...]
    span: Span


Stmt = Op | Branch | Loop | Return
Block = tuple[Stmt, ...]


def block_ops(block: Block) -> Iterator[Op]:
    """Every op of `block`, in order, those of its branches' paths and loop bodies included."""
    for stmt in block:
        if isinstance(stmt, Op):
            yield stmt
        elif isinstance(stmt, Branch):
            for path in stmt.paths:
                yield from block_ops(path)
        elif isinstance(stmt, Loop):
            yield from block_ops(stmt.body)


class ParamKind(str, Enum):
    POSITIONAL = "positional"
    VAR_POSITIONAL = "var_positional"  # *args
    KEYWORD_ONLY = "keyword_only"
    VAR_KEYWORD = "var_keyword"  # **kwargs


# The members, read once (see `MODULE_OP`): parameters are bound and tested per call inlined.
POSITIONAL: Final = ParamKind.POSITIONAL
VAR_POSITIONAL: Final = ParamKind.VAR_POSITIONAL
KEYWORD_ONLY: Final = ParamKind.KEYWORD_ONLY
VAR_KEYWORD: Final = ParamKind.VAR_KEYWORD


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: ParamKind = ParamKind.POSITIONAL
    default: str | None = None  # source text of the default, None when there is none


@dataclass(frozen=True, slots=True)
class Forward:
    """`forward` (or another analysed method) as a control-flow tree of ops."""

    name: str
    params: tuple[Param, ...]
    body: Block
    span: Span
    # False for a module-level function that nothing else in its file names, in a file of nn.Module
    # classes: rules about forward code skip it (it is dead code there). Not part of equality.
    referenced: bool = field(default=True, compare=False)
    # The statements of this function that call a same-file callee inlined into it: (the callee's label, its
    # first `via` entry, e.g. `"apply_rotary_pos_emb"` or `"self._attn"`; the calling statement's span). Not part
    # of equality (the printed form does not carry it; `analyser.identical` compares it).
    calls: tuple[tuple[str, Span], ...] = field(default=(), compare=False)
    # Every call of a same-file callee inlined at any depth (`q = rope(q, 1)` inside `self._forward`): (the `via`
    # its ops carry, the names the call's result is bound to, the calling statement's span, the `if` alternatives
    # around the call as (the `if`'s start byte, alternative index), outermost first), in the order they are
    # inlined. Where one helper's site runs (`engine.applications`). Not part of equality, like `calls`.
    applications: tuple[tuple[tuple[str, ...], tuple[str, ...], Span, tuple[tuple[int, int], ...]], ...] = field(
        default=(), compare=False)


# ---------------------------------------------------------------------------------------------------
# __init__ bindings
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ctor:
    """A constructor expression in `__init__`.

    `callee` is qualified (`"torch.nn.Linear"`, `"BertSelfAttention"` for a class of the same file,
    `"transformers.activations.ACT2FN"` for a lookup table). `lookup` holds the subscript text of a
    table lookup (`ACT2FN[config.hidden_act]` gives callee `...ACT2FN`, lookup `config.hidden_act`).
    Containers list their children in `items`: the modules of a `Sequential`, the element of a
    `ModuleList` comprehension (with `repeat` the text of its count, e.g. `config.num_hidden_layers`),
    the values of a `ModuleDict` (with `keys`). `origin` says where a constructor resolved across files
    came from (`FP32SiLU (diffusers/models/activations.py:53)`); it is provenance, not part of equality.
    `once` marks a `Sequential` of a local list filled in loops whose `items` are one pass of the loops, in
    the order the list holds them, with `repeat` the first loop's count beside them (the items of any other
    container with a `repeat` are the distinct constructors the loop adds, in no evident order).
    `lead` holds, for a `Sequential` of a list whose items are not all in an evident order (added in loops,
    under conditions), its first items at the list's own positions, when nothing else changes the list:
    those added before any condition, each loop counting as the items its literal trip counts add (None
    at those positions: which item is where is not read), up to the first addition not so counted
    (`self.features[0](x)` runs `lead[0]`; `self.features[18](x)` after 17 counted). Empty otherwise.
    """

    callee: str
    args: tuple[Value, ...] = ()
    kwargs: tuple[Kwarg, ...] = ()
    items: tuple[Ctor, ...] = ()
    keys: tuple[str, ...] = ()
    repeat: str | None = None
    lookup: str | None = None
    origin: str | None = field(default=None, compare=False)
    once: bool = False
    lead: tuple[Ctor | None, ...] = ()

    def item(self, i: int) -> Ctor | None:
        """The item at position `i` of a container, when its position is evident (else None)."""
        if i < len(self.lead):
            return self.lead[i]
        return self.items[i] if (self.repeat is None or self.once) and i < len(self.items) else None

    def keyed_items(self) -> tuple[tuple[str, Ctor], ...]:
        """A `ModuleDict`'s items by literal key: its written keys, and for a comprehension (`{n: Linear(...)
        for n in ("q", "k", "v")}`: its variable is the first key, `repeat` the iterable) each string of a
        literal iterable; a key given twice (a comprehension's, then assigned) is left out."""
        if not self.callee.endswith("ModuleDict") or len(self.keys) != len(self.items):
            return ()
        pairs: list[tuple[str, Ctor]] = []
        for n, (key, item) in enumerate(zip(self.keys, self.items)):
            if n == 0 and self.repeat is not None:
                pairs.extend((k, item) for k in _literal_strings(self.repeat))
            else:
                pairs.append((key, item))
        seen = [k for k, _ in pairs]
        return tuple((k, c) for k, c in pairs if seen.count(k) == 1)

    def by_key(self, key: str) -> Ctor | None:
        """The `ModuleDict` item of a literal key (`keyed_items`), or None."""
        return next((c for k, c in self.keyed_items() if k == key), None)


def _literal_strings(text: str) -> tuple[str, ...]:
    """The strings of a literal tuple or list of strings (`("q", "k", "v")`), else ()."""
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return ()
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    return ()


@dataclass(frozen=True, slots=True)
class Binding:
    """`self.<attr> = <value>` in `__init__`.

    `value` is a `Ctor` for module constructions and an `Expr` for anything else (`self.scale =
    head_dim ** -0.5`). `condition` is the source text of the enclosing `if` tests joined with
    `and` (`not (...)` for an else), or None when the binding is unconditional. An attribute bound on
    several paths has one binding per path; a later unconditional reassignment shadows earlier ones
    (the analysis keeps only the surviving bindings).
    """

    attr: str
    value: Ctor | Expr
    span: Span
    condition: str | None = None
    # Where each item of a Sequential was written: built from a local list filled in loops (one pass of each
    # loop: `adopter.analysis.scope.bindings`), or a literal `nn.Sequential(A(...), B(...))` of constructor
    # calls (each argument); empty for every other binding. Provenance, like `Ctor.origin`: the DSL does not
    # print it and equality ignores it (a binding with the same value at the same span has its items where
    # they were, short of whitespace moved between them within the statement's own bounds).
    item_spans: tuple[Span, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class Init:
    params: tuple[Param, ...]
    bindings: tuple[Binding, ...]
    span: Span
    # Locals of `__init__` bound once, unconditionally, to arithmetic of names and numbers (`inner = heads *
    # dim_head`): (name, normalised text). What a layer's width written as such a local is (`same_width`);
    # not printed, and equality ignores it.
    sizes: tuple[tuple[str, str], ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class PassedTo:
    """A call that a method-built chain's container is handed to (`block(..., downsample, ...)`): the names
    the callee may be, `classes` (its own name, or the names in its parameter's annotation or default; the
    engine keeps those that are the file's classes), the container its positional argument `position` (-1:
    none) or keyword `keyword`. `parameter`: the callee is also what the class's `__init__` parameter of that
    name holds (`self._make_layer(block, ...)` in `__init__`, `block` unannotated); the analysis adds the names
    the file's calls of the class pass there (`adopter.analysis.chains.class_callers`)."""

    classes: tuple[str, ...]
    position: int = -1
    keyword: str = ""
    parameter: str = ""


@dataclass(frozen=True, slots=True)
class Architecture:
    """One `nn.Module` class: its bindings and its forward operator sequence(s)."""

    name: str
    bases: tuple[str, ...]  # qualified where resolvable
    init: Init | None
    forward: Forward | None
    span: Span
    # Only for a chain of an `nn.Sequential` assigned to a method's local: the calls the local is passed to
    # (`adopter.analysis.chains.methods`; the engine adds the statements where they run it, `engine.passed_in`).
    passed_to: tuple[PassedTo, ...] = ()
    # Only for an attention processor's `__call__` read as a forward (`adopter.analysis.idioms.processors`): the
    # module class it runs on, whose `__init__` holds the bindings. No strategy rewrites a processor.
    processor_of: str | None = None


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


@dataclass(frozen=True, slots=True)
class Problem:
    """Something analysis or parsing could not do, with where it happened."""

    message: str
    span: Span | None = None
    path: str | None = None
    severity: Severity = Severity.WARNING
    code: str | None = None  # a rule id or an error code

    def render(self) -> str:
        where = self.path or "<input>"
        if self.span is not None:
            where += f":{self.span.start_line + 1}:{self.span.start_col + 1}"
        prefix = f"{self.code}: " if self.code else ""
        return f"{where}: {self.severity.value}: {prefix}{self.message}"


@dataclass(frozen=True, slots=True)
class ModuleFile:
    """What the analysis found in one Python file: every nn.Module class that parses, and problems."""

    path: str | None
    architectures: tuple[Architecture, ...]
    problems: tuple[Problem, ...] = ()
    # Module-level functions and the top-level script code (name "<module>"), analysed like forward:
    # rules with scope "function" (e.g. optimizer construction in a training script) match here.
    functions: tuple[Forward, ...] = ()
    # Layer chains built outside a module's `__init__` (`nn.Sequential(conv, bn, act)` in a factory
    # function), each read as a module whose forward runs its children in order; named after the function.
    chains: tuple[Architecture, ...] = ()


# ---------------------------------------------------------------------------------------------------
# Rewrite rules
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PVar:
    """A pattern variable (`$x`). Every occurrence in one rule must bind the same thing."""

    name: str


@dataclass(frozen=True, slots=True)
class PAny:
    """`_`: matches any value without binding it."""


PValue = PVar | PAny | Expr  # Expr in a pattern matches an Expr with the same normalised text


@dataclass(frozen=True, slots=True)
class PKwarg:
    name: str
    value: PValue


@dataclass(frozen=True, slots=True)
class OpPattern:
    """One step of a forward pattern: `$out = <target>($args..., key=$v)`.

    `targets` are alternatives (`torch.matmul | @ | .matmul`): `kind` + `target` pairs; a target that
    is a pattern variable (`$attn`) matches a MODULE op whose submodule was bound by an init pattern
    to that variable. `extra_args` says whether the op may have further arguments than those listed.
    `optional` steps (`?`) may be absent from a match. `commutative` operands (`+`, `*`) match in
    either order (the matcher decides by the operator; the pattern need not say).
    """

    targets: tuple[tuple[OpKind, str], ...]
    args: tuple[PValue, ...]
    kwargs: tuple[PKwarg, ...]
    outputs: tuple[PValue, ...]
    optional: bool = False
    extra_args: bool = False
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class CtorPattern:
    """`$m = torch.nn.Linear(...)` / `ACT2FN[_]`: matches a binding's Ctor by callee (alternatives
    allowed), optionally constraining arguments."""

    callees: tuple[str, ...]
    args: tuple[PValue, ...] = ()
    kwargs: tuple[PKwarg, ...] = ()
    extra_args: bool = True
    lookup: PValue | None = None


@dataclass(frozen=True, slots=True)
class BindingPattern:
    var: str  # the pattern variable naming the submodule: "$attn" -> "attn"
    ctor: CtorPattern
    span: Span | None = None


class GuardKind(str, Enum):
    SINGLE_USE = "single_use"  # the value is used only by the next step of the pattern
    # only_use($h): a hard guard (no site when it fails): every reader of the value outside the match lies on
    # a path that misses the match (another alternative of a branch); a second reader of a conv's raw output
    # beside its BatchNorm makes the pair no site (folding would change what that reader sees)
    ONLY_USE = "only_use"
    NOT_REASSIGNED = "not_reassigned"  # no redefinition between its def and its use in the pattern
    EQUALS = "equals"  # an argument has a given normalised text: equals($dim, -1)
    ONE_OF = "one_of"
    NOT_USED_AFTER = "not_used_after"  # the value is dead after the match (e.g. attention probs)
    NO_KWARG = "no_kwarg"  # no_kwarg($v, fused, foreach): the op defining $v passes none of these keywords
    # fix_requires($dim, -1): the site is reported either way; the automatic fix only when $v is one of these
    FIX_REQUIRES = "fix_requires"
    # inside_submodule($head): the layer bound to $head may be the last layer of a same-file submodule
    # whose forward only chains its layers (`self.cls(x)` ending in `self.cls.predictions.decoder`); without
    # it, a match never reaches into a submodule called from the forward
    INSIDE_SUBMODULE = "inside_submodule"
    # unsplit($q, $k, $v): no value is split into parts (`.chunk`, `.split`, `.unbind`): a projection whose
    # output is chunked is already a fused one
    UNSPLIT = "unsplit"
    # same_width($wq, $wk, $wv): the Linears bound to these variables have the same output width as
    # written, or widths that differ only in a head count (`heads * head_dim`, `kv_heads * head_dim`)
    SAME_WIDTH = "same_width"
    # same_paths($q, $k, $v): the ops defining the values after the first run under the same branch tests
    # and alternatives, and the op defining the first runs wherever they do (its tests are a prefix)
    SAME_PATHS = "same_paths"
    # attention_roles($q, $k, $v, $qh, $kh, $vh): the three projections are used as attention uses q, k and v:
    # a head split of one of them is bound (the last three), or, with none, they are read by one call, or
    # two meet in a contraction that the third is contracted with (engine.attention_roles)
    ATTENTION_ROLES = "attention_roles"
    # key_may_be($act, "gelu", ...): when the layer bound to $act is looked up by a literal key (`T["relu"]`,
    # `f("swish")`, a conditional of literals), one of its values is listed; a key read from elsewhere passes
    KEY_MAY_BE = "key_may_be"
    # gate_activation($act, "silu", ...): the submodule bound to $act (a wildcard `$act = _`), if the match
    # called one, may be a gated MLP's activation: not a torch layer other than SiLU/GELU, not looked up by
    # literal keys all outside the list (engine.gate_activations)
    GATE_ACTIVATION = "gate_activation"
    # gate_projections($gate, $up): two different submodules, each an nn.Linear or a module passed to the
    # constructor (`self.w1 = gate_proj`) or built from a value passed in (`config.w1.build()`), at least one of
    # them passed in (engine.gate_projections)
    GATE_PROJECTIONS = "gate_projections"
    # named_activation($act, "gelu", ...): every binding of the submodule bound to $act (a wildcard) is a call
    # of one name that is evident here and listed, compared without case (engine.named_activations)
    NAMED_ACTIVATION = "named_activation"
    # vocabulary($head): the layer bound to $head projects onto a vocabulary (its output size names one, or is
    # the size of an nn.Embedding of the same module): an LM head, not a classifier
    VOCABULARY = "vocabulary"
    # rotary_tables($c, $s): the values are cosine/sine tables (a cos/sin call, or a table named so, through
    # indexing and layout ops): the rotation formula of a rotary embedding, not any complex multiplication
    ROTARY_TABLES = "rotary_tables"
    # scale_factor($s): the value is a factor (a number, an attribute or parameter, arithmetic of those, a size
    # read from a shape), not an activation of the forward
    SCALE_FACTOR = "scale_factor"
    # added_bias($b): the value an optional step adds to a head's output (`self.decoder(x) + self.bias`) is a
    # parameter or attribute of the module (a factor by `scale_factor`'s reading), not an activation of the
    # forward; with the step absent (nothing added) it passes
    ADDED_BIAS = "added_bias"
    # trailing_axes($dim): the axis argument names the last k axes for every k it can take (`-1`, `(-2, -1)`, a
    # comprehension or range building -1..-k from a size: `[-(i + 1) for i in range(len(shape))]`), what
    # `F.layer_norm` normalises over (adopter.analysis.canonical.axes)
    TRAILING_AXES = "trailing_axes"
    # independent($v, $p): the value $v is not computed from $p (no data path from $p to $v): attention's values
    # are not made from its own probabilities (a Newton iteration `x @ z` with `z` built from `x`)
    INDEPENDENT = "independent"
    # own_call($h): the op defining $h is a call written in the code (`self.dropout(h)`, `F.dropout(h)`), not a
    # layer run as an item of a container the forward calls (an `nn.Sequential` ending in a Dropout)
    OWN_CALL = "own_call"
    # permuted_scores($sp, $dim, $pp): scores permuted to another axis order (`$sp`), softmaxed over `$dim`, and
    # probabilities permuted (`$pp`) into a product: the softmax runs over the keys' axis, which the second product
    # contracts, its rows being the queries' (engine.permuted_scores)
    PERMUTED_SCORES = "permuted_scores"
    # distinct($a, $b): the values bound differ (another op's output, or another expression): a gated MLP's gate
    # and up projections read two weights, not one weight twice (`silu(x @ w) * (x @ w)` is no gated MLP)
    DISTINCT = "distinct"
    # scaled_alike($t1, $u1, $t2, $u2): each `$t` is `$u` times a factor by an optional step (absent, it binds `$t`
    # to `$u`); both steps are present or neither: both terms of a rotation scaled by one factor are the rotation
    # scaled (xPos), one term scaled alone is no rotation
    SCALED_ALIKE = "scaled_alike"
    # handed_layer($d): the submodule bound to $d (a module variable with no init pattern), when the match calls
    # one, is a layer of the module a function is handed as `self` that nothing in this file binds (a method
    # written outside its class: `self.attn_drop(p)`), so what it is cannot be read; a layer the file binds fails
    HANDED_LAYER = "handed_layer"
    # query_vector($qc, $q, -1): `$qc` is the activation `$q` (not a learned vector) with a unit axis inserted at the
    # last axis (-1, a column) or the one before (-2, a row): single-query attention's matrix-vector scores
    # (engine.single_query)
    QUERY_VECTOR = "query_vector"
    # probability_vector($b, $dim, $e, -1, -2): the scores' `squeeze($b)` drops the query's unit axis (a column: -1,
    # a row: -2), the softmax runs over the keys (`$dim`), and the probabilities' `unsqueeze($e)` makes the vector
    # the values' product contracts over the keys (a row times the values: -2, a column the transposed values
    # multiply: -1) (engine.single_query)
    PROBABILITY_VECTOR = "probability_vector"


# The members, read once (see `MODULE_OP`): the matcher asks a guard's kind at every leaf of its search.
SINGLE_USE_GUARD: Final = GuardKind.SINGLE_USE
ONLY_USE_GUARD: Final = GuardKind.ONLY_USE
NOT_REASSIGNED_GUARD: Final = GuardKind.NOT_REASSIGNED
EQUALS_GUARD: Final = GuardKind.EQUALS
ONE_OF_GUARD: Final = GuardKind.ONE_OF
NOT_USED_AFTER_GUARD: Final = GuardKind.NOT_USED_AFTER
NO_KWARG_GUARD: Final = GuardKind.NO_KWARG
FIX_REQUIRES_GUARD: Final = GuardKind.FIX_REQUIRES
INSIDE_SUBMODULE_GUARD: Final = GuardKind.INSIDE_SUBMODULE
UNSPLIT_GUARD: Final = GuardKind.UNSPLIT
SAME_WIDTH_GUARD: Final = GuardKind.SAME_WIDTH
SAME_PATHS_GUARD: Final = GuardKind.SAME_PATHS
ATTENTION_ROLES_GUARD: Final = GuardKind.ATTENTION_ROLES
KEY_MAY_BE_GUARD: Final = GuardKind.KEY_MAY_BE
GATE_ACTIVATION_GUARD: Final = GuardKind.GATE_ACTIVATION
GATE_PROJECTIONS_GUARD: Final = GuardKind.GATE_PROJECTIONS
NAMED_ACTIVATION_GUARD: Final = GuardKind.NAMED_ACTIVATION
VOCABULARY_GUARD: Final = GuardKind.VOCABULARY
ROTARY_TABLES_GUARD: Final = GuardKind.ROTARY_TABLES
SCALE_FACTOR_GUARD: Final = GuardKind.SCALE_FACTOR
ADDED_BIAS_GUARD: Final = GuardKind.ADDED_BIAS
TRAILING_AXES_GUARD: Final = GuardKind.TRAILING_AXES
INDEPENDENT_GUARD: Final = GuardKind.INDEPENDENT
OWN_CALL_GUARD: Final = GuardKind.OWN_CALL
PERMUTED_SCORES_GUARD: Final = GuardKind.PERMUTED_SCORES
DISTINCT_GUARD: Final = GuardKind.DISTINCT
SCALED_ALIKE_GUARD: Final = GuardKind.SCALED_ALIKE
HANDED_LAYER_GUARD: Final = GuardKind.HANDED_LAYER
QUERY_VECTOR_GUARD: Final = GuardKind.QUERY_VECTOR
PROBABILITY_VECTOR_GUARD: Final = GuardKind.PROBABILITY_VECTOR


@dataclass(frozen=True, slots=True)
class Guard:
    kind: GuardKind
    args: tuple[PValue, ...]
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """One kernel a rule can rewrite to, and what it needs to be offered."""

    name: str  # "portable", "liger", "apex", "flash_attn"
    kernel: str  # human-readable kernel name, e.g. "torch.nn.functional.scaled_dot_product_attention"
    devices: tuple[str, ...] = ("cpu", "cuda")
    packages: tuple[str, ...] = ()  # import names that must be importable
    torch: str | None = None  # a version specifier, e.g. ">=2.1"
    preferred: bool = False


@dataclass(frozen=True, slots=True)
class Replacement:
    """How a match is rewritten: the synthesizer to call (`synth/` registry) and its template text.

    `strategy` names a synthesizer (`"template"`, `"sdpa_module"`, `"fuse_qkv"`, ...). For the
    `template` strategy, `forward` is Python code with `$var` placeholders replacing the matched
    statements and `init` maps pattern variables to replacement constructor code.
    """

    strategy: str
    forward: str | None = None
    init: tuple[tuple[str, str], ...] = ()
    imports: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Example:
    """Code embedded in a rule: must match (with the expected rewrite, if any), or must not."""

    code: str
    should_match: bool
    expected: str | None = None  # the rewritten code, for must-match examples with a rewrite
    target: str | None = None
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    family: int
    title: str
    message: str
    severity: Severity
    targets: tuple[Target, ...]
    init: tuple[BindingPattern, ...]
    forward: tuple[OpPattern, ...]
    guards: tuple[Guard, ...]
    replacement: Replacement | None
    examples: tuple[Example, ...]
    docs: str = ""
    # "forward": matched in nn.Module forward bodies (with init patterns); "function": matched in
    # module-level functions and top-level code too (training scripts), init patterns not allowed.
    scope: str = "forward"
    path: str | None = None
    span: Span | None = None



def _by_fields(value: object) -> tuple[type, tuple[object, ...]]:
    return type(value), tuple(getattr(value, f.name) for f in fields(value))  # type: ignore[arg-type]


def picklable(*records: type) -> None:
    """Pickle these frozen dataclasses as their constructor calls. The default for a slotted class
    restores it by setting each attribute, which a frozen dataclass refuses in the compiled build
    (mypyc's `__setstate__` sets them one by one): the rule set sent to the workers of `--ray-address`
    failed to unpickle so. Registered with `copyreg`, which pickle and Ray's cloudpickle both consult."""
    for record in records:
        copyreg.pickle(record, _by_fields)


picklable(
    Span, Ref, Expr, Kwarg, Op, Branch, Loop, Return, Param, Forward, Ctor, Binding, Init, Architecture,
    Problem, ModuleFile, PVar, PAny, PKwarg, OpPattern, CtorPattern, BindingPattern, Guard, Target,
    Replacement, Example, Rule,
)
