"""The canonical pass: every spelling of one operation becomes one op with normalised arguments.

Runs over each analysed forward (and module-level function) after the flow analysis, driven by the
table in `adopter.analysis.canonical.spellings`:

- functions, tensor methods and operators that compute the same thing get one (kind, target):
  `x.softmax(-1)`, `torch.softmax(x, -1)`, `F.softmax(x, dim=-1)` are all
  `function torch.nn.functional.softmax(x, dim=-1)`; `a @ b`, `a.matmul(b)`, `torch.bmm(a, b)` are
  `function torch.matmul(a, b)`;
- arguments follow one signature: leading ones positional, the rest by keyword; an axis given as a
  non-negative number becomes negative when the rank of the tensor is known (`softmax(x, dim=3)` on a
  4-D tensor is `dim=-1`); `transpose(x, -1, -2)` is `transpose(x, -2, -1)`;
- a call of a stateless module bound in `__init__` (`self.attend = nn.Softmax(dim=-1)`) is the
  function it computes; a call of an `nn.Sequential` is the chain of its children (`self.net[0]`, ...);
- casts, copies and layout changes (`.float()`, `.to(dtype)`, `.type_as(x)`, `.contiguous()`,
  `nn.Identity()`) become `operator cast`, which the rule matcher looks through;
- `einsum` equations that are (batched) matrix products become `transpose` + `matmul` (torch's
  `einsum(eq, a, b)` and einops' `einsum(a, b, eq)`); `baddbmm` becomes `matmul`, scale and add;
  `x.mT` is `transpose(x, -2, -1)`;
- a right operand of a matrix product laid out with its last two axes swapped by `permute` or
  `rearrange` (keys as `(..., d, n)`: `permute(0, 2, 3, 1)`, `"b n (h d) -> b h d n"`) becomes the layout
  op with those two axes in input order followed by `transpose(-2, -1)` (the same tensor), so the
  product reads as `q @ kᵀ`;
- the stable-softmax shift `s - s.amax(-1, keepdim=True)` (also through `.detach()` or
  `s.max(-1, keepdim=True)[0]`) of a value that goes into a softmax is a `cast` of `s`: a softmax
  over the last axis gives the same result with and without it.

Every op keeps its source spans; an op whose spelling changed keeps the op as written in `origin`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from adopter.analysis.canonical.bound_losses import LOSS_MODULES, bound_loss_calls
from adopter.analysis.canonical.held_ranks import builds_parameters, held_key, held_method_rank, held_ranks
from adopter.analysis.canonical.moments import split_var_mean
from adopter.analysis.canonical.paired_calls import paired_layers
from adopter.analysis.canonical.ranks import (
    CREATION_TARGETS,
    LISTED_TARGETS,
    NUMPY_SCALAR_MATH,
    REDUCED_TARGETS,
    SAME_RANK,
    SIZED_TARGETS,
    UNTRACKED,
    Need,
    RanksAsked,
    consulted,
    created_rank,
    listed_rank,
    numpy_scalar_rank,
    reduced_rank,
    required_ranks,
    size_names,
    unpacked_rank,
)
from adopter.analysis.canonical.rescaled_shift import RescaledShift, rescaled_into
from adopter.analysis.canonical.root_powers import root_of
from adopter.analysis.canonical.sized_splits import RESHAPES as _RESHAPES
from adopter.analysis.canonical.sized_splits import SizeReads
from adopter.analysis.canonical.softmax_guards import GUARD_TARGETS, SoftmaxGuards
from adopter.analysis.canonical.spellings import (
    CANONICAL,
    CAST,
    CAT,
    CHOOSE,
    CHUNK,
    DEFAULT_KEYWORDS,
    FUNCTION_VALUES,
    KEYWORD_ALIASES,
    LOG_SOFTMAX,
    MATMUL,
    MODULES,
    ONES_LIKE,
    PARAMETERS,
    PARTIAL_FUNCTIONS,
    POW,
    SEQUENTIAL,
    SIGNATURES,
    SOFTMAX,
    SPLIT,
    SQUARES,
    TRANSPARENT_METHODS,
    TRANSPOSE,
    Key,
)
from adopter.dsl.types import (
    Architecture,
    Binding,
    Block,
    Branch,
    Ctor,
    Expr,
    Forward,
    Kwarg,
    Loop,
    Op,
    OpKind,
    Ref,
    Return,
    Stmt,
    Value,
    block_ops,
)

# The members, read once: `OpKind.MODULE` goes through EnumType's `__getattr__` hook on every read (several
# times slower than a global), and the pass tests an op's kind several times per op.
_MODULE, _METHOD, _FUNCTION, _OPERATOR, _CALL = OpKind.MODULE, OpKind.METHOD, OpKind.FUNCTION, OpKind.OPERATOR, OpKind.CALL
_KINDS = {kind._value_: kind for kind in OpKind}


def _kind(value: str) -> OpKind:
    """`OpKind(value)` without EnumType's call (a look-up by value; an unknown one raises as before)."""
    kind = _KINDS.get(value)
    return kind if kind is not None else OpKind(value)


_SQUARE_TARGETS = frozenset(target for _, target in SQUARES)  # asked before the (kind, target) key is built
_POWER_TARGETS = frozenset({"**", "pow", "torch.pow"})  # `canonical.root_powers`' spellings, asked first
# Keys are built from `op.kind._value_`, the member's value as stored: Enum's `value` property is a Python call
# per read, and the pass builds several keys per op.
_INT = re.compile(r"^-?\d+$")
_SELF_ATTRIBUTE = re.compile(r"\bself\.")
_NUMBER = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_TEMP = re.compile(r"^%(\d+)$")
# Ops giving several results (unpacked), each with the rank of their first argument.
_SAME_RANK_PARTS = frozenset({
    ("function", "torch.topk"), ("method", "topk"), ("function", "torch.sort"), ("method", "sort"),
    ("method", "chunk"), ("function", "torch.chunk"), ("method", "split"), ("function", "torch.split"),
})
_ELEMENTWISE = frozenset({"+", "-", "*", "/"})
# Products whose operands and result are 3-D by contract (`torch.bmm`, the product in `torch.baddbmm`).
_BATCHED_PRODUCTS = frozenset({("function", "torch.bmm"), ("method", "bmm"), ("function", "torch.baddbmm"),
                               ("method", "baddbmm")})
# Functions that return a Python number (rank 0): `w * int(c) ** -0.5` keeps the rank of `w`.
_SCALAR_FUNCTIONS = frozenset({"int", "float", "math.sqrt", "math.log", "math.exp", "math.pow"})
# Modules whose output has the rank of their input.
_SAME_RANK_MODULES = frozenset({"torch.nn.Linear", "torch.nn.LayerNorm", "torch.nn.Dropout", "torch.nn.GELU",
                                "torch.nn.ReLU", "torch.nn.SiLU", "torch.nn.RMSNorm"})
# Layers whose output has at most this many axes, whatever their input (torch's contract: `nn.Conv1d` takes
# (C, L) or (N, C, L) and gives the same rank; `nn.BatchNorm2d` takes (N, C, H, W) only). An axis argument
# `k` must be below the rank, so `k == bound - 1` is the last axis wherever the code runs: `softmax(conv1d(x),
# dim=2)` is over the last axis (a 2-D output would raise), `dim=1` of it is not known (channels or length).
_RANK_BOUND_MODULES: Mapping[str, int] = {
    **{f"torch.nn.{layer}{n}d": n + 2 for n in (1, 2, 3) for layer in (
        "Conv", "ConvTranspose", "BatchNorm", "InstanceNorm", "MaxPool", "AvgPool", "AdaptiveAvgPool",
        "AdaptiveMaxPool", "LazyConv", "LazyConvTranspose", "LazyBatchNorm", "LazyInstanceNorm")},
}
_MAX_SEQUENTIAL_DEPTH = 3
# Bindings of one attribute read as an `if` over their chains: two `if`/`else` constructions of a Sequential each
# holding two conditional-expression items (`h_swish() if use_hs else nn.ReLU()`, `SELayer(c) if use_se else
# nn.Identity()`: light-cnns' MobileNetV3 block) are 2 x 4 = 8.
_MAX_ALTERNATIVES = 8
_MAX_CALLABLES = 10  # x-transformers' `Attend.attn_fn`: a custom function, sigmoid, hard, top-k, gumbel, two softmaxes over -1 or -2
IDENTITY = "torch.nn.Identity"


def canonical_architecture(arch: Architecture, thin: Mapping[str, tuple[Binding, ...]] | None = None,
                           items: Mapping[str, Forward] | None = None,
                           random: frozenset[str] = frozenset()) -> Architecture:
    """`arch` with its forward in canonical form.

    `thin`: same-file submodules whose forward only chains their own layers (attr -> those leaf layers,
    named by path, `adopter.analysis.idioms.submodules`). Their leaves join the architecture's bindings (after
    its own, with the spans of the submodule's `__init__`); `submodule_view` reads calls through them.
    `items`: same-file stateless modules built as Sequential items (class -> its canonical forward,
    `idioms.submodules.item_forwards`): where a Sequential runs one, its forward's ops are spliced in.
    `random`: attributes bound to a layer-or-identity whose layer draws random numbers
    (`idioms.random_layers`): their calls are not read as a branch through the identity.
    """
    if arch.forward is None:
        return arch
    bindings = arch.init.bindings if arch.init is not None else ()
    forward = canonical_forward(arch.forward, bindings, items, random)
    derived = tuple(leaf for leaves in (thin or {}).values() for leaf in leaves)
    if derived and arch.init is not None:
        return replace(arch, forward=forward, init=replace(arch.init, bindings=(*arch.init.bindings, *derived)))
    return replace(arch, forward=forward)


def submodule_view(forward: Forward, bindings: Sequence[Binding]) -> Forward | None:
    """`forward` (canonical) with each call of a submodule read through (`self.cls(x)` becomes its leaf
    layers, `self.cls.predictions.decoder`, at the call's spans, `via self.cls`), or None when there is
    none. The leaves are the bindings named by a path (`cls.predictions.decoder`), in order. Only rules
    that ask for it (`inside_submodule`) match in this view: in the architecture the call stays one op."""
    thin: dict[str, list[Binding]] = {}
    own: list[Binding] = []
    for b in bindings:
        if "." in b.attr:
            thin.setdefault(b.attr.split(".", 1)[0], []).append(b)
        else:
            own.append(b)
    if not thin:
        return None
    by_attr: dict[str, list[Binding]] = {}
    for b in own:
        by_attr.setdefault(b.attr, []).append(b)
    try:
        body = _Pass(forward, by_attr, {k: tuple(v) for k, v in thin.items()}).block(forward.body, {})
    except (TypeError, AttributeError, ValueError):
        return None
    return None if body == forward.body else replace(forward, body=body)


def canonical_forward(forward: Forward, bindings: tuple[Binding, ...] = (),
                      items: Mapping[str, Forward] | None = None, random: frozenset[str] = frozenset(), *,
                      untracked_first: bool = True) -> Forward:
    """`forward` with every op in canonical form; `bindings` are its class's `__init__` bindings, `items`
    the stateless Sequential items read through (see `canonical_architecture`). `untracked_first=False`: the pass
    tracking ranks from the start (the same result: `tests/analysis/test_untracked_ranks.py` compares them)."""
    by_attr: dict[str, list[Binding]] = {}
    for b in bindings:
        by_attr.setdefault(b.attr, []).append(b)
    try:
        flat = tuple(block_ops(forward.body))  # every op, nested ones included: the set-up's scans read it once
        batched = _batched_operands(flat)
        try:
            if not untracked_first or _may_ask_ranks(flat):
                raise RanksAsked
            # First without tracking ranks, where no op is likely to ask one (`_may_ask_ranks`: 83 % of the
            # passes over transformers' models, 57 % of their ops; the tracking is about a third of a pass). A
            # reading that would consult the ranks stops this pass (`ranks.consulted`), and the forward is read
            # again, tracking them; a pass that ends without asking is the one that tracks them (only the
            # writers, which change nothing else, read them otherwise: `tests/analysis/test_untracked_ranks.py`).
            body = _Pass(forward, by_attr, {}, batched, items, None, random, flat).block(forward.body, UNTRACKED)
        except RanksAsked:
            need = required_ranks(forward.body, _same_rank_modules(by_attr))
            body = _Pass(forward, by_attr, {}, batched, items, need, random, flat).block(
                forward.body, _held(flat, by_attr) | _number_params(forward))
    except (TypeError, AttributeError, ValueError):
        # A malformed forward (built by hand, not by the analysis) is left as it is: the rule engine
        # reports what it cannot match as a problem, and the pass must not take the file down.
        return forward
    return forward if body == forward.body else replace(forward, body=body)


def _may_ask_ranks(flat: tuple[Op, ...]) -> bool:
    """Whether a reading of the pass is likely to consult the ranks of a forward whose ops are `flat`: an axis
    written as an integer from 0 where the op's signature has axes, a softmax without `dim`, a power of -0.5 or 0.5.
    Only a guess of where to start: an untracked pass that asks after all is run again, tracking ranks."""
    for o in flat:
        key = (o.kind._value_, o.target)
        sig = SIGNATURES.get(CANONICAL.get(key, key))
        if sig is not None and sig.dims:
            if any(isinstance(v, Expr) and _INT.match(v.text) and v.text[0] != "-"
                   for v in (*o.args[1:], *(k.value for k in o.kwargs))):
                return True
            if o.target in _SOFTMAX_TARGETS and not any(k.name == "dim" for k in o.kwargs) and len(o.args) < 2:
                return True
        elif o.target in _POWER_TARGETS and len(o.args) == 2 and isinstance(o.args[1], Expr) and o.args[1].text in (
                "-0.5", "0.5", "-.5", ".5"):
            return True
    return False


def _same_rank_modules(by_attr: Mapping[str, list[Binding]]) -> frozenset[str]:
    """The module targets bound once, to a layer whose output has its input's rank (`nn.Softmax(dim=1)`)."""
    found: set[str] = set()
    for attr, bindings in by_attr.items():
        ctor = bindings[0].value if len(bindings) == 1 else None
        if isinstance(ctor, Ctor) and (ctor.callee in _SAME_RANK_MODULES or (
                ctor.callee in MODULES and MODULES[ctor.callee].op in SAME_RANK)):
            found.add(f"self.{attr}")
    return frozenset(found)


