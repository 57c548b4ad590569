"""Property tests: printing then parsing gives back the same value, for every DSL value kind."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from adopter.dsl import (
    format_architecture,
    format_module_file,
    format_rule,
    parse_architecture,
    parse_module_file,
    parse_rules,
)
from adopter.dsl.printer import format_rules
from adopter.dsl.types import Architecture, ModuleFile, Rule

from .strategies import architectures, module_files, rules, strip_positions

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(architectures)
def test_architecture_round_trip(arch: Architecture) -> None:
    text = format_architecture(arch)
    assert parse_architecture(text) == arch
    assert format_architecture(parse_architecture(text)) == text


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(module_files)
def test_module_file_round_trip(mf: ModuleFile) -> None:
    assert parse_module_file(format_module_file(mf)) == mf


@SETTINGS
@given(rules())
def test_rule_round_trip(rule: Rule) -> None:
    text = format_rule(rule)
    (parsed,) = parse_rules(text, "x.adl")
    assert parsed.path == "x.adl"
    assert strip_positions(parsed) == strip_positions(rule)
    assert format_rule(parsed) == text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules(), rules())
def test_rule_file_round_trip(first: Rule, second: Rule) -> None:
    if first.id == second.id:
        second = Rule(**{**{f: getattr(second, f) for f in second.__dataclass_fields__}, "id": first.id + "_2"})
    parsed = parse_rules(format_rules([first, second]))
    assert [strip_positions(rule) for rule in parsed] == [strip_positions(first), strip_positions(second)]
