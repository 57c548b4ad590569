"""What matching reads once instead of per rule and scope (helper `spdmatch`, issues 20-22), against what it
stands for:

- `_RulePlan`: each shipped rule's plan holds what `RuleMatcher` and `possible` read of the rule (the literal
  requirements, the init patterns of the required module variables, each required step's alternatives, the
  early guards, the leaf guards split into hard and use guards, in the rule's order).
- `InitIndex.fitting`: the module targets that resolve for a pattern, one answer per list of targets and equal
  constructor patterns (f09's `$wq`, `$wk`, `$wv` are three equal patterns); a different pattern or another
  list is answered afresh, and a recording index (the match memo's) still records its questions.
- `plays_attention_roles`: the reading of the three values is kept per forward, and answers as it is computed.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.dsl.types import BindingPattern, CtorPattern, GuardKind
from adopter.engine import load_rules
from adopter.engine.attention_roles import _play_roles, plays_attention_roles
from adopter.engine.bindings import InitIndex, ctor_key
from adopter.engine.flow import flatten
from adopter.engine.matcher import _USE_GUARDS, RuleMatcher, _activation_keys, _plan
from adopter.engine.plans import canonical_rule, literal_requirements, names_casts, required_init_vars
from adopter.engine.sites import _AskedInit

SOURCE = '''import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Sequential(nn.Linear(d, d), nn.GELU())

    def forward(self, x):
        x = self.norm(x)
        q = self.q(x)
        k = self.k(x)
        v = self.v(x)
        scores = q @ k.transpose(-1, -2)
        p = scores.softmax(-1)
        return self.proj(p @ v)
'''


def _rules() -> list:
    return [canonical_rule(r) for r in load_rules().rules]


def test_every_rules_plan_holds_what_the_matcher_reads_of_it() -> None:
    for rule in _rules():
        plan = _plan(rule)
        assert _plan(rule) is plan  # read once per rule object
        required = required_init_vars(rule)
        assert plan.look_through == (not names_casts(rule)), rule.id
        assert plan.literals == literal_requirements(rule), rule.id
        assert plan.required_init == tuple(b for b in rule.init if b.var.lstrip("$") in required), rule.id
        steps = [s for s in rule.forward if not s.optional]
        assert len(plan.required_steps) == len(steps), rule.id
        for step, alternatives in zip(steps, plan.required_steps, strict=True):
            assert [(k, t) for k, _, t in alternatives if t is not None] == [
                (k, t.lstrip("$")) for k, t in step.targets if t.startswith("$")], rule.id
            assert [key for _, key, t in alternatives if t is None] == [
                (k.value, t) for k, t in step.targets if not t.startswith("$")], rule.id
        assert plan.named_activations == tuple(frozenset(_activation_keys(g)) for g in rule.guards
                                               if g.kind is GuardKind.NAMED_ACTIVATION), rule.id
        assert plan.hard_guards + plan.use_guards == tuple(
            [g for g in rule.guards if g.kind not in _USE_GUARDS] + [g for g in rule.guards if g.kind in _USE_GUARDS])
        assert all(g.kind in _USE_GUARDS for g in plan.use_guards), rule.id


def test_equal_constructor_patterns_share_one_number() -> None:
    linear = CtorPattern(("torch.nn.Linear",))
    assert ctor_key(linear) == ctor_key(CtorPattern(("torch.nn.Linear",))) == ctor_key(linear)
    assert ctor_key(CtorPattern(("torch.nn.LayerNorm",))) != ctor_key(linear)
    assert ctor_key(CtorPattern(("torch.nn.Linear",), extra_args=not linear.extra_args)) != ctor_key(linear)


def _scope() -> tuple[InitIndex, list[str]]:
    arch = next(a for a in analyse(SOURCE, "attention.py").architectures if a.name == "Attention")
    assert arch.forward is not None
    flat = flatten(arch.forward)
    return InitIndex.of(arch), flat.targets_of_kind["module"]


def test_fitting_targets_are_those_that_resolve_for_each_pattern() -> None:
    init, targets = _scope()
    fresh, _ = _scope()
    wq = BindingPattern("$wq", CtorPattern(("torch.nn.Linear",)))
    wk = BindingPattern("$wk", CtorPattern(("torch.nn.Linear",)))
    norm = BindingPattern("$ln", CtorPattern(("torch.nn.LayerNorm",)))
    for pattern in (wq, wk, norm):
        expected = tuple(t for t in targets if fresh.resolve_ctor(t, pattern) is not None)
        assert init.fitting(targets, pattern) == expected
    assert init.fitting(targets, wq) == ("self.q", "self.k", "self.v", "self.proj[0]")  # the Sequential unrolled
    assert init.fitting(targets, norm) == ("self.norm",)
    # another list of targets (the view's, or the handed layers only) is answered for itself
    assert init.fitting(["self.v", "self.norm"], wk) == ("self.v",)


def test_a_recording_index_records_the_questions_fitting_asks() -> None:
    init, targets = _scope()
    rule = next(r for r in _rules() if r.id == "f09-fused-qkv")
    asked = _AskedInit.for_rule(init, rule)
    wq = BindingPattern("$wq", CtorPattern(("torch.nn.Linear",)))
    asked.fitting(targets, wq)
    assert [(q, t) for q, t, _, _ in asked.asked] == [("resolve", t) for t in targets]


def test_attention_roles_are_read_once_per_triple_and_answer_as_computed() -> None:
    arch = next(a for a in analyse(SOURCE, "attention.py").architectures if a.name == "Attention")
    assert arch.forward is not None
    flat = flatten(arch.forward)
    by_output = {n.op.outputs[0]: n.index for n in flat.nodes if n.op is not None and n.op.outputs}
    q, k, v = (("ref", name, by_output[name]) for name in ("q", "k", "v"))
    for triple in ((q, k, v), (k, v, q), (v, q, q)):
        expected = _play_roles(triple, flatten(arch.forward))
        assert plays_attention_roles(triple, (None, None, None), flat) == expected
        assert flat.roles[triple] == expected
    assert plays_attention_roles((q, k, v), (None, None, None), flat)


def test_the_matcher_reads_the_plan_of_its_rule() -> None:
    init, _ = _scope()
    arch = next(a for a in analyse(SOURCE, "attention.py").architectures if a.name == "Attention")
    assert arch.forward is not None
    rule = next(r for r in _rules() if r.id == "f09-fused-qkv")
    matcher = RuleMatcher(rule, flatten(arch.forward), init)
    assert matcher.plan is _plan(rule)
    assert matcher.possible()
    assert len(list(matcher.matches())) >= 1