def _triggers(flat: tuple[Op, ...], items: bool) -> tuple[bool, bool, bool]:
    """Whether each of three mechanisms can act in a forward whose ops are `flat` (`block_ops` of its body):
    most forwards hold none of their triggers, and a mechanism that cannot act need not follow every op.

    - `SoftmaxGuards.guard` answers only for an op of an inlined helper (`via`) with a target of
      `GUARD_TARGETS`; the ops the pass asks it of are the body's, with the same `via` (those `_Pass.op`
      respells first keep it and become no such target: `tests/analysis/test_canonical_triggers.py`);
    - `RescaledShift` holds a value only after a helper's `/` (`note`), and `undone` answers only then;
    - `SizeReads` is read only by `splits_last_in_two`, of a `view` / `reshape` with a `2` among its
      arguments (the pass makes no such op of another: the body holds it, or a spliced item's forward)."""
    guarded = rescaling = sized = False
    for o in flat:
        if o.via:
            guarded = guarded or o.target in GUARD_TARGETS
            rescaling = rescaling or o.target == "/"
        if o.target in _RESHAPES and not sized:
            sized = any(isinstance(v, Expr) and v.text == "2" for v in (*o.args, *(k.value for k in o.kwargs)))
    return guarded, rescaling, sized or items


class _Pass:
    def __init__(self, forward: Forward, by_attr: Mapping[str, list[Binding]],
                 thin: Mapping[str, tuple[Binding, ...]], batched: frozenset[str] = frozenset(),
                 items: Mapping[str, Forward] | None = None, need: Need | None = None,
                 random: frozenset[str] = frozenset(), flat: tuple[Op, ...] | None = None) -> None:
        self.by_attr = by_attr
        # every op of the body in order (`block_ops`), nested ones included: what the set-up's scans read
        self.flat = tuple(block_ops(forward.body)) if flat is None else flat
        self.random = random  # layer-or-identity attributes whose layer draws random numbers
        self.need = need or {}  # ranks later uses prove at the ops that read a value (`ranks.required_ranks`)
        self.items = items or {}  # class -> canonical forward of a stateless Sequential item
        self.batched = batched  # names read by `bmm`: 3-D wherever they are defined
        # `units`, `bounded` and the temporaries' `counter` when first asked (-1 until then): read by the rank
        # tracking, which most passes do not do (`canonical_forward`), and where the pass makes a temporary
        self._units = -1
        self._bounded = -1
        self.thin = thin
        self.split_identity = not thin  # the submodule view reads an already canonical forward
        self.counter = -1
        self.body = forward.body
        # calls of a local holding a loss module (`bound_losses`); none where no op builds a loss module
        self.loss_calls = bound_loss_calls(forward.body) if any(
            o.target in LOSS_MODULES and o.kind == _FUNCTION for o in self.flat) else {}
        self._scanned: tuple[frozenset[str], frozenset[str]] | None = None  # `_prescan`, when first needed
        self.rowmax: dict[str, str] = {}  # name -> the value whose row maximum (keepdim) it holds
        self.lists: dict[str, tuple[Value, ...]] = {}  # name -> the items of the list literal it holds
        # name -> ("rank", t) for `t.ndim` / `t.dim()`, ("last", t) for that less one: the last axis of `t`
        self.ranked: dict[str, tuple[str, str]] = {}
        self.made_by: dict[str, Key] = {}  # name -> the canonical op that last bound it in this pass
        # the forward's own inputs (`self` aside): tensors a caller lays out, read as operands like the locals
        self.inputs = frozenset(p.name for p in forward.params if p.name != "self")
        self.probs: set[str] = set()  # names bound to a softmax's output (also through casts)
        self.guards = SoftmaxGuards()  # a helper's guard of fully masked rows after its softmax (`softmax_guards`)
        self.rescale = RescaledShift()  # a helper's `/c`, shift, `*c` into a softmax (`rescaled_shift`)
        # Which of those three mechanisms can act in this forward at all (`_Triggers`): the others are not fed.
        self.guarded, self.rescaling, self.sized = _triggers(self.flat, bool(self.items))
        # Whether a reading of what `track` keeps can act in this forward (`_LAYOUT_READS`): where none can,
        # `product_layouts` is not asked (it keeps every op of a forward without a matrix product as it is), and
        # `track` keeps only the probabilities the guard reads where it can act (`guarded`), else nothing
        # (`tests/analysis/test_layout_gate.py`).
        self.layouts = self.sized or bool(self.items) or any(o.target in _LAYOUT_READS for o in self.flat)
        self._rescaled: frozenset[str] | None = None
        self.swapped: dict[str, str] = {}  # name -> the name it is `transpose(-2, -1)` of
        self.transposed: set[str] = set()  # names bound to a transpose (also through a scale or cast)
        self._scores: frozenset[str] | None = None
        self.halves: dict[str, str] = {}  # name -> the tensor whose last axis it holds split as (2, n)
        self.sizes = SizeReads()  # sizes read off tensors (a reshape written with them: `sized_splits`)
        self.version: dict[str, int] = {}  # name -> how many times the pass has bound it
        self.current = 0  # `id` of the block the pass is in
        self.zeros: dict[str, int] = {}  # name -> the block (`current`) whose last op bound it to zeros
        # name -> (product, factor, "*" or "/", their versions): a product scaled once, kept by `track`
        self.scaled: dict[str, tuple[str, Value, str, tuple[int, int]]] = {}

    def temp(self) -> str:
        if self.counter < 0:
            self.counter = _max_temp(self.flat)
        self.counter += 1
        return f"%{self.counter}"

    @property
    def units(self) -> bool:
        """The class binds a layer or parameter one feature wide (`_one_wide`): only then are last axes of length 1
        tracked."""
        if self._units < 0:
            self._units = int(any(_one_wide(b.value) for bs in self.by_attr.values() for b in bs))
        return self._units == 1

    @property
    def bounded(self) -> bool:
        """The class binds a layer whose output's rank is bounded (`_RANK_BOUND_MODULES`): only then are bounds
        kept."""
        if self._bounded < 0:
            self._bounded = int(any(isinstance(b.value, Ctor) and b.value.callee in _RANK_BOUND_MODULES
                                    for bs in self.by_attr.values() for b in bs))
        return self._bounded == 1

    @property
    def keys(self) -> frozenset[str]:
        """Names read as the right operand of a matrix product (see `_prescan`)."""
        if self._scanned is None:
            self._scanned = _prescan(self.flat, self._softmax_modules())
        return self._scanned[0]

    @property
    def softmaxed(self) -> frozenset[str]:
        """Names read by a softmax (see `_prescan`)."""
        if self._scanned is None:
            self._scanned = _prescan(self.flat, self._softmax_modules())
        return self._scanned[1]

    def _softmax_modules(self) -> frozenset[str]:
        """The module targets that are a softmax (`self.softmax = nn.Softmax(dim=-1)`, bound once): the prescan
        runs before the pass respells their calls, so a stored softmax reads its input as a softmax does."""
        return frozenset(f"self.{attr}" for attr in self.by_attr
                         if (ctor := _ctor_of(self.by_attr, f"self.{attr}")) is not None
                         and (spelled := MODULES.get(ctor.callee)) is not None and spelled.op == SOFTMAX)

    @property
    def rescaled(self) -> frozenset[str]:
        """Names an inlined helper multiplies by a number straight into a softmax (`rescaled_shift`)."""
        if self._rescaled is None:
            self._rescaled = rescaled_into(self.flat, self.softmaxed)
        return self._rescaled

    @property
    def scores(self) -> frozenset[str]:
        """Names whose value reaches a softmax through scales, additive terms, masks and casts."""
        if self._scores is None:
            self._scores = _scores_of(self.flat, self.softmaxed)
        return self._scores

    def scores_now(self) -> frozenset[str]:
        """`scores`, as a function (asked lazily: most forwards never need them)."""
        return self.scores

    # -- control flow --------------------------------------------------------------------------------

    def block(self, block: Block, ranks: dict[str, int]) -> Block:
        outer, self.current = self.current, id(block)
        try:
            return self._block(block, ranks)
        finally:
            self.current = outer

    def _block(self, block: Block, ranks: dict[str, int]) -> Block:
        out: list[Stmt] = []
        deferred: dict[int, Op] = {}  # index of a call of a module built inline -> the function it computes
        for i, stmt in enumerate(block):
            if isinstance(stmt, Op):
                if stmt.kind == _CALL and stmt.target[-1:] in ")]" and stmt.target in self.by_attr:
                    # `ACT2FN[self.config.hidden_act](x)`: the module `__init__` would have bound (`scope.inline_lookups`)
                    stmt = replace(stmt, kind=_MODULE)
                if self.loss_calls and id(stmt) in self.loss_calls:
                    stmt = self.bound_loss_call(stmt)  # `criterion(logits, y)`, `criterion = nn.CrossEntropyLoss()`
                kind = stmt.kind
                if i in deferred:
                    out.extend(self.op(deferred.pop(i), ranks))  # `nn.Softmax(dim=-1)(x)`: the function it computes
                elif kind == _FUNCTION and (found := self.instance_call(stmt, block, i)):
                    deferred[found[0]] = found[1]  # the argument's ops (`nn.Softmax()(a * s)`) come first
                # The three readings of a module call answer None for any other op (asked of module calls only).
                elif kind == _MODULE and self.split_identity and (split := self.identity_or_layer(stmt)) is not None:
                    out.append(split)
                elif kind == _MODULE and self.split_identity and (split := self.sequential_alternatives(stmt)):
                    out.append(split)
                elif kind == _MODULE and self.split_identity and (split := self.callable_alternatives(stmt)):
                    out.append(split)
                else:
                    out.extend(self.op(stmt, ranks))
            elif i in deferred:
                out.extend(self.op(deferred.pop(i), ranks))
            elif isinstance(stmt, Branch):
                if ranks is UNTRACKED:  # every path reads the same untracked ranks
                    paths = tuple(self.block(p, ranks) for p in stmt.paths)
                else:
                    path_ranks = [dict(ranks) for _ in stmt.paths]
                    paths = tuple(self.block(p, r) for p, r in zip(stmt.paths, path_ranks))
                    _meet(ranks, path_ranks)
                out.append(stmt if paths == stmt.paths else replace(stmt, paths=paths))
            elif isinstance(stmt, Loop):
                inner = dict(ranks) if ranks is not UNTRACKED else ranks
                body = self.block(stmt.body, inner)
                if ranks is not UNTRACKED:
                    _meet(ranks, [inner])
                out.append(stmt if body == stmt.body else replace(stmt, body=body))
            else:
                out.append(stmt)
        return tuple(out)

    def instance_call(self, op: Op, block: Block, i: int) -> tuple[int, Op] | None:
        """`nn.Softmax(dim=-1)(x)`: a stateless module built and called in one expression (the constructor's
        temporary, then the ops of the argument, if any, that do not read it, then the call of it) is that
        module's call, as if `__init__` had bound it: the call's index and op; None otherwise."""
        if op.kind != _FUNCTION or op.target not in MODULES or len(op.outputs) != 1 or not _TEMP.match(
                op.outputs[0]):
            return None
        temp = op.outputs[0]
        j = i + 1
        while j < len(block) and _argument_step(block[j], temp):
            j += 1
        following = block[j] if j < len(block) else None
        if not isinstance(following, Op) or following.kind != _CALL or following.target != temp:
            return None
        ctor = Ctor(op.target, tuple(op.args), tuple(op.kwargs))
        spelled = self.module(replace(following, kind=_MODULE, origin=following.origin or following),
                              op.target, ctor, 0)
        return (j, spelled[0]) if len(spelled) == 1 and spelled[0].kind != _MODULE else None

    def bound_loss_call(self, op: Op) -> Op:
        """A call of a local holding a loss module (`bound_losses`): the function the module computes, with
        the constructor's arguments; the call as it is where they are not all known."""
        ctor = self.loss_calls[id(op)]
        spelled = self.module(replace(op, kind=_MODULE, origin=op.origin or op), ctor.callee, ctor, 0)
        return spelled[0] if len(spelled) == 1 and spelled[0].kind != _MODULE else op

    def identity_or_layer(self, op: Op) -> Branch | None:
        """`self.ls(x)` with `self.ls = LayerScale(...)` under one condition and `nn.Identity()` under the
        other: an `if` whose paths are the layer's call and a transparent cast, so a match through the
        identity holds on its path (reported without an automatic fix). None for any other call."""
        if op.kind != _MODULE or not op.target.startswith("self.") or len(op.args) != 1 or op.kwargs:
            return None
        if op.target[5:] in self.random:
            return None  # stochastic depth: where built, it drops the branch (`idioms.random_layers`)
        bindings = self.by_attr.get(op.target[5:], ())
        if len(bindings) != 2 or not all(isinstance(b.value, Ctor) and b.condition for b in bindings):
            return None
        identity = [b for b in bindings if isinstance(b.value, Ctor) and b.value.callee == IDENTITY]
        if len(identity) != 1:
            return None
        other = next(b for b in bindings if b is not identity[0])
        assert isinstance(other.value, Ctor) and other.condition is not None
        layer = self.module(op, op.target, other.value, 0)
        # The identity's path passes its input on: a `choose`, like one alternative of `a if c else b`.
        passed = _respell(op, CHOOSE, op.args, ())
        return Branch((other.condition, "else"), (tuple(layer), (passed,)), op.stmt_span)

    def sequential_alternatives(self, op: Op) -> Branch | None:
        """`self.net(x)` with `self.net` bound to one `nn.Sequential` under one condition and another (or an
        identity) under the other (`nn.Sequential(conv, bn, act, Attention(...), pool if downsample else
        nn.Identity(), ...)` is two bindings): an `if` whose paths run each alternative's chain, so a site in
        either is found on its path (reported without an automatic fix, like every Sequential's). None when
        no alternative is a Sequential, or when the alternatives are not all conditional constructors."""
        if op.kind != _MODULE or not op.target.startswith("self.") or len(op.args) != 1 or op.kwargs:
            return None
        bindings = self.by_attr.get(op.target[5:], ())
        if not 2 <= len(bindings) <= _MAX_ALTERNATIVES or not all(
                (isinstance(b.value, Ctor) or _passed_module(b)) and b.condition for b in bindings):
            return None
        ctors = [b.value for b in bindings if isinstance(b.value, Ctor)]
        if not any(c.callee == SEQUENTIAL and c.items for c in ctors):
            return None
        paths: list[tuple[Stmt, ...]] = []
        for b in bindings:
            ctor = b.value
            if not isinstance(ctor, Ctor):
                paths.append((op,))  # the module the caller passed: its own forward, run as a call
            elif ctor.callee == IDENTITY:
                paths.append((_respell(op, CHOOSE, op.args, ()),))
            else:
                paths.append(tuple(self.module(op, op.target, ctor, 0)))
        conditions = tuple(str(b.condition) for b in bindings[:-1])
        return Branch((*conditions, "else"), tuple(paths), op.stmt_span)

    def callable_alternatives(self, op: Op) -> Branch | None:
        """`self.attn_fn(sim)` with `self.attn_fn` bound, each under its condition, to 2-10 values of which
        one is a softmax: `nn.Softmax(dim=-1) if not non_competitive_gates else
        nn.ReLU()` (product-key-memory), `partial(F.softmax, dim=-1) if not laplacian_attn_fn else
        LaplacianAttnFn()` (mega-pytorch), `F.sigmoid` / `partial(F.softmax, dim=-1)` / a custom function
        (x-transformers' `Attend`): an `if` whose paths run each alternative's function, the others keeping
        the call as written, so a site through one is found on its path (without an automatic fix, as for
        every path-dependent match). None when no alternative is a softmax or any binding is unconditional."""
        if op.kind != _MODULE or not op.target.startswith("self.") or "[" in op.target or "." in op.target[5:]:
            return None
        bindings = self.by_attr.get(op.target[5:], ())
        if not 2 <= len(bindings) <= _MAX_CALLABLES or not all(b.condition for b in bindings):
            return None
        paths: list[tuple[Stmt, ...]] = []
        softmax = False
        for b in bindings:
            known = self.known_callable(op, b.value)
            paths.append((op,) if known is None else (known,))
            softmax = softmax or (known is not None and (known.kind._value_, known.target) == SOFTMAX)
        if not softmax:
            # Activations chosen by a flag (`nn.GELU() if mask else nn.ReLU()`) stay one call: a Linear →
            # GELU pair on one path of a configuration is the precision kind issue 20 names.
            return None
        conditions = tuple(str(b.condition) for b in bindings[:-1])
        return Branch((*conditions, "else"), tuple(paths), op.stmt_span)

    def known_callable(self, op: Op, value: object) -> Op | None:
        """The call `op` as the function `value` computes: a stateless module of the table (`nn.Softmax(dim=-1)`),
        a function (`F.gelu`) or a `partial` of one with keywords (`partial(F.softmax, dim=-1)`); else None."""
        if isinstance(value, Ctor) and value.callee in MODULES:
            spelled = self.module(op, op.target, value, 0)
            return spelled[0] if len(spelled) == 1 and spelled[0].kind != _MODULE else None
        function: str | None = None
        kwargs: tuple[Kwarg, ...] = op.kwargs
        if isinstance(value, Expr) and value.text in FUNCTION_VALUES:
            function = value.text
        elif (isinstance(value, Ctor) and value.callee == "functools.partial" and len(value.args) == 1
              and isinstance(value.args[0], Expr) and value.args[0].text in PARTIAL_FUNCTIONS and not value.items
              and all(k.name != "**" for k in value.kwargs)):
            function = value.args[0].text
            kwargs = (*op.kwargs, *value.kwargs)
        if function is None:
            return None
        key = CANONICAL.get(("function", function), ("function", function))
        args, kwargs = normalise(key, op.args, kwargs, {})
        return Op(_kind(key[0]), key[1], args, kwargs, op.outputs, op.span, op.stmt_span, op.via,
                  origin=op.origin or op)

    # -- one op --------------------------------------------------------------------------------------

    def op(self, op: Op, ranks: dict[str, int]) -> list[Op]:
        if op.kind == _FUNCTION and (moments := split_var_mean(op)) is not None:  # `var, mean = torch.var_mean(x, ...)`
            return [o for m in moments for o in self.op(m, ranks)]
        tracking = ranks is not UNTRACKED
        if self.need and tracking:
            for a in op.args:
                if isinstance(a, Ref) and a.name not in ranks and (rank := self.need.get((id(op), a.name))) is not None:
                    ranks[a.name] = rank
        if op.kind == _MODULE and (function := _function_of(self.by_attr, op.target)) is not None:
            # `self.act(x)` with `self.act = F.gelu` (or `getattr(F, "gelu")`): the function's call.
            op = Op(_FUNCTION, function, op.args, op.kwargs, op.outputs, op.span, op.stmt_span, op.via,
                    origin=op.origin or op)
        shifted = self.stable_shift(op)
        if op.target == "unbind" and op.kind == _METHOD and (halves := self.unbound_halves(op)) is not None:
            for o in halves:
                _track_rank(o, ranks, self.by_attr, self.units, self.bounded)
                self.track(o)
            return halves
        if op.kind == _MODULE:
            ctor = _ctor_of(self.by_attr, op.target)
            if ctor is None and op.target.endswith("]"):
                ctor = _item_ctor(self.by_attr, op.target)  # `ff(x)` in `for attn, ff in self.layers`
            if ctor is None:
                ctor = _shared_lead(self.by_attr, op.target)
            ops = [_ranked_axes(o, ranks) for o in self.module(op, op.target, ctor, 0)]
        elif shifted is not None:
            ops = [shifted]
        elif (op.via and self.rescaling and op.kind == _OPERATOR
              and (undone := self.rescale.undone(op, self.softmaxed)) is not None):
            ops = [_respell(op, CAST, (undone,), ())]  # `(t / c) * c` into a softmax: `t`
        elif op.via and self.guarded and (guarded := self.guards.guard(op, self.probs)) is not None:
            ops = [_respell(op, CAST, (guarded,), ())]  # the guarded softmax: the softmax, for the chain
        elif (op.kind == _OPERATOR and op.target == "getattr" and len(op.args) == 2
              and isinstance(op.args[1], Expr) and op.args[1].text == "mT"):
            ops = [_respell(op, TRANSPOSE, (op.args[0], Expr("-2"), Expr("-1")), ())]  # `k.mT`
        elif (op.target in ("permute", "einops.rearrange") and len(op.outputs) == 1 and op.outputs[0] in self.keys
              and (split := self.swapped_layout(op))):
            ops = split
        elif (op.kind == _FUNCTION and op.target == "einops.rearrange" and len(op.args) == 2 and not op.kwargs
              and isinstance(op.args[0], Ref) and op.args[0].name in self.probs and len(op.outputs) == 1
              and isinstance(op.args[1], Expr) and swaps_last_two(op.args[1].text)):
            # `rearrange(p, "b i j -> b j i")` of attention probabilities is `p.transpose(-2, -1)` (CompVis' `v @ pᵀ`,
            # read by `product_layouts`). Where it rebinds their own name, they stay readable as a temporary.
            source = op.args[0]
            ops = []
            if op.outputs == (source.name,):
                held = self.temp()
                ops.append(_new(op, CAST, (source,), (held,)))
                source = Ref(held)
            ops.append(_respell(op, TRANSPOSE, (source, Expr("-2"), Expr("-1")), ()))
        elif op.kind == _METHOD and op.target in TRANSPARENT_METHODS and op.args:
            ops = [_respell(op, CAST, op.args, op.kwargs)]
        elif op.kind == _METHOD and op.target == "permute" and _identity_permute(op):
            ops = [_respell(op, CAST, op.args[:1], ())]  # `permute(0, 1, 2, 3)`: the same tensor
        elif op.kind == _FUNCTION and op.target in ("torch.einsum", "einops.einsum"):
            ops = self.einsum(op, ranks) or [op]
        elif op.kind == _FUNCTION and op.target == "torch.baddbmm":
            ops = self.baddbmm(op) or [op]
        elif (op.kind == _OPERATOR and op.target == "*" and len(op.args) == 2 and isinstance(op.args[0], Ref)
              and op.args[0] == op.args[1]):
            ops = [_respell(op, POW, (op.args[0], Expr("2")), ())]  # `x * x` is `x.pow(2)`
        elif (op.target in _SQUARE_TARGETS and (op.kind._value_, op.target) in SQUARES
              and len(op.args) == 1 and not op.kwargs):
            ops = [_respell(op, POW, (op.args[0], Expr("2")), ())]  # `x.square()`, `torch.square(x)`: `x.pow(2)`
        elif (op.target in _POWER_TARGETS and (root := root_of(op, self.made_by, ranks)) is not None):
            ops = [_respell(op, root, op.args[:1], ())]  # `(v + eps) ** -0.5`: `torch.rsqrt(v + eps)`
        else:
            key = (op.kind._value_, op.target)
            canonical = CANONICAL.get(key, key)
            if (tracking and canonical == TRANSPOSE and len(op.outputs) == 1 and op.outputs[0] in self.batched
                    and op.args and isinstance(op.args[0], Ref) and op.args[0].name not in ranks):
                # `k.transpose(1, 2)` fed to `bmm`: bmm takes 3-D tensors, so its dims are the last two.
                ranks[op.args[0].name] = 3
            args, kwargs = normalise(canonical, op.args, op.kwargs if canonical != CAT else _items_last_axis(
                canonical, op, self.lists, self.ranked), ranks)
            # (a last axis of length 1 is tracked only with `units`)
            if canonical == SOFTMAX and args and self.units and _last_axis(kwargs) and _unit_last(args[0], ranks):
                # A softmax over an axis of length 1 is all ones (SwiftFormer's `(q @ w_g).softmax(-1)`
                # with `w_g` of shape (dim, 1)): no softmax runs, whatever the spelling.
                ops = [_respell(op, ONES_LIKE, args[:1], ())]
            else:
                ops = [op] if canonical == key and args == op.args and kwargs == op.kwargs else [
                    _respell(op, canonical, args, kwargs)]
        ops = [_implicit_dim(o, ranks) if o.target in _SOFTMAX_TARGETS and (o.kind._value_, o.target) in (
            SOFTMAX, LOG_SOFTMAX) else o for o in ops]
        if self.layouts:
            ops = self.product_layouts(ops)  # also `track`s each op
        elif self.guarded:
            for o in ops:
                self.track(o)  # (the probabilities only)
        for o in ops:
            if self.guarded:
                self.guards.note(o, self.scores_now)
            if not tracking:
                continue
            reduced = reduced_rank(o, ranks) if o.target in REDUCED_TARGETS else None  # the input's rank before
            if o.target in NUMPY_SCALAR_MATH:
                reduced = numpy_scalar_rank(o, ranks)  # `np.sqrt(head_dim)` of a number: a number
            _track_rank(o, ranks, self.by_attr, self.units, self.bounded)
            if o.target in SIZED_TARGETS:
                for name in size_names(o):  # `k.reshape(m, n, -1)`: `n` is an integer, rank 0
                    ranks.setdefault(name, 0)
            if o.target in CREATION_TARGETS and (made := created_rank(o, self.lists)) is not None:
                ranks[o.outputs[0]] = made
            elif o.target in LISTED_TARGETS and (made := listed_rank(o, self.lists)) is not None:
                ranks[o.outputs[0]] = made
            elif reduced is not None:
                ranks[o.outputs[0]] = reduced
            elif len(o.outputs) > 1 and (unpacked := unpacked_rank(o)) is not None:
                ranks.setdefault(*unpacked)
            elif o.kind == _MODULE and (method_rank := held_method_rank(o, ranks)) is not None:
                ranks[o.outputs[0]] = method_rank  # `self.w.to(dtype)` of a parameter of known rank
        return ops

    # -- attention's products in another operand order or layout --------------------------------------

    def track(self, op: Op) -> None:
        """What `product_layouts` needs to know of each name as the pass binds it (only where a reading of it can
        act: `layouts`; else only the probabilities, where the guard can act)."""
        if not self.layouts:
            if self.guarded:
                self._track_probs(op)
            return
        key = (op.kind._value_, op.target)
        first = op.args[0].name if op.args and isinstance(op.args[0], Ref) else None
        first_made = self.made_by.get(first) if first is not None else None
        # read before the outputs are bound (a `view` / `reshape` only)
        split = self.sized and op.kind == _METHOD and self.sizes.splits_last_in_two(op, self.version)
        for name in op.outputs:
            self.version[name] = self.version.get(name, 0) + 1
            if self.sized:
                self.sizes.forget(name)
            if key in _ZEROS:
                self.zeros[name] = self.current
            elif self.zeros:  # (each table: nothing to forget while it is empty, as in most forwards)
                self.zeros.pop(name, None)
            if self.scaled:
                self.scaled.pop(name, None)
            self.made_by[name] = key
            if self.probs:
                self.probs.discard(name)
            if self.swapped:
                self.swapped.pop(name, None)
            if self.transposed:
                self.transposed.discard(name)
            if self.halves:
                self.halves.pop(name, None)
        if self.sized:
            self.sizes.note(op, self.version)
        if len(op.outputs) != 1:
            return
        out = op.outputs[0]
        if first is not None and (split or (op.target in _LAST_SPLITTERS and _splits_last_in_two(op))):
            self.halves[out] = first
        if (first is not None and first_made == MATMUL and out != first and op.kind == _OPERATOR
                and op.target in ("*", "/") and len(op.args) == 2):
            factor = op.args[1]
            self.scaled[out] = (first, factor, op.target,
                                (self.version.get(first, 0), self._version_of(factor)))
        if key == TRANSPOSE or (key in (CAST, ("operator", "*"), ("operator", "/")) and first in self.transposed):
            self.transposed.add(out)
        if key == SOFTMAX and _last_axis(op.kwargs):
            self.probs.add(out)
        elif key == CAST and first in self.probs:
            self.probs.add(out)
        elif key == CAST and first is not None and first in self.swapped and out != first:
            # `p = p.permute(0, 2, 1).contiguous()`: the transposed probabilities through a cast are still
            # their transpose (the CompVis attention block as audioldm writes it, `.contiguous()` on each step).
            self.swapped[out] = self.swapped[first]
        elif (key == TRANSPOSE and first is not None and len(op.args) == 3
              and {a.text for a in op.args[1:] if isinstance(a, Expr)} == {"-2", "-1"}):
            self.swapped[out] = first

    def _track_probs(self, op: Op) -> None:
        """`track`'s part that keeps `probs` (the same steps in the same order), for a forward where nothing else
        of it is read."""
        for name in op.outputs:
            if self.probs:
                self.probs.discard(name)
        if len(op.outputs) != 1:
            return
        key = (op.kind._value_, op.target)
        if key == SOFTMAX and _last_axis(op.kwargs):
            self.probs.add(op.outputs[0])
        elif key == CAST and op.args and isinstance(op.args[0], Ref) and op.args[0].name in self.probs:
            self.probs.add(op.outputs[0])

    def unbound_halves(self, op: Op) -> list[Op] | None:
        """`x.unbind(dim=-2)` of `x`'s last axis split as (2, n) (`rearrange(x, "... (j d) -> ... j d", j=2)`,
        `x.unflatten(-1, (2, -1))`): the two halves, `chunk(2, dim=-1)` of the tensor split (rotate_half
        written with einops); None for any other op."""
        if op.kind != _METHOD or op.target != "unbind" or len(op.outputs) != 2 or not op.args:
            return None
        first = op.args[0]
        dims = [*op.args[1:2], *(k.value for k in op.kwargs if k.name == "dim")]
        if (not isinstance(first, Ref) or first.name not in self.halves or len(dims) != 1
                or not isinstance(dims[0], Expr) or dims[0].text != "-2"):
            return None
        source = Ref(self.halves[first.name])
        return [Op(_METHOD, "chunk", (source, Expr("2")), (Kwarg("dim", Expr("-1")),), op.outputs, op.span,
                   op.stmt_span, op.via, origin=op.origin or op)]

    def product_layouts(self, ops: list[Op]) -> list[Op]:
        """Attention's matrix products written with the other operand order or layout, as `q @ kᵀ` and
        `p @ v` (the same values; the inserted ops keep the product as their `origin`):

        - scores whose right operand is a local already laid out `(..., d, n)`, not by a transpose the
          pass sees (`bmm(q.permute(0, 2, 1), k)` with `k` reshaped channels-first): the product reads
          the keys through two transposes, `q @ transpose(transpose(k))`;
        - values multiplied from the left by the transposed probabilities (`bmm(v, p.permute(0, 2, 1))`,
          channels-first outputs): `v @ pᵀ` is `transpose(p @ transpose(v))`.

        Only for a product of two locals bound in this forward or inputs of it (keys a caller hands in laid
        out `(..., d, n)`: PatchTST's `torch.matmul(q, k)`, `k` permuted `(0, 2, 3, 1)` by the calling class)
        whose result reaches a softmax (scores), or whose right operand is a softmax's output transposed
        (values); never an attribute (a learned table)."""
        out: list[Op] = []
        for op in ops:
            if op.target not in _LAYOUT_TARGETS:  # (`_product_layout` keeps any other op as it is)
                out.append(op)
                self.track(op)
                continue
            first = len(out)
            self._product_layout(op, out)
            for o in out[first:]:
                self.track(o)
        return out

    def _version_of(self, value: Value) -> int:
        return self.version.get(value.name, 0) if isinstance(value, Ref) else 0

    def _scale_chain(self, op: Op) -> list[Op] | None:
        """Scores scaled twice in a row (`sim * t.exp() * scale`, the first result not rebinding the
        product) as the product times one factor: `f = t.exp() * scale; sim = product * f`, the same
        values (for `/`, the factors' quotient or product). The new ops' origin is the second scale,
        which `_spelling_reason` reads as a spelling the rewrites do not edit."""
        if (op.kind != _OPERATOR or op.target not in ("*", "/") or len(op.args) != 2 or len(op.outputs) != 1
                or not isinstance(op.args[0], Ref)):
            return None
        held = self.scaled.get(op.args[0].name)
        if held is None or op.outputs[0] not in self.scores:
            return None
        product, factor, first_op, (v_product, v_factor) = held
        if self.version.get(product, 0) != v_product or self._version_of(factor) != v_factor:
            return None  # the product or the factor was bound again in between
        combined = self.temp()
        origin = replace(op, origin=None)
        joined = "*" if first_op == op.target else "/"
        return [Op(_OPERATOR, joined, (factor, op.args[1]), (), (combined,), op.span, op.stmt_span, op.via,
                   origin=origin),
                Op(_OPERATOR, first_op, (Ref(product), Ref(combined)), (), op.outputs, op.span, op.stmt_span,
                   op.via, origin=origin)]

    def _product_layout(self, op: Op, out: list[Op]) -> None:
        if (chain := self._scale_chain(op)) is not None:
            out += chain
            return
        if ((op.kind._value_, op.target) != MATMUL or len(op.args) != 2 or op.kwargs or len(op.outputs) != 1
                or not all(isinstance(a, Ref) and (a.name in self.made_by or a.name in self.inputs) for a in op.args)):
            out.append(op)
            return
        left, right = (a.name for a in op.args if isinstance(a, Ref))
        source = self.swapped.get(right)
        if source is not None and source in self.probs and left not in self.probs:
            vt, product = self.temp(), self.temp()
            out += [_new(op, TRANSPOSE, (Ref(left), Expr("-2"), Expr("-1")), (vt,)),
                    _new(op, MATMUL, (Ref(source), Ref(vt)), (product,)),
                    _new(op, TRANSPOSE, (Ref(product), Expr("-2"), Expr("-1")), op.outputs)]
        elif (op.outputs[0] in self.scores and right not in self.transposed
              and right not in self.probs and left not in self.probs):
            k, kt = self.temp(), self.temp()
            out += [_new(op, TRANSPOSE, (Ref(right), Expr("-2"), Expr("-1")), (k,)),
                    _new(op, TRANSPOSE, (Ref(k), Expr("-2"), Expr("-1")), (kt,)),
                    replace(op, args=(op.args[0], Ref(kt)), origin=op.origin or op)]
        else:
            out.append(op)

    def module(self, op: Op, target: str, ctor: Ctor | None, depth: int,
               layers: tuple[Binding, ...] | None = None) -> list[Op]:
        """A module call: the function a stateless module computes, or the chain of a Sequential (`layers`:
        the leaf layers to read the call through, when not all of the submodule's)."""
        leaves = layers or (self.thin.get(target[5:]) if target.startswith("self.") and depth == 0 else None)
        if leaves and len(op.args) >= 2 and not op.kwargs and len(op.outputs) == len(op.args):
            groups = paired_layers(leaves, len(op.args))
            if groups is not None:
                # A head whose forward applies its layer k to input k and returns the results in turn
                # (`idioms.submodules`, `pair_shape`), unpacked by the caller: layer k from argument k to result k.
                return [o for k, group in enumerate(groups)
                        for o in self.module(replace(op, args=(op.args[k],), outputs=(op.outputs[k],)), target,
                                             ctor, depth, group)]
        if leaves and len(op.args) == 1 and not op.kwargs and len(op.outputs) == 1:
            # A submodule whose forward only chains its own layers: its leaf layers, each op marked as
            # coming from the call (`via`), at the call's spans. An item of a Sequential (`self.body[1]`)
            # has no one constructor here (`_ctor_of`), so this comes first.
            unrolled: list[Op] = []
            current: Value = op.args[0]
            for i, leaf in enumerate(leaves):
                outs = op.outputs if i == len(leaves) - 1 else (self.temp(),)
                leaf_ctor = leaf.value if isinstance(leaf.value, Ctor) else None
                if leaf_ctor is not None and leaf_ctor.callee in PARAMETERS:
                    # `x = self.decoder(x) + self.bias` in the submodule: the parameter is added, not called
                    unrolled.append(Op(_OPERATOR, "+", (current, Expr(f"self.{leaf.attr}")), (), outs, op.span,
                                       op.stmt_span, (*op.via, target), origin=op.origin or op))
                else:
                    step = Op(_MODULE, f"self.{leaf.attr}", (current,), (), outs, op.span, op.stmt_span,
                              (*op.via, target), origin=op.origin or op)
                    unrolled.extend(self.module(step, step.target, leaf_ctor, depth + 1))
                current = Ref(outs[0])
            return unrolled
        if ctor is None:
            args, kwargs = normalise((op.kind._value_, target), op.args, op.kwargs, {})
            if target == op.target and args == op.args and kwargs == op.kwargs:
                return [op]
            return [replace(op, target=target, args=args, kwargs=kwargs, origin=op.origin or op)]
        spelled = MODULES.get(ctor.callee)
        if spelled is not None:
            bound = _ctor_kwargs(ctor, spelled.ctor_params)
            if bound is None:
                return [op]
            if spelled.op == CAST:
                bound = ()
            args, kwargs = normalise(spelled.op, op.args, (*op.kwargs, *bound), {})
            return [_respell(op, spelled.op, args, kwargs)]
        if (ctor.callee == "torch.nn.Sequential" and ctor.items and (ctor.repeat is None or ctor.once)
                and depth < _MAX_SEQUENTIAL_DEPTH and len(op.args) == 1 and not op.kwargs and len(op.outputs) == 1):
            chain: list[Op] = []
            value: Value = op.args[0]
            for i, item in enumerate(ctor.items):
                last = i == len(ctor.items) - 1
                outs = op.outputs if last else (self.temp(),)
                step = Op(_MODULE, f"{target}[{i}]", (value,), (), outs, op.span, op.stmt_span, op.via,
                          origin=op.origin or op)
                chain.extend(self.module(step, step.target, item, depth + 1))
                value = Ref(outs[0])
            return chain
        if (ctor.callee == "torch.nn.Sequential" and ctor.lead and ctor.lead[0] is not None
                and depth < _MAX_SEQUENTIAL_DEPTH and len(op.args) == 1 and not op.kwargs and len(op.outputs) == 1):
            return self.lead_chain(op, target, ctor.lead, depth)
        inner = self.items.get(ctor.callee)
        if inner is not None and len(op.args) == 1 and not op.kwargs and len(op.outputs) == 1:
            return self.spliced(op, target, inner)
        return [op if target == op.target else replace(op, target=target, origin=op.origin or op)]

    def lead_chain(self, op: Op, target: str, lead: tuple[Ctor | None, ...], depth: int) -> list[Op]:
        """A Sequential whose first items are known at their positions and the rest not in an evident order
        (`Ctor.lead`: `nn.Sequential(OrderedDict([("conv0", ...), ("norm0", ...)]))` later extended by
        `add_module` in a loop): its known first items in turn, then the rest as one call of the slice
        (`self.features[2:]`), whose layers are not read."""
        known = list(itertools.takewhile(lambda c: c is not None, lead))
        chain: list[Op] = []
        value: Value = op.args[0]
        for i, item in enumerate(known):
            step = Op(_MODULE, f"{target}[{i}]", (value,), (), (self.temp(),), op.span, op.stmt_span, op.via,
                      origin=op.origin or op)
            chain.extend(self.module(step, step.target, item, depth + 1))
            value = Ref(step.outputs[0])
        chain.append(Op(_MODULE, f"{target}[{len(known)}:]", (value,), (), op.outputs, op.span, op.stmt_span,
                        op.via, origin=op.origin or op))
        return chain

    def spliced(self, op: Op, target: str, inner: Forward) -> list[Op]:
        """The ops of a stateless item's forward (`x, gate = x.chunk(2, dim=-1); return x * F.gelu(gate)`)
        where the Sequential runs it: its parameter is the call's input, its locals fresh temporaries, its
        returned value the call's output. The ops keep their spans (the item class's lines, where the
        user would read them) and the call as `origin`, with the call in `via`: a site through them is
        reported without an automatic fix, as every site inside a Sequential."""
        names: dict[str, Value] = {inner.params[0].name: op.args[0]}
        owner = f"{target}."

        def value(v: Value) -> Value:
            if isinstance(v, Expr) and "self" in v.text:
                return Expr(_SELF_ATTRIBUTE.sub(lambda m: owner, v.text))  # the item's `self.gain`: `self.net[1].gain`
            return names.get(v.name, v) if isinstance(v, Ref) else v

        out: list[Op] = []
        kept = [op if target == op.target else replace(op, target=target, origin=op.origin or op)]
        for stmt in inner.body[:-1]:
            if not isinstance(stmt, Op):
                return kept
            outs = tuple(self.temp() for _ in stmt.outputs)
            out.append(replace(stmt, args=tuple(value(a) for a in stmt.args),
                               kwargs=tuple(replace(k, value=value(k.value)) for k in stmt.kwargs), outputs=outs,
                               via=(*op.via, target), origin=op.origin or op))
            for name, new in zip(stmt.outputs, outs):
                names[name] = Ref(new)
        ret = inner.body[-1]
        result = value(ret.values[0]) if isinstance(ret, Return) and ret.values else None
        if not out or not isinstance(result, Ref) or out[-1].outputs != (result.name,):
            return kept
        out[-1] = replace(out[-1], outputs=op.outputs)
        return out

    def einsum(self, op: Op, ranks: dict[str, int]) -> list[Op] | None:
        """`einsum("...ic,...jc->...ij", a, b)` as `matmul(a, b.transpose(-2, -1))` (and the like);
        einops' `einsum(a, b, "... i c, ... j c -> ... i j")` takes the equation last."""
        args = op.args
        if (op.target == "torch.einsum" and len(args) == 2 and isinstance(args[1], Ref)
                and len(self.lists.get(args[1].name, ())) == 2):
            args = (args[0], *self.lists[args[1].name])  # `torch.einsum(eq, [a, b])`
        if len(args) != 3 or op.kwargs or len(op.outputs) != 1:
            return None
        equation, a, b = (args[2], args[0], args[1]) if op.target == "einops.einsum" else args
        if not isinstance(equation, Expr):
            return None
        text = equation.text
        chosen = chosen_equation(text)
        if chosen is not None:
            text = chosen  # `f"b h i d, {kv_eq} -> b h i j"` with `kv_eq` chosen by the keys' rank
        out: list[Op] = []
        summed = summed_axes(text)
        if summed is not None:
            # Grouped-query scores summed over the groups: `"b g h n d, b h s d -> b h n s"` is the product of
            # the queries summed over `g` first (an axis of one operand only, in neither the other nor the output).
            text, alone = summed
            a, b = (self.summed(op, value, axes, out) for value, axes in zip((a, b), alone))
        widened = broadcast_product(text)
        if widened is not None:
            # Multi-query attention: `"b h i d, b j d -> b h i j"` (one key/value head for all query heads)
            # is the product with the keys unsqueezed at the missing batch axes.
            text, unsqueezed = widened
            a, b = (self.unsqueezed(op, value, axes, ranks, out) for value, axes in zip((a, b), unsqueezed))
        plan = matmul_plan(text)
        if plan is None:
            if out and widened is not None:
                return None
            permuted = self.permuted_product(op, text, a, b, ranks)
            return [*out, *permuted] if permuted is not None else None
        t_a, t_b, rank = plan
        tracking = ranks is not UNTRACKED
        if "..." not in text and tracking:
            # Without `...` the equation names every axis: the operands have the product's rank.
            for value in (a, b):
                if isinstance(value, Ref) and value.name not in ranks:
                    ranks[value.name] = rank
        if t_a:
            name = self.temp()
            out.append(_new(op, TRANSPOSE, (a, Expr("-2"), Expr("-1")), (name,)))
            if tracking:
                ranks[name] = rank
            a = Ref(name)
        if t_b:
            name = self.temp()
            out.append(_new(op, TRANSPOSE, (b, Expr("-2"), Expr("-1")), (name,)))
            if tracking:
                ranks[name] = rank
            b = Ref(name)
        out.append(_new(op, MATMUL, (a, b), op.outputs))
        return out

    def summed(self, op: Op, value: Value, axes: tuple[int, ...], out: list[Op]) -> Value:
        """`value` summed over each of `axes` (positions in its own layout, highest first), one `sum` op each."""
        for axis in sorted(axes, reverse=True):
            name = self.temp()
            out.append(_new(op, ("method", "sum"), (value, Expr(str(axis))), (name,)))
            value = Ref(name)
        return value

    def unsqueezed(self, op: Op, value: Value, axes: tuple[int, ...], ranks: dict[str, int],
                   out: list[Op]) -> Value:
        """`value` with a new axis of length 1 at each of `axes` (in order), one `unsqueeze` op each."""
        for axis in axes:
            name = self.temp()
            out.append(_new(op, ("method", "unsqueeze"), (value, Expr(str(axis))), (name,)))
            value = Ref(name)
        return value

    def permuted_product(self, op: Op, equation: str, a: Value, b: Value, ranks: dict[str, int]) -> list[Op] | None:
        """An einsum that is a batched matrix product up to the order of its axes (`"nqhd,nkhd->nhqk"`,
        `"blhe,bshe->bhls"`): `permute` each operand to (batch, i, c) / (batch, j, c) or (batch, c, j),
        `transpose` a feature-last right operand, `matmul`, and `permute` the product to the output's order."""
        layout = product_layout(equation)
        if layout is None:
            return None
        perm_a, perm_b, t_b, perm_out, rank = layout
        out: list[Op] = []
        tracking = ranks is not UNTRACKED

        def permuted(value: Value, perm: tuple[int, ...] | None) -> Value:
            if perm is None:
                return value
            name = self.temp()
            out.append(_new(op, ("method", "permute"), (value, *(Expr(str(d)) for d in perm)), (name,)))
            if tracking:
                ranks[name] = rank
            return Ref(name)

        a, b = permuted(a, perm_a), permuted(b, perm_b)
        if t_b:
            name = self.temp()
            out.append(_new(op, TRANSPOSE, (b, Expr("-2"), Expr("-1")), (name,)))
            if tracking:
                ranks[name] = rank
            b = Ref(name)
        product = op.outputs if perm_out is None else (self.temp(),)
        out.append(_new(op, MATMUL, (a, b), product))
        if tracking:
            ranks[product[0]] = rank
        if perm_out is not None:
            out.append(_new(op, ("method", "permute"), (Ref(product[0]), *(Expr(str(d)) for d in perm_out)),
                            op.outputs))
        return out

    def swapped_layout(self, op: Op) -> list[Op] | None:
        """A layout op (read as a matrix product's right operand) whose last two output axes are in the
        reverse of their input order, as that op with them in input order and `transpose(-2, -1)`."""
        if op.kind == _METHOD and op.target == "permute" and not op.kwargs and len(op.args) >= 3:
            dims = op.args[1:]
            if not all(isinstance(d, Expr) and _INT.match(d.text) and int(d.text) >= 0 for d in dims):
                return None
            a, b = (int(d.text) for d in dims[-2:] if isinstance(d, Expr))
            if a <= b:
                return None
            layout = replace(op, args=(*op.args[:-2], op.args[-1], op.args[-2]))
        elif op.kind == _FUNCTION and op.target == "einops.rearrange" and len(op.args) == 2:
            pattern = _swapped_pattern(op.args[1])
            if pattern is None:
                return None
            layout = replace(op, args=(op.args[0], pattern))
        else:
            return None
        name = self.temp()
        if _identity_permute(layout):
            layout = _respell(layout, CAST, layout.args[:1], ())
        return [replace(layout, outputs=(name,), origin=op.origin or op),
                _new(op, TRANSPOSE, (Ref(name), Expr("-2"), Expr("-1")), op.outputs)]

    def _rank_less_one(self, op: Op) -> None:
        """Records `t.ndim`, `t.dim()` (the rank of `t`) and that rank less one (the last axis of `t`) as bound."""
        if len(op.outputs) != 1 or not op.args or not isinstance(op.args[0], Ref):
            return
        first, out = op.args[0].name, op.outputs[0]
        if ((op.kind == _OPERATOR and op.target == "getattr" and len(op.args) == 2 and isinstance(op.args[1], Expr)
             and op.args[1].text == "ndim") or (op.kind == _METHOD and op.target == "dim" and len(op.args) == 1)):
            self.ranked[out] = ("rank", first)
        elif (op.kind == _OPERATOR and op.target == "-" and len(op.args) == 2 and isinstance(op.args[1], Expr)
              and op.args[1].text == "1" and self.ranked.get(first, ("", ""))[0] == "rank"):
            self.ranked[out] = ("last", self.ranked[first][1])

    def stable_shift(self, op: Op) -> Op | None:
        """`s - rowmax(s)` going into a softmax (or into its helper's product by a number: `rescaled_shift`) as
        `cast(s)`; records row maxima (and list literals) as a side effect."""
        held = self.rescale.note(op) if self.rescaling else None
        if self.rowmax or self.lists or self.ranked:  # (while none is held, nothing to forget)
            for name in op.outputs:
                self.rowmax.pop(name, None)
                self.lists.pop(name, None)
                self.ranked.pop(name, None)
        if op.kind == _OPERATOR and op.target in ("list", "tuple") and len(op.outputs) == 1:
            self.lists[op.outputs[0]] = op.args
        if op.target in _RANK_READS and (op.kind == _OPERATOR or op.kind == _METHOD):  # what `_rank_less_one` reads
            self._rank_less_one(op)
        if not self.rowmax and op.target not in _ROW_MAXIMA:
            return None  # (every reading of `row_maxima` needs a row maximum held, or makes one)
        return self.row_maxima(op, held)

    def row_maxima(self, op: Op, held: tuple[str, str] | None) -> Op | None:
        """`stable_shift`'s reading of row maxima: the shift respelled, or None; records the row maxima `op`
        makes (`held`: what `RescaledShift.note` said its first argument held)."""
        if (len(op.outputs) == 2 and op.args and isinstance(op.args[0], Ref) and op.target in ("max", "torch.max")
                and _last_keepdim(op)):
            self.rowmax[op.outputs[0]] = op.args[0].name  # `m, _ = s.max(-1, keepdim=True)`: the values
            return None
        if len(op.outputs) != 1 or not op.args or not isinstance(op.args[0], Ref):
            return None
        first = op.args[0].name
        if (op.kind == _OPERATOR and op.target == "-" and len(op.args) == 2 and isinstance(op.args[1], Ref)
                and self.rowmax.get(op.args[1].name) == first
                and (op.outputs[0] in self.softmaxed or (op.via and op.outputs[0] in self.rescaled))):
            self.rescale.shifted(op.outputs[0], held)
            return _respell(op, CAST, (op.args[0],), ())
        if (op.kind == _OPERATOR and op.target == "-" and len(op.args) == 2 and isinstance(op.args[1], Ref)
                and self.rowmax.get(first) == op.args[1].name and op.outputs[0] in self.softmaxed):
            # `rowmax(s) - s` into a softmax: the row's constant drops out, so it softmaxes as `-s` (DANet's
            # channel attention); `neg` is no step of the plain chain, so only a rule that asks for it matches.
            return _respell(op, _NEG, (op.args[1],), ())
        if op.target in ("amax", "torch.amax", "max", "torch.max") and _last_keepdim(op):
            self.rowmax[op.outputs[0]] = first + ("" if "amax" in op.target else "[values]")
        elif op.kind == _METHOD and op.target == "detach" and len(op.args) == 1 and first in self.rowmax:
            self.rowmax[op.outputs[0]] = self.rowmax[first]
        elif (op.kind == _METHOD and op.target == "expand_as" and len(op.args) == 2 and isinstance(op.args[1], Ref)
              and self.rowmax.get(first) == op.args[1].name):
            self.rowmax[op.outputs[0]] = op.args[1].name  # broadcast to the scores' own shape, as `-` would
        elif (self.rowmax.get(first, "").endswith("[values]") and len(op.args) == 2 and isinstance(op.args[1], Expr)
              and ((op.target == "getitem" and op.args[1].text == "0")
                   or (op.target == "getattr" and op.args[1].text == "values"))):
            self.rowmax[op.outputs[0]] = self.rowmax[first][: -len("[values]")]
        return None

    def baddbmm(self, op: Op) -> list[Op] | None:
        """`baddbmm(input, b1, b2, beta=β, alpha=α)` as `β·input + α·(b1 @ b2)`, one op each."""
        if len(op.args) != 3 or len(op.outputs) != 1 or any(k.name not in ("beta", "alpha") for k in op.kwargs):
            return None
        kw = {k.name: k.value for k in op.kwargs}
        # `beta=0`: torch ignores `input` (its nan and inf are not propagated), so there is no added term:
        # GPT-2's `baddbmm(empty, q, k, beta=0, alpha=scale)` is the scaled product alone.
        beta = kw.get("beta")
        # An input made as zeros in this block (GPT-NeoX's `baddbmm(torch.zeros(...), q, k, beta=1.0, alpha=...)`)
        # adds nothing either; zeros made under a branch may hold something else on another path.
        first = op.args[0]
        zeros = isinstance(first, Ref) and self.zeros.get(first.name) == self.current
        ignored = zeros or (isinstance(beta, Expr) and _ZERO.match(beta.text) is not None)
        product = op.outputs[0] if ignored and "alpha" not in kw else self.temp()
        out = [_new(op, MATMUL, (op.args[1], op.args[2]), (product,))]
        value: Value = Ref(product)
        if "alpha" in kw:
            scaled = op.outputs[0] if ignored else self.temp()
            out.append(_new(op, ("operator", "*"), (value, kw["alpha"]), (scaled,)))
            value = Ref(scaled)
        if ignored:
            return out
        bias: Value = op.args[0]
        if "beta" in kw:
            name = self.temp()
            out.append(_new(op, ("operator", "*"), (bias, kw["beta"]), (name,)))
            bias = Ref(name)
        out.append(_new(op, ("operator", "+"), (value, bias), op.outputs))
        return out


