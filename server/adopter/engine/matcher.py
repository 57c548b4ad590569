"""Matching rules against architectures: forward op patterns joined with `__init__` binding patterns.

A match is a subsequence of a forward's ops (in source order, all on one control-flow path) whose
steps unify with the rule's `OpPattern`s: pattern variables bind consistently, and a value bound in
one step and used in a later one must be the *same definition* (the def reaching the later use), so
data flow is respected even when names are reused (`h = dropout(h); h = ln(h + r)`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from adopter.analysis.canonical.axes import trailing_axes
from adopter.analysis.flow.state import HANDED
from adopter.dsl.types import (
    ADDED_BIAS_GUARD,
    ATTENTION_ROLES_GUARD,
    DISTINCT_GUARD,
    EQUALS_GUARD,
    FIX_REQUIRES_GUARD,
    FUNCTION_OP,
    GATE_ACTIVATION_GUARD,
    GATE_PROJECTIONS_GUARD,
    HANDED_LAYER_GUARD,
    INDEPENDENT_GUARD,
    INSIDE_SUBMODULE_GUARD,
    KEY_MAY_BE_GUARD,
    METHOD_OP,
    MODULE_OP,
    NAMED_ACTIVATION_GUARD,
    NO_KWARG_GUARD,
    NOT_REASSIGNED_GUARD,
    NOT_USED_AFTER_GUARD,
    ONE_OF_GUARD,
    ONLY_USE_GUARD,
    OPERATOR_OP,
    OWN_CALL_GUARD,
    PERMUTED_SCORES_GUARD,
    PROBABILITY_VECTOR_GUARD,
    QUERY_VECTOR_GUARD,
    ROTARY_TABLES_GUARD,
    SAME_PATHS_GUARD,
    SAME_WIDTH_GUARD,
    SCALE_FACTOR_GUARD,
    SCALED_ALIKE_GUARD,
    SINGLE_USE_GUARD,
    TRAILING_AXES_GUARD,
    UNSPLIT_GUARD,
    VOCABULARY_GUARD,
    Binding,
    BindingPattern,
    Ctor,
    CtorPattern,
    Expr,
    Guard,
    GuardKind,
    Kwarg,
    Op,
    OpKind,
    OpPattern,
    PAny,
    PKwarg,
    PValue,
    PVar,
    Ref,
    Rule,
    Value,
)
from adopter.engine.attention_roles import computed_from, plays_attention_roles
from adopter.engine.bindings import InitIndex, fit_binding, norm_text, one_class_on_every_path, target_attr
from adopter.engine.constants import same_number
from adopter.engine.default_choice import unchosen_by_default
from adopter.engine.flow import FlatForward
from adopter.engine.gate_activations import may_be_gate_activation
from adopter.engine.gate_projections import may_be_passed_projections
from adopter.engine.layer_facts import literal_keys, output_width, sized, widths_agree
from adopter.engine.named_activations import is_named_activation
from adopter.engine.optional_keys import built_only_when_given
from adopter.engine.path_bindings import contradicts, path_facts
from adopter.engine.path_widths import agree_by_head_split, agree_on_a_path
from adopter.engine.permuted_scores import permuted_scores
from adopter.engine.plans import (
    init_patterns,
    is_cast,
    is_choice,
    literal_requirements,
    names_casts,
    required_init_vars,
)
from adopter.engine.rotary_tables import is_rotary_table
from adopter.engine.scale_factors import is_scale_factor
from adopter.engine.single_query import is_probability_vector, is_query_vector
from adopter.engine.size_reads import reads_size_only, text_reads_size_only
from adopter.engine.vocabulary import projects_to_vocabulary

COMMUTATIVE = frozenset({"+", "*"})
# Guards on how matched values are used elsewhere: failing one still reports the site, without a fix.
_SPLITS = frozenset({"chunk", "split", "unbind", "tensor_split"})
_USE_GUARDS = frozenset({SINGLE_USE_GUARD, NOT_USED_AFTER_GUARD, FIX_REQUIRES_GUARD})
# Guards whose answer is a function of the values bound to their arguments and of the forward alone (no
# bindings, no chosen nodes, no search state): `RuleMatcher` answers each once per distinct tuple of values.
# The search reaches the same values at many leaves (fused QKV: each assignment of the three projections
# once per combination of the optional head splits present or skipped).
_VALUE_GUARDS = frozenset({UNSPLIT_GUARD, SAME_PATHS_GUARD, ATTENTION_ROLES_GUARD,
                           ROTARY_TABLES_GUARD, SCALE_FACTOR_GUARD, ADDED_BIAS_GUARD,
                           TRAILING_AXES_GUARD,
                           INDEPENDENT_GUARD, OWN_CALL_GUARD, PERMUTED_SCORES_GUARD,
                           DISTINCT_GUARD, SCALED_ALIKE_GUARD, QUERY_VECTOR_GUARD,
                           PROBABILITY_VECTOR_GUARD})
# Hard guards on the texts of bound values and literals (`_guard_ok`): like `_VALUE_GUARDS`, answered before
# the leaves once their variables are bound (`RuleMatcher._feasible`). Transposes of the head split
# (`x.transpose(1, 2)`) then end f10's search at its first step instead of at every leaf below it.
_TEXT_GUARDS = frozenset({EQUALS_GUARD, ONE_OF_GUARD})
# How many unification attempts one rule may spend on one forward: a pathological pattern must not
# stall the server; hitting it is reported as a problem.
STEP_BUDGET = 50_000


class BudgetExceeded(Exception):
    """A rule spent its matching budget on one forward."""


# A bound forward value: ("ref", name, defining node or -1) / ("expr", text) / ("mod", "self.attr").
Bound = tuple[str, str, int] | tuple[str, str]


@dataclass(frozen=True, slots=True)
class RawMatch:
    """A match before it becomes a Finding: node indexes, bindings used, and the variable bindings."""

    nodes: tuple[int, ...]
    bindings: tuple[Binding, ...]
    env: tuple[tuple[str, Bound], ...]
    path_dependent: bool = False  # some value is the same definition only on some paths
    # A use guard that failed: the site is still reported (the pattern is there), without a fix.
    used_elsewhere: str | None = None


def _activation_keys(g: Guard) -> set[str]:
    """The names a `named_activation` guard accepts (its literal arguments after the module)."""
    return {a.text.strip().strip("\"'") for a in g.args[1:] if isinstance(a, Expr)}


def _same(a: Bound, b: Bound) -> bool:
    """Equal bindings: the same definition of a name, or expressions equal up to spacing and quotes."""
    if a[0] == "expr" and b[0] == "expr":
        return norm_text(a[1]) == norm_text(b[1])
    return a == b


# ---------------------------------------------------------------------------------------------------
# forward side
# ---------------------------------------------------------------------------------------------------


# The `_State` dict each trail kind writes (one constant: `set` runs ~90,000 times over the 210 modeling files).
_STATE_FIELDS = {"env": "env", "alias": "alias", "bind": "bindings", "path": "path_dependent"}


class _State:
    """Mutable search state with an undo log (backtracking)."""

    def __init__(self) -> None:
        self.env: dict[str, Bound] = {}
        self.alias: dict[str, str] = {}
        self.bindings: dict[str, Binding] = {}
        self.path_dependent: dict[str, bool] = {}  # uses whose definition depends on the path taken
        self.trail: list[tuple[str, str]] = []

    def mark(self) -> int:
        return len(self.trail)

    def undo(self, mark: int) -> None:
        while len(self.trail) > mark:
            kind, key = self.trail.pop()
            if kind == "env":
                self.env.pop(key, None)
            elif kind == "alias":
                self.alias.pop(key, None)
            elif kind == "path":
                self.path_dependent.pop(key, None)
            else:
                self.bindings.pop(key, None)

    def var(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name

    def set(self, kind: str, key: str, value: object) -> None:
        getattr(self, _STATE_FIELDS[kind])[key] = value
        self.trail.append((kind, key))


class RuleMatcher:
    """Finds every match of one rule in one flattened forward."""

    def __init__(self, rule: Rule, flat: FlatForward, init: InitIndex) -> None:
        self.rule = rule
        self.flat = flat
        self.init = init
        plan = self.plan = _plan(rule)
        self.init_patterns = init_patterns(rule)
        self.steps = rule.forward
        self.look_through = plan.look_through
        self.crossed_branch = False  # set by _bound_of: it looked through a cast on one path only
        self.swapped = False  # set by _args_ok: it unified a `+`/`*` step with the operands in the other order
        self.budget = STEP_BUDGET
        self._cand_sets: dict[int, set[int]] = {}
        self._targets: dict[tuple[str, str], tuple[str, ...]] = {}  # `_targets_of`
        self._handed_targets: frozenset[str] | None = None  # `_handed_layer`'s module ops, read once
        self._handed_vars = plan.handed_vars
        self._verdicts: dict[tuple[int, tuple[Bound | None, ...]], bool] = {}  # `_VALUE_GUARDS` answered
        self._early = plan.early
        self._early_texts = plan.early_texts

    # -- pre-filter ------------------------------------------------------------------------------

    def _module_targets(self, kind: OpKind, var: str) -> list[str]:
        """Targets of `kind` ops in this forward that module variable `var` can denote (a copy)."""
        return list(self._targets_of(kind, var))

    def _targets_of(self, kind: OpKind, var: str) -> tuple[str, ...]:
        """`_module_targets`, computed once per (kind, variable) for this matcher: `possible` and then
        `candidates` ask the same (the questions reach `__init__` the first time, so a recording index sees
        every one of them; later answers are its own memo's anyway)."""
        key = (kind._value_, var)
        known = self._targets.get(key)
        if known is None:
            pattern = self.init_patterns.get(var)
            targets = self.flat.targets_of_kind.get(kind._value_, ())
            if var in self._handed_vars:
                # only the layers `handed_layer` admits: none in a forward no function is handed its module
                targets = [t for t in targets if self._handed_layer(("mod", t))]
            known = self._targets[key] = (tuple(targets) if pattern is None else
                                          self.init.fitting(targets, pattern))
        return known

    def candidates(self, step: OpPattern) -> list[int]:
        out: list[int] = []
        for kind, target in step.targets:
            if target.startswith("$"):
                for t in self._targets_of(kind, target.lstrip("$")):
                    out.extend(self.flat.by_target[(kind._value_, t)])
            else:
                out.extend(self.flat.by_target.get((kind._value_, target), ()))
        if len(step.targets) > 1 or any(t.startswith("$") for _, t in step.targets):
            out = sorted(set(out))
        return out

    def possible(self) -> bool:
        """False when some required step or binding cannot occur at all in this forward."""
        if not self.steps:
            return False
        plan = self.plan
        by_target = self.flat.by_target
        # Loops, not `any`/`all` over generators: asked of every rule in every forward (9,232 times over the
        # 202 files of check_speed), in the order the questions were always asked (`_AskedInit` records them).
        for keys in plan.literals:
            for k in keys:
                if k in by_target:
                    break
            else:
                return False
        init = self.init
        for b in plan.required_init:
            if not init.could_match(b):
                return False
        for alternatives in plan.required_steps:
            for kind, key, var in alternatives:
                if key in by_target if var is None else self._targets_of(kind, var):
                    break
            else:
                return False
        for accepted in plan.named_activations:
            if not self._some_named_activation(accepted):
                return False
        return True

    def _some_named_activation(self, keys: frozenset[str]) -> bool:
        """Whether an op target of this forward passes a hard guard `named_activation` accepting `keys`: it
        holds of a module value only, and the search binds module values to op targets (`_target_ok`), so where
        no target passes, no leaf does (f06-linear-gelu-named: a Linear and any submodule after it, else)."""
        return any(is_named_activation(t, self.init, keys) for targets in self.flat.targets_of_kind.values()
                   for t in targets)

    # -- search ------------------------------------------------------------------------------------

    def matches(self) -> Iterator[RawMatch]:
        if not self.possible():
            return
        cands = [self.candidates(s) for s in self.steps]
        if not _enough_nodes(self.steps, cands):
            return
        state = _State()
        yield from self._search(0, [], cands, state)

    def _search(self, i: int, chosen: list[int], cands: list[list[int]], state: _State) -> Iterator[RawMatch]:
        """Steps are matched by data flow, not by source order: a step may come before the one listed
        ahead of it (`up(x)` written before `act(gate(x))`); reaching definitions keep values right."""
        if i == len(self.steps):
            if chosen and self._guards_ok(chosen, state, hard=True):
                used = None if self._guards_ok(chosen, state, hard=False) else self._used_elsewhere(chosen, state)
                used = used or self._width_reason(state)
                full = dict(state.env)
                for alias in state.alias:
                    target = state.var(alias)
                    if target in state.env:
                        full[alias] = state.env[target]
                env = tuple(sorted(full.items()))
                binds = tuple(state.bindings[k] for k in sorted(state.bindings))
                yield RawMatch(tuple(sorted(chosen)), binds, env, bool(state.path_dependent), used)
            return
        step = self.steps[i]
        for n in self._narrow(step, cands[i], state):
            if n in chosen or (chosen and not self._on_one_path(chosen, n)):
                continue
            self.budget -= 1
            if self.budget < 0:
                raise BudgetExceeded(self.rule.id)
            mark = state.mark()
            self.swapped = False
            found = False
            if self._unify_op(step, n, state):
                swapped = self.swapped
                chosen.append(n)
                if self._feasible(state):
                    for m in self._search(i + 1, chosen, cands, state):
                        found = True
                        yield m
                chosen.pop()
                state.undo(mark)
                # The operands of `+`/`*` in the other order, when the order first unified left no match below:
                # `cos * x + sin * rotate_half(x)` binds `$x` to `cos` in `$xc = $x * $cos` first.
                if not found and not swapped and self._swappable(step, n):
                    self.budget -= 1
                    if self._unify_op(step, n, state, swap=True):
                        chosen.append(n)
                        if self._feasible(state):
                            yield from self._search(i + 1, chosen, cands, state)
                        chosen.pop()
            state.undo(mark)
        if step.optional:
            mark = state.mark()
            if self._skip(step, state) and self._feasible(state):
                yield from self._search(i + 1, chosen, cands, state)
            state.undo(mark)

    def _on_one_path(self, chosen: list[int], n: int) -> bool:
        """Whether node `n` runs on one path with every chosen node (a loop, not `all(...)` over a generator:
        asked of every candidate at every step)."""
        compatible = self.flat.compatible
        for c in chosen:
            if not (compatible(c, n) if c < n else compatible(n, c)):
                return False
        return True

    def _feasible(self, state: _State) -> bool:
        """False when a value guard whose arguments are all bound already fails: every leaf below would
        fail it (a bound variable keeps its value for the rest of the path), so the subtree is not searched.
        The fused-QKV search otherwise tries both options of each optional head split (8 leaves) under each
        assignment of the three projections that `unsplit`/`same_paths` already rule out."""
        env = state.env
        var = state.var
        for g, names in self._early:
            values = tuple([env.get(var(name)) for name in names])
            if None not in values and not self._verdict(g, values):
                return False
        for g, variables in self._early_texts:
            values = tuple(env.get(state.var(v.name)) for v in variables)
            if None in values:
                continue
            key = (id(g), values)  # `g` lives as long as the rule; the answer is one per values (`_verdict`)
            known = self._verdicts.get(key)
            if known is None:
                known = self._verdicts[key] = self._guard_ok(g, [], state)
            if not known:
                return False
        return True

    def _cast_reads(self, name: str, readers: Sequence[int]) -> bool:
        """Whether a cast reads `name` (once per forward: every rule's search asks again)."""
        cast = self.flat.cast_reads.get(name)
        if cast is None:
            nodes = self.flat.nodes
            cast = self.flat.cast_reads[name] = any(
                (op := nodes[r].op) is not None and is_cast(op) for r in readers)
        return cast

    def _narrow(self, step: OpPattern, cands: list[int], state: _State) -> list[int]:
        """The step's candidates; when an argument is already bound to a value, only its readers."""
        start = 0
        for p in step.args:
            if isinstance(p, PVar):
                bound = state.env.get(state.var(p.name))
                if bound is not None and bound[0] == "ref":
                    readers = self.flat.uses_of.get(bound[1], ())
                    if self.look_through and self._cast_reads(bound[1], readers):
                        continue  # its readers include the readers of a cast of it
                    if len(readers) < len(cands) - start:
                        members = self._cand_sets.get(id(cands))
                        if members is None:
                            members = self._cand_sets[id(cands)] = set(cands)
                        return [n for n in readers if n in members]
        return cands[start:]

    def _skip(self, step: OpPattern, state: _State) -> bool:
        """An absent optional step binds its output to its first value argument."""
        out = step.outputs[0] if len(step.outputs) == 1 else None
        first = next((a for a in step.args if not isinstance(a, PAny)), None)
        if isinstance(out, PVar) and first is not None:
            if isinstance(first, PVar):
                o, a = state.var(out.name), state.var(first.name)
                if o == a:
                    return True
                if o in state.env:
                    if a in state.env:
                        return _same(state.env[o], state.env[a])
                    state.set("env", a, state.env[o])
                    return True
                state.set("alias", o, a)
                return True
            if isinstance(first, Expr):
                return self._bind(out, ("expr", first.text), state)
        return True

    def _swappable(self, step: OpPattern, n: int) -> bool:
        """Whether node `n`'s operands may be read in the other order for `step`: a `+` or `*` of two
        different values, against a step with two argument patterns."""
        op = self.flat.nodes[n].op
        return (op is not None and op.kind == OPERATOR_OP and op.target in COMMUTATIVE and len(step.args) == 2
                and len(op.args) == 2 and op.args[0] != op.args[1])

    def _unify_op(self, step: OpPattern, n: int, state: _State, swap: bool = False) -> bool:
        op = self.flat.nodes[n].op
        assert op is not None
        if not self._target_ok(step, op, n, state):
            return False
        if swap:
            if not self._unify_values(step.args, (op.args[1], op.args[0]), n, state):
                return False
        elif not self._args_ok(step, op, n, state):
            return False
        if not self._kwargs_ok(step.kwargs, op.kwargs, step.extra_args, n, state):
            return False
        if step.outputs:
            if len(step.outputs) != len(op.outputs):
                return False
            for p, name in zip(step.outputs, op.outputs):
                if not self._unify(p, ("ref", name, n), state):
                    return False
        return True

    def _target_ok(self, step: OpPattern, op: Op, n: int, state: _State) -> bool:
        for kind, target in step.targets:
            if kind != op.kind:
                continue
            if not target.startswith("$"):
                if target == op.target:
                    return True
                continue
            var = state.var(target.lstrip("$"))
            pattern = self.init_patterns.get(var)
            if pattern is None:
                if self._unify(PVar(var), ("mod", op.target), state):
                    return True
                continue
            found = self._on_path(self.init.resolve_ctor(op.target, pattern), op.target, pattern, n)
            if found is None:
                continue
            binding, ctor = found
            if var in state.bindings and state.bindings[var] is not binding:
                continue
            mark = state.mark()
            if not self._unify(PVar(var), ("mod", op.target), state) or not self._unify_ctor(pattern.ctor, ctor,
                                                                                             state):
                state.undo(mark)
                continue
            if var not in state.bindings:
                state.set("bind", var, binding)
            return True
        return False

    def _on_path(self, found: tuple[Binding, Ctor] | None, target: str, pattern: BindingPattern,
                 n: int) -> tuple[Binding, Ctor] | None:
        """The binding of `target` that fits `pattern` on node `n`'s path: the first that fits, unless its
        condition contradicts the branch tests around `n` (`if ffn_type == "swiglu": self.ffn = ...` read on
        the else path the flow made of it); then the first other binding that fits and does not."""
        if found is None or found[0].condition is None or not self.flat.nodes[n].ctx:
            return found
        facts = path_facts(self.flat.conditions(n))
        if not contradicts(found[0].condition, facts):
            return found
        attr = target_attr(target)
        bs = self.init.bindings_of(attr) if attr is not None else ()
        return next(((b, c) for b in bs
                     if b.condition is None or not contradicts(b.condition, facts)
                     if (c := fit_binding(b, target, pattern)) is not None
                     if one_class_on_every_path(b, target, bs)
                     if not unchosen_by_default(b, self.init.parameters(), bs)), None)

    def _unify_ctor(self, pat: CtorPattern, ctor: Ctor, state: _State) -> bool:
        """Bind the pattern variables of an init pattern to the constructor's argument texts."""
        for p, v in zip(pat.args, ctor.args):
            if isinstance(p, PVar) and not self._unify(p, self._bound_of(v, -1), state):
                return False
        kw = {k.name: k.value for k in ctor.kwargs}
        for pk in pat.kwargs:
            if isinstance(pk.value, PVar) and pk.name in kw and not self._unify(pk.value, self._bound_of(
                    kw[pk.name], -1), state):
                return False
        if isinstance(pat.lookup, PVar) and ctor.lookup is not None:
            return self._unify(pat.lookup, ("expr", ctor.lookup), state)
        return True

    def _args_ok(self, step: OpPattern, op: Op, n: int, state: _State) -> bool:
        pa, va = step.args, op.args
        if len(va) < len(pa) or (not step.extra_args and len(va) != len(pa)):
            return False
        if op.kind == OPERATOR_OP and op.target in COMMUTATIVE and len(pa) == 2 and len(va) == 2:
            mark = state.mark()
            if self._unify_values(pa, va, n, state):
                return True
            state.undo(mark)
            self.swapped = True
            return self._unify_values(pa, (va[1], va[0]), n, state)
        return self._unify_values(pa, va[: len(pa)], n, state)

    def _unify_values(self, pats: tuple[PValue, ...], vals: tuple[Value, ...], n: int, state: _State) -> bool:
        for p, v in zip(pats, vals):
            if not self._unify_at(p, v, n, state):
                return False
        return True

    def _unify_at(self, p: PValue, v: Value, n: int, state: _State) -> bool:
        """Unify `p` with the value `v` read at node `n`; a value passed on by one alternative of a
        branch (`kv if cross else hidden`) matches, but only on that path: not fixable as a whole."""
        self.crossed_branch = False
        if not self._unify(p, self._bound_of(v, n), state, n):
            # The latest definition reaching `n` passed another value on (the identity alternative of
            # `nn.Dropout(p) if p > 0 else nn.Identity()`); the definition the match made still reaches
            # `n` on the other path: a site there, not fixable as a whole.
            if not isinstance(p, PVar):
                return False
            old = state.env.get(state.var(p.name))
            if not (isinstance(v, Ref) and old is not None and old[0] == "ref"
                    and self._passed_on_reaches(old, v.name, n)):
                return False
            state.set("path", f"{p.name}@{n}", True)
            return True
        if self.crossed_branch and isinstance(p, PVar):
            state.set("path", f"{p.name}@{n}", True)
        return True

    def _passed_on_reaches(self, old: Bound, name: str, n: int) -> bool:
        """Whether the definition `old`, or a cast of it bound to `name` (`w = softmax(...).type(dt)`), still
        reaches node `n` as `name` on some path (a later `w = w * mask` sits in a branch that path skips)."""
        if old[1] == name and self.flat.may_reach(name, old[2], n):  # type: ignore[misc]
            return True
        if not self.look_through:
            return False
        src, d = old[1], old[2]  # type: ignore[misc]
        for u in self.flat.uses_of.get(src, ()):
            op = self.flat.nodes[u].op
            if (u > d and u < n and op is not None and is_cast(op) and len(op.outputs) == 1 and op.args
                    and op.args[0] == Ref(src) and self.flat.may_reach(src, d, u)
                    and self._passed_on_reaches(("ref", op.outputs[0], u), name, n)):
                return True
        return False

    def _kwargs_ok(self, pats: tuple[PKwarg, ...], vals: tuple[Kwarg, ...], extra: bool, n: int,
                   state: _State) -> bool:
        if not pats:  # most steps: no keyword to unify, no table to build
            return extra or not vals
        by_name = {k.name: k.value for k in vals}
        for pk in pats:
            if pk.name not in by_name:
                return False
            if not self._unify_at(pk.value, by_name[pk.name], n, state):
                return False
        return extra or len(vals) == len(pats)

    def _bound_of(self, v: Value, n: int) -> Bound:
        if isinstance(v, Ref):
            name, d = v.name, self.flat.reaching_def(v.name, n)
            # A cast (`.float()`, `.to(dtype)`, `.contiguous()`) is transparent: its value is its input's.
            while d >= 0 and self.look_through:
                op = self.flat.nodes[d].op
                if op is None or not is_cast(op) or not op.args or not isinstance(op.args[0], Ref):
                    break
                if n >= 0 and is_choice(op) and not self._encloses(d, n):
                    self.crossed_branch = True
                name = op.args[0].name
                d = self.flat.reaching_def(name, d)
            return ("ref", name, d)
        return ("expr", v.text)

    def _encloses(self, d: int, n: int) -> bool:
        """Whether every branch alternative around node `d` also encloses node `n`."""
        outer = set(self.flat.nodes[n].ctx)
        return all(c[0] != "b" or c in outer for c in self.flat.nodes[d].ctx)

    def _unify(self, p: PValue, value: Bound, state: _State, at: int = -1) -> bool:
        if isinstance(p, PAny):
            return True
        if isinstance(p, Expr):
            return value[0] == "expr" and norm_text(value[1]) == norm_text(p.text)
        return self._bind(p, value, state, at)

    def _bind(self, p: PVar, value: Bound, state: _State, at: int = -1) -> bool:
        var = state.var(p.name)
        if var in state.env:
            old = state.env[var]
            if _same(old, value):
                return True
            # The same name, another definition: on some path the earlier one may still reach `at`
            # (the redefinitions in between sit in branches that path does not take). That is a site
            # for detection, but its value depends on the path, so it is not fixable as a whole.
            if old[0] == value[0] == "ref" and old[1] == value[1] and at >= 0 and self.flat.may_reach(
                    old[1], old[2], at):  # type: ignore[misc]
                state.set("path", f"{var}@{at}", True)
                return True
            return False
        if value[0] == "mod" and any(v == value for k, v in state.env.items()):
            return False  # two module variables never denote the same submodule
        state.set("env", var, value)
        return True

    # -- guards ------------------------------------------------------------------------------------

    def _guards_ok(self, chosen: list[int], state: _State, hard: bool) -> bool:
        """The rule's guards on what the variables bound (`hard`), or on how the values are used."""
        for g in self.plan.hard_guards if hard else self.plan.use_guards:  # a loop: asked at every leaf
            if not self._guard_ok(g, chosen, state):
                return False
        return True

    def _used_elsewhere(self, chosen: list[int], state: _State) -> str:
        """Why the fix is withheld when a use guard fails: which value is read outside the match."""
        for g in self.rule.guards:
            if g.kind == FIX_REQUIRES_GUARD and not self._guard_ok(g, chosen, state):
                have = self._text(self._value(g.args[0], state))
                wanted = ", ".join(self._text(self._value(a, state)) or "?" for a in g.args[1:])
                return f"the automatic fix covers {wanted} only, and this one is {have}; rewrite it by hand"
        for g in self.rule.guards:
            if g.kind in _USE_GUARDS and not self._guard_ok(g, chosen, state):
                for arg in g.args:
                    value = self._value(arg, state)
                    if value is not None and value[0] == "ref" and not self._guard_ok(
                            Guard(g.kind, (arg,)), chosen, state):
                        name = value[1] if not value[1].startswith("%") else "an intermediate value"
                        return (f"`{name}` is also used outside the matched code, so the fused kernel "
                                "cannot replace it; restructure by hand")
        return "an intermediate value is also used outside the matched code"

    def _value(self, p: PValue, state: _State) -> Bound | None:
        if isinstance(p, PVar):
            return state.env.get(state.var(p.name))
        if isinstance(p, Expr):
            return ("expr", p.text)
        return None

    def _guard_ok(self, g: Guard, chosen: list[int], state: _State) -> bool:
        if g.kind in _VALUE_GUARDS:
            return self._verdict(g, tuple([self._value(a, state) for a in g.args]))
        if g.kind in (EQUALS_GUARD, ONE_OF_GUARD, FIX_REQUIRES_GUARD):
            if not g.args:
                return True
            first = self._value(g.args[0], state)
            if first is None:
                return False
            texts = [self._text(self._value(a, state)) for a in g.args[1:]]
            mine = self._text(first)
            if g.kind != ONE_OF_GUARD:
                return mine in texts if g.kind != EQUALS_GUARD else all(t == mine for t in texts)
            if mine in texts:
                return True
            # `self.c` bound once in `__init__` to one of the constants (`self.c = math.sqrt(2 / math.pi)`)
            held = self.init.constant_text(str(first[1])) if first[0] == "expr" else None
            if held is not None and norm_text(held) in texts:
                return True
            text = held or (str(first[1]) if first[0] == "expr" else self._constant_text(first))
            return text is not None and same_number(text, [t for t in texts if t is not None])
        if g.kind == NO_KWARG_GUARD:
            return self._no_kwarg(g, state)
        if g.kind == INSIDE_SUBMODULE_GUARD:
            return True  # a permission, applied when the match becomes a finding (engine.sites)
        if g.kind == SAME_WIDTH_GUARD:
            widths = [self._width(arg, state) for arg in g.args]
            if widths_agree(widths) or widths_agree(sized(widths, self.init.size)):
                return True
            if agree_by_head_split(widths, self.init):
                return True
            return agree_on_a_path(widths, self.init)  # a site of that path: no fix (`_width_reason`)
        if g.kind == KEY_MAY_BE_GUARD:
            return self._key_may_be(g, state)
        if g.kind == GATE_ACTIVATION_GUARD:
            return self._gate_activation(g, state)
        if g.kind == NAMED_ACTIVATION_GUARD:
            first = self._value(g.args[0], state)
            keys = _activation_keys(g)
            return first is not None and first[0] == "mod" and is_named_activation(str(first[1]), self.init, keys)
        if g.kind == GATE_PROJECTIONS_GUARD:
            values = [self._value(a, state) for a in g.args]
            return all(v is not None and v[0] == "mod" for v in values) and may_be_passed_projections(
                [str(v[1]) for v in values if v is not None], self.init)
        if g.kind == HANDED_LAYER_GUARD:
            return all(self._handed_layer(self._value(a, state)) for a in g.args)
        if g.kind == VOCABULARY_GUARD:
            return all(projects_to_vocabulary(self._layer_ctor(a, state), self.init)
                       for a in g.args if isinstance(a, PVar))
        for arg in g.args:
            value = self._value(arg, state)
            if value is None or value[0] != "ref":
                continue  # an Expr or an absent optional value has no uses to check
            ok = {
                SINGLE_USE_GUARD: self._single_use,
                ONLY_USE_GUARD: self._only_use,
                NOT_USED_AFTER_GUARD: self._not_used_after,
                NOT_REASSIGNED_GUARD: self._not_reassigned,
            }[g.kind](value, chosen)
            if not ok:
                return False
        return True

    def _verdict(self, g: Guard, values: tuple[Bound | None, ...]) -> bool:
        """A guard of `_VALUE_GUARDS` on these values, answered once per matcher."""
        key = (id(g), values)  # `g` lives as long as the rule
        known = self._verdicts.get(key)
        if known is None:
            known = self._verdicts[key] = self._value_guard_ok(g.kind, values)
        return known

    def _value_guard_ok(self, kind: GuardKind, values: tuple[Bound | None, ...]) -> bool:
        """A guard of `_VALUE_GUARDS` on the values bound to its arguments."""
        if kind == UNSPLIT_GUARD:
            return all(self._unsplit(v) for v in values)
        if kind == SAME_PATHS_GUARD:
            return self._same_paths(list(values))
        if kind == ATTENTION_ROLES_GUARD:
            return plays_attention_roles(values[:3], values[3:], self.flat)
        if kind == ROTARY_TABLES_GUARD:
            return all(is_rotary_table(v, self.flat) for v in values)
        if kind == SCALE_FACTOR_GUARD:
            return all(is_scale_factor(v, self.flat) for v in values)
        if kind == ADDED_BIAS_GUARD:
            return all(v is None or is_scale_factor(v, self.flat) for v in values)
        if kind == INDEPENDENT_GUARD:
            return not computed_from(values[0], values[1], self.flat)
        if kind == TRAILING_AXES_GUARD:
            return all(v is not None and v[0] == "expr" and trailing_axes(str(v[1])) for v in values)
        if kind == OWN_CALL_GUARD:
            return not any(self._container_item(v) for v in values)
        if kind == PERMUTED_SCORES_GUARD:
            return len(values) == 3 and permuted_scores(values[0], values[1], values[2], self.flat)
        if kind == QUERY_VECTOR_GUARD:
            return len(values) == 3 and is_query_vector(values[0], values[1], values[2], self.flat)
        if kind == PROBABILITY_VECTOR_GUARD:
            return len(values) == 5 and is_probability_vector(*values)
        if kind == DISTINCT_GUARD:
            return None not in values and len(set(values)) == len(values)
        if kind == SCALED_ALIKE_GUARD:
            return len(values) == 4 and (values[0] == values[1]) == (values[2] == values[3])
        raise ValueError(f"not a value guard: {kind}")

    def _handed_layer(self, value: Bound | None) -> bool:
        """Whether `value` (a module variable's target, None when its optional step was skipped) is a layer of
        the module a function is handed (`Op.origin` says so) that `__init__` does not bind: `self.attn_drop`
        in a method written outside its class. A layer this file binds is what its binding says, and the
        rule's own patterns read it; this guard admits only the one nothing here can read."""
        if value is None:
            return True
        if value[0] != "mod":
            return False
        target = str(value[1])
        attr = target_attr(target)
        if attr is None or self.init.bindings_of(attr):
            return False
        if self._handed_targets is None:
            self._handed_targets = frozenset(
                n.op.target for n in self.flat.nodes
                if n.op is not None and n.op.kind is MODULE_OP and n.op.origin is not None
                and n.op.origin.target.startswith(HANDED + ": "))
        return target in self._handed_targets

    def _container_item(self, value: Bound | None) -> bool:
        """Whether the op defining `value` is a layer the canonical pass unrolled out of a container's call
        (`self.fc(x)` with `self.fc = nn.Sequential(..., nn.Dropout(p))` runs `self.fc[3]`): the code calls the
        container, not the layer, so no edit of the calling statement replaces that layer alone."""
        if value is None or value[0] != "ref" or len(value) < 3 or value[2] < 0:
            return False
        op = self.flat.nodes[value[2]].op
        origin = op.origin if op is not None else None
        return (op is not None and origin is not None and origin.kind is MODULE_OP
                and op.target.startswith(origin.target + "["))

    def _unsplit(self, value: Bound | None) -> bool:
        """No op reading `value` splits it into parts (an absent optional value or an Expr has none)."""
        if value is None or value[0] != "ref":
            return True
        for u in self._uses(value):
            op = self.flat.nodes[u].op
            if op is not None and op.target.rsplit(".", 1)[-1] in _SPLITS and op.kind in (METHOD_OP, FUNCTION_OP):
                return False
        return True

    def _width_reason(self, state: _State) -> str | None:
        """Why no fix is offered when `same_width` held only on some path (widths bound under conditions)."""
        for g in self.rule.guards:
            if g.kind == SAME_WIDTH_GUARD:
                widths = [self._width(arg, state) for arg in g.args]
                if not (widths_agree(widths) or widths_agree(sized(widths, self.init.size))
                        or agree_by_head_split(widths, self.init)):
                    return (f"the layers' widths ({', '.join(w or '?' for w in widths)}) are one only when "
                            "`__init__` takes some of its branches; rewrite it by hand")
        return None

    def _width(self, p: PValue, state: _State) -> str | None:
        """The output width written in the constructor of the layer a module variable bound (the item's, for
        an item of a container: `self.proj["q"]`)."""
        ctor = self._layer_ctor(p, state)
        return None if ctor is None else output_width(ctor)

    def _layer_ctor(self, p: PValue, state: _State) -> Ctor | None:
        """The constructor of the layer a module variable bound: the binding's own, or the item's for an item
        of a container (`self.proj["q"]`, `self.to_logits[1]`: a Sequential's last Linear)."""
        var = state.var(p.name.lstrip("$")) if isinstance(p, PVar) else ""
        binding = state.bindings.get(var)
        if binding is None or not isinstance(binding.value, Ctor):
            return None
        ctor: Ctor = binding.value
        target, pattern = state.env.get(var), self.init_patterns.get(var)
        if ctor.items and target is not None and target[0] == "mod" and pattern is not None:
            found = self.init.resolve_ctor(str(target[1]), pattern)
            ctor = found[1] if found is not None else ctor
        return ctor

    def _same_paths(self, values: list[Bound | None]) -> bool:
        """The ops defining the values after the first run under the same branch tests, and the op
        defining the first runs wherever they do (a query beside keys and values computed per cache
        path); an absent optional value or an Expr has no op to place."""
        placed = [v[2] for v in values if v is not None and v[0] == "ref" and v[2] >= 0]  # type: ignore[misc]
        if len(placed) < 2:
            return True
        first, rest = placed[0], placed[1:]
        conds = [self.flat.conditions(n) for n in rest]
        return all(c == conds[0] for c in conds) and self._runs_wherever(first, rest[0])

    def _runs_wherever(self, n: int, m: int) -> bool:
        """Whether the layer node `n` calls runs on every path through node `m`: each branch around `n`
        but not `m` calls it in all its alternatives (Luke's query, per entity-aware mode)."""
        op = self.flat.nodes[n].op
        if op is None:
            return True
        outer = set(self.flat.conditions(m))
        calls = self.flat.by_target.get((op.kind._value_, op.target), [])
        for kind, bid, alt in self.flat.nodes[n].ctx:
            if kind != "b" or (self.flat.tests.get(bid, ()), alt) in outer:
                continue
            taken = {c[2] for u in calls for c in self.flat.nodes[u].ctx if c[0] == "b" and c[1] == bid}
            if len(taken) < self.flat.alternatives.get(bid, 0):
                return False
        return True

    def _key_may_be(self, g: Guard, state: _State) -> bool:
        """The layer bound to the first argument is not looked up by literal keys all outside the list, nor by
        a name only an optional parameter gives (`engine.optional_keys`)."""
        first = g.args[0]
        binding = state.bindings.get(state.var(first.name)) if isinstance(first, PVar) else None
        if binding is None or not isinstance(binding.value, Ctor):
            return True
        # an item of a container (`nn.Sequential(nn.Linear(d, h), get_activation("relu"), ...)`): the item's key
        item = self._layer_ctor(first, state) if binding.value.items else None
        keys = literal_keys(item if item is not None else binding.value, self.init.parameters())
        if keys is None:
            return not built_only_when_given(binding, self.init.parameters())
        allowed = {a.text.strip().strip("\"'") for a in g.args[1:] if isinstance(a, Expr)}
        return bool(keys & allowed)

    def _gate_activation(self, g: Guard, state: _State) -> bool:
        """The submodule the first argument bound (none: a function alternative matched) may be a gated
        MLP's activation (`engine.gate_activations`)."""
        value = self._value(g.args[0], state)
        if value is None or value[0] != "mod":
            return True
        keys = {a.text.strip().strip("\"'") for a in g.args[1:] if isinstance(a, Expr)}
        return may_be_gate_activation(str(value[1]), self.init, keys)

    def _no_kwarg(self, g: Guard, state: _State) -> bool:
        """The op defining the first argument passes none of the keywords named by the others."""
        value = self._value(g.args[0], state)
        if value is None or value[0] != "ref" or value[2] < 0:  # type: ignore[misc]
            return True
        op = self.flat.nodes[value[2]].op  # type: ignore[misc]
        banned = {self._text(self._value(a, state)) for a in g.args[1:]}
        return op is None or not any(k.name in banned for k in op.kwargs)

    def _constant_text(self, value: Bound, depth: int = 0) -> str | None:
        """The source of a value computed by torch calls on constants only (`torch.sqrt(torch.tensor(2 /
        math.pi))` lowers to two ops), for `one_of`'s comparison by value; None when anything else feeds it."""
        if value[0] != "ref" or value[2] < 0 or depth > 8:  # type: ignore[misc]
            return None
        op = self.flat.nodes[value[2]].op  # type: ignore[misc]
        if op is None or op.kwargs or len(op.outputs) != 1:
            return None
        args: list[str] = []
        for a in op.args:
            if isinstance(a, Expr):
                args.append(f"({a.text})")
                continue
            if not isinstance(a, Ref):
                return None
            d = self.flat.reaching_def(a.name, value[2])  # type: ignore[misc]
            inner = self._constant_text(("ref", a.name, d), depth + 1)
            if inner is None:
                return None
            args.append(f"({inner})")
        if op.kind == FUNCTION_OP:
            return f"{op.target}({', '.join(args)})"
        if op.kind == OPERATOR_OP and len(args) == 2:
            return f"{args[0]} {op.target} {args[1]}"
        if op.kind == METHOD_OP and args:
            return f"{args[0]}.{op.target}({', '.join(args[1:])})"
        return None

    @staticmethod
    def _text(value: Bound | None) -> str | None:
        return None if value is None else norm_text(value[1])

    def _uses(self, value: Bound) -> list[int]:
        """Nodes reading the definition `value` (a name and its defining node); a cast reading it
        stands for the nodes reading the cast's result."""
        name, d = value[1], value[2]  # type: ignore[misc]
        out: list[int] = []
        for u in self.flat.uses_of.get(name, ()):
            if u <= d or self.flat.reaching_def(name, u) != d:
                continue
            op = self.flat.nodes[u].op
            if self.look_through and op is not None and is_cast(op) and len(op.outputs) == 1 and op.args and op.args[0] == Ref(name):
                out.extend(self._uses(("ref", op.outputs[0], u)))
            else:
                out.append(u)
        return out

    def _single_use(self, value: Bound, chosen: list[int]) -> bool:
        mine = set(chosen)
        return all(u in mine for u in self._uses(value))

    def _only_use(self, value: Bound, chosen: list[int]) -> bool:
        """Every reader of `value` outside the match reads only its size (`h.shape`) or cannot run on one path
        with the match (the other alternative of a branch); a transparent op (a cast, one alternative's value of
        a conditional) counts by its own readers, each taken where it runs."""
        name, d = value[1], value[2]  # type: ignore[misc]
        for u in self.flat.uses_of.get(name, ()):
            if u <= d or u in chosen or self.flat.reaching_def(name, u) != d:
                continue
            if any(not self.flat.compatible(min(u, c), max(u, c)) for c in chosen):
                continue
            op = self.flat.nodes[u].op
            if op is None:  # a `return` reads the value itself; a branch test may read its size only
                if text_reads_size_only(self.flat.test_texts.get(u, (name,)), str(name)):
                    continue
                return False
            if reads_size_only(op) or self._feeds(op, u, chosen):
                continue
            if not (self.look_through and is_cast(op) and len(op.outputs) == 1 and op.args and op.args[0] == Ref(name)
                    and self._only_use(("ref", op.outputs[0], u), chosen)):
                return False
        return True

    def _feeds(self, op: Op, u: int, chosen: list[int], depth: int = 3) -> bool:
        """Whether the result of node `u` is what a later node of the match reads on its path, directly or
        through a few more steps (`x = x[:, :, 1:, 1:].contiguous()` under a test, then `bn(x)`): the value on
        its way to the match, not a second use."""
        for o in op.outputs:
            for w in self.flat.uses_of.get(o, ()):
                if w <= u or not self.flat.may_reach(o, u, w):
                    continue
                if w in chosen:
                    return True
                after = self.flat.nodes[w].op
                if depth > 0 and after is not None and self._feeds(after, w, chosen, depth - 1):
                    return True
        return False

    def _not_used_after(self, value: Bound, chosen: list[int]) -> bool:
        last = max(chosen)
        return all(u <= last for u in self._uses(value))

    def _not_reassigned(self, value: Bound, chosen: list[int]) -> bool:
        name = value[1]
        first, last = min(chosen), max(chosen)
        mine = set(chosen)
        return not any(
            first < d < last and d not in mine and self.flat.compatible(first, d) and self.flat.compatible(d, last)
            for d in self.flat.defs_of.get(name, ())
        )


@dataclass(frozen=True, slots=True)
class _RulePlan:
    """What every `RuleMatcher` of one rule reads of it before and during the search, read once per rule."""

    look_through: bool
    handed_vars: frozenset[str]
    # The value guards asked before the leaves (`_feasible`): those on variables only (a PAny or a literal
    # argument is left to the leaf). Each with its variables' names (`_value` of a PVar, read inline:
    # `_feasible` runs at every step).
    early: tuple[tuple[Guard, tuple[str, ...]], ...]
    # The text guards (`one_of($d1, -1, -2)`), asked there too once their variables are bound: their answer
    # is a function of the bound values, the literals and `__init__`'s constants (`_guard_ok`).
    early_texts: tuple[tuple[Guard, tuple[PVar, ...]], ...]
    # `possible`'s questions, in its order: the literal requirements, the init patterns of the required
    # module variables, per required step its alternatives ((kind, key, None) for a literal target,
    # (kind, (), variable) for a module variable), the keys of each `named_activation` guard.
    literals: tuple[tuple[tuple[str, str], ...], ...]
    required_init: tuple[BindingPattern, ...]
    required_steps: tuple[tuple[tuple[OpKind, tuple[str, ...], str | None], ...], ...]
    named_activations: tuple[frozenset[str], ...]
    # The guards `_guards_ok` asks at the leaves, in the rule's order: on what the variables bound (`hard`), and
    # on how the values are used.
    hard_guards: tuple[Guard, ...]
    use_guards: tuple[Guard, ...]


_PLANS: dict[int, tuple[Rule, _RulePlan]] = {}


def _plan(rule: Rule) -> _RulePlan:
    """`rule`'s `_RulePlan` (cached per rule object: rules are immutable and live as long as the rule set)."""
    kept = _PLANS.get(id(rule))
    if kept is not None and kept[0] is rule:
        return kept[1]
    required = required_init_vars(rule)
    plan = _RulePlan(
        look_through=not names_casts(rule),
        handed_vars=frozenset(a.name for g in rule.guards if g.kind is HANDED_LAYER_GUARD
                              for a in g.args if isinstance(a, PVar)),
        early=tuple((g, tuple(a.name for a in g.args if isinstance(a, PVar))) for g in rule.guards
                    if g.kind in _VALUE_GUARDS and g.args and all(isinstance(a, PVar) for a in g.args)),
        early_texts=tuple((g, tuple(a for a in g.args if isinstance(a, PVar))) for g in rule.guards
                          if g.kind in _TEXT_GUARDS and any(isinstance(a, PVar) for a in g.args)),
        literals=literal_requirements(rule),
        required_init=tuple(b for b in rule.init if b.var.lstrip("$") in required),
        required_steps=tuple(
            tuple((kind, (kind._value_, t), None) if not t.startswith("$") else (kind, (), t.lstrip("$"))
                  for kind, t in step.targets)
            for step in rule.forward if not step.optional),
        named_activations=tuple(frozenset(_activation_keys(g)) for g in rule.guards if g.kind == NAMED_ACTIVATION_GUARD),
        hard_guards=tuple(g for g in rule.guards if g.kind not in _USE_GUARDS),
        use_guards=tuple(g for g in rule.guards if g.kind in _USE_GUARDS),
    )
    if len(_PLANS) > 4096:  # rules reloaded many times: the older plans go
        _PLANS.clear()
    _PLANS[id(rule)] = (rule, plan)
    return plan


def _enough_nodes(steps: Sequence[OpPattern], cands: Sequence[list[int]]) -> bool:
    """Whether the required steps that share one candidate list have as many nodes in it as they are: a
    match binds each required step to a node of its candidates, each node to one step at most
    (`_search` skips the nodes chosen already). The rope rules' two `neg`s and two `cat`s are not looked
    for in an attention forward with one of each."""
    wanted: dict[tuple[int, ...], int] = {}
    for step, found in zip(steps, cands, strict=True):
        if not step.optional:
            key = tuple(found)
            need = wanted[key] = wanted.get(key, 0) + 1
            if need > len(found):
                return False
    return True
