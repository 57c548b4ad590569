"""The `check`, `fix` and `rules` commands end to end (in process): exit codes, formats, safe writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adopter.cli import main

RULE = (Path(__file__).resolve().parents[1] / "cli" / "relu_twice.adl").read_text(encoding="utf-8")

MODEL = '''import torch
from torch import nn


class Model(nn.Module):
    """Keeps its docstring."""

    def forward(self, x):
        # a comment that must survive
        a = torch.relu(x)
        b = torch.relu(a)
        return b * 2   # trailing comment
'''

CLEAN = '''import torch


def f(x):
    return x
'''


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "relu.adl").write_text(RULE)
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "clean.py").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def args(*extra: str) -> list[str]:
    return [*extra, "--rules", "rules", "--select", "user-relu-twice", "--target", "cpu"]


def test_check_exit_codes(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", *args("clean.py")]) == 0
    assert main(["check", *args("model.py")]) == 1
    out = capsys.readouterr().out
    assert "model.py:10:9: user-relu-twice" in out
    assert main(["check", *args("missing.py")]) == 2


def test_check_json(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "json", *args(".")]) == 1
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 1
    (r,) = records
    assert r["path"].endswith("model.py") and r["rule"] == "user-relu-twice" and r["family"] == 13
    assert r["severity"] == "warning" and r["message"] == "The second relu does nothing."
    assert r["range"]["start"] == {"line": 10, "column": 9} and r["range"]["end"]["line"] == 11
    assert r["fixable"] is True


def test_check_sarif(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "sarif", *args(".")]) == 1
    log = json.loads(capsys.readouterr().out)
    assert log["version"] == "2.1.0" and "sarif" in log["$schema"]
    (run,) = log["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    rules = run["tool"]["driver"]["rules"]
    (result,) = run["results"]
    assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == "user-relu-twice"
    assert result["level"] in {"error", "warning", "note", "none"}
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 10 and region["startColumn"] == 9
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("model.py")


def test_broken_rule_file_is_an_error_not_a_crash(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "rules" / "bad.adl").write_text("rule bad {\n  family x\n}\n")
    assert main(["check", *args("model.py")]) == 2
    captured = capsys.readouterr()
    assert "bad.adl:" in captured.err
    assert "user-relu-twice" in captured.out  # the good rules still ran


def test_fix_diff_writes_nothing(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fix", "--diff", *args("model.py")]) == 1
    out = capsys.readouterr().out
    assert "--- a/model.py" in out and "+        b = torch.relu(x)" in out
    assert (workspace / "model.py").read_text() == MODEL


def test_fix_writes_verified_code_and_is_idempotent(workspace: Path) -> None:
    assert main(["fix", *args("model.py")]) == 0
    fixed = (workspace / "model.py").read_text()
    assert fixed == MODEL.replace("        a = torch.relu(x)\n        b = torch.relu(a)\n",
                                  "        b = torch.relu(x)\n")
    assert main(["fix", *args("model.py")]) == 0
    assert (workspace / "model.py").read_text() == fixed
    assert main(["check", *args("model.py")]) == 0


def test_rules_list_and_docs(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--rules", "rules"]) == 0
    assert "user-relu-twice" in capsys.readouterr().out
    assert main(["rules", "--rules", "rules", "--docs", "out.md"]) == 0
    docs = (workspace / "out.md").read_text()
    assert "### `user-relu-twice`" in docs and "torch.relu(torch.relu(x))" not in docs
    assert "b = torch.relu(a)" in docs and "Does not match" in docs


def test_unknown_selector_is_a_usage_error(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "clean.py", "--rules", "rules", "--select", "no-such-rule"]) == 2
    assert "matches no rule" in capsys.readouterr().err


def test_unanalysable_files_fail_the_check_but_do_not_crash(workspace: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "broken.py").write_text("class A(:\n    pass\n")
    (workspace / "binary.py").write_bytes(b"\x00\x01\xff")
    # A binary file is an input error (exit 2); the syntax error is reported; the clean file still ran.
    assert main(["check", *args("broken.py", "binary.py", "clean.py")]) == 2
    err = capsys.readouterr().err
    assert "broken.py:1:" in err and "binary.py" in err
    assert main(["check", *args("broken.py", "clean.py")]) == 1
    assert main(["fix", *args("binary.py", "clean.py")]) == 2


def test_rewrite_finds_workspace_rules_by_path(workspace: Path) -> None:
    from adopter.analysis import analyse
    from adopter.engine import Environment, check, load_rules
    from adopter.session import rewrite
    from adopter.synth import Rewritten

    (workspace / ".adopter").mkdir()
    (workspace / "rules").rename(workspace / ".adopter" / "rules")
    rules = load_rules([workspace / ".adopter" / "rules"], bundled=False).rules
    env = Environment("cpu", frozenset(), "2.13.0")
    path = str(workspace / "model.py")
    found = check(analyse(MODEL, path), rules, env).findings
    # No rules passed: the rewrite loads the bundled ones plus the workspace's, found from the path.
    out = rewrite(MODEL, found, path=path, env=env)
    assert isinstance(out, Rewritten) and "b = torch.relu(x)" in out.new_source