# -- arguments --------------------------------------------------------------------------------------


def normalise(key: Key, args: tuple[Value, ...], kwargs: tuple[Kwarg, ...],
              ranks: Mapping[str, int]) -> tuple[tuple[Value, ...], tuple[Kwarg, ...]]:
    """The arguments of canonical op `key` in its signature's form (unchanged when it has none)."""
    if key not in SIGNATURES and key not in DEFAULT_KEYWORDS:
        return args, kwargs  # (most ops: `normalise_values` would answer None)
    done = normalise_values(key, args, tuple((k.name, k.value) for k in kwargs), ranks)
    if done is None:
        return args, kwargs
    return done[0], tuple(Kwarg(name, value) for name, value in done[1])


def normalise_values(key: Key, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...],
                     ranks: Mapping[str, int]) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]] | None:
    """`normalise` over any argument values (ops' values, or rule patterns' variables): the positional
    arguments and the (name, value) keywords, or None when `key` has no signature to apply."""
    default = DEFAULT_KEYWORDS.get(key)
    if default is not None:
        kept = tuple(kw for kw in kwargs if kw[0] != default[0] or _text(kw[1]) not in default[1])
        if len(kept) != len(kwargs) and key not in SIGNATURES:
            return tuple(args), kept
        kwargs = kept
    sig = SIGNATURES.get(key)
    if sig is None or len(args) > len(sig.params) or any(_starred(a) for a in args):
        return None
    given: dict[str, Any] = dict(zip(sig.params, args))
    extra: list[tuple[str, Any]] = []
    for name, value in kwargs:
        if name in KEYWORD_ALIASES and name not in sig.params and KEYWORD_ALIASES[name] in sig.params:
            name = KEYWORD_ALIASES[name]  # torch's numpy-style spelling: `axis=`, `keepdims=`
        if name in sig.params and name not in given:
            given[name] = value
        else:
            extra.append((name, value))
    # Ranks change only an axis written as an integer from 0 (a bound is at least 3): only then are they asked.
    counted = any(isinstance(v := given.get(d), Expr) and _INT.match(v.text) and int(v.text) >= 0 for d in sig.dims)
    rank = consulted(ranks).get(key_) if counted and args and (key_ := held_key(args[0])) is not None else None
    if rank is not None:
        for d in sig.dims:
            v = given.get(d)
            if isinstance(v, Expr) and _INT.match(v.text) and 0 <= int(v.text) < rank:
                given[d] = Expr(str(int(v.text) - rank))
    elif counted and args and isinstance(args[0], Ref) and (bound := consulted(ranks).get(
            _BOUND + args[0].name)) is not None:
        # At most `bound` axes (a `Conv1d` output: 3): an axis `bound - 1` can only be the last.
        for d in sig.dims:
            v = given.get(d)
            if isinstance(v, Expr) and _INT.match(v.text) and int(v.text) == bound - 1:
                given[d] = Expr("-1")
    if sig.symmetric and len(sig.dims) == 2:
        d0, d1 = given.get(sig.dims[0]), given.get(sig.dims[1])
        if isinstance(d0, Expr) and isinstance(d1, Expr) and _INT.match(d0.text) and _INT.match(d1.text) and int(
                d0.text) < 0 and int(d1.text) < 0 and int(d0.text) > int(d1.text):
            given[sig.dims[0]], given[sig.dims[1]] = d1, d0
    out_args: list[Any] = []
    for p in sig.params[: sig.positional]:
        if p not in given:
            break
        out_args.append(given.pop(p))
    out_kwargs = [(p, given[p]) for p in sig.params if p in given]
    return tuple(out_args), (*out_kwargs, *extra)


