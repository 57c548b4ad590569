"""Every embedded example of every rule in rules/: must-match examples match once per site (and rewrite
to the expected code), must-not-match examples give nothing.

A must-match example has one site unless lines carry `# site` comments: then one finding must start on
each marked line. One that carries a `# no fix` comment is reported without an automatic fix (a value of
the match is used elsewhere, ...), and its finding says why.
"""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Example, Rule
from adopter.engine import Environment, check, load_rules
from adopter.session import rewrite
from adopter.synth import Rewritten

RULES = load_rules().rules
CASES = [(r, i, ex) for r in RULES for i, ex in enumerate(r.examples)]
CPU = Environment("cpu", frozenset(), "2.13.0")
EVERYTHING = Environment("cuda", frozenset({"liger_kernel", "apex", "flash_attn"}), "2.13.0")


def _env(rule: Rule, example: Example) -> Environment:
    """The environment in which the example's target (or the rule's preferred one) is offered."""
    wanted = example.target or next((t.name for t in rule.targets if t.preferred), None)
    target = next((t for t in rule.targets if t.name == wanted), None)
    if target is None or CPU.offers(target):
        return CPU
    return EVERYTHING


def _norm(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.strip("\n").split("\n"))


def test_every_rule_has_both_kinds_of_examples() -> None:
    lacking = [r.id for r in RULES if {ex.should_match for ex in r.examples} != {True, False}]
    assert not lacking, f"rules without both must-match and must-not-match examples: {lacking}"


@pytest.mark.parametrize(("rule", "index", "example"), CASES,
                         ids=[f"{r.id}-{i}-{'match' if ex.should_match else 'nomatch'}" for r, i, ex in CASES])
def test_example(rule: Rule, index: int, example: Example) -> None:
    env = _env(rule, example)
    module_file = analyse(example.code, f"{rule.id}-example-{index}.py")
    result = check(module_file, [rule], env)
    assert not result.problems, [p.render() for p in result.problems]
    found = result.findings
    if not example.should_match:
        assert found == (), f"{rule.id} example {index} must not match, found lines " \
                            f"{[f.span.start_line + 1 for f in found]}"
        return
    marked = [i for i, line in enumerate(example.code.split("\n")) if line.rstrip().endswith("# site")]
    if marked:
        assert sorted(f.span.start_line for f in found) == marked
    else:
        assert len(found) == 1, f"{rule.id} example {index}: expected one site, found {len(found)}"
    if "# no fix" in example.code:
        # Refused up front by the engine, or by the rule's strategy when it tries (`sdpa_chain` judges values
        # with another definition on another path itself): either way no fix, and a reason.
        engine_refused = [f for f in found if not f.fixable]
        assert all(f.no_fix_reason for f in engine_refused), [f.no_fix_reason for f in engine_refused]
        tried = [f for f in found if f.fixable]
        if tried:
            out = rewrite(example.code, tried, target=example.target, path=f"{rule.id}-example.py", rules=[rule],
                          env=env)
            declined = out.skipped
            assert not isinstance(out, Rewritten) or out.new_source == example.code, out.new_source
            assert len(declined) == len(tried) and all(s.reason for s in declined), getattr(out, "reason", out)
    if example.expected is None:
        return
    out = rewrite(example.code, found, target=example.target, path=f"{rule.id}-example.py", rules=[rule], env=env)
    assert isinstance(out, Rewritten), getattr(out, "reason", out)
    assert not out.skipped, [s.reason for s in out.skipped]
    assert _norm(out.new_source) == _norm(example.expected)
    # Fixing again changes nothing: the fixed sites are gone.
    again = check(analyse(out.new_source), [rule], env).findings
    assert not [f for f in again if f.fixable]
