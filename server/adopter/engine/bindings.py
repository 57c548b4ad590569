"""The `__init__` side of matching: which bindings (and constructors) a module op target denotes."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from adopter.dsl.types import (
    Architecture,
    Binding,
    BindingPattern,
    Ctor,
    CtorPattern,
    Expr,
    Param,
    PValue,
    Value,
)
from adopter.engine.default_choice import unchosen_by_default


def callee_matches(pattern: str, callee: str) -> bool:
    """A pattern callee matches the same qualified name, or, when unqualified, any `*.Name`."""
    return callee == pattern or ("." not in pattern and callee.endswith("." + pattern))


def ctor_matches(pat: CtorPattern, ctor: Ctor) -> bool:
    if not any(callee_matches(c, ctor.callee) for c in pat.callees):
        return False
    if pat.lookup is not None:
        if ctor.lookup is None or not _literal_ok(pat.lookup, Expr(ctor.lookup)):
            return False
    if len(ctor.args) < len(pat.args) or (not pat.extra_args and len(ctor.args) != len(pat.args)):
        return False
    if any(not _literal_ok(p, v) for p, v in zip(pat.args, ctor.args)):
        return False
    kw = {k.name: k.value for k in ctor.kwargs}
    if any(k.name not in kw or not _literal_ok(k.value, kw[k.name]) for k in pat.kwargs):
        return False
    return pat.extra_args or len(ctor.kwargs) == len(pat.kwargs)


def _literal_ok(p: PValue, v: Value) -> bool:
    """Init patterns constrain by literal text; variables there only document (they bind nothing)."""
    if isinstance(p, Expr):
        return isinstance(v, Expr) and norm_text(v.text) == norm_text(p.text)
    return True


def norm_text(text: str) -> str:
    """Expression text compared up to spacing and quote style."""
    return "".join(text.split()).replace('"', "'")




_ATTR = re.compile(r"^self\.(\w+)$")
_CHILD = re.compile(r"^self\.(\w+)((?:\[(?:\d+|\*)\])*)$")
# `self.proj["q"]`: a ModuleDict's item by a literal key (`analysis.flow.state.positioned_items`).
_KEYED = re.compile(r"""^self\.(\w+)\[(["'])(\w+)\2\]$""")


def _module_ctors(binding: Binding, container_item: bool) -> Iterator[Ctor]:
    """The constructors a module op target can denote: the binding's, or its container items'."""
    if not isinstance(binding.value, Ctor):
        return
    if container_item:
        # A call of `self.layers[*]` runs an item itself (a Sequential item, not the modules inside it).
        yield from binding.value.items
    else:
        yield binding.value


def target_attr(target: str) -> str | None:
    """The attribute a module op target calls (`self.net[2]`, `self.proj["q"]`, `self.layers[*]`: `net`,
    `proj`, `layers`), else None."""
    m = _CHILD.match(target)
    if m is not None:
        return m.group(1)
    keyed = _KEYED.match(target)
    if keyed is not None:
        return keyed.group(1)
    if target.startswith("self."):
        attr = target[5:]
        return attr[:-3] if attr.endswith("[*]") else attr
    return None


def fit_binding(b: Binding, target: str, pattern: BindingPattern) -> Ctor | None:
    """The constructor of binding `b` (of `target_attr(target)`) that module op `target` runs and that fits
    `pattern`: the binding's own, a container item by index or literal key, or an item of `[*]` (of a list
    of one class, `one_class`, the caller checks `one_class_on_every_path`)."""
    m = _CHILD.match(target)
    keyed = _KEYED.match(target) if m is None else None
    if keyed is not None:
        c = b.value.by_key(keyed.group(3)) if isinstance(b.value, Ctor) else None
        return c if c is not None and ctor_matches(pattern.ctor, c) else None
    if m is not None and m.group(2):
        # `self.net[2]`: a child of an nn.Sequential the canonical pass unrolled into its children.
        # `self.layers[*][1][0]`: `[*]` is each item of a list of one repeated module (`for attn, ff in self.layers`)
        # A `[*]` followed by an index reads each item of a list of lists of different makes (the
        # canonical pass unrolls `self.layers[*][1]` when one of them is a Sequential: `_item_ctor`).
        indexes = [-1 if i == "*" else int(i) for i in re.findall(r"\[(\d+|\*)\]", m.group(2))]
        cs = [b.value] if isinstance(b.value, Ctor) else []
        for n, i in enumerate(indexes):
            if i >= 0:
                cs = [x for c in cs if (x := c.item(i)) is not None]
            elif n == len(indexes) - 1:
                cs = [c.items[0] for c in cs if len(c.items) == 1 or one_class(c)]
            else:
                cs = [x for c in cs if len(c.items) == 1 or c.repeat is not None for x in c.items]
        return next((c for c in cs if ctor_matches(pattern.ctor, c)), None)
    if target.startswith("self."):
        return next((c for c in _module_ctors(b, target.endswith("[*]")) if ctor_matches(pattern.ctor, c)), None)
    if b.attr == target and isinstance(b.value, Ctor) and ctor_matches(pattern.ctor, b.value):
        return b.value  # an inline lookup's binding (`adopter.analysis.scope.inline_lookups`)
    return None


def one_class(container: Ctor) -> bool:
    """Whether a list's items, built by several statements (`self.fcs.append(nn.Linear(d_in, h))` before a
    loop appending `nn.Linear(h, h)`, one more after it), are all layers of one class holding no modules of
    their own: any item a loop index or an iteration reaches (`self.fcs[i]`, `for fc in self.fcs`) is then
    that class, whichever of them it is (their arguments, the widths, differ). Not a `ModuleDict`: its items
    are read by key (`Ctor.by_key`), and a key not read there is no evidence of which one runs."""
    items = container.items
    return (len(items) > 1 and not container.keys and not container.callee.endswith("Dict")
            and len({c.callee for c in items}) == 1 and not any(c.items or c.keys for c in items))


def one_class_on_every_path(b: Binding, target: str, siblings: Sequence[Binding]) -> bool:
    """Whether `target` (`self.fcs[*]`) reads binding `b` of several items of one class (`one_class`) only
    where every container the attribute is bound to on some path (`siblings`, `b` among them) holds only
    that class: an addition under an `if` of another class (`if last: self.fcs.append(nn.Identity())`) puts
    it at some index on its path, and the index forward reads is not known. True for any other reading."""
    m = _CHILD.match(target)
    if m is None or m.group(2) != "[*]" or not isinstance(b.value, Ctor) or not one_class(b.value):
        return True
    kinds = {i.callee for s in siblings if isinstance(s.value, Ctor) for i in s.value.items}
    return kinds == {b.value.items[0].callee} and all(
        not isinstance(s.value, Ctor) or not s.value.items or s.value.callee == b.value.callee for s in siblings)


def _nested_ctors(binding: Binding) -> Iterator[Ctor]:
    """The binding's constructor and its containers' items at any depth (`self.layers[*][1][0]`: a layer of
    the Sequential each `nn.ModuleList([attn, ff])` of `self.layers` holds), a few levels deep."""
    if not isinstance(binding.value, Ctor):
        return
    level: tuple[Ctor, ...] = (binding.value,)
    for _ in range(_MAX_DEPTH):
        yield from level
        level = tuple(i for c in level for i in c.items)
        if not level:
            return


_MAX_DEPTH = 4


# id of a constructor pattern -> (the pattern, a number shared by every equal pattern): rule patterns live as
# long as their rules, and hashing one (a frozen dataclass of tuples of dataclasses) is a Python call per field.
_CTOR_KEYS: dict[int, tuple[CtorPattern, int]] = {}
_CTOR_NUMBERS: dict[CtorPattern, int] = {}


def ctor_key(pattern: CtorPattern) -> int:
    """A number for `pattern`, the same for equal patterns."""
    kept = _CTOR_KEYS.get(id(pattern))
    if kept is not None and kept[0] is pattern:
        return kept[1]
    if len(_CTOR_KEYS) > 4096:  # rules reloaded many times: the older patterns go
        _CTOR_KEYS.clear()
    number = _CTOR_NUMBERS.setdefault(pattern, len(_CTOR_NUMBERS))
    _CTOR_KEYS[id(pattern)] = (pattern, number)
    return number


@dataclass
class InitIndex:
    """`__init__` bindings by attribute, for joining module op targets with binding patterns."""

    by_attr: dict[str, list[Binding]]
    # (module op target, id of a BindingPattern) -> what it resolved to; patterns live as long as rules.
    _resolved: dict[tuple[str, int], tuple[Binding, Ctor] | None] = field(default_factory=dict)
    # (module op target, a pattern's constructor) -> the same: patterns of different rules (or three of one rule,
    # f09's `$wq`/`$wk`/`$wv`) often hold equal constructor patterns, and the answer depends on nothing else
    # of the pattern. Shared with the rule-scoped indexes of the same bindings (`sites._AskedInit.for_rule`).
    _fits: dict[tuple[str, CtorPattern], tuple[Binding, Ctor] | None] = field(default_factory=dict)
    _possible: dict[int, bool] = field(default_factory=dict)
    # A pattern's constructor -> whether some binding fits it (`could_match`): like `_fits`, equal constructor
    # patterns of different rules (`torch.nn.Linear` in most of them) share the answer, which depends on the
    # bindings alone. Shared with the rule-scoped indexes of the same bindings.
    _any_fit: dict[CtorPattern, bool] = field(default_factory=dict)

    # (id of a list of module op targets, `ctor_key` of a pattern's constructor) -> (the list, those of its
    # targets that resolve): `fitting`'s memo. Every rule with a `torch.nn.Linear` variable asks it of the same
    # forward's targets (f09's three, f06, f14, f16, ...). A rule-scoped index has its own (it records each question).
    _fitting: dict[tuple[int, int], tuple[Sequence[str], tuple[str, ...]]] = field(default_factory=dict)

    callees: frozenset[str] = frozenset()  # every constructor callee, qualified and by last name
    params: tuple[Param, ...] = ()  # `__init__`'s parameters (what a caller passes in), with their defaults
    sizes: dict[str, str] = field(default_factory=dict)  # `Init.sizes`: local -> its arithmetic

    @classmethod
    def of(cls, arch: Architecture | None) -> InitIndex:
        by_attr: dict[str, list[Binding]] = {}
        callees: set[str] = set()
        params: tuple[Param, ...] = ()
        sizes: dict[str, str] = {}
        if arch is not None and arch.init is not None:
            for b in arch.init.bindings:
                by_attr.setdefault(b.attr, []).append(b)
                for c in _nested_ctors(b):
                    callees.update((c.callee, c.callee.rsplit(".", 1)[-1]))
            params = arch.init.params
            sizes = dict(arch.init.sizes)
        return cls(by_attr, callees=frozenset(callees), params=params, sizes=sizes)

    def bindings_of(self, attr: str) -> tuple[Binding, ...]:
        """Every binding of `self.<attr>` (none: not bound in this `__init__`)."""
        return tuple(self.by_attr.get(attr, ()))

    def parameters(self) -> tuple[Param, ...]:
        """`__init__`'s parameters, with their defaults."""
        return self.params

    def size(self, name: str) -> str | None:
        """What a local of `__init__` holds when it is one size (`inner = heads * dim_head`), else None."""
        return self.sizes.get(name)

    def resolve(self, target: str, pattern: BindingPattern) -> Binding | None:
        """The binding of module op `target` (`self.q`, `self.layer[*]`) that fits `pattern`."""
        found = self.resolve_ctor(target, pattern)
        return found[0] if found else None

    def resolve_ctor(self, target: str, pattern: BindingPattern) -> tuple[Binding, Ctor] | None:
        """Like `resolve`, also giving the constructor that fit (a container's item for `[*]`)."""
        key = (target, id(pattern))
        if key in self._resolved:
            return self._resolved[key]
        fit_key = (target, pattern.ctor)
        if fit_key in self._fits:
            found = self._fits[fit_key]
        else:
            # `ACT2FN[self.config.hidden_act]`: a lookup forward builds and calls inline, bound under its text
            attr = target_attr(target) or (target if target[-1:] in ")]" and target in self.by_attr else None)
            found = None
            if attr is not None:
                # A layer chosen by a name the parameter's default does not give is not this module's as built.
                bs = self.by_attr.get(attr, ())
                found = next(((b, c) for b in bs if (c := fit_binding(b, target, pattern)) is not None
                              and one_class_on_every_path(b, target, bs)
                              and not unchosen_by_default(b, self.params, bs)), None)
            self._fits[fit_key] = found
        self._resolved[key] = found
        return found

    def fitting(self, targets: Sequence[str], pattern: BindingPattern) -> tuple[str, ...]:
        """The module op `targets` that resolve for `pattern` (`resolve_ctor`), in order; kept per list of
        targets and constructor pattern (equal constructor patterns share the answer, as `_fits` says)."""
        key = (id(targets), ctor_key(pattern.ctor))
        kept = self._fitting.get(key)
        if kept is not None and kept[0] is targets:
            return kept[1]
        found = tuple(t for t in targets if self.resolve_ctor(t, pattern) is not None)
        self._fitting[key] = (targets, found)
        return found

    def constant_text(self, text: str) -> str | None:
        """The expression `self.<attr>` stands for when `__init__` binds it once, on every path, to an
        expression (`self.c = math.sqrt(2 / math.pi)`), else None."""
        m = _ATTR.match(text)
        bindings = self.by_attr.get(m.group(1), ()) if m is not None else ()
        if len(bindings) != 1 or bindings[0].condition is not None or not isinstance(bindings[0].value, Expr):
            return None
        return bindings[0].value.text

    def could_match(self, pattern: BindingPattern) -> bool:
        """Whether any binding at all fits `pattern` (a cheap pre-filter)."""
        key = id(pattern)
        if not any(c in self.callees for c in pattern.ctor.callees):
            return False
        if key not in self._possible:
            found = self._any_fit.get(pattern.ctor)
            if found is None:
                found = self._any_fit[pattern.ctor] = any(
                    ctor_matches(pattern.ctor, c)
                    for bs in self.by_attr.values()
                    for b in bs
                    for c in _nested_ctors(b)
                )
            self._possible[key] = found
        return self._possible[key]
