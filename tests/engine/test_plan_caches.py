"""`plans.names_casts` is answered once per rule object (every `RuleMatcher` asks it: 8,293 times over the
corpus), and afresh for another rule object, whatever its id (helper `speed9`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from adopter.dsl.types import OpKind, OpPattern
from adopter.engine import load_rules
from adopter.engine.plans import names_casts


class _Steps(tuple):  # type: ignore[type-arg]
    """A rule's steps that count how often they are read through."""

    reads = 0

    def __iter__(self) -> Any:
        type(self).reads += 1
        return super().__iter__()


@pytest.mark.pure_python  # counts reads through patched / Python-level calls the compiled build makes natively
def test_names_casts_reads_a_rules_steps_once() -> None:
    rule = next(r for r in load_rules().rules if r.id == "f06-linear-gelu")
    counted = replace(rule, forward=_Steps(rule.forward))
    _Steps.reads = 0
    assert names_casts(counted) is False
    assert names_casts(counted) is False
    assert _Steps.reads == 1


def test_another_rule_object_is_answered_afresh() -> None:
    rule = next(r for r in load_rules().rules if r.id == "f06-linear-gelu")
    assert names_casts(rule) is False
    cast = OpPattern(((OpKind.OPERATOR, "cast"),), rule.forward[0].args, (), rule.forward[0].outputs)
    assert names_casts(replace(rule, forward=(cast, *rule.forward[1:]))) is True
