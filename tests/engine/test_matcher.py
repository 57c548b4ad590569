"""Table-driven matcher tests over hand-built architectures."""

from __future__ import annotations

import pytest

from adopter.dsl.types import Ctor, Expr, Forward, Kwarg, Op, OpKind, Param, Ref, Return, Span, Target
from adopter.engine import Environment, check, find

from .build import arch, bind, branch, guard, loop, mfile, op, ret, rule, sp, step

CPU = Environment("cpu", frozenset(), "2.13.0")
DROPOUT = Ctor("torch.nn.Dropout", (Expr("0.1"),))
LN = Ctor("torch.nn.LayerNorm", (Expr("768"),))
LINEAR = Ctor("torch.nn.Linear", (Expr("768"), Expr("768")))
BINDS = {"dropout": DROPOUT, "LayerNorm": LN, "dense": LINEAR}

DAL = rule(
    (step("$h", "module:$d", "$x"), step("$t", "operator:+", "$h", "$r"), step("$out", "module:$ln", "$t")),
    (bind("$d", "torch.nn.Dropout"), bind("$ln", "torch.nn.LayerNorm")),
    (guard("single_use", "$h"), guard("single_use", "$t")),
)

# Each case: (id, forward body, bindings, expected number of findings)
CASES = [
    ("bert_style", (op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
                    op("out", "module", "self.LayerNorm", "%1"), ret("out")), BINDS, 1),
    ("commutative_add", (op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "residual", "h"),
                         op("out", "module", "self.LayerNorm", "%1"), ret("out")), BINDS, 1),
    ("names_reused", (op("hidden", "module", "self.dropout", "hidden"),
                      op("%1", "operator", "+", "hidden", "residual"),
                      op("hidden", "module", "self.LayerNorm", "%1"), ret("hidden")), BINDS, 1),
    ("intermediate_used_elsewhere", (op("h", "module", "self.dropout", "hidden"), op("y", "operator", "*", "h", "=2"),
                                     op("%1", "operator", "+", "h", "residual"),
                                     op("out", "module", "self.LayerNorm", "%1"), ret("out", "y")), BINDS, 1),
    ("intermediate_returned", (op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
                               op("out", "module", "self.LayerNorm", "%1"), ret("out", "h")), BINDS, 1),
    ("redefined_between", (op("h", "module", "self.dropout", "hidden"), op("h", "function", "torch.relu", "h"),
                           op("%1", "operator", "+", "h", "residual"),
                           op("out", "module", "self.LayerNorm", "%1"), ret("out")), BINDS, 0),
    ("redefined_in_branch_between", (op("h", "module", "self.dropout", "hidden"),
                                     branch((op("h", "function", "torch.relu", "h"),), ()),
                                     op("%1", "operator", "+", "h", "residual"),
                                     op("out", "module", "self.LayerNorm", "%1"), ret("out")), BINDS, 1),
    ("wrong_module_bound", (op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
                            op("out", "module", "self.dense", "%1"), ret("out")), BINDS, 0),
    ("unbound_module", (op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
                        op("out", "module", "self.norm", "%1"), ret("out")), BINDS, 0),
    ("wrong_order", (op("%1", "operator", "+", "hidden", "residual"), op("h", "module", "self.dropout", "%1"),
                     op("out", "module", "self.LayerNorm", "h"), ret("out")), BINDS, 0),
    ("unrelated_ops_between", (op("h", "module", "self.dropout", "hidden"), op("z", "function", "torch.zeros", "=3"),
                               op("%1", "operator", "+", "h", "residual"),
                               op("out", "module", "self.LayerNorm", "%1"), ret("out", "z")), BINDS, 1),
    ("once_across_paths", (branch((op("residual", "function", "torch.tanh", "residual"),), ()),
                           op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
                           op("out", "module", "self.LayerNorm", "%1"), ret("out")), BINDS, 1),
    ("inside_one_alternative", (branch((op("h", "module", "self.dropout", "hidden"),
                                        op("%1", "operator", "+", "h", "residual"),
                                        op("out", "module", "self.LayerNorm", "%1"), ret("out")),
                                       (ret("hidden"),)),), BINDS, 1),
    ("split_over_alternatives", (branch((op("h", "module", "self.dropout", "hidden"),),
                                        (op("%1", "operator", "+", "h", "residual"),
                                         op("out", "module", "self.LayerNorm", "%1"))), ret("out")), BINDS, 0),
    ("cut_by_return", (branch((op("h", "module", "self.dropout", "hidden"), ret("h")), ()),
                       op("%1", "operator", "+", "h", "residual"),
                       op("out", "module", "self.LayerNorm", "%1"), ret("out")), BINDS, 0),
    ("in_loop_body", (loop((op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
                            op("hidden", "module", "self.LayerNorm", "%1"))), ret("hidden")), BINDS, 1),
    ("conditional_binding_counts", (op("h", "module", "self.dropout", "hidden"),
                                    op("%1", "operator", "+", "h", "residual"),
                                    op("out", "module", "self.LayerNorm", "%1"), ret("out")),
     {"dropout": DROPOUT, "LayerNorm": LN}, 1),
]


