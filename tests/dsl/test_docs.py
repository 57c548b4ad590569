"""The examples in docs/dsl.md parse, so the user documentation cannot drift from the grammar."""

from __future__ import annotations

import re
from pathlib import Path

from adopter.dsl import format_architecture, parse_architecture, parse_rules

DOC = Path(__file__).resolve().parents[2] / "docs" / "dsl.md"


def adl_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return [m.group(2) for m in re.finditer(r"^(`{3,})adl\n(.*?)^\1$", text, re.S | re.M)]


def test_documented_examples_parse() -> None:
    blocks = adl_blocks()
    models = [block for block in blocks if block.lstrip().startswith("model")]
    rule_files = [block for block in blocks if "rule " in block and block not in models]
    assert models and rule_files
    for block in models:
        assert format_architecture(parse_architecture(block)) == block
    for block in rule_files:
        (rule,) = parse_rules(block, "docs/dsl.md")
        assert rule.init and rule.forward and rule.guards and rule.replacement and rule.examples
        assert {example.should_match for example in rule.examples} == {True, False}


def test_rule_reference_is_current() -> None:
    """docs/rules.md is what `adopter rules --docs docs/rules.md` writes from the bundled rules."""
    from adopter.engine import load_rules
    from adopter.engine.rule_docs import rules_markdown

    current = (DOC.parent / "rules.md").read_text(encoding="utf-8")
    assert current == rules_markdown(load_rules().rules), "run: adopter rules --docs docs/rules.md"
