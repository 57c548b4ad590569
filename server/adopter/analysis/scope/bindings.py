"""Scope analysis of `__init__`: which module each `self.<attr>` is bound to, and under which condition."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from tree_sitter import Node

from adopter.analysis.canonical.spellings import FUNCTION_VALUES, PARTIAL_FUNCTIONS
from adopter.analysis.crossfile.init_source import init_annotations
from adopter.analysis.crossfile.norm_act import BATCH_NORMS
from adopter.analysis.names.assignments import element_pairs, read_assignment, target_leaves
from adopter.analysis.names.branch_choice import chosen_classes, own_nodes
from adopter.analysis.names.class_attributes import assigns_instance_attribute, class_attribute
from adopter.analysis.names.default_helpers import fallback_argument
from adopter.analysis.names.formula_functions import exact_gelu
from adopter.analysis.names.identifiers import read_names
from adopter.analysis.names.naming import CONTAINERS, MODULE_SELF_METHODS, is_constructor
from adopter.analysis.names.signature import params
from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.names.table_factories import argument_text, table_lookup
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.builder_methods import built_by_method
from adopter.analysis.scope.child_names import COUNTED, Added, added_name, keeps_positions
from adopter.analysis.scope.chosen_layers import CHOSEN_BY
from adopter.analysis.scope.classes import ClassTable
from adopter.analysis.scope.config_fields import field_default
from adopter.analysis.scope.config_registry import builder_kind, built_layer
from adopter.analysis.scope.list_counts import added_by_loop
from adopter.analysis.scope.literal_truth import literal_truth
from adopter.dsl.types import (
    KEYWORD_ONLY,
    POSITIONAL,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    Binding,
    Ctor,
    Expr,
    Init,
    Kwarg,
    Param,
    Span,
    Value,
)

MAX_INLINE_DEPTH = 3
Conds = tuple[str, ...]


@dataclass(frozen=True)
class _Callee:
    """A local name that holds a class (not an instance): `attn_cls = BertSelfAttention`; `chosen`: the test
    (`dims == 2`) that picks it among other kinds of layer, its value decided by no default."""

    qualified: str
    chosen: str | None = field(default=None, compare=False)


@dataclass
class _ListBuild:
    """A local list of modules under construction: `layers = []` then `layers.append(...)` in a loop.

    `items` (each constructor once) and `repeat` are what a container of the list holds. Beside them,
    `positions` keeps the items in the order the statements add them, each with its alternatives, while
    that order is evident (`ordered`): additions by unconditional statements of the block that made the
    list, or of `for`/`while` loops in it, each loop body read once; an item not known, a comprehension, an
    addition under an `if` or any other operation on the list makes it not evident."""

    items: list[Ctor] = field(default_factory=list)
    repeat: str | None = None
    positions: list[list[tuple[Conds, Ctor]]] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)  # where each position's item is written
    ordered: bool = True
    depth: int = 0  # the number of conditions where the list was made
    looped: bool = False  # some item was added in a loop
    # The first items at the list's own positions (`Ctor.lead`): added by unconditional statements of the
    # block that made the list, outside loops, before any other addition (`lead_open` until then). Additions
    # only go after them; an operation that may move or drop an item clears them (`disturb`).
    lead: list[Ctor | None] = field(default_factory=list)
    lead_open: bool = True
    grown: int = 0  # the statements read that add to it (`append`, `extend`, `+=`)
    # Its order was lost otherwise than by an addition under an `if` (`disturb`, an item not known, an
    # addition of a name): `positions` no longer say where each item was written.
    disordered: bool = False

    def disturb(self) -> None:
        """The list's order is no longer evident (`insert`, `pop`, `layers[-1] = ...`)."""
        self.ordered = False
        self.disordered = True
        self.lead.clear()
        self.lead_open = False


Alt = tuple[Conds, "Ctor | Expr | _Callee"]
# `Ctor.origin` of a container a same-file helper returns (`FeedForward (returned by a same-file helper)`):
# a site through it is the helper's chain too (`adopter.engine.sites` reports the two as one).
FACTORY_ORIGIN = " (returned by a same-file helper)"


@dataclass(frozen=True)
class _B:
    """A binding under construction: its condition parts, of which the first `stack_len` are ifs."""

    attr: str
    value: Ctor | Expr
    span: Span
    conds: Conds
    stack_len: int
    item_spans: tuple[Span, ...] = ()


MAX_VARIANTS = 8
# A container's items under a condition: (condition, items, keys, repeat, once); see `Ctor.once`.
_Variant = tuple[Conds, tuple[Ctor, ...], tuple[str, ...], str | None, bool]


def _choices(positions: list[list[tuple[Conds, Ctor]]]) -> list[tuple[Conds, tuple[Ctor, ...]]]:
    """One item from each position's alternatives, in order, for every choice whose conditions agree (at
    most MAX_VARIANTS, kept after each position): each with the conjunction of its items' conditions."""
    combos: list[tuple[Conds, tuple[Ctor, ...]]] = [((), ())]
    for alts in positions:
        grown: list[tuple[Conds, tuple[Ctor, ...]]] = []
        for conds, items in combos:
            for c, ctor in alts:
                joined = _join(conds, c)
                if joined is not None:
                    grown.append((joined, (*items, ctor)))
        combos = grown[:MAX_VARIANTS]
    return combos


def _join(a: Conds, b: Conds) -> Conds | None:
    """The conjunction of two condition lists, or None when it contradicts itself (`c` and `not (c)`)."""
    if not a and not b:  # the usual case, an unconditional binding: nothing to join or contradict
        return ()
    out = list(a)
    for c in b:
        if c not in out:
            out.append(c)
    present = set(out)
    if any(f"not ({c})" in present for c in out):
        return None
    # An `elif`/`else` test spells the negations joined with `and`: check those parts too.
    parts = {p for c in out for p in c.split(" and ")}
    if any(f"not ({p})" in parts for p in parts):
        return None
    return tuple(out)


def _cond_text(conds: Conds) -> str | None:
    return " and ".join(conds) if conds else None


def _negate(test: str) -> str:
    return f"not ({test})"


# Arithmetic of names, attributes and numbers (`heads * dim_head`, `config.hidden_size // 2`): a size.
_SIZE = re.compile(r"[\w.\s()*/+-]+")
_IDENT = re.compile(r"\b[A-Za-z_]\w*")

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


# What a class may do with a list it fills besides splatting it: fill it, rebind it, call an item of it.
_LIST_USE = re.compile(r"\s*(?:\.append\(|\.extend\(|\+?=(?!=)|\[[^\]\n]*\]\s*\()")
SEQUENTIAL = "torch.nn.Sequential"
_LITERALS = frozenset({"integer", "float", "string", "true", "false", "none"})

_PARTIAL = re.compile(r"^(?:functools\.)?partial\(\s*([A-Za-z_][\w.]*)\s*[,)]")


# Methods that change a dict in place (a config dict passed to a builder).
_MUTATORS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"})


def read_init(name: str, table: ClassTable, src: SourceText) -> Init | None:
    """`InitAnalysis(name, table, src).run()`, read once per table (`ClassTable.init_reading`) when `src` is the
    table's own file."""
    if src is not table.symbols.src:
        return InitAnalysis(name, table, src).run()
    return table.init_reading(name, "read", lambda: InitAnalysis(name, table, src).run())