@pytest.mark.parametrize(("body", "binds", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_dropout_add_layernorm(body: tuple, binds: dict, expected: int) -> None:
    findings = find(mfile(arch(body, binds)), [DAL], CPU)
    assert len(findings) == expected


@pytest.mark.parametrize("name", ["intermediate_used_elsewhere", "intermediate_returned", "redefined_in_branch_between"])
def test_value_used_outside_the_match_is_a_site_without_a_fix(name: str) -> None:
    body, binds, _ = next(c[1:] for c in CASES if c[0] == name)
    (f,) = find(mfile(arch(body, binds)), [DAL], CPU)
    assert not f.fixable and "used outside" in (f.no_fix_reason or "")


def test_finding_spans_and_bindings() -> None:
    body = (op("h", "module", "self.dropout", "hidden", line=10), op("%1", "operator", "+", "h", "residual", line=11),
            op("out", "module", "self.LayerNorm", "%1", line=11), ret("out"))
    (f,) = find(mfile(arch(body, BINDS)), [DAL], CPU)
    assert f.stmt_spans == (sp(10), sp(11))
    assert (f.span.start_line, f.span.end_line) == (10, 11)
    assert sorted(f.init_spans, key=lambda s: s.start_line) == [sp(100), sp(101)]
    env = dict(f.match.env)
    assert env["d"] == "self.dropout" and env["ln"] == "self.LayerNorm"
    assert env["x"] == Ref("hidden") and env["r"] == Ref("residual") and env["out"] == Ref("out")
    assert [o.target for o in f.match.ops] == ["self.dropout", "+", "self.LayerNorm"]
    assert f.fixable and f.targets == ("portable",) and f.scope_name == "M"


def test_straddling_branches_is_not_fixable() -> None:
    body = (op("h", "module", "self.dropout", "hidden"),
            branch((op("%1", "operator", "+", "h", "residual"), op("out", "module", "self.LayerNorm", "%1")),
                   (op("out", "module", "self.dense", "hidden"),)), ret("out"))
    (f,) = find(mfile(arch(body, BINDS)), [DAL], CPU)
    assert not f.fixable and "branches" in (f.no_fix_reason or "")


def test_helper_inlined_twice_is_one_site() -> None:
    helper = (op("h", "module", "self.dropout", "hidden", line=50, via=("self._out",)),
              op("%1", "operator", "+", "h", "residual", line=51, via=("self._out",)),
              op("out", "module", "self.LayerNorm", "%1", line=51, via=("self._out",)))
    body = (branch((*helper, ret("out")), (*helper, ret("out"))),)
    findings = find(mfile(arch(body, BINDS)), [DAL], CPU)
    assert len(findings) == 1 and findings[0].fixable
    assert findings[0].stmt_spans == (sp(50), sp(51))


def test_container_items_and_literal_targets() -> None:
    r = rule((step("$o", "module:$blk", "$x"),), (bind("$blk", "BertLayer"),))
    layers = Ctor("torch.nn.ModuleList", items=(Ctor("transformers.models.bert.modeling_bert.BertLayer"),),
                  repeat="config.num_hidden_layers")
    body = (loop((op("hidden", "module", "self.layer[*]", "hidden"),)), ret("hidden"))
    (f,) = find(mfile(arch(body, {"layer": layers})), [r], CPU)
    assert dict(f.match.env)["blk"] == "self.layer[*]"
    assert not find(mfile(arch(body, {"layer": Ctor("torch.nn.ModuleList", items=(LN,))})), [r], CPU)


ATTN = rule(
    (step("$s", "function:torch.matmul|operator:@", "$q", "$kt"),
     step("$p", "function:torch.nn.functional.softmax", "$s", dim="$dim"),
     step("$p2", "module:$drop", "$p", optional=True),
     step("$o", "function:torch.matmul|operator:@", "$p2", "$v")),
    (bind("$drop", "torch.nn.Dropout"),),
    (guard("equals", "$dim", "-1"), guard("not_used_after", "$p")),
)


@pytest.mark.parametrize(("body", "expected_ops"), [
    ((op("s", "operator", "@", "q", "kt"), op("p", "function", "torch.nn.functional.softmax", "s", dim="=-1"),
      op("p", "module", "self.drop", "p"), op("o", "function", "torch.matmul", "p", "v"), ret("o")), 4),
    ((op("s", "function", "torch.matmul", "q", "kt"),
      op("p", "function", "torch.nn.functional.softmax", "s", dim="=-1"),
      op("o", "operator", "@", "p", "v"), ret("o")), 3),
    ((op("s", "operator", "@", "q", "kt"), op("p", "function", "torch.nn.functional.softmax", "s", dim="=1"),
      op("o", "operator", "@", "p", "v"), ret("o")), 0),
    ((op("s", "operator", "@", "q", "kt"), op("p", "function", "torch.nn.functional.softmax", "s", dim="=-1"),
      op("o", "operator", "@", "p", "v"), ret("o", "p")), 3),  # probabilities returned: a site, no fix
], ids=["optional_present", "optional_absent", "guard_equals_fails", "probs_returned"])
def test_optional_steps_alternatives_guards(body: tuple, expected_ops: int) -> None:
    findings = find(mfile(arch(body, {"drop": DROPOUT})), [ATTN], CPU)
    assert len(findings) == (1 if expected_ops else 0)
    if expected_ops:
        assert len(findings[0].match.ops) == expected_ops
        returned = any(isinstance(st, Return) and Ref("p") in st.values for st in body)
        assert findings[0].fixable != returned  # returned probabilities: reported, not fixable


def test_absent_optional_binds_output_to_input() -> None:
    body = (op("s", "operator", "@", "q", "kt"), op("p", "function", "torch.nn.functional.softmax", "s", dim="=-1"),
            op("o", "operator", "@", "p", "v"), ret("o"))
    (f,) = find(mfile(arch(body, {"drop": DROPOUT})), [ATTN], CPU)
    env = dict(f.match.env)
    assert env["p"] == env["p2"] == Ref("p")


def test_not_reassigned_guard() -> None:
    r = rule((step("$a", "function:torch.relu", "$x"), step("$b", "operator:+", "$a", "$x")),
             guards=(guard("not_reassigned", "$x"),))
    ok = (op("a", "function", "torch.relu", "hidden"), op("b", "operator", "+", "a", "hidden"), ret("b"))
    assert len(find(mfile(arch(ok)), [r], CPU)) == 1


def test_function_scope_rules() -> None:
    r = rule((step("$o", "function:torch.optim.AdamW", "_", extra=True),), scope="function", family=17)
    fn = Forward("<module>", (), (op("opt", "function", "torch.optim.AdamW", "%1", lr="=1e-3"),), sp(0))
    findings = find(mfile(functions=(fn,)), [r], CPU)
    assert [f.scope_name for f in findings] == ["<module>"]
    # forward-scope rules match module-level functions too (a helper such as `eager_attention_forward`)
    r2 = rule((step("$o", "function:torch.optim.AdamW", "_", extra=True),), family=17)
    assert [f.scope_name for f in find(mfile(functions=(fn,)), [r2], CPU)] == ["<module>"]
    # ... but a rule needing an `__init__` binding finds none there
    r3 = rule((step("$o", "module:$m", "$x"),), (bind("$m", "torch.nn.Linear"),), family=17)
    body = (op("h", "call", "m", "%1"),)
    assert not find(mfile(functions=(Forward("f", (), body, sp(0)),)), [r3], CPU)


def test_target_availability() -> None:
    liger = rule(DAL.forward, DAL.init, DAL.guards,
                 targets=(Target("liger", "liger_kernel.x", devices=("cuda",), packages=("liger_kernel",)),))
    body = (op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
            op("out", "module", "self.LayerNorm", "%1"), ret("out"))
    (f,) = find(mfile(arch(body, BINDS)), [liger], CPU)
    assert not f.fixable and f.targets == () and "liger_kernel" in (f.no_fix_reason or "")
    cuda = Environment("cuda", frozenset({"liger_kernel"}), "2.13.0")
    (g,) = find(mfile(arch(body, BINDS)), [liger], cuda)
    assert g.fixable and g.targets == ("liger",)


def test_broken_architecture_becomes_problem() -> None:
    # A malformed op (an argument that is not a Value) that the compiled types still accept.
    # (torch.exp has one spelling, so the canonical pass, which leaves a malformed forward as it is,
    # does not change what the rule sees.)
    bad = Op(OpKind.FUNCTION, "torch.exp", (None,), (), ("a",), sp(1), sp(1))  # type: ignore[arg-type]
    relu = rule((step("$a", "function:torch.exp", "$x"),))
    result = check(mfile(arch((bad,))), [relu, DAL], CPU)
    assert result.findings == () and [p.code for p in result.problems] == ["t01"]
    assert find(mfile(arch((bad,))), [relu], CPU) == ()


def test_params_are_values() -> None:
    a = arch((op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
              op("out", "module", "self.LayerNorm", "%1"), ret("out")), BINDS, params=("hidden", "residual"))
    assert a.forward is not None and Param("hidden") in a.forward.params
    assert len(find(mfile(a), [DAL], CPU)) == 1


def test_init_pattern_variables_bind_constructor_arguments() -> None:
    from adopter.dsl.types import BindingPattern, CtorPattern, PVar

    r = rule((step("$o", "module:$ln", "$x"),),
             (BindingPattern("ln", CtorPattern(("torch.nn.LayerNorm",), (PVar("dim"),))),))
    body = (op("out", "module", "self.LayerNorm", "hidden"), ret("out"))
    ln = Ctor("torch.nn.LayerNorm", (Expr("config.hidden_size"),), (Kwarg("eps", Expr("1e-5")),))
    (f,) = find(mfile(arch(body, {"LayerNorm": ln})), [r], CPU)
    assert dict(f.match.env)["dim"] == Expr("config.hidden_size")


QKV = rule(
    (step("$q", "module:$wq", "$x"), step("$k", "module:$wk", "$x"), step("$v", "module:$wv", "$x")),
    (bind("$wq", "torch.nn.Linear"), bind("$wk", "torch.nn.Linear"), bind("$wv", "torch.nn.Linear")),
    family=9,
)
QKV_BINDS = {"query": LINEAR, "key": LINEAR, "value": LINEAR, "sr": LINEAR}


def test_input_redefined_on_one_path_is_a_site_but_not_fixable() -> None:
    # query on x; then, only when a flag is set, x is reduced before key and value (SegFormer-style).
    body = (op("q", "module", "self.query", "x"),
            branch((op("x", "module", "self.sr", "x"),), ()),
            op("k", "module", "self.key", "x"), op("v", "module", "self.value", "x"), ret("q", "k", "v"))
    (f,) = find(mfile(arch(body, QKV_BINDS, params=("x",))), [QKV], CPU)
    assert not f.fixable and "another control-flow path" in (f.no_fix_reason or "")
    # an unconditional redefinition leaves no path on which the three share their input
    body2 = (op("q", "module", "self.query", "x"), op("x", "module", "self.sr", "x"),
             op("k", "module", "self.key", "x"), op("v", "module", "self.value", "x"), ret("q", "k", "v"))
    assert not find(mfile(arch(body2, QKV_BINDS, params=("x",))), [QKV], CPU)


def test_distinct_module_variables_bind_distinct_submodules() -> None:
    # self.key called three times is not three projections
    body = (op("a", "module", "self.key", "x"), op("b", "module", "self.key", "x"),
            op("c", "module", "self.key", "x"), ret("a", "b", "c"))
    assert not find(mfile(arch(body, QKV_BINDS, params=("x",))), [QKV], CPU)
    body2 = (op("a", "module", "self.query", "x"), op("b", "module", "self.key", "x"),
             op("c", "module", "self.value", "x"), ret("a", "b", "c"))
    (f,) = find(mfile(arch(body2, QKV_BINDS, params=("x",))), [QKV], CPU)
    assert f.fixable


def test_inherited_forward_is_one_site_owned_by_the_defining_class() -> None:
    from dataclasses import replace

    body = (op("h", "module", "self.dropout", "hidden", line=10), op("%1", "operator", "+", "h", "residual", line=11),
            op("out", "module", "self.LayerNorm", "%1", line=11), ret("out"))
    base = replace(arch(body, BINDS, name="Base"), span=Span(5, 0, 20, 0))
    sub = replace(arch(body, BINDS, name="Sub"), span=Span(30, 0, 35, 0))
    (f,) = find(mfile(sub, base), [DAL], CPU)
    assert f.scope_name == "Base"


def test_results_are_cached_per_class_object_and_recomputed_for_new_ones() -> None:
    body = (op("h", "module", "self.dropout", "hidden"), op("%1", "operator", "+", "h", "residual"),
            op("out", "module", "self.LayerNorm", "%1"), ret("out"))
    a = arch(body, BINDS)
    first = find(mfile(a), [DAL], CPU)
    assert find(mfile(a), [DAL], CPU) == first and len(first) == 1
    # same forward, but LayerNorm is now a Linear: a new Architecture object, so matched afresh
    from dataclasses import replace

    changed = replace(a, init=arch(body, {**BINDS, "LayerNorm": LINEAR}).init)
    assert find(mfile(changed), [DAL], CPU) == ()


def test_container_item_call_is_the_item_not_its_children() -> None:
    r = rule((step("$o", "module:$ln", "$x"),), (bind("$ln", "torch.nn.LayerNorm"),))
    blocks = Ctor("torch.nn.ModuleList", items=(Ctor("torch.nn.Sequential", items=(LINEAR, LN)),))
    body = (loop((op("hidden", "module", "self.blocks[*]", "hidden"),)), ret("hidden"))
    assert not find(mfile(arch(body, {"blocks": blocks})), [r], CPU)