def matmul_plan(equation: str) -> tuple[bool, bool, int] | None:
    """For an einsum equation of two operands that is a (batched) matrix product: whether each operand
    must be transposed first, and the result's rank; None for any other equation."""
    text = _plain_string(equation)
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        return None
    text = text[1:-1].replace(" ", "").replace("...", "?")
    if text.count("->") != 1:
        return None
    lhs, out = text.split("->")
    operands = lhs.split(",")
    if len(operands) != 2:
        return None
    a, b = operands
    if any(len(set(s)) != len(s) or not s for s in (a, b, out)) or min(len(a), len(b), len(out)) < 2:
        return None  # (an output of rank < 2, `'...c,...c->...'`, is no matrix product)
    contracted = [c for c in a if c in b and c not in out]
    if len(contracted) != 1:
        return None
    c = contracted[0]
    batch = out[:-2]
    i, j = out[-2], out[-1]
    if a[:-2] != batch or b[:-2] != batch or set(a[-2:]) != {i, c} or set(b[-2:]) != {c, j}:
        return None
    return a[-2:] == c + i, b[-2:] == j + c, len(out)


def chosen_equation(text: str) -> str | None:
    """For `'eq1' if test else 'eq2'` (an f-string equation whose placeholder a local chooses, see
    `adopter.analysis.flow.fstrings`): the one equation standing for both when both are the same
    matrix product up to batch axes one operand broadcasts over, the one naming every batch axis;
    when both are matrix products in different axis orders (audiocraft's heads-first or time-first
    layout chosen by an `if`), the first: the product on the path where the test holds (every einsum
    the same test chooses is read on that path, so a chain of them is one path's chain; the equation as
    written stays in the op's origin, and the fix declines it); None for anything else."""
    m = _CHOICE.match(text.strip())
    if m is None:
        return None
    first, second = m.group("a"), m.group("b")
    plans = []
    for eq in (first, second):
        widened = broadcast_product(eq)
        plan = matmul_plan(widened[0] if widened else eq)
        if plan is None:
            return first if layouts_by_path(text) else None
        plans.append((plan, widened is None))
    if plans[0][0] != plans[1][0]:
        return first if layouts_by_path(text) else None
    full = [eq for eq, (_, plain) in zip((first, second), plans) if plain]
    return full[0] if full else first