class InitAnalysis:
    """Walks `__init__` (and the same-file `__init__`s it reaches through `super()`) into bindings."""

    def __init__(self, class_name: str, table: ClassTable, src: SourceText) -> None:
        self.class_name = class_name
        self.table = table
        self.symbols = table.symbols
        self.src = src
        self.state: dict[str, list[_B]] = {}
        self.locals: dict[str, list[Alt] | _ListBuild] = {}
        self.loop_repeat: str | None = None
        self.defaults: dict[str, str | None] = {}  # parameter -> the source text of its default
        self.target: str | None = None  # the `self.<attr>` the value being read is assigned to
        self.unrolled_lists: set[str] = set()  # local lists a Sequential binding holds one pass of
        self.helpers_read: set[str] = set()  # same-file helpers whose returned container is being read
        self.item_spans: dict[str, tuple[Span, ...]] = {}  # attr -> its one-pass items' spans
        # attr -> whether the `nn.Sequential()` bound to it empty has been filled, so far, by one
        # `add_module` of one layer per statement at its own level, in loops or not (`_fill_in_order`)
        self.filled_in_order: dict[str, bool] = {}
        self.sizes: dict[str, str | None] = {}  # local -> its arithmetic (`Init.sizes`); None: bound again
        # local -> (its value, where each item of the literal `nn.Sequential(...)` it holds is written)
        self.local_item_spans: dict[str, tuple[list[Alt], tuple[Span, ...]]] = {}
        # Whether the function being read is not `__init__` itself (a method or a base's `__init__` it calls):
        # a name there is its own parameter or a global, never `__init__`'s parameter (`defaults`).
        self.nested = False
        # attr -> the parameter of `__init__` itself it was bound to (`self.norm_cfg = norm_cfg`, read there).
        self.held_params: dict[str, str | None] = {}
        # names and `self.<attr>`s changed in place so far (`cfg.update(...)`, `cfg["type"] = ...`): a config
        # dict read from a default is not read once changed.
        self.mutated: set[str] = set()
        # parameter -> the layer class every construction in the file passes it (`chains.caller_layers`):
        # read as its default, the parameter having none of its own.
        self.pinned: dict[str, str] = {}
        # the parameters of `__init__` itself (after `self`), when it is the class's own: a test there of one
        # without a default is the caller's choice (`_undecided`).
        self.init_params: frozenset[str] = frozenset()
        self.init_node: Node | None = None  # the class's own `__init__`
        # `config.<field>` -> the literal default of the field in the parameter's same-file config class
        self.config_keys: dict[str, str | None] = {}

    def run(self) -> Init | None:
        found = self.table.find_method(self.class_name, "__init__")
        if found is None:
            return None
        owner, node = found
        ps = params(node, self.src)
        if owner == self.class_name:
            self.init_params = frozenset(p.name for p in ps[1:] if p.kind in (POSITIONAL, KEYWORD_ONLY))
            self.init_node = node
        self.read_defaults([replace(p, default=self.pinned[p.name]) if p.name in self.pinned else p for p in ps[1:]])
        self._function(owner, node, (), 0)
        bindings = [
            Binding(b.attr, b.value, b.span, _cond_text(b.conds), b.item_spans)
            for group in self.state.values()
            for b in (group if len(group) == 1 else sorted(group, key=lambda b: (b.span.start_line, b.span.start_col)))
        ]
        sizes = tuple((k, v) for k, v in self.sizes.items() if v is not None)
        return Init(ps[1:], tuple(bindings), self.src.span(node), sizes)

    def read_defaults(self, ps: Sequence[Param]) -> None:
        """Parameters whose default is a layer class, a `partial` of one, or a layer instance."""
        self.defaults.update((p.name, p.default) for p in ps)
        # A layer class passed as a default argument (`norm_layer=nn.BatchNorm2d`, `act=nn.GELU`) is what
        # `norm_layer(...)` builds unless the caller passes another: read it as that constructor.
        for p in ps:
            callee = self._default_class(p.default)
            if callee is not None:
                self.locals[p.name] = [((), _Callee(callee))]
            elif p.default is not None and _PARTIAL.match(p.default):
                # `norm_layer=partial(nn.LayerNorm, eps=1e-6)`: calling it builds that class.
                callee = self._default_class(_PARTIAL.match(p.default).group(1))  # type: ignore[union-attr]
                if callee is not None:
                    self.locals[p.name] = [((), _Callee(callee))]
            elif p.default is not None and p.default.endswith("()"):
                # A layer instance as the default (`activation=nn.SiLU()`): `self.act = activation` binds it.
                callee = self._default_class(p.default[:-2])
                if callee is not None:
                    self.locals[p.name] = [((), Ctor(callee))]

    def read_locals(self, function: Node, attrs: dict[str, str], method: bool = True) -> None:
        """Walk another method of the class (or, without `method`, a module-level function) for its locals
        (`norm_layer = self._norm_layer`), with `attrs` (`self.<attr>` -> the qualified layer class `__init__`
        stored there) read as those classes."""
        for attr, qualified in attrs.items():
            self.locals[f"self.{attr}"] = [((), _Callee(qualified))]
        ps = params(function, self.src)
        self.read_defaults(ps[1:] if method else ps)
        body = function.child_by_field_id(Field.BODY)
        if body is not None:
            self._block(body, (), self.class_name, ps[0].name if method and ps else "self", 0)

    def constructors(self, node: Node) -> list[Ctor]:
        """The layers an expression can build (`nn.Conv2d(...)`, `norm_layer(c)`, a same-file factory)."""
        return self._ctor_alts(node)

    def qualified_callee(self, dotted: str) -> str:
        """`nn.Sequential` -> `torch.nn.Sequential`; a same-file class stays as written."""
        return self._qualify_callee(dotted)

    # -- statements ----------------------------------------------------------------------------------

    def _function(self, owner: str, node: Node, conds: Conds, depth: int) -> None:
        ps = params(node, self.src)
        self_name = ps[0].name if ps else "self"
        body = node.child_by_field_id(Field.BODY)
        saved = self.nested
        self.nested = saved or depth > 0
        try:
            if body is not None:
                self._block(body, conds, owner, self_name, depth)
        finally:
            self.nested = saved

    def _block(self, block: Node, conds: Conds, owner: str, self_name: str, depth: int) -> None:
        for stmt in block.named_children:
            self._stmt(stmt, conds, owner, self_name, depth)

    def _stmt(self, stmt: Node, conds: Conds, owner: str, self_name: str, depth: int) -> None:
        kind = stmt.type
        if kind == "expression_statement":
            for expr in stmt.named_children:
                if expr.type == "assignment":
                    self._assignment(expr, conds, self_name)
                elif expr.type == "call":
                    self._call_stmt(expr, conds, owner, self_name, depth)
                elif expr.type == "augmented_assignment":
                    left = expr.child_by_field_id(Field.LEFT)
                    if left is not None and left.type == "identifier":
                        self.sizes[self.src.text(left)] = None  # `inner *= 2`: not one size
                    self._list_added(expr, conds)
        elif kind == "if_statement":
            self._if(stmt, conds, owner, self_name, depth)
        elif kind in ("for_statement", "while_statement"):
            counted = self._counted(stmt, conds)
            saved = self.loop_repeat
            self.loop_repeat = self._repeat_text(stmt)
            body = stmt.child_by_field_id(Field.BODY)
            if body is not None:
                self._block(body, conds, owner, self_name, depth)
            self.loop_repeat = saved
            for local, n in counted:  # the items after the loop keep their positions
                local.lead.extend([None] * n)
                local.lead_open = True
        elif kind in ("with_statement", "try_statement"):
            for child in stmt.named_children:
                if child.type == "block":
                    self._block(child, conds, owner, self_name, depth)
                elif child.type in ("else_clause", "finally_clause"):
                    inner = child.child_by_field_id(Field.BODY) or (child.named_children[-1] if child.named_child_count else None)
                    if inner is not None and inner.type == "block":
                        self._block(inner, conds, owner, self_name, depth)

    def _counted(self, loop: Node, conds: Conds) -> list[tuple[_ListBuild, int]]:
        """The lists with open leads that `loop`, at their own level, adds a number of items to that its
        literal trip counts give (`list_counts.added_by_loop`), with that number."""
        if loop.type != "for_statement" or self.loop_repeat is not None:
            return []
        text = self.src.text(loop)
        out: list[tuple[_ListBuild, int]] = []
        for name, local in self.locals.items():
            if (isinstance(local, _ListBuild) and local.lead_open and len(conds) == local.depth
                    and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text)):
                n = added_by_loop(loop, name, self.src)
                if n is not None:
                    out.append((local, n))
        return out

    def _repeat_text(self, stmt: Node) -> str:
        if stmt.type == "while_statement":
            cond = stmt.child_by_field_id(Field.CONDITION)
            return self.src.norm(cond) if cond is not None else "?"
        right = stmt.child_by_field_id(Field.RIGHT)
        if right is None:
            return "?"
        return _range_count(right, self.src) or self.src.norm(right)

    def _if(self, stmt: Node, conds: Conds, owner: str, self_name: str, depth: int) -> None:
        paths: list[tuple[str, Node | None]] = []
        negated: list[str] = []
        test = stmt.child_by_field_id(Field.CONDITION)
        test_text = self.src.norm(test) if test is not None else "?"
        paths.append((test_text, stmt.child_by_field_id(Field.CONSEQUENCE)))
        negated.append(_negate(test_text))
        has_else = False
        for clause in stmt.children_by_field_name("alternative"):
            if clause.type == "elif_clause":
                t = clause.child_by_field_id(Field.CONDITION)
                t_text = self.src.norm(t) if t is not None else "?"
                paths.append((" and ".join([*negated, t_text]), clause.child_by_field_id(Field.CONSEQUENCE)))
                negated.append(_negate(t_text))
            else:
                has_else = True
                paths.append((" and ".join(negated), clause.child_by_field_id(Field.BODY)))
        if not has_else:
            paths.append((" and ".join(negated), None))
        snapshot = {k: list(v) for k, v in self.state.items()}
        local_snapshot = dict(self.locals)
        results: list[tuple[str, dict[str, list[_B]], dict[str, list[Alt] | _ListBuild]]] = []
        for path_cond, body in paths:
            self.state = {k: list(v) for k, v in snapshot.items()}
            self.locals = dict(local_snapshot)
            if body is not None:
                self._block(body, (*conds, path_cond), owner, self_name, depth)
            results.append((path_cond, self.state, self.locals))
        self.state = self._merge_state(snapshot, results, conds)
        self.locals = self._merge_locals(local_snapshot, results)

    def _merge_state(
        self,
        snapshot: dict[str, list[_B]],
        results: list[tuple[str, dict[str, list[_B]], dict[str, list[Alt] | _ListBuild]]],
        conds: Conds,
    ) -> dict[str, list[_B]]:
        keys: list[str] = list(snapshot)
        for _, state, _ in results:
            keys.extend(k for k in state if k not in keys)
        merged: dict[str, list[_B]] = {}
        for key in keys:
            old = snapshot.get(key, [])
            lists = [state.get(key, []) for _, state, _ in results]
            if all(len(lst) == len(old) and all(a is b for a, b in zip(lst, old)) for lst in lists):
                merged[key] = old
                continue
            out: list[_B] = []
            for (path_cond, _, _), lst in zip(results, lists):
                for b in lst:
                    if any(b is o or self._extended_here(b, o) for o in old):
                        stack = (*conds, path_cond) if path_cond else conds
                        b = replace(b, conds=stack + b.conds[b.stack_len :], stack_len=len(stack))
                    if b not in out:
                        out.append(b)
            if out:
                merged[key] = _union_containers(out)
        return merged

    def _extended_here(self, b: _B, old: _B) -> bool:
        """Whether `b` is the earlier Sequential binding `old` extended on one path of an `if` outside loops
        (`if use_bn: self.seq.add_module("bn", ...)`): its items run in order and exist on that path only. In
        a loop the paths alternate (the container holds the union), and other containers keep their union."""
        return (self.loop_repeat is None and b.value != old.value and old.span == b.span and old.conds == b.conds
                and isinstance(b.value, Ctor) and b.value.callee == SEQUENTIAL)

    def _merge_locals(
        self,
        snapshot: dict[str, list[Alt] | _ListBuild],
        results: list[tuple[str, dict[str, list[_B]], dict[str, list[Alt] | _ListBuild]]],
    ) -> dict[str, list[Alt] | _ListBuild]:
        merged = dict(snapshot)
        names = {n for _, _, loc in results for n in loc}
        for name in names:
            values = [loc.get(name) for _, _, loc in results]
            if all(v is snapshot.get(name) for v in values):
                continue
            alts: list[Alt] = []
            for (path_cond, _, _), value in zip(results, values):
                if isinstance(value, list):
                    for c, v in value:
                        joined = _join((path_cond,) if path_cond else (), c)
                        if joined is not None:
                            alts.append((joined, v))
                elif isinstance(value, _ListBuild):
                    merged[name] = value
            if alts:
                merged[name] = alts
        return merged

    def _assignment(self, node: Node, conds: Conds, self_name: str) -> None:
        read = read_assignment(node)
        if read is None:
            return
        targets, value = read
        for target in targets:  # `self.a = self.b = x`: each target binds the whole value
            pairs = element_pairs(target_leaves(target), value)
            if pairs is None:
                self._assign_one(target, value, conds, self_name)
            else:  # `self.a, self.b = A(), B()`: element by element
                for t, v in pairs:
                    self._assign_one(t, v, conds, self_name)

    def _assign_one(self, target: Node, value: Node, conds: Conds, self_name: str) -> None:
        if value.type == "call":
            self._note_mutation(value)  # `layer_type = cfg.pop("type")`
        if target.type in ("pattern_list", "tuple_pattern") and value.type == "call":
            self._config_pair_target(target, value)
            return
        attr = _self_attr(target, self_name, self.src)
        if attr is not None:
            self.target = attr
            self.item_spans.pop(attr, None)  # what an earlier binding of the attribute held: a rebinding's items are its own
            try:
                alts = self._alternatives(value)
            finally:
                self.target = None
            if attr not in self.item_spans and (spans := self._literal_item_spans(value, alts) or self._local_items(value, alts)):
                self.item_spans[attr] = spans
            self._bind(attr, alts, self.src.span(target.parent or target), conds)
            held = self.src.text(value) if value.type == "identifier" else ""
            self.held_params[attr] = held if (
                attr not in self.held_params and not conds and not self.nested and held in self.defaults
                and held not in self.locals) else None
            self.filled_in_order[attr] = all(isinstance(v, Ctor) and v.callee == SEQUENTIAL and not v.items
                                             and not v.args for _, v in alts) and bool(alts)
            listed = f"{self_name}.{attr}"  # `self.features = [conv_bn(...)]`: filled like a local list
            if value.type == "list":
                self.locals[listed] = self._list_build(value, conds)
            else:
                self.locals.pop(listed, None)
            return
        if target.type == "identifier":
            name = self.src.text(target)
            self._note_size(name, value, conds)
            if value.type == "list" and value.named_child_count == 0:
                self.locals[name] = _ListBuild(depth=len(conds))
            elif value.type in ("list_comprehension", "generator_expression", "list"):
                self.locals[name] = self._list_build(value, conds)
            elif (partial_of := self._local_partial(self._or_default(value) if value.type == "boolean_operator"
                                                    else value)) is not None:
                # `norm_layer = partial(nn.BatchNorm2d, eps=1e-3)`: calling it builds that class, as for a
                # parameter whose default is such a partial (`read_defaults`); so does the fallback of
                # `norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=1e-3)` with `norm_layer=None`.
                self.locals[name] = [((), _Callee(partial_of))]
            else:
                self.locals[name] = local_alts = self._alternatives(value)
                if spans := self._literal_item_spans(value, local_alts):
                    self.local_item_spans[name] = (local_alts, spans)
        elif target.type == "subscript":
            container = target.child_by_field_id(Field.VALUE)
            if container is not None and container.type in ("identifier", "attribute"):
                self.mutated.add(self.src.text(container))
                local = self.locals.get(self.src.text(container))
                if isinstance(local, _ListBuild):
                    local.disturb()  # `layers[-1] = ...`
            attr = _self_attr(container, self_name, self.src) if container is not None else None
            key = target.child_by_field_id(Field.SUBSCRIPT)
            if attr is not None:
                self._extend_container(attr, self._ctor_alts(value), _key_text(key, self.src) if key else None)

    def _note_size(self, name: str, value: Node, conds: Conds) -> None:
        """Keep `name = heads * dim_head` (`Init.sizes`) when it is the local's only binding, unconditional,
        outside loops, and arithmetic of names, attributes and numbers that does not read the name itself."""
        text = self.src.norm(value)
        plain = (not conds and self.loop_repeat is None and name not in self.sizes
                 and _SIZE.fullmatch(text) is not None and name not in _IDENT.findall(text))
        self.sizes[name] = text if plain else None

    def _literal_item_spans(self, value: Node, alts: list[Alt]) -> tuple[Span, ...]:
        """`self.block = nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...), ...)`: where each item is written,
        at its position (a site made of a few of its items is theirs, not the whole statement's), when every
        positional argument is one constructor call, or a conditional expression choosing between two
        (`h_swish() if use_hs else nn.ReLU()`: one of them at run time, each alternative of the binding
        holding one), and every alternative holds exactly that many items; else ()."""
        # Asked of every binding, nearly all of them no Sequential: the test of the alternatives alone first
        # (it reads no node; the tests of the arguments below are pure). `nn.Sequential(...) if flag else None`
        # holds the literal Sequential on one path and no module on the other: its items are still where they
        # are written (the None alternative gets no item spans: `_bind` gives them to constructors only).
        if not alts:
            return ()
        # one alternative (nearly every binding): no `None` to set aside, no list built
        built = [alts[0][1]] if len(alts) == 1 else [v for _, v in alts if not (isinstance(v, Expr) and v.text == "None")]
        if not built or any(not isinstance(v, Ctor) or v.callee != SEQUENTIAL for v in built):
            return ()
        if len(built) < len(alts):
            value = _sequential_or_none(value)
        args_node = value.child_by_field_id(Field.ARGUMENTS) if value.type == "call" else None
        if args_node is None or args_node.type != "argument_list":
            return ()
        arg_nodes = [a for a in args_node.named_children if a.type not in ("comment", "keyword_argument")]
        if not arg_nodes or not all(_one_layer_written(a) for a in arg_nodes):
            return ()
        if any(not isinstance(v, Ctor) or v.callee != SEQUENTIAL or len(v.items) != len(arg_nodes) for v in built):
            return ()
        return tuple(self.src.span(a) for a in arg_nodes)

    def _local_items(self, value: Node, alts: list[Alt]) -> tuple[Span, ...]:
        """`block = nn.Sequential(nn.Conv2d(...), ...)` then `self.block = block` (in the same `__init__`, or in
        the base's `__init__` a subclass hands it to through `super().__init__`): where each item of the local's
        literal Sequential is written, while the attribute holds that very value (no rebinding of the local,
        no branch that changed it); else ()."""
        held = self.local_item_spans.get(self.src.text(value)) if value.type == "identifier" else None
        return held[1] if held is not None and held[0] is alts else ()

    def _list_build(self, value: Node, conds: Conds) -> _ListBuild:
        """A list display or comprehension that starts a list of modules."""
        items, _, repeat = self._items(value)
        built = _ListBuild(list(items), repeat, depth=len(conds), ordered=value.type == "list",
                           lead_open=value.type == "list" and self.loop_repeat is None,
                           disordered=value.type != "list")
        self._add_positions(built, value, conds)
        return built

    def _bind(self, attr: str, alts: list[Alt], span: Span, conds: Conds) -> None:
        bindings: list[_B] = []
        for extra, value in alts:
            v: Ctor | Expr = value if not isinstance(value, _Callee) else Expr(value.qualified)
            joined = _join(conds, extra)
            if joined is None:  # an alternative that contradicts the enclosing tests never happens
                continue
            b = _B(attr, v, span, joined, len(conds), self.item_spans.get(attr, ()) if isinstance(v, Ctor) else ())
            if b not in bindings:
                bindings.append(b)
        self.state.pop(attr, None)  # a rebinding on this path shadows what came before
        self.state[attr] = bindings

    def _fill_in_order(self, attr: str, ctors: list[Ctor], conds: Conds) -> bool:
        """Whether `self.<attr>.add_module(name, layer)` keeps the Sequential's items in the order they run:
        the attribute was bound to an empty `nn.Sequential()` and every addition so far, this one included,
        adds one layer known here, not added before, by a statement at the binding's own level (in a loop
        or not: a loop body is read once, so its items are one pass of it, as `_one_pass` reads a list),
        and the class never indexes the Sequential (`self.<attr>[3]`: past a loop, not these positions)."""
        group = self.state.get(attr, [])
        ok = (self.filled_in_order.get(attr, False) and len(ctors) == 1 and len(group) == 1
              and len(conds) == group[0].stack_len and isinstance(group[0].value, Ctor)
              and ctors[0] not in group[0].value.items and not self._indexed(attr))
        self.filled_in_order[attr] = ok
        return ok

    def _extend_container(self, attr: str, ctors: list[Ctor], key: str | None, at: Span | None = None,
                          in_order: bool = False, name: Added | None = None) -> None:
        """Add `ctors` to the container bound to `attr`; `at`: where the one layer added is written, when it
        goes to the end (`add_module`, `append`), so that an `nn.Sequential()` filled that way keeps where each
        of its items is written (`Binding.item_spans`, per alternative: `if use_bn: self.seq.add_module(...)`).
        `name`: the added child's name (`child_names.added_name`; `COUNTED` for `append`/`extend`), when the
        addition goes to the end: a Sequential whose items were in their order keeps them as its first ones
        (`Ctor.lead`) while each addition has a name none of them has (`child_names.keeps_positions`)."""
        group = self.state.get(attr)
        if not group or not ctors:
            return
        updated: list[_B] = []
        for b in group:
            if isinstance(b.value, Ctor) and b.value.callee in CONTAINERS:
                items = list(b.value.items)
                keys = list(b.value.keys)
                placed = at is not None and len(ctors) == 1 and len(b.item_spans) == len(items) and ctors[0] not in items
                for c in ctors:
                    if c not in items:
                        items.append(c)
                        if key is not None and b.value.callee.endswith("Dict"):
                            keys.append(key)
                repeat = b.value.repeat or self.loop_repeat
                spans = (*b.item_spans, at) if placed and at is not None and (not repeat or in_order) else ()
                lead = self._kept_lead(attr, b.value, name)
                # A union from here on, unless filled in order (`_fill_in_order`): one pass of its loops then.
                b = replace(b, value=replace(b.value, items=tuple(items), keys=tuple(keys), repeat=repeat,
                                                once=in_order and repeat is not None, lead=lead), item_spans=spans)
            updated.append(b)
        self.state[attr] = updated

    def _emptied(self, attr: str) -> None:
        """`self.<attr>.clear()`: the containers bound to `attr` hold nothing from here on."""
        self.filled_in_order[attr] = False
        self.state[attr] = [
            replace(b, value=replace(b.value, items=(), keys=(), repeat=None, once=False, lead=()), item_spans=())
            if isinstance(b.value, Ctor) and b.value.callee in CONTAINERS else b for b in self.state.get(attr, [])]

    def _kept_lead(self, attr: str, value: Ctor, name: Added | None) -> tuple[Ctor | None, ...]:
        """The first items at their positions (`Ctor.lead`) of the Sequential `value` once a child named `name`
        is added to it: its lead so far, or its items while they are in their order (as `nn.Sequential`'s own
        forward would run them: no `repeat`); () when the addition may replace one of them, or when the class
        changes the Sequential otherwise (`self.features[0] = ...`, `del`, `insert`, `pop`)."""
        if value.callee != SEQUENTIAL or not keeps_positions(value, name) or self._rearranged(attr):
            return ()
        if value.lead:
            return value.lead
        return value.items if value.repeat is None and not value.once else ()

    def _rearranged(self, attr: str) -> bool:
        """Whether the class's code sets, deletes, inserts or pops a child of `self.<attr>` by position."""
        info = self.table.infos.get(self.class_name)
        a = re.escape(attr)
        return info is None or re.search(
            rf"\bself\.{a}\s*\[[^\]]*\]\s*=(?!=)|\bdel\s+self\.{a}\b|\bself\.{a}\s*\.\s*(?:insert|pop|__setitem__|__delitem__)\b",
            self.src.text(info.node)) is not None

    def _list_added(self, expr: Node, conds: Conds) -> None:
        """`layers += [a, b]` on a local list: its items, as `layers.extend([a, b])` adds them."""
        left, right = expr.child_by_field_id(Field.LEFT), expr.child_by_field_id(Field.RIGHT)
        op = expr.child_by_field_id(Field.OPERATOR)
        named = left is not None and left.type in ("identifier", "attribute")
        local = self.locals.get(self.src.text(left)) if left is not None and named else None
        if isinstance(local, _ListBuild):
            local.grown += 1
        if (left is None or right is None or not named or right.type not in ("list", "tuple")
                or (op is not None and self.src.text(op) != "+=")):
            if isinstance(local, _ListBuild):
                local.ordered = False
                local.disordered = True
                local.lead_open = False
            return
        if isinstance(local, _ListBuild):
            local.items.extend(c for c in self._items(right)[0] if c not in local.items)
            local.repeat = local.repeat or self.loop_repeat
            self._add_positions(local, right, conds)

    def _add_positions(self, local: _ListBuild, node: Node, conds: Conds, one: bool = False) -> None:
        """Record the items `node` adds to `local` in order (`one`: `node` is the one item `.append` adds)."""
        if len(conds) > local.depth:
            local.ordered = False  # under an `if`: whether it runs is not evident
        local.looped = local.looped or self.loop_repeat is not None
        for child in [node] if one else [c for c in node.named_children if c.type != "comment"]:
            alts = [(c, v) for c, v in self._alternatives(child) if isinstance(v, Ctor)] if child.type not in (
                "list_splat", "tuple", "dictionary_splat") else []
            if (local.lead_open and len(conds) == local.depth and self.loop_repeat is None
                    and len(alts) == 1 and not alts[0][0]):
                local.lead.append(alts[0][1])
            else:
                local.lead_open = False
            if not alts:
                local.ordered = False
                local.disordered = True
                return
            local.positions.append(alts)
            local.spans.append(self.src.span(child))

    def _call_stmt(self, call: Node, conds: Conds, owner: str, self_name: str, depth: int) -> None:
        func = call.child_by_field_id(Field.FUNCTION)
        args = call.child_by_field_id(Field.ARGUMENTS)
        if func is None:
            return
        if func.type == "attribute":
            obj = func.child_by_field_id(Field.OBJECT)
            method_node = func.child_by_field_id(Field.ATTRIBUTE)
            method = self.src.text(method_node) if method_node is not None else ""
            self._note_mutation(call)
            if obj is not None and obj.type == "call" and self.src.text(obj).replace(" ", "").startswith("super("):
                if method == "__init__" and depth < MAX_INLINE_DEPTH:
                    found = self.table.find_method(self.class_name, "__init__", after=owner)
                    if found is not None:
                        self._function(found[0], found[1], conds, depth + 1)
                return
            attr = _self_attr(obj, self_name, self.src) if obj is not None else None
            arg_nodes = [a for a in args.named_children if a.type != "comment"] if args is not None else []
            listed = self.locals.get(f"{self_name}.{attr}") if attr is not None else None
            if isinstance(listed, _ListBuild):  # `self.features.append(...)` on a list attribute
                if method in ("append", "extend") and arg_nodes:
                    self._grow(listed, method, arg_nodes[0], conds)
                else:
                    listed.disturb()
                return
            if attr is not None and method == "clear" and not arg_nodes:
                self._emptied(attr)  # what was added before no longer holds; later additions fill it anew
                return
            if attr is not None and method in ("append", "extend", "add_module", "insert", "update"):
                if not arg_nodes:
                    return
                if method in ("add_module", "insert") and len(arg_nodes) >= 2:
                    ctors = self._ctor_alts(arg_nodes[1])
                    in_order = method == "add_module" and self._fill_in_order(attr, ctors, conds)
                    self._extend_container(attr, ctors, _key_text(arg_nodes[0], self.src),
                                           self.src.span(arg_nodes[1]) if method == "add_module" else None, in_order,
                                           added_name(arg_nodes[0], self.src) if method == "add_module" else None)
                elif method in ("extend", "update"):
                    self.filled_in_order[attr] = False
                    items, keys, _ = self._items(arg_nodes[0])
                    for i, c in enumerate(items):
                        self._extend_container(attr, [c], keys[i] if i < len(keys) else None,
                                               name=COUNTED if method == "extend" else None)
                else:
                    self.filled_in_order[attr] = False
                    self._extend_container(attr, self._ctor_alts(arg_nodes[0]), None, name=COUNTED)
                return
            if obj is not None and obj.type == "identifier" and method in ("append", "extend") and arg_nodes:
                local = self.locals.get(self.src.text(obj))
                if isinstance(local, _ListBuild):
                    self._grow(local, method, arg_nodes[0], conds)
                return
            if obj is not None and obj.type == "identifier":
                local = self.locals.get(self.src.text(obj))
                if isinstance(local, _ListBuild):
                    local.disturb()  # `insert`, `pop`, `reverse`, ...: the order is not evident
            if (obj is not None and obj.type == "identifier" and self.src.text(obj) == self_name
                    and method == "add_module" and len(arg_nodes) == 2
                    and (prop := self._named_property(arg_nodes[0], self_name)) is not None):
                # `self.add_module(self.norm1_name, norm1)` with a property `norm1` returning
                # `getattr(self, self.norm1_name)`: forward's `self.norm1(x)` runs the layer added.
                alts: list[Alt] = [((), c) for c in self._ctor_alts(arg_nodes[1])]
                if alts:
                    self._bind(prop, alts, self.src.span(call), conds)
                return
            if obj is not None and obj.type == "identifier" and self.src.text(obj) == self_name:
                found = self.table.find_method(self.class_name, method)
                if found is not None and found[1] is not None and depth < MAX_INLINE_DEPTH and method != "__init__":
                    self._function(found[0], found[1], conds, depth + 1)

    def _grow(self, local: _ListBuild, method: str, arg: Node, conds: Conds) -> None:
        """`layers.append(arg)` / `layers.extend(arg)` on a list under construction."""
        local.grown += 1
        new = self._ctor_alts(arg) if method == "append" else list(self._items(arg)[0])
        local.items.extend(c for c in new if c not in local.items)
        local.repeat = local.repeat or self.loop_repeat
        if method == "append":
            self._add_positions(local, arg, conds, one=True)
        elif arg.type in ("list", "tuple"):
            self._add_positions(local, arg, conds)
        else:
            local.ordered = False
            local.disordered = True
            local.lead_open = False

    # -- values --------------------------------------------------------------------------------------

    def _alternatives(self, node: Node) -> list[Alt]:
        kind = node.type
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self._alternatives(node.named_children[0])
        if kind == "conditional_expression":
            parts = [c for c in node.named_children if c.type != "comment"]
            if len(parts) == 3:
                test = self.src.norm(parts[1])
                yes = [((test, *c), v) for c, v in self._alternatives(parts[0])]
                no = [((_negate(test), *c), v) for c, v in self._alternatives(parts[2])]
                return _chosen_kinds(yes + no, test) if self._undecided(parts[1]) else yes + no
        if kind == "call":
            return self._call_alts(node)
        if kind == "subscript":
            value = node.child_by_field_id(Field.VALUE)
            if value is not None and value.type == "call" and _subscript_text(node, self.src) == "1" and (
                    built := self._config_pair(value)) is not None:
                return [((), built)]  # `build_norm_layer(dict(type='BN'), c)[1]`: the layer of (name, layer)
            dotted = dotted_text(value, self.src)
            chosen = self._table_function(dotted, _subscript_text(node, self.src)) if dotted is not None else None
            if chosen is not None:
                return [((), Expr(chosen))]  # `ACTIVATIONS[act]` with a same-file dict of functions
            held = self._table_instance(dotted, _subscript_text(node, self.src)) if dotted is not None else None
            if held is not None:
                return [((), Ctor(held))]  # `ACTS[act]` with a same-file dict of layer instances (`nn.GELU()`)
            if dotted is not None and dotted.split(".")[0] not in self.locals:
                root = dotted.split(".")[0]
                if self.symbols.is_imported(root) or self.symbols.is_module_value(root):
                    lookup = _subscript_text(node, self.src)
                    return [((), Ctor(self.symbols.qualify(dotted), lookup=lookup))]
        if kind == "boolean_operator" and (fallback := self._or_default(node)) is not None:
            chosen_alts = self._alternatives(fallback)  # `act_layer or nn.GELU` with `act_layer=None`
            if all(isinstance(v, (_Callee, Ctor)) for _, v in chosen_alts):
                return chosen_alts  # a layer (class or instance); any other value stays as written
        if kind in ("identifier", "attribute"):
            dotted = dotted_text(node, self.src)
            if dotted is not None:
                local = self.locals.get(dotted)
                if isinstance(local, list):
                    return local
                root = dotted.split(".")[0]
                if root not in self.locals and (function := self._function_value(dotted)) is not None:
                    return [((), Expr(function))]  # `self.act = F.gelu`: the function itself
                if root not in self.locals and (function := self._default_function(dotted)) is not None:
                    return [((), Expr(function))]  # `self.act = act` with `act=F.gelu`: the default's function
                if root not in self.locals and (
                    self.symbols.has_class(dotted) or (self.symbols.is_imported(root) and dotted.rsplit(".", 1)[-1][:1].isupper())
                ):
                    return [((), _Callee(self._qualify_callee(dotted)))]
        return [((), Expr(self.src.norm(node)))]

    def _undecided(self, test: Node) -> bool:
        """Whether a test in `__init__` reads a parameter of it that has no default (the caller decides)."""
        if self.nested:
            return False
        names = {self.src.text(n) for n in read_names(test)}
        return any(n in self.init_params and self.defaults.get(n) is None and n not in self.pinned for n in names)

    def _returned_classes(self, name: str) -> list[str]:
        """The classes (not instances) a same-file function returns: `return nn.Linear`,
        `return partial(LoRALinear, rank=r)`; empty when it returns anything else."""
        if "." in name or self.symbols.has_class(name):
            return []
        function = self.symbols.function_node(name)
        body = function.child_by_field_id(Field.BODY) if function is not None else None
        if body is None:
            return []
        found: list[str] = []
        stack = list(body.named_children)
        while stack:
            node = stack.pop(0)
            if node.type in ("function_definition", "class_definition", "decorated_definition"):
                continue
            if node.type != "return_statement":
                stack.extend(node.named_children)
                continue
            value = node.named_children[0] if node.named_child_count == 1 else None
            classes = self._class_values(value) if value is not None else None
            if not classes:
                return []
            found.extend(c for c in classes if c not in found)
        return found

    def _branch_classes(self, name: str, call: Node) -> list[str] | None:
        """The class a same-file function returns for `call` when it chooses it by tests on a parameter
        (`names.branch_choice`: pix2pix's `get_norm_layer(norm_type)` binding `norm_layer` on each branch of
        `if norm_type == "batch":`, a type dispatch `if norm_layer is nn.BatchNorm2d: return BatchNormAct2d`),
        with the key the call passes (a literal, or a parameter's literal default). When the key is not
        evident, the classes only when every one the function can return is a BatchNorm (the same layer
        whichever the key); None when neither (`_returned_classes` then reads the returns as alternatives)."""
        if "." in name or self.symbols.has_class(name):
            return None
        function = self.symbols.function_node(name)
        if function is None or function.type != "function_definition":
            return None
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        given = [a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"]
        if any(a.type in ("list_splat", "dictionary_splat") for a in given):
            return None
        positional = [a for a in given if a.type != "keyword_argument"]
        defaults = {p.name: p.default for p in params(function, self.src)}

        def passed(param: str, index: int, kind: str) -> str | None:
            text: str | None = None
            for a in given:
                key, value = a.child_by_field_id(Field.NAME), a.child_by_field_id(Field.VALUE)
                if a.type == "keyword_argument" and key is not None and value is not None and self.src.text(key) == param:
                    text = self.src.text(value)
            if text is None and 0 <= index < len(positional):
                text = self.src.text(positional[index])
            if text is None:
                text = defaults.get(param)
                if text is None:
                    return None
                if kind == "str":  # the function's own default: a literal only, never a name of this scope
                    text = text.strip()
                    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" else None
            if kind == "str":
                return self._key_text(text)
            text = text.strip()
            local = self.locals.get(text)
            if isinstance(local, list):  # a parameter whose default is a class (`norm_layer=nn.BatchNorm2d`)
                return local[0][1].qualified if len(local) == 1 and not local[0][0] and isinstance(
                    local[0][1], _Callee) else None
            if text in self.defaults and text not in self.locals:
                text = (self.defaults[text] or "").strip()
            return self._default_class(text)

        choice = chosen_classes(function, self.src, self._class_values, passed)
        if choice is None or not choice.classes:
            return None
        if choice.decided or all(c in BATCH_NORMS for c in choice.classes):
            return list(choice.classes)
        return None

    def _class_values(self, value: Node) -> list[str] | None:
        """The classes a returned expression names: `nn.Linear`, `partial(LoRALinear, rank=r)`, or either
        alternative of a conditional of such (`nn.SyncBatchNorm if is_distributed else nn.BatchNorm1d`:
        which one runs is decided at run time, so both are read); None for anything else."""
        if value.type == "parenthesized_expression" and value.named_child_count == 1:
            return self._class_values(value.named_children[0])
        if value.type == "conditional_expression":
            parts = [c for c in value.named_children if c.type != "comment"]
            if len(parts) != 3:
                return None
            yes, no = self._class_values(parts[0]), self._class_values(parts[2])
            return yes + [c for c in no if c not in yes] if yes and no else None
        if value.type == "call":
            func = value.child_by_field_id(Field.FUNCTION)
            args = value.child_by_field_id(Field.ARGUMENTS)
            first = args.named_children[0] if args is not None and args.named_child_count else None
            if func is None or dotted_text(func, self.src) not in ("partial", "functools.partial") or first is None:
                return None
            value = first
        callee = self._default_class(dotted_text(value, self.src))
        return [callee] if callee is not None else None

    def _local_partial(self, value: Node | None) -> str | None:
        """The layer class of `partial(LayerClass, ...)` / `functools.partial(...)`, else None."""
        if value is None or value.type != "call":
            return None
        func = value.child_by_field_id(Field.FUNCTION)
        if func is None or self.symbols.qualify(dotted_text(func, self.src) or "") != "functools.partial":
            return None
        classes = self._class_values(value)
        return classes[0] if classes else None

    def _returned_class_alts(self, call: Node) -> list[tuple[Conds, str, str | None]]:
        """`helper(...)` called for a class (`helper(...)(dim)`): the classes a same-file helper returns
        (`_returned_classes`), each under the condition that the call returned it when there are several."""
        func = call.child_by_field_id(Field.FUNCTION)
        dotted = dotted_text(func, self.src) if func is not None else None
        chosen = self._branch_classes(dotted, call) if dotted is not None and dotted not in self.locals else None
        classes = chosen if chosen is not None else (
            self._returned_classes(dotted) if dotted is not None and dotted not in self.locals else [])
        text = self.src.norm(call)
        return [(((f"{text} is {c}",) if len(classes) > 1 else ()), c, None) for c in classes]

    def _passed_through(self, name: str, call: Node) -> Node | None:
        """The argument node of `call` a same-file function returns unchanged (`return module` of its
        first parameter, never reassigned in its body), else None."""
        if "." in name or self.symbols.has_class(name):
            return None
        function = self.symbols.function_node(name)
        body = function.child_by_field_id(Field.BODY) if function is not None else None
        stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        ps = params(function, self.src) if function is not None else ()
        if not stmts or not ps or stmts[-1].type != "return_statement" or stmts[-1].named_child_count != 1:
            return None
        returned = stmts[-1].named_children[0]
        if returned.type != "identifier" or self.src.text(returned) != ps[0].name:
            return None
        if any(self._assigns(stmt, ps[0].name) for stmt in stmts[:-1]):
            return None
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        args = [a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"]
        return args[0] if args and args[0].type not in ("keyword_argument", "list_splat", "dictionary_splat") else None

    def _fallback(self, name: str, call: Node) -> Node | None:
        """The second argument of `default(p, d)`, a same-file default helper, when `p` is a parameter whose
        default is None and that nothing here rebound (the caller's default, as for `act_layer=nn.GELU`)."""
        if "." in name or self.symbols.has_class(name):
            return None
        function = self.symbols.function_node(name)
        if function is None:
            return None
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        first = next((a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"), None)
        if first is None or first.type != "identifier":
            return None
        param = self.src.text(first)
        if param in self.locals or (self.defaults.get(param) or "").strip() != "None":
            return None
        return fallback_argument(function, call, self.src, self.symbols.function_node)

    def _assigns(self, node: Node, name: str) -> bool:
        """Whether `node` (a statement) rebinds `name` anywhere inside it."""
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type in ("assignment", "augmented_assignment", "for_statement", "named_expression"):
                left = n.child_by_field_id(Field.LEFT) or n.child_by_field_id(Field.NAME)
                if left is not None and name in self.src.text(left).replace("(", " ").replace(",", " ").split():
                    return True
            stack.extend(n.named_children)
        return False

    def _factory_class(self, name: str) -> str | None:
        """The class a same-file function builds when its body ends in `return Class(...)`."""
        if "." in name or self.symbols.has_class(name):
            return None
        function = self.symbols.function_node(name)
        body = function.child_by_field_id(Field.BODY) if function is not None else None
        stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        if not stmts or stmts[-1].type != "return_statement" or stmts[-1].named_child_count != 1:
            return None
        call = stmts[-1].named_children[0]
        func = call.child_by_field_id(Field.FUNCTION) if call.type == "call" else None
        dotted = dotted_text(func, self.src) if func is not None else None
        if dotted is None or not dotted.rsplit(".", 1)[-1][:1].isupper():
            return None
        if not (self.symbols.has_class(dotted) or self.symbols.is_imported(dotted.split(".")[0])):
            return None
        return self._qualify_callee(dotted)

    def _method_built(self, dotted: str, call: Node) -> list[Alt] | None:
        """The layer a builder method of the class returns (`scope.builder_methods`), its arguments as the
        method writes them with its parameters replaced by what `call` passes; a container is left to the
        chains' reading of methods, a class neither imported nor of this file to the caller."""
        if not dotted.startswith("self."):
            return None
        built = built_by_method(self.table, self.class_name, call, dotted, self.src)
        if built is None or not (self.symbols.has_class(built.callee) or self.symbols.is_imported(built.callee.split(".")[0])):
            return None
        callee = self._qualify_callee(built.callee)
        if callee in CONTAINERS or not is_constructor(callee, self.symbols.has_class(built.callee)):
            return None  # as written inline, a call that is not a constructor stays an expression
        args = tuple(Expr(a) for a in built.args)
        kwargs = tuple(Kwarg(k, Expr(v)) for k, v in built.kwargs)
        return [((), Ctor(callee, args, kwargs))]

    def _factory_container(self, name: str, caller: Node | None = None) -> list[Alt] | None:
        """The container a same-file helper returns (`def FeedForward(dim, mult=4): return nn.Sequential(
        nn.LayerNorm(dim), nn.Linear(dim, inner), nn.GELU(), nn.Linear(inner, dim))`: lucidrains' packages,
        flamingo-pytorch, CoLT5-attention, MEGABYTE-pytorch), with the items its `return` builds, read
        with the helper's own locals, not this method's (`_helper_locals`: the layer classes its plain
        assignments alias, decided by what `caller` passes). None when the items are not evident
        (`nn.Sequential(*layers)` of a list the helper fills)."""
        function = self.symbols.function_node(name)
        body = function.child_by_field_id(Field.BODY) if function is not None else None
        stmts = [c for c in body.named_children if c.type != "comment"] if body is not None else []
        call = stmts[-1].named_children[0] if stmts and stmts[-1].named_child_count == 1 else None
        func = call.child_by_field_id(Field.FUNCTION) if call is not None and call.type == "call" else None
        dotted = dotted_text(func, self.src) if func is not None else None
        if call is None or dotted is None or function is None:
            return None
        if name in self.helpers_read:
            return None  # a helper that builds itself
        callee = self._qualify_callee(dotted)
        saved, self.locals = self.locals, {}
        self.helpers_read.add(name)
        try:
            self.locals = self._helper_locals(function, stmts[:-1], caller)
            variants = self._container_variants(call)
        finally:
            self.locals = saved
            self.helpers_read.discard(name)
        args, kwargs = self._args(call)
        if any(not isinstance(a, Expr) or a.text.startswith("*") for a in args):
            return None  # `nn.Sequential(*layers)`: a list the helper fills
        out: list[Alt] = []
        for conds, items, keys, repeat, _ in variants:
            if len(items) != len(args) or keys or repeat:
                return None  # an item that is not a layer this reads: the chain's order is not evident
            out.append((conds, Ctor(callee, (), kwargs, items, keys, repeat, origin=name + FACTORY_ORIGIN)))
        return out or None

    def _helper_locals(self, function: Node, stmts: list[Node], caller: Node | None) -> dict[str, list[Alt] | _ListBuild]:
        """The layer classes a helper's plain assignments before its `return` alias, where what `caller`
        passes decides which (`proj = partial(nn.Conv2d, kernel_size=1) if channel_first else nn.Linear`
        with `channel_first=False` by default: gigagan-pytorch's `FeedForward`). A name whose choice the
        call does not decide (a test on anything but a parameter given as a literal) is left out, as before:
        its items stay as written. Only straight-line helpers: a statement that is not an assignment (an
        `if`, a loop) leaves every name out."""
        if caller is None or any(
                st.type != "expression_statement" or st.named_child_count != 1
                or st.named_children[0].type != "assignment" for st in stmts):
            return {}
        truth = self._passed_truth(function, caller)
        out: dict[str, list[Alt] | _ListBuild] = {}
        for st in stmts:
            assignment = st.named_children[0]
            target, value = assignment.child_by_field_id(Field.LEFT), assignment.child_by_field_id(Field.RIGHT)
            if target is None or value is None or target.type != "identifier":
                continue
            name = self.src.text(target)
            out.pop(name, None)
            saved, self.locals = self.locals, out
            try:
                alts = self._alternatives(value)
            finally:
                self.locals = saved
            decided: list[Alt] = []
            for conds, v in alts:
                kept = [truth.get(c) for c in conds]
                if any(k is None for k in kept):
                    decided = []
                    break
                if all(kept):
                    decided.append(((), v))
            if decided and all(isinstance(v, _Callee) for _, v in decided):
                out[name] = decided
        return out

    def _passed_truth(self, function: Node, call: Node) -> dict[str, bool]:
        """`{"channel_first": False, "not (channel_first)": True}` for each parameter of `function` that
        `call` gives (by keyword or position) or leaves at its default as a literal whose truth is evident
        (`True`, `False`, `None`, a number, a string); nothing once the call unpacks `*args` or `**kwargs`."""
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        given = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if any(a.type in ("list_splat", "dictionary_splat") for a in given):
            return {}
        ps = params(function, self.src)
        positional = [a for a in given if a.type != "keyword_argument"]
        keywords: dict[str, str] = {}
        for a in given:
            if a.type == "keyword_argument":
                key, value = a.child_by_field_id(Field.NAME), a.child_by_field_id(Field.VALUE)
                if key is not None and value is not None:
                    keywords[self.src.text(key)] = self.src.norm(value)
        out: dict[str, bool] = {}
        for i, p in enumerate(ps):
            if p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
                continue
            if p.name in keywords:
                text: str | None = keywords[p.name]
            elif i < len(positional) and p.kind is POSITIONAL:
                text = self.src.norm(positional[i])
            else:
                text = p.default
            truth = literal_truth(text)
            if truth is not None:
                out[p.name] = truth
                out[_negate(p.name)] = not truth
        return out

    def _default_class(self, text: str | None) -> str | None:
        """The qualified class a parameter's default names (`nn.GELU`, `LayerNorm`), else None."""
        if not text or not _DOTTED.match(text) or not text.rsplit(".", 1)[-1][:1].isupper():
            return None
        root = text.split(".")[0]
        if self.symbols.has_class(text) or self.symbols.is_imported(root):
            return self._qualify_callee(text)
        return None

    def _key_text(self, text: str) -> str | None:
        """The string a key expression evidently holds: a literal, or a parameter's literal default."""
        text = text.strip()
        if text in self.defaults and text not in self.locals:
            text = (self.defaults[text] or "").strip()
        elif "." in text and not self.nested:
            held = self._config_field(text)
            return held if held is not None and held.isidentifier() else None
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and text[1:-1].isidentifier():
            return text[1:-1]
        return None

    def _config_field(self, text: str) -> str | None:
        """`config.hidden_act` with `config` a parameter of the class's own `__init__`, without a default,
        annotated with a config class of this file, and `config.hidden_act` assigned nowhere in `__init__`: the
        field's string default there (`scope.config_fields`), else None."""
        if text in self.config_keys:
            return self.config_keys[text]
        root, _, name = text.partition(".")
        found: str | None = None
        init = self.init_node
        if (init is not None and root in self.init_params and name.isidentifier() and root not in self.locals
                and root not in self.mutated and self.defaults.get(root) is None
                and not re.search(rf"\b{re.escape(text)}\s*(?:[-+*/%&|^]|//|\*\*|<<|>>)?=(?!=)", self.src.text(init))):
            annotation = init_annotations(init, self.src, lambda written: written).get(root, "")
            definition = self.symbols.class_node(annotation) if annotation.isidentifier() else None
            found = field_default(definition, name, self.src) if definition is not None else None
        self.config_keys[text] = found
        return found

    def _table_values(self, dotted: str, key_text: str) -> Iterator[Node]:
        """The values at an evident key of `TABLE[key]`, for a same-file dict literal, in order."""
        if "." in dotted or dotted in self.locals or not self.symbols.is_module_value(dotted):
            return
        key = self._key_text(key_text)
        assignment = self.symbols.values.get(dotted)
        table = assignment.child_by_field_id(Field.RIGHT) if assignment is not None else None
        if key is None or table is None or table.type != "dictionary":
            return
        for pair in table.named_children:
            k, v = pair.child_by_field_id(Field.KEY), pair.child_by_field_id(Field.VALUE)
            if pair.type == "pair" and k is not None and v is not None and self._key_text(self.src.text(k)) == key:
                yield v

    def _table_entry(self, dotted: str, key_text: str) -> str | None:
        """The layer class `TABLE[key]` names, for a same-file dict literal of layer classes."""
        for v in self._table_values(dotted, key_text):
            name = dotted_text(v, self.src)
            root = name.split(".")[0] if name is not None else ""
            if name is not None and (self.symbols.has_class(name) or (
                    self.symbols.is_imported(root) and name.rsplit(".", 1)[-1][:1].isupper())):
                return self._qualify_callee(name)
        return None

    def _class_attribute_class(self, dotted: str) -> str | None:
        """The layer class `self.X` names through a class attribute (`names.class_attributes`): the first
        same-file class in the analysed class's order whose body assigns `X`, its value a layer class;
        None when an attribute of that name is bound here or any of those classes assigns `.X`."""
        receiver, _, attr = dotted.partition(".")
        if receiver != "self" or not attr.isidentifier() or attr in self.state:
            return None
        for name in self.table.mro(self.class_name):
            node = self.symbols.class_node(name)
            if node is None or assigns_instance_attribute(node, attr, self.src):
                return None
            value = class_attribute(node, attr, self.src)
            if value is not None:
                return self._default_class(dotted_text(value, self.src))
        return None

    def _factory_entry(self, call: Node, instance: bool) -> str | None:
        """The layer class a same-file table factory (`names.table_factories`) returns for the key `call`
        passes, when the key is evident (a literal, a parameter's literal default) and names an entry of a
        same-file dict of layer classes; `instance`: the factory calls the entry (`return _ACTS[name]()`)."""
        func = call.child_by_field_id(Field.FUNCTION)
        name = self.src.text(func) if func is not None and func.type == "identifier" else None
        if name is None or self.symbols.has_class(name) or name in self.locals:
            return None
        function = self.symbols.function_node(name)
        lookup = table_lookup(function, self.src) if function is not None else None
        if lookup is None or lookup.instance != instance:
            return None
        text = argument_text(lookup, call, self.src)
        key = self._key_text(text) if text is not None else None
        return self._table_entry(lookup.table, f'"{lookup.key(key)}"') if key is not None else None

    def _table_instance(self, dotted: str, key_text: str) -> str | None:
        """The layer class of the instance `TABLE[key]` holds (`{"gelu": nn.GELU(), ...}`), for a same-file
        dict literal and a key evident here; only an entry built without arguments."""
        first = next(self._table_values(dotted, key_text), None)
        func = first.child_by_field_id(Field.FUNCTION) if first is not None and first.type == "call" else None
        args = first.child_by_field_id(Field.ARGUMENTS) if first is not None else None
        if func is None or args is None or args.named_child_count:
            return None
        return self._default_class(dotted_text(func, self.src))

    def _or_default(self, node: Node) -> Node | None:
        """`p or Default` where `p` is a parameter defaulting to None that nothing here rebound: the caller's
        default is `Default` (as `default(p, Default)` in `_fallback`); else None."""
        left, right = node.child_by_field_id(Field.LEFT), node.child_by_field_id(Field.RIGHT)
        operator = node.child_by_field_id(Field.OPERATOR)
        if left is None or right is None or operator is None or self.src.text(operator) != "or":
            return None
        name = self.src.text(left) if left.type == "identifier" else None
        if name is None or name in self.locals or (self.defaults.get(name) or "").strip() != "None":
            return None
        return right

    def _getattr_args(self, call: Node) -> tuple[str, str] | None:
        """(owner, name) of `getattr(owner, "Name")`, the name a literal or a parameter's literal default."""
        func = call.child_by_field_id(Field.FUNCTION)
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        if func is None or self.src.text(func) != "getattr" or args_node is None:
            return None
        args = [a for a in args_node.named_children if a.type != "comment"]
        owner = dotted_text(args[0], self.src) if len(args) == 2 else None
        key = self._key_text(self.src.text(args[1])) if owner is not None else None
        return (owner, key) if owner is not None and key is not None else None

    def _getattr_class(self, call: Node) -> str | None:
        """`getattr(nn, "GELU")` (or a parameter defaulting to it): the layer class it names."""
        found = self._getattr_args(call)
        if found is None or not found[1][:1].isupper() or not self.symbols.is_imported(found[0].split(".")[0]):
            return None
        return self.symbols.qualify(f"{found[0]}.{found[1]}")

    def _qualify_callee(self, dotted: str) -> str:
        return dotted if self.symbols.has_class(dotted) else self.symbols.qualify(dotted)

    def _function_value(self, dotted: str | None) -> str | None:
        """The activation function a name denotes (`F.gelu`, `torch.nn.functional.silu`, a same-file function
        computing the exact GELU: `formula_functions`), else None."""
        if dotted is not None and "." not in dotted and not self.symbols.has_class(dotted):
            function = self.symbols.function_node(dotted)
            if function is not None and function.type == "function_definition" and exact_gelu(
                    self.src.text(function)):
                return "torch.nn.functional.gelu"
        if dotted is None or not self.symbols.is_imported(dotted.split(".")[0]):
            return None
        qualified = self.symbols.qualify(dotted)
        return qualified if qualified in FUNCTION_VALUES else None

    def _note_mutation(self, call: Node) -> None:
        """Note the name or `self.<attr>` that `call` changes in place (`cfg.update(...)`, `cfg.pop("type")`)."""
        func = call.child_by_field_id(Field.FUNCTION)
        if func is None or func.type != "attribute":
            return
        obj = func.child_by_field_id(Field.OBJECT)
        method = func.child_by_field_id(Field.ATTRIBUTE)
        if (obj is not None and method is not None and obj.type in ("identifier", "attribute")
                and self.src.text(method) in _MUTATORS):
            self.mutated.add(self.src.text(obj))

    def _config_layer(self, dotted: str, args: tuple[Value, ...], kwargs: tuple[Kwarg, ...], *,
                      pair: bool = False) -> Ctor | None:
        """The torch layer one of mmcv's builders builds from a config dict evident here (`config_registry`):
        a literal dict, or a parameter that nothing here rebound with a literal dict default (`None` for a
        convolution). `pair`: the call is `build_norm_layer(...)[1]` (a norm builder returns `(name, layer)`)."""
        root = dotted.split(".")[0]
        # A class of this file is never mmcv's builder; asked first, without consulting the name (which would make
        # the class's user depend on the class's whole text: `names.symbols`).
        if root in self.locals or root in self.symbols.classes or not self.symbols.is_imported(root):
            return None
        kind = builder_kind(self.symbols.qualify(dotted))
        if kind is None or (kind == "norm") != pair or not args or not isinstance(args[0], Expr):
            return None
        text = args[0].text.strip()
        if text in self.mutated:
            return None
        if text.startswith("self.") and text[len("self."):].isidentifier():
            # `build_norm_layer(self.norm_cfg, c)` (often in a method `__init__` calls) with `self.norm_cfg =
            # norm_cfg` once, unconditionally, in `__init__` itself: that parameter, read as below.
            text = self.held_params.get(text[len("self."):]) or ""
            if not text:
                return None
        elif text.isidentifier() and text != "None" and self.nested:
            return None  # a parameter of the method being read, or a global: not `__init__`'s parameter
        if text.isidentifier() and text != "None":
            if text in self.locals or text in self.mutated or not (self.defaults.get(text) or "").strip():
                return None
            text = (self.defaults[text] or "").strip()
        return built_layer(kind, text, args[1:], kwargs, f"{dotted.rsplit('.', 1)[-1]} (mmcv's registry)")

    def _config_pair(self, call: Node) -> Ctor | None:
        """`build_norm_layer(cfg, c)[1]`: the norm layer built, when its config is evident (`_config_layer`)."""
        func = call.child_by_field_id(Field.FUNCTION)
        dotted = dotted_text(func, self.src) if func is not None else None
        if dotted is None:
            return None
        args, kwargs = self._args(call)
        return self._config_layer(dotted, args, kwargs, pair=True)

    def _config_pair_target(self, target: Node, value: Node) -> None:
        """`self.norm1_name, norm1 = build_norm_layer(norm_cfg, c, postfix=1)` with the config evident here
        (`_config_pair`): the local `norm1` holds the layer built (the name is read where it is added)."""
        leaves = [c for c in target.named_children if c.type != "comment"]
        if len(leaves) != 2 or leaves[1].type != "identifier":
            return
        built = self._config_pair(value)
        name = self.src.text(leaves[1])
        if built is not None:
            self.locals[name] = [((), built)]
        else:
            self.locals.pop(name, None)  # whatever it held before, it holds this call's result now

    def _named_property(self, name: Node, self_name: str) -> str | None:
        """The property of the class that returns the child named by `name` (`self.norm1_name`): a method
        decorated `@property` whose body is `return getattr(self, self.norm1_name)` (a docstring aside)."""
        dotted = dotted_text(name, self.src)
        if dotted is None or not dotted.startswith(f"{self_name}.") or dotted.count(".") != 1:
            return None
        found: list[str] = []
        for cls in self.table.mro(self.class_name):
            info = self.table.infos.get(cls)
            for method, node in (info.methods.items() if info is not None else ()):
                parent = node.parent
                if parent is None or parent.type != "decorated_definition" or not any(
                        d.type == "decorator" and self.src.text(d).lstrip("@").strip() == "property"
                        for d in parent.named_children):
                    continue
                self.symbols.note_method(cls, method)  # its text is read (a base's property: re-read when edited)
                body = node.child_by_field_id(Field.BODY)
                stmts = [c for c in (body.named_children if body is not None else ()) if c.type != "comment"]
                if stmts and stmts[0].type == "expression_statement" and stmts[0].named_child_count == 1 and (
                        stmts[0].named_children[0].type == "string"):
                    stmts = stmts[1:]
                own = params(node, self.src)
                me = own[0].name if own else ""
                if len(stmts) == 1 and "".join(self.src.text(stmts[0]).split()) == (
                        f"returngetattr({me},{me}.{dotted.split('.', 1)[1]})"):
                    found.append(method)
        return found[0] if len(set(found)) == 1 else None

    def _default_function(self, name: str) -> str | None:
        """The activation function a parameter's default names (`transform_act_fn=nn.functional.gelu`,
        torchmultimodal's heads), else None: the value the class holds unless a caller passes another, as a
        layer class default (`act_layer=nn.GELU`) is read."""
        default = (self.defaults.get(name) or "").strip() if "." not in name else ""
        return self._function_value(default) if default and "(" not in default else None

    def _getattr_function(self, call: Node) -> str | None:
        """`getattr(F, "gelu")` (or a parameter defaulting to `"gelu"`): the activation function it names."""
        found = self._getattr_args(call)
        return self._function_value(f"{found[0]}.{found[1]}") if found is not None else None

    def _table_function(self, dotted: str, key_text: str) -> str | None:
        """The activation function `TABLE[key]` names, for a same-file dict literal and a key evident here."""
        first = next(self._table_values(dotted, key_text), None)
        return self._function_value(dotted_text(first, self.src)) if first is not None else None
        key = self._key_text(key_text)
        assignment = self.symbols.values.get(dotted)
        table = assignment.child_by_field_id(Field.RIGHT) if assignment is not None else None
        if key is None or table is None or table.type != "dictionary":
            return None
        for pair in table.named_children:
            k, v = pair.child_by_field_id(Field.KEY), pair.child_by_field_id(Field.VALUE)
            if pair.type == "pair" and k is not None and v is not None and self._key_text(self.src.text(k)) == key:
                return self._function_value(dotted_text(v, self.src))
        return None

    def _torch_layer(self, returned: Node) -> Node | None:
        """`returned` (what a same-file helper returns for the key passed: `_chosen_return`) when it builds a torch
        layer — torchani's `parse_activation(activation)` with `activation="gelu"`: `if module == "gelu": return
        torch.nn.GELU()` — a class of `torch.nn` called with literal arguments only (nothing of the helper's own
        scope), else None."""
        func = returned.child_by_field_id(Field.FUNCTION) if returned.type == "call" else None
        dotted = dotted_text(func, self.src) if func is not None else None
        if dotted is None or not self.symbols.is_imported(dotted.split(".")[0]):
            return None
        qualified = self.symbols.qualify(dotted)
        if not qualified.startswith("torch.nn.") or not qualified.rsplit(".", 1)[-1][:1].isupper() or (
                not is_constructor(qualified, False)):
            return None
        args_node = returned.child_by_field_id(Field.ARGUMENTS)
        for a in (args_node.named_children if args_node is not None else ()):
            value = a.child_by_field_id(Field.VALUE) if a.type == "keyword_argument" else a
            if value is None or value.type not in _LITERALS:
                return None
        return returned

    def _chosen_return(self, name: str, call: Node) -> Node | None:
        """What a same-file helper returns for the key passed here: the one `return` of the
        `if <first parameter> == "<key>":` clause the key selects (a literal or a parameter's literal default),
        passed alone, by position or by the parameter's name (`get_act(act_type=act_type)`)."""
        if "." in name or self.symbols.has_class(name):
            return None
        function = self.symbols.function_node(name)
        body = function.child_by_field_id(Field.BODY) if function is not None else None
        ps = params(function, self.src) if function is not None else ()
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        args = [a for a in (args_node.named_children if args_node is not None else ()) if a.type != "comment"]
        if body is None or not ps or len(args) != 1:
            return None
        passed: Node | None = args[0]
        if args[0].type == "keyword_argument":
            keyword = args[0].child_by_field_id(Field.NAME)
            passed = args[0].child_by_field_id(Field.VALUE) if (
                keyword is not None and self.src.text(keyword) == ps[0].name) else None
        if passed is None or passed.type in ("list_splat", "dictionary_splat"):
            return None
        key = self._key_text(self.src.text(passed))
        if key is None:
            return self._only_return(body)
        for stmt in body.named_children:
            clauses = [stmt, *(c for c in stmt.named_children if c.type == "elif_clause")] if (
                stmt.type == "if_statement") else []
            for clause in clauses:
                test, block = clause.child_by_field_id(Field.CONDITION), clause.child_by_field_id(Field.CONSEQUENCE)
                if test is None or block is None:
                    continue
                m = re.fullmatch(rf"{re.escape(ps[0].name)}\s*==\s*(['\"])(\w+)\1", self.src.text(test).strip())
                returns = [s for s in block.named_children if s.type != "comment"]
                if (m is None or m.group(2) != key or len(returns) != 1 or returns[0].type != "return_statement"
                        or returns[0].named_child_count != 1):
                    continue
                return returns[0].named_children[0]
        return None

    def _only_return(self, body: Node) -> Node | None:
        """The value of a helper whose every `return` gives the same torch layer, its other paths raising
        (attr-eomt's `_act(name)`: `if name == "gelu": return nn.GELU()`, then `raise NotImplementedError`):
        whatever the key, a call that returns builds that layer. None when the last statement may fall
        through (an implicit `None`), or a return differs or builds no torch layer with literal arguments."""
        stmts = [c for c in body.named_children if c.type != "comment"]
        if not stmts or stmts[-1].type not in ("raise_statement", "return_statement"):
            return None
        returns = [r for r in own_nodes(body) if r.type == "return_statement"]
        values = {self.src.norm(r.named_children[0]) for r in returns if r.named_child_count == 1}
        if not returns or len(values) != 1 or any(r.named_child_count != 1 for r in returns):
            return None
        value = returns[0].named_children[0]
        return value if self._torch_layer(value) is not None else None

    def _call_alts(self, call: Node) -> list[Alt]:
        func = call.child_by_field_id(Field.FUNCTION)
        if func is None:
            return [((), Expr(self.src.norm(call)))]
        if (moved := self._module_returning_self(func)) is not None:
            return moved
        function = self._getattr_function(call)
        # A same-file helper choosing by the key passed here (read once): an activation function it returns
        # (torch's and DETR's `_get_activation_fn(activation)`: `if activation == "gelu": return F.gelu`), or a
        # torch layer it builds (`parse_activation(act)` returning `nn.GELU()`).
        picked = self._chosen_return(self.src.text(func), call) if (
            function is None and func.type == "identifier") else None
        if picked is not None:
            function = self._function_value(dotted_text(picked, self.src))
        if function is not None:
            return [((), Expr(function))]
        if picked is not None and (layer := self._torch_layer(picked)) is not None:
            return self._call_alts(layer)
        args, kwargs = self._args(call)
        callees: list[tuple[Conds, str, str | None]] = []
        chosen_by: dict[str, str] = {}  # a class a local holds -> the undecided test that picks it (`_Callee.chosen`)
        if func.type == "subscript":
            value = func.child_by_field_id(Field.VALUE)
            dotted = dotted_text(value, self.src)
            entry = self._table_entry(dotted, _subscript_text(func, self.src)) if dotted is not None else None
            if entry is not None:
                # `ACTIVATIONS[act]()` with a same-file dict of layer classes and a key evident here.
                callees.append(((), entry, None))
            elif dotted is not None:
                callees.append(((), self._qualify_callee(dotted), _subscript_text(func, self.src)))
        elif func.type == "call" and (named := self._getattr_class(func)) is not None:
            callees.append(((), named, None))  # `getattr(nn, activation)()` with the name evident here
        elif func.type == "call" and (named := self._factory_entry(func, instance=False)) is not None:
            callees.append(((), named, None))  # `get_act_layer(act)()`: a same-file `return _ACTS[name]`
        elif func.type == "call" and (chosen := self._returned_class_alts(func)):
            callees.extend(chosen)  # `MaybeSyncBatchnorm(sync)(dim)`: a same-file helper returning classes
        else:
            dotted = dotted_text(func, self.src)
            if dotted is not None and dotted in self.locals:
                local = self.locals[dotted]
                if isinstance(local, list):
                    for c, v in local:
                        if isinstance(v, _Callee):
                            callees.append((c, v.qualified, None))
                            if v.chosen is not None:
                                chosen_by[v.qualified] = v.chosen
                        elif isinstance(v, Ctor):  # calling an instance: keep the instance's ctor
                            callees.append((c, v.callee, v.lookup))
            elif dotted is not None and (configured := self._config_layer(dotted, args, kwargs)) is not None:
                return [((), configured)]  # `build_activation_layer(act_cfg)` with `act_cfg=dict(type='GELU')`
            elif dotted is not None and (held := self._class_attribute_class(dotted)) is not None:
                callees.append(((), held, None))  # `self.act_layer()` with `act_layer = nn.GELU` in the class body
            elif dotted is not None and (classes := _first(self._branch_classes(dotted, call), self._returned_classes, dotted)):
                # `MaybeLora = maybe_lora(lora)` where the helper returns `nn.Linear` or
                # `partial(LoRALinear, ...)`: the value is one of those classes, by condition.
                text = self.src.norm(call)
                many = len(classes) > 1
                return [(((f"{text} is {c}",) if many else ()), _Callee(c)) for c in classes]
            elif dotted is not None and (fallback := self._fallback(dotted, call)) is not None:
                # `activation = default(activation, nn.GELU)` with `activation=None`: a same-file helper
                # returning its first argument unless None, else the second (`adopter.analysis.names.default_helpers`).
                return self._alternatives(fallback)
            elif dotted is not None and (first := self._passed_through(dotted, call)) is not None:
                # `apply_wd(nn.Linear(...))`, `zero_init(layer)`: a same-file helper that returns the
                # module it was given (after tagging or initialising it) builds what its argument builds.
                return self._alternatives(first)
            elif dotted is not None and (entry := self._factory_entry(call, instance=True)) is not None:
                # `get_act_layer(act)`: a same-file `return _ACTS[name]()`, an instance of the entry (its
                # arguments are the factory's, not the layer's).
                return [((), Ctor(entry))]
            elif dotted is not None and (bound := self._module_partial(dotted)) is not None:
                # `Linear = partial(nn.Linear, bias=False)` at module level, then `Linear(dim, hidden)`: the
                # layer class called with the partial's keywords first (the call's own win, as in Python).
                own = {k.name for k in kwargs}
                kwargs = (*(k for k in bound[1] if k.name not in own), *kwargs)
                callees.append(((), bound[0], None))
            elif dotted is not None and (method_built := self._method_built(dotted, call)) is not None:
                return method_built  # `self.gate = self._build_gate()` returning `nn.Linear(...)`
            elif dotted is not None and (built := self._factory_class(dotted)) is not None:
                # A same-file helper that returns one layer (`conv3x3(...)` returning `nn.Conv2d(...)`):
                # the binding is that layer (its arguments are the helper's, as written here).
                if built in CONTAINERS and (returned := self._factory_container(dotted, call)) is not None:
                    return returned  # `FeedForward(dim)` returning `nn.Sequential(norm, Linear, GELU, Linear)`
                callees.append(((), built, None))
            elif dotted is not None:
                qualified = self._qualify_callee(dotted)
                if not is_constructor(qualified, self.symbols.has_class(dotted)):
                    return [((), Expr(self.src.norm(call)))]
                callees.append(((), qualified, None))
        if not callees:
            return [((), Expr(self.src.norm(call)))]
        out: list[Alt] = []
        for conds, callee, lookup in callees:
            if callee == "functools.partial" and args:
                for c, p_args, p_kwargs in self._partial_variants(args, kwargs):
                    joined = _join(conds, c)
                    if joined is not None:
                        out.append((joined, Ctor(callee, p_args, p_kwargs, lookup=lookup)))
                continue
            if callee not in CONTAINERS:
                origin = f"{CHOSEN_BY}`{chosen_by[callee]}`" if callee in chosen_by else None
                out.append((conds, Ctor(callee, args, kwargs, lookup=lookup, origin=origin)))
                continue
            for extra, items, keys, repeat, once in self._container_variants(call):
                joined = _join(conds, extra)
                if joined is not None:
                    lead = self._lead(call) if callee == SEQUENTIAL and repeat is not None and not once else ()
                    out.append((joined, Ctor(callee, () if items else args, kwargs, items, keys, repeat, lookup,
                                             once=once, lead=lead)))
        return out

    def _module_returning_self(self, func: Node) -> list[Alt] | None:
        """`nn.Linear(d, h).to(device)`, `nn.Sequential(...).cuda()`: a method of `nn.Module` that returns the
        module itself (`MODULE_SELF_METHODS`) called on a construction builds what the construction builds. None
        where the receiver is not a call or builds no layer (a tensor's `.to` stays the expression it is)."""
        if func.type != "attribute":
            return None
        method = func.child_by_field_id(Field.ATTRIBUTE)
        receiver = func.child_by_field_id(Field.OBJECT)
        if method is None or receiver is None or receiver.type != "call":
            return None
        if self.src.text(method) not in MODULE_SELF_METHODS:
            return None
        alts = self._call_alts(receiver)
        return alts if alts and all(isinstance(v, Ctor) for _, v in alts) else None

    def _partial_variants(self, args: tuple[Value, ...], kwargs: tuple[Kwarg, ...]
                          ) -> list[tuple[Conds, tuple[Value, ...], tuple[Kwarg, ...]]]:
        """`partial(f, ...)`'s arguments, by condition. Of a function the canonical table reads
        (`PARTIAL_FUNCTIONS`), two locals of this method are read as what they hold (x-transformers'
        `Attend`: `attn_dim = -2 if inverted_attention else -1`, `softmax_fn = partial(F.softmax, dim=attn_dim)`,
        then `partial(softmax_fn, dtype=torch.float32)`): a partial of a local partial is the one partial Python
        builds (`functools.partial` flattens it: the inner's arguments first, the outer's keywords win), and a
        keyword held in a local bound to literals under tests gives one variant per literal, under its test.
        Anything else stays as written."""
        first = args[0]
        inner = self.locals.get(first.text) if isinstance(first, Expr) and first.text.isidentifier() else None
        bases: list[tuple[Conds, tuple[Value, ...], tuple[Kwarg, ...]]] = []
        if isinstance(inner, list) and inner and all(
                isinstance(v, Ctor) and v.callee == "functools.partial" and v.args and not v.items for _, v in inner):
            own = {k.name for k in kwargs}
            for c, v in inner:
                assert isinstance(v, Ctor)
                bases.append((c, (*v.args, *args[1:]), (*(k for k in v.kwargs if k.name not in own), *kwargs)))
        else:
            bases.append(((), (self._partial_function(first), *args[1:]), kwargs))
        out: list[tuple[Conds, tuple[Value, ...], tuple[Kwarg, ...]]] = []
        for conds, p_args, p_kwargs in bases:
            grown = [(conds, p_kwargs)]
            if p_args and isinstance(p_args[0], Expr) and p_args[0].text in PARTIAL_FUNCTIONS:
                for i, k in enumerate(p_kwargs):
                    held = self._literal_alts(k.value)
                    if held is None:
                        continue
                    grown = [(joined, (*kw[:i], Kwarg(k.name, Expr(text)), *kw[i + 1:]))
                             for c0, kw in grown for c, text in held if (joined := _join(c0, c)) is not None]
            out += [(c, p_args, kw) for c, kw in grown[:MAX_VARIANTS]]
        return out

    def _literal_alts(self, value: Value) -> list[tuple[Conds, str]] | None:
        """The literals a local of this method holds, each under its test (`attn_dim = -2 if inverted else -1`);
        None unless it is a local bound only to literal numbers or strings."""
        if not isinstance(value, Expr) or not value.text.isidentifier():
            return None
        held = self.locals.get(value.text)
        if not isinstance(held, list) or not held:
            return None
        out: list[tuple[Conds, str]] = []
        for c, v in held:
            if not isinstance(v, Expr) or literal_truth(v.text) is None or v.text in ("True", "False", "None"):
                return None
            out.append((c, v.text))
        return out

    def _partial_function(self, first: Value) -> Value:
        """`partial(F.softmax, dim=-1)`: the function qualified (`torch.nn.functional.softmax`) when it is
        one the canonical table reads as a call (`PARTIAL_FUNCTIONS`), else as written."""
        if not isinstance(first, Expr) or not self.symbols.is_imported(first.text.split(".")[0]):
            return first
        qualified = self.symbols.qualify(first.text)
        return Expr(qualified) if qualified in PARTIAL_FUNCTIONS else first

    def _args(self, call: Node) -> tuple[tuple[Value, ...], tuple[Kwarg, ...]]:
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        if args_node is None or args_node.type != "argument_list":
            return (), ()
        args: list[Value] = []
        kwargs: list[Kwarg] = []
        for a in args_node.named_children:
            if a.type == "comment":
                continue
            if a.type == "keyword_argument":
                name = a.child_by_field_id(Field.NAME)
                value = a.child_by_field_id(Field.VALUE)
                if name is not None and value is not None:
                    kwargs.append(Kwarg(self.src.text(name), Expr(self.src.norm(value))))
            elif a.type == "dictionary_splat":
                kwargs.append(Kwarg("**", Expr(self.src.norm(a)[2:])))
            else:
                args.append(Expr(self.src.norm(a)))
        return tuple(args), tuple(kwargs)

    def _module_partial(self, name: str) -> tuple[str, tuple[Kwarg, ...]] | None:
        """(layer class, keywords) of a module-level `name = partial(LayerClass, key=value, ...)` (keywords
        only, the class imported or defined in this file); None for anything else."""
        # A same-file class is asked about first: its existence is all a user depends on (`is_module_value`
        # would make the user depend on the class's whole text).
        if "." in name or name in self.locals or self.symbols.has_class(name) or not self.symbols.is_module_value(name):
            return None
        assignment = self.symbols.values.get(name)
        right = assignment.child_by_field_id(Field.RIGHT) if assignment is not None else None
        func = right.child_by_field_id(Field.FUNCTION) if right is not None and right.type == "call" else None
        if func is None or self.symbols.qualify(dotted_text(func, self.src) or "") != "functools.partial":
            return None
        assert right is not None
        args, kwargs = self._args(right)
        first = args[0].text if len(args) == 1 and isinstance(args[0], Expr) else None
        root = first.split(".")[0] if first else ""
        if first is None or any(k.name == "**" for k in kwargs) or not (self.symbols.has_class(first) or (
                self.symbols.is_imported(root) and first.rsplit(".", 1)[-1][:1].isupper())):
            return None
        qualified = self._qualify_callee(first)
        return (qualified, kwargs) if is_constructor(qualified, self.symbols.has_class(first)) else None

    def _ctor_alts(self, node: Node) -> list[Ctor]:
        return [v for _, v in self._alternatives(node) if isinstance(v, Ctor)]

    def _item_alts(self, node: Node) -> list[Ctor]:
        """A container item's constructors; for `self.act` bound once, unconditionally, earlier in `__init__`,
        that module (`nn.Sequential(conv, self.act, norm)` holds the same GELU), so that the items keep their
        positions: an item left out would make its neighbours look adjacent (ConvMixer's stem, conv → GELU →
        BatchNorm, read as conv → BatchNorm)."""
        found = self._ctor_alts(node)
        if found or node.type != "attribute":
            return found
        dotted = dotted_text(node, self.src)
        if dotted is None or dotted.count(".") != 1 or not dotted.startswith("self."):
            return found
        group = self.state.get(dotted[len("self."):], [])
        if len(group) == 1 and not group[0].conds and isinstance(group[0].value, Ctor):
            return [group[0].value]
        return found

    def _container_variants(self, call: Node) -> list[_Variant]:
        """The item lists a container call can hold, one per consistent choice of its items'
        alternatives (`first = A(...) if c else B(...)`; `Sequential(first, *[...])`), each with its
        condition; a single unconditional variant in the usual case. The last field says the items are one
        pass of the loops that fill a list (`_one_pass`)."""
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        if args_node is None or args_node.type == "generator_expression":
            items, keys, repeat = self._container_items(call)
            return [((), items, keys, repeat, False)]
        arg_nodes = [a for a in args_node.named_children if a.type not in ("comment", "keyword_argument")]
        elements = arg_nodes
        if len(arg_nodes) == 1 and arg_nodes[0].type in ("list", "tuple"):
            elements = list(arg_nodes[0].named_children)
        elif len(arg_nodes) == 1:
            once = self._one_pass(arg_nodes[0])
            if once is not None:
                return once
            self._written_once(arg_nodes[0])
            items, keys, repeat = self._container_items(call)
            return [((), items, keys, repeat, False)]
        positions: list[list[tuple[Conds, Ctor]]] = []
        for a in elements:
            inner = a.named_children[0] if a.type == "list_splat" and a.named_child_count else None
            body = inner.child_by_field_id(Field.BODY) if inner is not None else None
            if inner is not None and body is not None and inner.type in ("list_comprehension", "generator_expression"):
                alts = [(c, v) for c, v in self._alternatives(body) if isinstance(v, Ctor)]
                if alts:
                    positions.append(alts)
            elif a.type == "list_splat" or a.type == "comment" or (a.type == "tuple" and a.named_child_count == 2):
                items, _, _ = self._items(a) if a.type != "tuple" else self._items_of_pairs(a)
                positions.extend([((), c)] for c in items)
            else:
                alts = [(c, v) for c, v in self._alternatives(a) if isinstance(v, Ctor)]
                if not alts:
                    alts = [((), v) for v in self._item_alts(a)]
                if alts:
                    positions.append(alts)
        if any(len(p) > 1 for p in positions):
            return [(conds, items_, (), None, False) for conds, items_ in _choices(positions)]
        items, keys, repeat = self._container_items(call)
        return [((), items, keys, repeat, False)]

    def _one_pass(self, arg: Node) -> list[_Variant] | None:
        """`self.main = nn.Sequential(*sequence)` of a local list filled in loops in an evident order
        (`_ListBuild.ordered`): the items of one pass of each loop, one variant per consistent choice of the
        items' alternatives (`norm_layer` aliased under `if/else`). Each pair of neighbours is a pair the
        Sequential runs whenever its loop runs (within a body, and across a loop's edge when it runs at
        all). Its indexes past the first loop are not the list's, so only for an attribute nothing indexes
        (`self.main[3]`); None otherwise, and for lists filled without a loop (read exactly already). The
        first loop's count stays beside the items (`Ctor.repeat`, with `Ctor.once`): hover and `adopter arch`
        show it as they did for the items' union."""
        inner = arg.named_children[0] if arg.type == "list_splat" and arg.named_child_count else None
        name = self.src.text(inner) if inner is not None and inner.type == "identifier" else None
        local = self.locals.get(name) if name is not None else None
        if (not isinstance(local, _ListBuild) or not local.ordered or not local.looped or not local.positions
                or self.target is None or self._indexed(self.target)):
            return None
        combos = _choices(local.positions)
        if not combos:
            return None
        assert name is not None
        self.unrolled_lists.add(name)
        self.item_spans[self.target] = tuple(local.spans)
        return [(conds, items_, (), local.repeat, True) for conds, items_ in combos]

    def _written_once(self, arg: Node) -> None:
        """`self.down = nn.Sequential(*layers)` of a local list whose items are each written once, in order,
        by statements outside loops (`layers = [nn.Conv2d(...), nn.BatchNorm2d(...)]`): the Sequential holds
        those items, so where each is written is kept as `_one_pass` keeps it. An addition under an `if`
        (`if expand_ratio != 1: layers.append(...)`) leaves the others where they were written: the items
        are the ones the container reads (`_container_items`), in that order, whichever way the test goes."""
        inner = arg.named_children[0] if arg.type == "list_splat" and arg.named_child_count else None
        local = self.locals.get(self.src.text(inner)) if inner is not None and inner.type == "identifier" else None
        if not isinstance(local, _ListBuild) or local.disordered or local.looped or self.target is None:
            return
        if any(len(alts) != 1 or alts[0][0] for alts in local.positions):
            return
        if [alts[0][1] for alts in local.positions] == local.items and len(local.spans) == len(local.items):
            self.item_spans[self.target] = tuple(local.spans)

    def _lead(self, call: Node) -> tuple[Ctor | None, ...]:
        """`nn.Sequential(*features)`: the list's first items at its own positions (`_ListBuild.lead`), when
        the class uses the list only to fill it, to build the Sequential and to call its items: any other
        use (`len(features)`, `f(features)`, `features.sort()` in another method) may change it."""
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        if len(args) != 1 or args[0].type != "list_splat" or not args[0].named_child_count:
            return ()
        name = self.src.text(args[0].named_children[0])
        local = self.locals.get(name)
        info = self.table.infos.get(self.class_name)
        if not isinstance(local, _ListBuild) or not any(local.lead) or info is None:
            return ()
        text = self.src.text(info.node)
        # Each addition written is one statement read (none in a comprehension, a lambda, a parent's code).
        if len(re.findall(rf"(?<![\w.]){re.escape(name)}\s*(?:\.append\(|\.extend\(|\+=)", text)) != local.grown:
            return ()
        for m in re.finditer(rf"(?<![\w.]){re.escape(name)}(?!\w)", text):
            if text[m.start() - 1:m.start()] != "*" and not _LIST_USE.match(text, m.end()):
                return ()
        return tuple(local.lead)

    def _indexed(self, attr: str) -> bool:
        """Whether the class's code indexes `self.<attr>` (`self.features[0](x)`)."""
        info = self.table.infos.get(self.class_name)
        return info is None or re.search(rf"\bself\.{re.escape(attr)}\s*\[", self.src.text(info.node)) is not None

    def _items_of_pairs(self, node: Node) -> tuple[tuple[Ctor, ...], tuple[str, ...], str | None]:
        """A `("name", module)` pair inside a container display."""
        _, value = node.named_children
        return tuple(self._ctor_alts(value)), (), None

    def _container_items(self, call: Node) -> tuple[tuple[Ctor, ...], tuple[str, ...], str | None]:
        args_node = call.child_by_field_id(Field.ARGUMENTS)
        if args_node is None:
            return (), (), None
        if args_node.type == "generator_expression":
            return self._items(args_node)
        arg_nodes = [a for a in args_node.named_children if a.type not in ("comment", "keyword_argument")]
        if len(arg_nodes) == 1:
            return self._items(arg_nodes[0])
        items: list[Ctor] = []
        for a in arg_nodes:
            sub = self._items(a)[0] if a.type == "list_splat" else tuple(self._item_alts(a))
            items.extend(sub)
        return tuple(items), (), None

    def _items(self, node: Node) -> tuple[tuple[Ctor, ...], tuple[str, ...], str | None]:
        """The modules a container argument lists: a list/tuple/dict display, a comprehension, a local list."""
        kind = node.type
        items: list[Ctor] = []
        keys: list[str] = []
        if kind == "list_splat" and node.named_child_count:
            return self._items(node.named_children[0])
        if kind in ("list", "tuple", "expression_list"):
            for child in node.named_children:
                if child.type == "list_splat":
                    items.extend(self._items(child)[0])
                elif child.type == "tuple" and child.named_child_count == 2:  # ("name", module) pairs
                    k, v = child.named_children
                    for c in self._ctor_alts(v):
                        items.append(c)
                        keys.append(_key_text(k, self.src))
                else:
                    items.extend(self._item_alts(child))
            return tuple(items), tuple(keys), None
        if kind in ("list_comprehension", "generator_expression", "dictionary_comprehension"):
            body = node.child_by_field_id(Field.BODY)
            repeat = None
            for clause in node.named_children:
                if clause.type == "for_in_clause":
                    right = clause.child_by_field_id(Field.RIGHT)
                    if right is not None:
                        repeat = _range_count(right, self.src) or self.src.norm(right)
                    break
            if body is not None and body.type == "pair":
                key_node = body.child_by_field_id(Field.KEY)
                value_node = body.child_by_field_id(Field.VALUE)
                if value_node is not None:
                    ctors = self._ctor_alts(value_node)
                    return tuple(ctors), tuple(_key_text(key_node, self.src) for _ in ctors), repeat
            if body is not None:
                return tuple(self._ctor_alts(body)), (), repeat
        if kind == "dictionary":
            for pair in node.named_children:
                if pair.type == "pair":
                    key_node = pair.child_by_field_id(Field.KEY)
                    value_node = pair.child_by_field_id(Field.VALUE)
                    if value_node is not None:
                        for c in self._ctor_alts(value_node):
                            items.append(c)
                            keys.append(_key_text(key_node, self.src))
            return tuple(items), tuple(keys), None
        if kind == "call":  # OrderedDict([...]) / dict(...)
            func = dotted_text(node.child_by_field_id(Field.FUNCTION), self.src) or ""
            args_node = node.child_by_field_id(Field.ARGUMENTS)
            if func.rsplit(".", 1)[-1] in ("OrderedDict", "dict") and args_node is not None:
                inner = [a for a in args_node.named_children if a.type != "comment"]
                if len(inner) == 1:
                    return self._items(inner[0])
            return tuple(self._ctor_alts(node)), (), None
        if kind in ("identifier", "attribute"):  # a local list, or a list attribute (`*self.features`)
            local = self.locals.get(self.src.text(node))
            if isinstance(local, _ListBuild):
                return tuple(local.items), (), local.repeat
            if isinstance(local, list):
                return tuple(v for _, v in local if isinstance(v, Ctor)), (), None
        return (), (), None


def _sequential_or_none(node: Node) -> Node:
    """The call of `nn.Sequential(...) if flag else None` (or `None if flag else nn.Sequential(...)`, in
    parentheses or not); any other node as it is."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type != "conditional_expression":
        return node
    parts = [c for c in node.named_children if c.type != "comment"]
    if len(parts) != 3:
        return node
    yes, no = parts[0], parts[2]
    if no.type == "none" and yes.type == "call":
        return yes
    if yes.type == "none" and no.type == "call":
        return no
    return node


def _one_layer_written(node: Node) -> bool:
    """Whether a container argument is one constructor call, or a conditional expression whose two branches
    each are (`SELayer(c) if use_se else nn.Identity()`, parenthesised or not): one item at its position,
    whichever way the test goes."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type == "call":
        return True
    parts = [c for c in node.named_children if c.type != "comment"]
    return node.type == "conditional_expression" and len(parts) == 3 and all(
        _one_layer_written(p) for p in (parts[0], parts[2]))


def _union_containers(group: list[_B]) -> list[_B]:
    """One binding per container statement: a container extended differently on two paths (appends
    under if/else in a loop) holds the union of the items."""
    out: list[_B] = []
    for b in group:
        if isinstance(b.value, Ctor) and b.value.callee in CONTAINERS:
            for k, o in enumerate(out):
                if (
                    o.span == b.span
                    and o.conds == b.conds
                    and isinstance(o.value, Ctor)
                    and o.value.callee == b.value.callee
                ):
                    items = list(o.value.items)
                    keys = list(o.value.keys)
                    for i, item in enumerate(b.value.items):
                        if item not in items:
                            items.append(item)
                            if i < len(b.value.keys):
                                keys.append(b.value.keys[i])
                    value = replace(o.value, items=tuple(items), keys=tuple(keys), repeat=o.value.repeat or b.value.repeat,
                                    once=False, lead=o.value.lead if o.value.lead == b.value.lead else ())
                    # a union's items are no longer where one path wrote them
                    out[k] = replace(o, value=value, item_spans=o.item_spans if value.items == o.value.items else ())
                    break
            else:
                out.append(b)
        else:
            out.append(b)
    return out


def _chosen_kinds(alts: list[Alt], test: str) -> list[Alt]:
    """`alts` with each class (or layer) marked as chosen by `test` (`_Callee.chosen`, `CHOSEN_BY`) when they are
    layers of more than one class, not all BatchNorms (see `adopter.analysis.scope.chosen_layers`)."""
    classes = {v.qualified if isinstance(v, _Callee) else v.callee for _, v in alts if isinstance(v, (_Callee, Ctor))}
    if len(classes) < 2 or classes <= BATCH_NORMS:
        return alts
    out: list[Alt] = []
    for c, v in alts:
        if isinstance(v, _Callee):
            v = _Callee(v.qualified, chosen=test)
        elif isinstance(v, Ctor) and v.origin is None and v.callee not in CONTAINERS:
            v = replace(v, origin=f"{CHOSEN_BY}`{test}`")
        out.append((c, v))
    return out



def _self_attr(node: Node | None, self_name: str, src: SourceText) -> str | None:
    if node is None or node.type != "attribute":
        return None
    obj = node.child_by_field_id(Field.OBJECT)
    attr = node.child_by_field_id(Field.ATTRIBUTE)
    if obj is None or attr is None or obj.type != "identifier" or src.text(obj) != self_name:
        return None
    return src.text(attr)


def _subscript_text(node: Node, src: SourceText) -> str:
    subs = node.children_by_field_name("subscript")
    return ", ".join(src.norm(s) for s in subs)


def _key_text(node: Node | None, src: SourceText) -> str:
    if node is None:
        return "?"
    text = src.norm(node)
    if node.type == "string" and len(text) >= 2 and text[0] in "\"'" and text[-1] == text[0]:
        return text[1:-1]
    return text


def _range_count(node: Node, src: SourceText) -> str | None:
    """`range(n)` → `n`; `range(a, b)` → `b - a` as text; anything else None."""
    if node.type != "call":
        return None
    func = node.child_by_field_id(Field.FUNCTION)
    args = node.child_by_field_id(Field.ARGUMENTS)
    if func is None or args is None or src.text(func) != "range":
        return None
    parts = [a for a in args.named_children if a.type != "comment"]
    if len(parts) == 1:
        return src.norm(parts[0])
    if len(parts) >= 2:
        return f"{src.norm(parts[1])} - {src.norm(parts[0])}"
    return None


def _first(chosen: list[str] | None, fallback: Callable[[str], list[str]], name: str) -> list[str]:
    """`chosen` where a reading gave it, else `fallback(name)`."""
    return chosen if chosen is not None else fallback(name)
