"""The TextMate grammar and language configuration: valid JSON, regexes that compile, sensible scopes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adopter.dsl.grammar import keywords
from adopter.resources import grammar_dir

TM = grammar_dir() / "adopter.tmLanguage.json"
CONFIG = grammar_dir() / "language-configuration.json"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def rules_of(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if any(key in node for key in ("match", "begin", "end")):
            yield node
        for value in node.values():
            yield from rules_of(value)
    elif isinstance(node, list):
        for value in node:
            yield from rules_of(value)


def test_grammar_metadata() -> None:
    grammar = load(TM)
    assert grammar["scopeName"] == "source.adopter"
    assert grammar["fileTypes"] == ["adl"]
    for pattern in grammar["patterns"]:
        name = pattern["include"].lstrip("#")
        assert name in grammar["repository"], name


def test_every_regex_compiles() -> None:
    count = 0
    for rule in rules_of(load(TM)):
        for key in ("match", "begin", "end"):
            if key in rule:
                # End patterns may refer back to the begin captures (\1), which Oniguruma resolves.
                re.compile(rule[key].replace("\\1", "```"))
                count += 1
    assert count > 15


def test_code_fences_embed_python() -> None:
    fence = load(TM)["repository"]["fence"]
    assert fence["contentName"] == "source.python"
    assert {"include": "source.python"} in fence["patterns"]


def test_language_configuration() -> None:
    config = load(CONFIG)
    assert config["comments"]["lineComment"] == "#"
    assert ["{", "}"] in config["brackets"] and ["(", ")"] in config["brackets"]
    re.compile(config["wordPattern"])
    for pattern in config["indentationRules"].values():
        re.compile(pattern)


def scopes(line: str) -> dict[str, str]:
    """Token text -> scope, scanning one line like TextMate does with single-line `match` rules."""
    grammar = load(TM)
    flat: list[tuple[str, str, int]] = []

    def add(pattern: dict[str, Any]) -> None:
        if "include" in pattern:
            add(grammar["repository"][pattern["include"].lstrip("#")])
        elif "match" in pattern:
            if "captures" in pattern:  # a header rule: the name it declares is capture 2
                flat.append((pattern["match"], pattern["captures"]["2"]["name"], 2))
            else:
                flat.append((pattern["match"], pattern["name"], 0))
        elif "begin" in pattern:
            # A begin/end region confined to the line: its whole text takes the region's scope.
            end = pattern["end"].replace("\\1", "```")
            flat.append((pattern["begin"] + ".*?(?:" + end + ")", pattern["name"], 0))
            return
        for inner in pattern.get("patterns", []):
            add(inner)

    for pattern in grammar["patterns"]:
        add(pattern)
    found: dict[str, str] = {}
    pos = 0
    while pos < len(line):
        best: tuple[int, int, re.Match[str], str, int] | None = None
        for index, (regex, name, group) in enumerate(flat):
            m = re.compile(regex).search(line, pos)
            if m and m.end() > m.start() and (best is None or (m.start(), index) < (best[0], best[1])):
                best = (m.start(), index, m, name, group)
        if best is None:
            break
        found.setdefault(best[2].group(best[4]).strip(), best[3])
        pos = best[2].end()
    return found


@pytest.mark.parametrize(
    ("line", "token", "scope"),
    [
        ("    $s = torch.nn.functional.softmax($x, dim=-1)", "$s", "variable.parameter.pattern.adopter"),
        ("    $s = torch.nn.functional.softmax($x, dim=-1)", "torch.nn.functional.softmax",
         "entity.name.function.qualified.adopter"),
        ("    $s = torch.nn.functional.softmax($x, dim=-1)", "-1", "constant.numeric.adopter"),
        ("    q = method transpose(%1, 1, 2) @46:9-46:31 via self._attn", "@46:9-46:31", "constant.other.span.adopter"),
        ("    q = method transpose(%1, 1, 2) @46:9-46:31 via self._attn", "%1", "variable.other.temporary.adopter"),
        ("    q = method transpose(%1, 1, 2) @46:9-46:31 via self._attn", "method", "storage.type.op-kind.adopter"),
        ("    q = method transpose(%1, 1, 2) @46:9-46:31 via self._attn", "via", "keyword.other.field.adopter"),
        ("  if `mask is not None` {  # why", "`mask is not None`", "string.interpolated.adopter"),
        ("  if `mask is not None` {  # why", "# why", "comment.line.number-sign.adopter"),
        ("  if `mask is not None` {  # why", "if", "keyword.control.adopter"),
        ('  title "a # not a comment"', '"a # not a comment"', "string.quoted.double.adopter"),
        ("  torch \">=2.1\"", "torch", "keyword.other.field.adopter"),
        ("  where { single_use($s) }", "single_use", "support.function.guard.adopter"),
        ("  init $m ```torch.nn.Identity()```", "```torch.nn.Identity()```", "meta.embedded.block.python.adopter"),
        ("rule f10-sdpa {", "f10-sdpa", "entity.name.function.rule.adopter"),
        ("  severity warning", "warning", "constant.language.severity.adopter"),
        ("    ? $p = $drop($s)", "?", "keyword.operator.optional.adopter"),
    ],
)
def test_scopes(line: str, token: str, scope: str) -> None:
    assert scopes(line).get(token) == scope


def test_every_grammar_keyword_is_highlighted() -> None:
    text = json.dumps(load(TM)["repository"]["keywords"]) + json.dumps(load(TM)["repository"]["rule-header"])
    missing = [word for word in keywords() if word != "_" and not re.search(rf"\b{word}\b", text)]
    assert missing == []