def layouts_by_path(text: str) -> bool:
    """Whether `'eq1' if test else 'eq2'` chooses between two matrix products in different axis orders
    (which one runs depends on the path: `chosen_equation` reads the first)."""
    m = _CHOICE.match(text.strip())
    if m is None:
        return False
    first, second = m.group("a"), m.group("b")
    if first == second or not all(product_layout(e) or matmul_plan(e) for e in (first, second)):
        return False
    return (matmul_plan(first), product_layout(first)) != (matmul_plan(second), product_layout(second))


def _two_operand_spec(equation: str) -> tuple[str, list[str], str] | None:
    """A literal einsum equation of two operands, every axis a letter and no `...`: its quote character, the
    operands' axis strings and the output's (spaces dropped); None for anything else."""
    text = _plain_string(equation)
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0] or "." in text:
        return None
    quote, body = text[0], text[1:-1].replace(" ", "")
    if body.count("->") != 1:
        return None
    lhs, out = body.split("->")
    operands = lhs.split(",")
    if len(operands) != 2 or not all(s.isalpha() for s in (*operands, out)):
        return None
    return quote, operands, out


def broadcast_product(equation: str) -> tuple[str, tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """For an einsum of two operands that is a batched matrix product where an operand lacks some of the
    output's batch axes (`"b h i d, b j d -> b h i j"`, `"b h i j, b j d -> b h i d"`: keys and values
    shared by all heads): the equation with those axes added, and for each operand the positions at
    which to unsqueeze it (in order) so that it has them; None when both operands name every batch axis,
    for `...` (whose rank is unknown) and for any other equation."""
    spec = _two_operand_spec(equation)
    if spec is None:
        return None
    quote, operands, out = spec
    if len(out) < 3:
        return None
    if any(len(set(s)) != len(s) or len(s) < 2 for s in (*operands, out)):
        return None
    batch = out[:-2]
    widened: list[str] = []
    axes: list[tuple[int, ...]] = []
    for s in operands:
        own = s[:-2]
        if any(c not in batch for c in own) or [c for c in batch if c in own] != list(own):
            return None  # a batch axis the output lacks, or batch axes in another order
        missing = tuple(i for i, c in enumerate(batch) if c not in own)
        widened.append(batch + s[-2:])
        axes.append(missing)
    if not axes[0] and not axes[1]:
        return None
    full = f"{quote}{widened[0]}, {widened[1]} -> {out}{quote}"
    if matmul_plan(full) is None:
        return None
    return full, (axes[0], axes[1])


def summed_axes(equation: str) -> tuple[str, tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """For an einsum of two operands naming every axis, where an operand has axes that neither the other
    operand nor the output names (`"b g h n d, b h s d -> b h n s"`: the query groups `g`, summed away): the
    equation without them, and for each operand their positions in it (summing them first gives the same
    result); None when there is none, for `...` and for anything else."""
    spec = _two_operand_spec(equation)
    if spec is None or not all(len(set(s)) == len(s) for s in (*spec[1], spec[2])):
        return None
    quote, operands, out = spec
    a, b = operands
    alone = [tuple(k for k, c in enumerate(s) if c not in other and c not in out) for s, other in ((a, b), (b, a))]
    if not alone[0] and not alone[1]:
        return None
    kept = ["".join(c for k, c in enumerate(s) if k not in axes) for s, axes in zip((a, b), alone)]
    if min(len(k) for k in kept) < 2:
        return None
    return f"{quote}{kept[0]}, {kept[1]} -> {out}{quote}", (alone[0], alone[1])


_ZERO = re.compile(r"^\s*(0+\.?0*|\.0+)\s*$")
_ZEROS = frozenset({("function", "torch.zeros"), ("function", "torch.zeros_like"), ("method", "new_zeros")})
_CHOICE = re.compile(r"""^(?P<a>(['"])[^'"]*\2)\s+if\s+.+?\s+else\s+(?P<b>(['"])[^'"]*\4)$""", re.S)


def _plain_string(text: str) -> str:
    """A string literal's text with an `f` prefix dropped when it has no placeholder (`f"b h i d, ..."`,
    a common einsum spelling): the same string."""
    text = text.strip()
    if text[:1] in ("f", "F") and text[1:2] in ("'", '"') and "{" not in text:
        return text[1:]
    return text


def product_layout(
    equation: str,
) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None, bool, tuple[int, ...] | None, int] | None:
    """For an einsum of two operands that is a batched matrix product with its axes in another order:
    the permutation bringing the left operand to (batch, i, c), the one bringing the right operand to
    (batch, j, c) (then transposed: the flag) or (batch, c, j), and the one bringing (batch, i, j) to the
    output (None where the order already holds), with the rank; None for any other equation (and for
    `...`, whose rank is unknown)."""
    text = _plain_string(equation)
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0] or "." in text:
        return None
    text = text[1:-1].replace(" ", "")
    if text.count("->") != 1:
        return None
    lhs, out = text.split("->")
    operands = lhs.split(",")
    if len(operands) != 2 or not all(s.isalpha() for s in (*operands, out)):
        return None
    a, b = operands
    if any(len(set(s)) != len(s) for s in (a, b, out)):
        return None
    contracted = [c for c in a if c in b and c not in out]
    only_a = [c for c in a if c not in b]
    only_b = [c for c in b if c not in a]
    batch = [c for c in out if c in a and c in b]
    if len(contracted) != 1 or len(only_a) != 1 or len(only_b) != 1 or only_a[0] not in out or only_b[0] not in out:
        return None
    c, i, j = contracted[0], only_a[0], only_b[0]
    if len(a) != len(batch) + 2 or len(b) != len(batch) + 2 or len(out) != len(batch) + 2:
        return None
    b_target = [*batch, j, c] if b[-1] == c else [*batch, c, j]

    def perm(source: str, target: list[str]) -> tuple[int, ...] | None:
        order = tuple(source.index(x) for x in target)
        return None if order == tuple(range(len(source))) else order

    product = "".join([*batch, i, j])
    return perm(a, [*batch, i, c]), perm(b, b_target), b[-1] == c, perm(product, list(out)), len(out)


# -- helpers ----------------------------------------------------------------------------------------


def _respell(op: Op, key: Key, args: tuple[Value, ...], kwargs: tuple[Kwarg, ...]) -> Op:
    return Op(_kind(key[0]), key[1], args, kwargs, op.outputs, op.span, op.stmt_span, op.via,
              origin=op.origin or op)


def _new(op: Op, key: Key, args: tuple[Value, ...], outputs: tuple[str, ...]) -> Op:
    return Op(_kind(key[0]), key[1], args, (), outputs, op.span, op.stmt_span, op.via, origin=op.origin or op)


def _text(v: object) -> str | None:
    """The source text of an argument value (an op's `Expr`, a rule pattern's literal); None for others."""
    text = getattr(v, "text", None)
    return text.strip() if isinstance(text, str) else None


def _starred(v: object) -> bool:
    return (isinstance(v, Expr) and v.text.startswith("*")) or (isinstance(v, Ref) and v.name.startswith("*"))


def _ctor_of(by_attr: Mapping[str, list[Binding]], target: str) -> Ctor | None:
    """The one constructor a module target denotes (`self.x`), or None when unknown or ambiguous."""
    if not target.startswith("self.") or "[" in target or "." in target[5:]:
        return None
    bindings = by_attr.get(target[5:], ())
    ctors = [b.value for b in bindings if isinstance(b.value, Ctor)]
    # `self.downsample = None` then, under a condition, a Sequential: a call can only run the Sequential.
    others = [b for b in bindings if not isinstance(b.value, Ctor) and b.value != Expr("None")]
    if len(ctors) != 1 or others:
        return None
    return ctors[0]


def _shared_lead(by_attr: Mapping[str, list[Binding]], target: str) -> Ctor | None:
    """A Sequential bound on several paths (children added under an `if` in a loop) whose first items are
    the same on every one (`Ctor.lead`): those first items, as a Sequential of them and nothing known after."""
    if not target.startswith("self.") or "[" in target or "." in target[5:]:
        return None
    values = [b.value for b in by_attr.get(target[5:], ())]
    leads = {v.lead for v in values if isinstance(v, Ctor) and v.callee == "torch.nn.Sequential"}
    if len(values) < 2 or len(leads) != 1 or len(values) != sum(
            isinstance(v, Ctor) and v.callee == "torch.nn.Sequential" for v in values):
        return None
    lead = leads.pop()
    return Ctor("torch.nn.Sequential", lead=lead) if lead else None


_ITEM_PATH = re.compile(r"^self\.(\w+)((?:\[(?:\d+|\*)\])+)$")


def _item_ctor(by_attr: Mapping[str, list[Binding]], target: str) -> Ctor | None:
    """The constructor an item of a container denotes, when it is a container itself: `self.layers[*][1]`
    (the second module of each `nn.ModuleList([Attention(...), FeedForward(...)])` of `self.layers`, as
    `for attn, ff in self.layers` reads it: flamingo-pytorch, MEGABYTE-pytorch, gigagan-pytorch,
    product-key-memory) when that is an `nn.Sequential` with its items (unrolled into its children then);
    None for anything else, for an item of a list of Sequentials (`self.stages[*]`: the chains of a
    container's items are reported where they are built), or when the attribute is bound more than once.

    A loop over a list whose items are lists of different makes (`nn.ModuleList([Attention(...),
    FeedForward(dim) if not use_pkm else PKM(...)])` appended in a loop: product-key-memory) reads
    `self.layers[*][1]` as each of them; when exactly one is a Sequential with items and the others are not
    Sequentials, that one is unrolled: its layers run at the call on the paths that build it (the others'
    forwards are their own classes')."""
    m = _ITEM_PATH.match(target)
    indexes = re.findall(r"\[(\d+|\*)\]", m.group(2)) if m is not None else []
    if m is None or not indexes or indexes == ["*"]:
        return None  # `self.stages[*]` (`for stage in self.stages`) is read where the Sequential is built
    first = _ctor_of(by_attr, f"self.{m.group(1)}")
    candidates = [first] if first is not None else []
    for n, index in enumerate(indexes):
        candidates = [c for c in candidates if c.items]
        if not candidates:
            return None
        if index == "*":
            several = [c for c in candidates if len(c.items) != 1]
            if any(c.repeat is None for c in several):
                return None  # `[*]` of a list of different modules: not one constructor
            if several and n == len(indexes) - 1:
                return None  # the items themselves: different makes are no one constructor
            candidates = [i for c in candidates for i in c.items]
        else:
            i = int(index)
            candidates = [x for c in candidates if (x := c.item(i)) is not None]
    sequentials = list(dict.fromkeys(c for c in candidates if c.callee == SEQUENTIAL))
    if len(sequentials) != 1 or not sequentials[0].items:
        return None
    return sequentials[0]


def _function_of(by_attr: Mapping[str, list[Binding]], target: str) -> str | None:
    """The activation function a module target holds (`self.act = F.gelu`, bound once), else None."""
    if not target.startswith("self.") or "[" in target or "." in target[5:]:
        return None
    bindings = by_attr.get(target[5:], ())
    chosen = [b for b in bindings if isinstance(b.value, Expr) and b.value.text in FUNCTION_VALUES]
    if len(chosen) != 1 or not all(b is chosen[0] or _passed_callable(b) for b in bindings):
        return None
    if len(bindings) == 1 and chosen[0].condition is not None:
        return None
    return chosen[0].value.text if isinstance(chosen[0].value, Expr) else None


def _passed_module(b: Binding) -> bool:
    """`self.predictor = predictor` under `not (predictor is None)`: the other half of "build the default
    module unless the caller passes one" (`if predictor is None: self.predictor = nn.Sequential(...)`)."""
    if not isinstance(b.value, Expr) or b.condition is None or not _DOTTED_NAME.fullmatch(b.value.text):
        return False
    name = re.escape(b.value.text)
    return re.search(rf"not \({name} is None\)|(?<![\w.]){name} is not None", b.condition) is not None


def _passed_callable(b: Binding) -> bool:
    """`self.act = hidden_act` under `not (isinstance(hidden_act, str))`: the other half of "a string names
    the activation, else the callable passed is used" (BERT's `if isinstance(config.hidden_act, str)`), a
    value the caller builds, not this class."""
    if not isinstance(b.value, Expr) or b.condition is None or not _DOTTED_NAME.fullmatch(b.value.text):
        return False
    return f"not (isinstance({b.value.text}, str))" in b.condition


def _ctor_kwargs(ctor: Ctor, params: tuple[str, ...]) -> tuple[Kwarg, ...] | None:
    """A stateless module's constructor arguments as the function's keywords; None if unknown ones."""
    if len(ctor.args) > len(params) or ctor.items or ctor.lookup is not None:
        return None
    out = [Kwarg(p, v) for p, v in zip(params, ctor.args)]
    for k in ctor.kwargs:
        if k.name in params:
            out.append(k)
        elif k.name not in ("inplace",):
            return None
    return tuple(out)


def _max_temp(ops: tuple[Op, ...]) -> int:
    """The highest temporary (`%n`) any of `ops` binds (0 for none)."""
    top = 0
    for op in ops:
        for name in op.outputs:
            if name[:1] != "%":
                continue
            if name[1:].isdecimal():  # (`_TEMP`'s digits, without the regex: nearly every temporary)
                top = max(top, int(name[1:]))
            elif m := _TEMP.match(name):
                top = max(top, int(m.group(1)))
    return top


# `ranks` also records, under this prefix (no name starts with it), the values whose last axis is known
# to have length 1; control flow keeps it only where every alternative agrees, like a rank.
_UNIT = "^"
_SHAPE = "#"  # `ranks[_SHAPE + name]`: `name` holds a tensor's sizes (`x.shape`, `x.size()`)
# `ranks[_ITEMS + name]`: `name` holds a sequence of tensors that all have this rank (`torch.split(x, n)`,
# `x.chunk(h, dim=-1)`, `[a, b]`), so `torch.stack` of it has one axis more and `torch.cat` the same.
_ITEMS = "[]"
# `ranks[_BOUND + name]`: the most axes `name` can have where its exact rank is unknown (`_RANK_BOUND_MODULES`).
_BOUND = "<"
_STACK: Key = ("function", "torch.stack")
# Ops whose one output is a sequence of slices of their first argument, each of its rank.
_SLICES = frozenset({SPLIT, CHUNK, ("method", "tensor_split"), ("function", "torch.tensor_split")})
_FLATTEN = frozenset({("method", "flatten"), ("function", "torch.flatten")})
_ONE_WIDE = re.compile(r"^torch\.(randn|rand|zeros|ones|empty|full)\(.*,\s*1\s*\)$", re.S)
# The targets each per-op reading acts on (a cheap test before the call; `tests/analysis/test_canonical_triggers.py`).
_SOFTMAX_TARGETS = frozenset({SOFTMAX[1], LOG_SOFTMAX[1]})
_LAST_SPLITTERS = frozenset({"einops.rearrange", "unflatten"})  # `_splits_last_in_two`
_ITEMS_TARGETS = frozenset({*(key[1] for key in _SLICES), "list", "tuple"})  # `_items_rank`
_LAYOUT_TARGETS = frozenset({"*", "/", MATMUL[1]})  # `_scale_chain`, `_product_layout`
# The targets of a forward's ops that let a reading of `_Pass.track`'s tables act (with `guarded`, `sized` and
# spliced `items`): every spelling of a matrix product and the ops the pass makes one of (`_product_layout`,
# `_scale_chain`), powers (`root_of` reads `made_by`), `unbind` (`unbound_halves`), `einops.rearrange` and the
# modules that compute it (the probabilities' transpose), `baddbmm` (`zeros`).
_LAYOUT_READS = frozenset({
    MATMUL[1], *(key[1] for key, canonical in CANONICAL.items() if canonical == MATMUL),
    "torch.einsum", "einops.einsum", "torch.baddbmm", *_POWER_TARGETS, "unbind", "einops.rearrange",
    *(callee for callee, spelled in MODULES.items() if spelled.op == ("function", "einops.rearrange"))})
_RANK_READS = frozenset({"getattr", "dim", "-"})  # `_rank_less_one`
_ROW_MAXIMA = frozenset({"amax", "torch.amax", "max", "torch.max"})  # `stable_shift` makes a row maximum


def _unit_last(v: Value, ranks: Mapping[str, int]) -> bool:
    return isinstance(v, Ref) and _UNIT + v.name in consulted(ranks)


def _argument_step(stmt: Stmt, temp: str) -> bool:
    """An op computing a call's argument before the call (`a * s` in `nn.Softmax()(a * s)`): no call, and it
    neither reads nor binds the callee's temporary `temp`."""
    return (isinstance(stmt, Op) and stmt.kind != _CALL and temp not in stmt.outputs
            and not any(isinstance(a, Ref) and a.name == temp for a in stmt.args))


def _held(ops: tuple[Op, ...], by_attr: Mapping[str, list[Binding]]) -> dict[str, int]:
    """The ranks of the parameters the module holds (`held_ranks`), unless the forward (`ops`: all of its ops)
    builds one."""
    return {} if builds_parameters(ops) else held_ranks(by_attr)


def _number_params(forward: Forward) -> dict[str, int]:
    """Parameters whose default is a plain number (`smooth=1`, `scale=0.5`): rank 0, as the signature says,
    so `x * smooth` keeps the rank of `x`."""
    return {p.name: 0 for p in forward.params if p.default is not None and _NUMBER.match(p.default.strip())}


def _implicit_dim(op: Op, ranks: Mapping[str, int]) -> Op:
    """A softmax written without `dim` (or `dim=None`) where torch allows it (`F.softmax(x)`, `nn.Softmax()`,
    `F.log_softmax(x)`: `torch.softmax` and `x.softmax()` require one) runs over torch's legacy implicit axis
    (`torch.nn.functional._get_softmax_dim`: 0 for a 0-, 1- or 3-D input, else 1). Where the input's rank is
    known, that axis is written out, counted from the end (`nn.Softmax()` of a 2-D tensor is `dim=-1`)."""
    if (op.kind._value_, op.target) not in (SOFTMAX, LOG_SOFTMAX) or not op.args or (
            first := held_key(op.args[0])) is None:
        return op
    written = op.origin or op
    if not (written.kind in (_MODULE, _CALL)
            or (written.kind == _FUNCTION and (written.kind._value_, written.target) in (SOFTMAX, LOG_SOFTMAX))):
        return op
    dims = [k for k in op.kwargs if k.name == "dim"]
    if dims and not (isinstance(dims[0].value, Expr) and dims[0].value.text.strip() == "None"):
        return op
    rank = consulted(ranks).get(first)
    if rank is None or rank < 1:
        return op
    axis = (0 if rank in (1, 3) else 1) - rank
    kwargs = (Kwarg("dim", Expr(str(axis))), *(k for k in op.kwargs if k.name != "dim"))
    return replace(op, kwargs=kwargs, origin=op.origin or op)


def _ranked_axes(op: Op, ranks: Mapping[str, int]) -> Op:
    """A function a module call became (`self.attend(x)` with `nn.Softmax(dim=1)`), its axes counted from the
    end where the input's rank is known, as for the function written out."""
    first = held_key(op.args[0]) if op.kind == _FUNCTION and op.args else None
    if first is None:
        return op
    if ranks is UNTRACKED:
        # Tracked, the answer is `op` or `op` normalised with the ranks; both are `op` where no axis is counted
        # from 0 (`normalise` asks the ranks then) and normalising changes nothing.
        args, kwargs = normalise((op.kind._value_, op.target), op.args, op.kwargs, ranks)
        if args == op.args and kwargs == op.kwargs:
            return op
        raise RanksAsked
    if first not in ranks and _BOUND + first not in ranks:
        return op
    args, kwargs = normalise((op.kind._value_, op.target), op.args, op.kwargs, ranks)
    return op if args == op.args and kwargs == op.kwargs else replace(op, args=args, kwargs=kwargs)


def _items_last_axis(key: Key, op: Op, lists: Mapping[str, tuple[Value, ...]],
                     ranked: Mapping[str, tuple[str, str]]) -> tuple[Kwarg, ...]:
    """`torch.cat((-x2, x1), dim=x1.ndim - 1)` (GPT-NeoX's rotate_half, "dim=-1 triggers a bug in earlier torch
    versions", as copied into fairseq's wav2vec 2 and from there): one less than the rank of a tensor the call
    concatenates is the last axis of every tensor it concatenates (`cat` takes tensors of one rank), so `dim=-1`.
    Only where the named tensor is an item of the literal sequence passed: another tensor's rank says nothing."""
    if key != CAT or not op.args or not isinstance(op.args[0], Ref) or op.args[0].name not in lists:
        return op.kwargs
    items = {v.name for v in lists[op.args[0].name] if isinstance(v, Ref)}
    return tuple(Kwarg("dim", Expr("-1")) if k.name == "dim" and isinstance(k.value, Ref)
                 and ranked.get(k.value.name, ("", ""))[0] == "last" and ranked[k.value.name][1] in items else k
                 for k in op.kwargs)


def _last_axis(kwargs: tuple[Kwarg, ...]) -> bool:
    return any(k.name == "dim" and isinstance(k.value, Expr) and k.value.text.strip() == "-1" for k in kwargs)


def _makes_unit_last(op: Op, ranks: Mapping[str, int], by_attr: Mapping[str, list[Binding]]) -> bool:
    """Whether the op's one output has a last axis of length 1, as far as the code shows: a Linear to one
    feature, a product with a parameter built `(..., 1)`, and casts or scalar arithmetic of such a value."""
    key = (op.kind._value_, op.target)
    if op.kind == _MODULE:
        ctor = _ctor_of(by_attr, op.target)
        return ctor is not None and ctor.callee == "torch.nn.Linear" and _out_features(ctor) == "1"
    if key == MATMUL and len(op.args) == 2:
        return _one_wide_parameter(op.args[1], by_attr)
    if key == CAST and op.args:
        return _unit_last(op.args[0], ranks)
    if op.kind == _OPERATOR and op.target in _ELEMENTWISE and len(op.args) == 2:
        a, b = op.args
        return (_unit_last(a, ranks) and _scalar(b, by_attr)) or (_unit_last(b, ranks) and _scalar(a, by_attr))
    return False


def _out_features(ctor: Ctor) -> str | None:
    for k in ctor.kwargs:
        if k.name == "out_features" and isinstance(k.value, Expr):
            return k.value.text.strip()
    return ctor.args[1].text.strip() if len(ctor.args) > 1 and isinstance(ctor.args[1], Expr) else None


def _attr_ctor(v: Value, by_attr: Mapping[str, list[Binding]]) -> Ctor | None:
    """The one constructor bound to `self.<attr>`, else None."""
    if not isinstance(v, Expr) or not v.text.startswith("self."):
        return None
    bindings = by_attr.get(v.text[5:].strip())
    if not bindings or len(bindings) != 1 or not isinstance(bindings[0].value, Ctor):
        return None
    return bindings[0].value


def _one_wide(value: object) -> bool:
    """A Linear to one feature, or a parameter built `(..., 1)`: the sources of a last axis of length 1."""
    if not isinstance(value, Ctor):
        return False
    if value.callee == "torch.nn.Linear":
        return _out_features(value) == "1"
    data = value.args[0] if value.callee == "torch.nn.Parameter" and value.args else None
    return isinstance(data, Expr) and bool(_ONE_WIDE.match(data.text.strip()))


def _one_wide_parameter(v: Value, by_attr: Mapping[str, list[Binding]]) -> bool:
    ctor = _attr_ctor(v, by_attr)
    if ctor is None or ctor.callee != "torch.nn.Parameter" or not ctor.args:
        return False
    data = ctor.args[0]
    return isinstance(data, Expr) and bool(_ONE_WIDE.match(data.text.strip()))


def _scalar(v: Value, by_attr: Mapping[str, list[Binding]]) -> bool:
    """A number, or an attribute bound to arithmetic, not to a layer, parameter or tensor
    (`self.scale = dim ** -0.5`)."""
    if not isinstance(v, Expr):
        return False
    text = v.text.strip()
    if re.fullmatch(r"-?[\d.]+(e-?\d+)?", text):
        return True
    if not text.startswith("self."):
        return False
    bindings = by_attr.get(text[5:]) or []
    return bool(bindings) and all(
        isinstance(b.value, Expr) and not re.search(r"[A-Za-z_]\w*\s*\(", b.value.text) for b in bindings)


_RIGHT_OPERAND = frozenset({("operator", "@"), ("function", "torch.matmul"), ("method", "matmul"),
                            ("function", "torch.bmm"), ("method", "bmm")})
_PASS_ON = frozenset({"*", "/", "cast"})
_NEG = ("operator", "neg")


def _prescan(ops: tuple[Op, ...], softmax_modules: frozenset[str] = frozenset()) -> tuple[frozenset[str], frozenset[str]]:
    """The names `ops` (a body's, `block_ops`) read as the right operand of a matrix product (also through a
    scale or a cast), and the names read by a softmax, a call of one of `softmax_modules` included (the
    rank-free facts the pass needs before it reaches the reads)."""
    keys = {op.args[1].name for op in ops
            if (op.kind._value_, op.target) in _RIGHT_OPERAND and len(op.args) == 2 and isinstance(op.args[1], Ref)}
    softmaxed = {op.args[0].name for op in ops
                 if (CANONICAL.get((op.kind._value_, op.target)) == SOFTMAX
                     or (op.kind == _MODULE and op.target in softmax_modules))
                 and op.args and isinstance(op.args[0], Ref)}
    passing = [op for op in ops if len(op.outputs) == 1 and op.args and isinstance(op.args[0], Ref) and (
        (op.kind == _OPERATOR and op.target in _PASS_ON)
        or (op.kind == _METHOD and op.target in TRANSPARENT_METHODS))]
    grown = True
    while grown:
        grown = False
        for op in passing:
            first = op.args[0]
            if op.outputs[0] in keys and isinstance(first, Ref) and first.name not in keys:
                keys.add(first.name)
                grown = True
    return frozenset(keys), frozenset(softmaxed)


_TO_SOFTMAX = frozenset({("operator", "*"), ("operator", "/"), ("operator", "+"), ("operator", "-"), CAST,
                         ("method", "masked_fill"), ("function", "torch.where")})


def _scores_of(ops: tuple[Op, ...], softmaxed: frozenset[str]) -> frozenset[str]:
    """The names whose value goes into a softmax through scales, additive terms, masks and casts (`ops`: a
    body's, `block_ops`)."""
    reads: dict[str, list[str]] = {}  # output name -> the names the passing ops binding it read
    for op in ops:
        if len(op.outputs) == 1 and (
                CANONICAL.get((op.kind._value_, op.target), (op.kind._value_, op.target)) in _TO_SOFTMAX
                or (op.kind == _METHOD and op.target in TRANSPARENT_METHODS)):
            reads.setdefault(op.outputs[0], []).extend(a.name for a in op.args if isinstance(a, Ref))
    found = set(softmaxed)
    todo = list(found)
    while todo:
        for name in reads.get(todo.pop(), ()):
            if name not in found:
                found.add(name)
                todo.append(name)
    return frozenset(found)


_SPLIT_PATTERN = re.compile(r"^(?P<lhs>.*)\((?P<a>[A-Za-z_]\w*)\s+(?P<b>[A-Za-z_]\w*)\)\s*->\s*(?P<rhs>.*)$")


def _splits_last_in_two(op: Op) -> bool:
    """A layout op that splits the last axis as (2, n): `rearrange(x, "... (j d) -> ... j d", j=2)` or
    `x.unflatten(-1, (2, n))`."""
    if op.kind == _FUNCTION and op.target == "einops.rearrange" and len(op.args) == 2:
        pattern = op.args[1]
        if not isinstance(pattern, Expr) or len(pattern.text) < 2 or pattern.text[0] not in "'\"":
            return False
        m = _SPLIT_PATTERN.match(pattern.text[1:-1].strip())
        if m is None or m["lhs"].strip().split()[-1:] == ["("]:
            return False
        sizes = {k.name: k.value.text for k in op.kwargs if isinstance(k.value, Expr)}
        lhs = m["lhs"].strip().split()
        rhs = m["rhs"].strip().split()
        return (sizes.get(m["a"]) == "2" and rhs[-2:] == [m["a"], m["b"]] and lhs == rhs[:-2])
    if op.kind == _METHOD and op.target == "unflatten" and len(op.args) == 3:
        dim, shape = op.args[1], op.args[2]
        return (isinstance(dim, Expr) and dim.text == "-1" and isinstance(shape, Expr)
                and re.fullmatch(r"[(\[]\s*2\s*,\s*-?\w+\s*[)\]]", shape.text) is not None)
    return False


def _identity_permute(op: Op) -> bool:
    """`x.permute(0, 1, 2)`: every axis in its place."""
    dims = op.args[1:]
    return (op.kind == _METHOD and op.target == "permute" and not op.kwargs and len(dims) >= 2
            and all(isinstance(d, Expr) and d.text == str(i) for i, d in enumerate(dims)))


def _last_keepdim(op: Op) -> bool:
    """`amax`/`max` over the last axis keeping it (`x.amax(-1, keepdim=True)`, `torch.max(x, dim=-1, keepdim=True)`)."""
    kw = {k.name: k.value for k in op.kwargs}
    dim = op.args[1] if len(op.args) > 1 else kw.get("dim")
    keep = op.args[2] if len(op.args) > 2 else kw.get("keepdim", kw.get("keepdims"))  # torch's numpy alias
    return (isinstance(dim, Expr) and dim.text == "-1" and isinstance(keep, Expr) and keep.text == "True"
            and set(kw) <= {"dim", "keepdim"} | ({"keepdims"} if "keepdim" not in kw else set()))


def _swapped_pattern(pattern: Value) -> Expr | None:
    """An einops pattern whose last two output axes are plain names in the reverse of their input order,
    with those two swapped back (`"b n (h d) -> b h d n"` gives `"b n (h d) -> b h n d"`); else None."""
    if not isinstance(pattern, Expr) or len(pattern.text) < 2 or pattern.text[0] not in "'\"":
        return None
    quote, body = pattern.text[0], pattern.text[1:-1]
    if pattern.text[-1] != quote or body.count("->") != 1:
        return None
    lhs, rhs = body.split("->")
    groups = re.findall(r"\([^)]*\)|[^\s()]+", rhs)
    names = re.findall(r"[A-Za-z_]\w*|\.\.\.", lhs)
    if len(groups) < 2 or not all(re.fullmatch(r"[A-Za-z_]\w*", g) for g in groups[-2:]):
        return None
    a, b = groups[-2:]
    if a not in names or b not in names or names.index(a) < names.index(b):
        return None
    return Expr(f"{quote}{lhs.rstrip()} -> {' '.join([*groups[:-2], b, a])}{quote}")


def swaps_last_two(pattern: str) -> bool:
    """Whether an einops pattern (a string literal as written) only swaps its last two axes (`"b i j -> b j i"`,
    `"... i j -> ... j i"`): every axis a plain name (or a leading `...`), each other one in place."""
    if len(pattern) < 2 or pattern[0] not in "'\"" or pattern[-1] != pattern[0]:
        return False
    body = pattern[1:-1]
    if body.count("->") != 1:
        return False
    lhs, rhs = (side.split() for side in body.split("->"))
    axis = re.compile(r"[A-Za-z_]\w*")
    if (len(lhs) < 2 or len(lhs) != len(rhs) or len(set(lhs)) != len(lhs)
            or not all(axis.fullmatch(a) for a in lhs[-2:])
            or not all(axis.fullmatch(a) or (a == "..." and i == 0) for i, a in enumerate(lhs))):
        return False
    return rhs == [*lhs[:-2], lhs[-1], lhs[-2]]


def _batched_operands(ops: tuple[Op, ...]) -> frozenset[str]:
    """The names `torch.bmm` / `.bmm` reads among `ops` (a body's, `block_ops`): its operands are 3-D by contract."""
    return frozenset(a.name for op in ops if op.target in ("torch.bmm", "bmm") and op.kind in (_FUNCTION, _METHOD)
                     for a in op.args[:2] if isinstance(a, Ref))


def _meet(ranks: dict[str, int], alternatives: list[dict[str, int]]) -> None:
    """After control flow: keep a rank only where every alternative agrees on it."""
    names = set(ranks).union(*alternatives)
    for name in names:
        seen = {alt.get(name) for alt in alternatives}
        if len(seen) == 1 and None not in seen:
            ranks[name] = seen.pop()  # type: ignore[assignment]
        else:
            ranks.pop(name, None)


def _rank(v: Value, ranks: Mapping[str, int]) -> int | None:
    return ranks.get(v.name) if isinstance(v, Ref) else None


def _shape_count(args: tuple[Value, ...]) -> int | None:
    """The rank a `view`/`reshape`/`permute` call gives: one argument per axis, none starred."""
    dims = args[1:]
    if not dims or any(_starred(a) for a in dims):
        return None
    if len(dims) == 1 and not (isinstance(dims[0], Expr) and _INT.match(dims[0].text)):
        return None  # a shape tuple held in a variable
    return len(dims)


def _einops_rank(pattern: Value) -> int | None:
    if not isinstance(pattern, Expr) or "->" not in pattern.text:
        return None
    out = pattern.text.strip("'\" ").split("->")[1]
    groups = re.findall(r"\([^)]*\)|[^\s()]+", out)
    return len(groups) or None


def _track_rank(op: Op, ranks: dict[str, int], by_attr: Mapping[str, list[Binding]], units: bool = False,
                bounded: bool = False) -> None:
    """Record the rank of the op's output where the op makes it evident; forget it otherwise. With
    `units` (the class binds a layer or parameter one feature wide), also which values have a last
    axis of length 1; with `bounded` (it binds a layer of `_RANK_BOUND_MODULES`), the most axes a value can have
    where its rank is unknown."""
    if ranks is UNTRACKED:
        return
    if op.target == "setitem" and _writes_into_ranked(op, ranks):
        # `x[~mask] = -inf` writes into x in place: a tensor never changes shape by an index assignment, so its
        # rank (and bound, and a last axis of length 1) stay; only what is known of it as a sequence goes.
        ranks.pop(_ITEMS + op.outputs[0], None)
        ranks.pop(_SHAPE + op.outputs[0], None)
        return
    # The arguments' ranks as they were before this op (`x = x.masked_fill(...)` redefines its input).
    known = {a.name: ranks[a.name] for a in op.args if isinstance(a, Ref) and a.name in ranks}
    bounds = {a.name: ranks[_BOUND + a.name] for a in op.args
              if isinstance(a, Ref) and _BOUND + a.name in ranks} if bounded else {}
    items = _items_rank(op, ranks) if op.target in _ITEMS_TARGETS else None
    parts = ranks.get(_ITEMS + op.args[0].name) if op.args and isinstance(op.args[0], Ref) else None
    for name in op.outputs:
        ranks.pop(name, None)
        if bounded:
            ranks.pop(_BOUND + name, None)
        ranks.pop(_SHAPE + name, None)
        ranks.pop(_ITEMS + name, None)
    if items is not None:
        ranks[_ITEMS + op.outputs[0]] = items
    if units:
        for name in op.outputs:
            ranks.pop(_UNIT + name, None)
        if len(op.outputs) == 1 and _makes_unit_last(op, ranks, by_attr):
            ranks[_UNIT + op.outputs[0]] = 1
    if len(op.outputs) > 1 and (op.kind._value_, op.target) in _SAME_RANK_PARTS and op.args:
        # `values, indices = torch.topk(x, k)`, `a, b = x.chunk(2, dim=-1)`: every part keeps x's rank.
        r = _rank(op.args[0], known)
        if r is not None:
            for name in op.outputs:
                ranks[name] = r
        return
    if len(op.outputs) > 1 and _sizes(op):
        for name in op.outputs:
            ranks[name] = 0
        return
    if len(op.outputs) > 1:
        # `q, k, v = qkv.reshape(n, 3, h, -1).permute(1, 0, 2, 3).unbind(0)`: each part has one axis fewer (the
        # 3-D queries and keys of Qwen2.5-VL's vision attention, whose `k.transpose(1, 2)` is their last two axes).
        part = _part_rank(op, known)
        if part is not None:
            for name in op.outputs:
                ranks[name] = part
        return
    if len(op.outputs) != 1:
        return
    key = (op.kind._value_, op.target)
    first = op.args[0] if op.args else None
    rank: int | None = None
    if key in SAME_RANK and first is not None:
        rank = _rank(first, known)
    elif op.kind == _METHOD and op.target in ("view", "reshape", "permute", "expand", "repeat") and not (
            op.target == "repeat" and op.kwargs):
        # `repeat` takes at least one size per axis and gives one axis per size (`x.repeat(1, h, 1, 1)`: 4-D);
        # numpy's `a.repeat(n, axis=0)` keeps the rank, so a keyword is no size.
        rank = _shape_count(op.args)
    elif op.kind == _OPERATOR and op.target in _ELEMENTWISE and len(op.args) == 2:
        arg_ranks = [_rank(a, known) for a in op.args if isinstance(a, Ref)]
        if arg_ranks and None not in arg_ranks:
            rank = max(r for r in arg_ranks if r is not None)
    elif key == MATMUL and len(op.args) == 2:
        ra, rb = _rank(op.args[0], known), _rank(op.args[1], known)
        if ra is not None and rb is not None and ra >= 2 and rb >= 2:
            rank = max(ra, rb)
        elif op.origin is not None and (op.origin.kind._value_, op.origin.target) in _BATCHED_PRODUCTS:
            rank = 3  # `torch.bmm` (and `baddbmm`) take and give 3-D tensors, whatever is known of the operands
    elif op.kind == _FUNCTION and op.target in ("einops.rearrange", "einops.repeat") and len(op.args) >= 2:
        rank = _einops_rank(op.args[1])
    elif op.kind == _FUNCTION and op.target in _SCALAR_FUNCTIONS:
        rank = 0
    elif op.kind == _METHOD and op.target == "unsqueeze" and first is not None:
        r = _rank(first, known)
        rank = None if r is None else r + 1
    elif op.kind == _MODULE and first is not None:
        ctor = _ctor_of(by_attr, op.target)
        if ctor is not None and ctor.callee in _SAME_RANK_MODULES:
            rank = _rank(first, known)
    elif key in _FLATTEN and first is not None:
        rank = _flattened_rank(op, known)
    elif (op.kind == _OPERATOR and op.target == "getitem" and isinstance(first, Ref) and len(op.args) == 2
          and isinstance(op.args[1], Expr) and _INT.match(op.args[1].text)):
        # `q.shape[-1]` is a number; `qkv[0]` of a tensor drops its first axis.
        r = 1 if _SHAPE + first.name in ranks else _rank(first, known)
        rank = None if r is None or r < 1 else r - 1
    elif op.kind == _METHOD and op.target == "size" and (len(op.args) == 2 or op.kwargs):
        rank = 0  # `x.size(-1)`, `x.size(dim=1)`: a number
    elif key in (_STACK, CAT) and parts is not None:
        # `torch.stack(torch.split(q, d, dim=2), dim=0)`: the heads as a new leading axis (one more than each
        # slice); `torch.cat(x.chunk(2, dim=0), dim=-1)`: as many axes as each part.
        rank = parts + 1 if key == _STACK else parts
    if rank is not None:
        ranks[op.outputs[0]] = rank
    elif _sizes(op):
        ranks[_SHAPE + op.outputs[0]] = 1  # `x.shape`, `x.size()`: its integer items are numbers
    elif bounded and (bound := _rank_bound(op, key, first, known, bounds, by_attr)) is not None:
        ranks[_BOUND + op.outputs[0]] = bound


def _writes_into_ranked(op: Op, ranks: Mapping[str, int]) -> bool:
    """Whether `op` is an index assignment (`x[i] = v`, `operator setitem(x, i, v)` with output x) into a value
    whose rank (or bound) is known, hence a tensor: prediction-flow 0.1.5's DIN attention masks its `[B, T]`
    scores with `outputs[~mask] = -np.inf` before `F.softmax(outputs, dim=1)`."""
    if op.kind != _OPERATOR or op.target != "setitem" or len(op.outputs) != 1 or not op.args:
        return False
    first = op.args[0]
    if not isinstance(first, Ref) or first.name != op.outputs[0]:
        return False
    return (first.name in ranks and ranks[first.name] >= 1) or _BOUND + first.name in ranks


def _rank_bound(op: Op, key: Key, first: Value | None, known: Mapping[str, int], bounds: Mapping[str, int],
                by_attr: Mapping[str, list[Binding]]) -> int | None:
    """The most axes the one output of `op` can have, where its rank is not known: a layer of
    `_RANK_BOUND_MODULES` (`nn.Conv1d`: 3), or an op keeping the rank of an input so bounded (`tanh`,
    `masked_fill`, a cast, `nn.Linear`; `a * b` where each operand's rank or bound is known); None otherwise."""
    if op.kind == _MODULE and first is not None:
        ctor = _ctor_of(by_attr, op.target)
        if ctor is None:
            return None
        if ctor.callee in _RANK_BOUND_MODULES:
            return _RANK_BOUND_MODULES[ctor.callee]
        return bounds.get(first.name) if ctor.callee in _SAME_RANK_MODULES and isinstance(first, Ref) else None
    if key in SAME_RANK and isinstance(first, Ref):
        return bounds.get(first.name)
    if op.kind == _OPERATOR and op.target in _ELEMENTWISE and len(op.args) == 2:
        each = [known.get(a.name, bounds.get(a.name)) for a in op.args if isinstance(a, Ref)]
        return max(each) if each and None not in each and any(  # type: ignore[type-var]
            isinstance(a, Ref) and a.name in bounds for a in op.args) else None
    return None


def _items_rank(op: Op, ranks: Mapping[str, int]) -> int | None:
    """The rank every tensor of the sequence `op` makes has, when it is evident: slices of a tensor of known
    rank (`split`, `chunk`, `tensor_split`: each keeps every axis), or a list or tuple literal of tensors of one
    known rank; None otherwise (a sequence unpacked into several names is ranked by `_track_rank` itself)."""
    if len(op.outputs) != 1 or not op.args:
        return None
    key = (op.kind._value_, op.target)
    if key in _SLICES:
        return _rank(op.args[0], ranks)
    if op.kind == _OPERATOR and op.target in ("list", "tuple"):
        seen = {_rank(a, ranks) for a in op.args}
        if len(seen) == 1 and None not in seen:
            return seen.pop()
    return None


def _sizes(op: Op) -> bool:
    """`b, c, t = x.shape` (or `x.size()`): the names it binds are numbers, rank 0 (`s * c ** -0.5` keeps the
    rank of `s`)."""
    return len(op.args) >= 1 and (
        (op.kind == _OPERATOR and op.target == "getattr" and len(op.args) == 2 and isinstance(op.args[1], Expr)
         and op.args[1].text == "shape")
        or (op.kind == _METHOD and op.target == "size" and len(op.args) == 1 and not op.kwargs))


def _part_rank(op: Op, known: Mapping[str, int]) -> int | None:
    """The rank of each output of an op whose outputs unpack a tensor (unpacking iterates its first axis): a
    `view`/`reshape`/`permute` with its sizes written, or `unbind` (any axis) of a tensor of known rank; None
    otherwise."""
    whole: int | None = None
    if op.kind == _METHOD and op.target in ("view", "reshape", "permute"):
        whole = _shape_count(op.args)
    elif (op.kind._value_, op.target) in (("method", "unbind"), ("function", "torch.unbind")) and op.args:
        whole = _rank(op.args[0], known)
    return whole - 1 if whole is not None and whole >= 2 else None


def _flattened_rank(op: Op, known: Mapping[str, int]) -> int | None:
    """The rank `x.flatten(start_dim, end_dim)` (or `torch.flatten`) gives: `start_dim + 1` for a non-negative
    start up to the last axis (`K.flatten(start_dim=2)` is 3-D whatever `K` was); with other axes, from `x`'s
    rank when it is known; None otherwise."""
    given = dict(zip(("start_dim", "end_dim"), op.args[1:]))
    for k in op.kwargs:
        given.setdefault(k.name, k.value)
    if len(op.args) > 3 or set(given) - {"start_dim", "end_dim"}:
        return None
    texts = {name: _text(v) for name, v in given.items()}
    start, end = texts.get("start_dim", "0"), texts.get("end_dim", "-1")
    if start is None or end is None or not _INT.match(start) or not _INT.match(end):
        return None
    s, e = int(start), int(end)
    if s >= 0 and e == -1:
        return s + 1
    r = _rank(op.args[0], known)
    if r is None:
        return None
    s, e = s % r if r else s, e % r if r else e
    return r - (e - s) if 0 <= s <= e < r else None
