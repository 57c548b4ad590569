"""`adopter fix --verify-run`: only the rewrites whose run agrees are written; the others are reported at
the user's lines with the reason; on an input error nothing is written.

The end-to-end cases run the real worker (torch, CPU). The wrong rewrite is a rule of the test's own
(`relu(relu(x))` rewritten to `sigmoid(x)`), so the comparison that withdraws it is the real one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adopter.cli import main
from adopter.engine import detect_environment, load_rules
from adopter.session import RuleContext, Session
from adopter.verify import gate
from adopter.verify.runner import Options

RELU_TWICE = (Path(__file__).parents[1] / "cli" / "relu_twice.adl").read_text(encoding="utf-8")
# The same pattern, rewritten to something else: parses, re-analyses clean, computes another function.
WRONG_RULE = (RELU_TWICE.replace("user-relu-twice", "user-relu-twice-wrong")
              .replace("forward ```$b = torch.relu($x)```", "forward ```$b = torch.sigmoid($x)```"))

MODEL = '''import math
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))


class Gate(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        a = torch.relu(h)
        b = torch.relu(a)
        return b
'''
GELU_LINE, RELU_LINE = 13, 23
GELU_FIXED = 'return nn.functional.gelu(h, approximate="tanh")'


def _files(tmp_path: Path, **texts: str) -> tuple[Path, ...]:
    out = []
    for name, text in texts.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        out.append(path)
    (tmp_path / "wrong.adl").write_text(WRONG_RULE, encoding="utf-8")
    return tuple(out)


def test_the_agreeing_fix_is_written_and_the_wrong_one_reported(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    (path,) = _files(tmp_path, model=MODEL)
    # Without the run, `fix` writes both (the wrong rule's rewrite passes the static checks).
    assert main(["fix", str(path), "--rules", str(tmp_path / "wrong.adl"), "--diff"]) == 1
    assert "torch.sigmoid(h)" in capsys.readouterr().out
    code = main(["fix", str(path), "--rules", str(tmp_path / "wrong.adl"), "--verify-run", "--timeout", "240"])
    err = capsys.readouterr().err
    text = path.read_text(encoding="utf-8")
    assert code == 1, err  # a site is left
    assert GELU_FIXED in text  # the equivalent fix is written
    assert "a = torch.relu(h)\n        b = torch.relu(a)" in text and "sigmoid" not in text  # the wrong one is not
    assert f"{path}:{RELU_LINE}:9: user-relu-twice-wrong: not fixed: the run disagrees: Gate differs" in err
    assert "not written (--verify-run)" in err and f"{path}: fixed 1 site" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py", "wrong.adl"]  # no bytecode left


def test_a_class_that_cannot_be_built_is_left_with_the_reason(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    needs_arg = MODEL.replace("class Block(nn.Module):\n    def __init__(self, dim: int = 16):",
                              "class Block(nn.Module):\n    def __init__(self, tokenizer_thing, dim: int = 16):")
    (path,) = _files(tmp_path, model=needs_arg)
    before = path.read_bytes()
    assert main(["fix", str(path), "--verify-run", "--timeout", "240"]) == 1  # bundled rules only: the GELU
    err = capsys.readouterr().err
    assert path.read_bytes() == before
    assert f"{path}:{GELU_LINE}:" in err and "not verified: Block could not be run" in err
    assert "tokenizer_thing" in err and "--factory" in err


def test_nothing_is_written_on_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    good, bad = _files(tmp_path, a_good=MODEL, b_bad="import adopter_no_such_module_xyz\n" + MODEL)
    before = {p: p.read_bytes() for p in (good, bad)}
    assert main(["fix", str(tmp_path), "--rules", str(tmp_path / "wrong.adl"), "--verify-run",
                 "--timeout", "240"]) == 2
    err = capsys.readouterr().err
    assert "adopter_no_such_module_xyz" in err and "nothing written (--verify-run)" in err
    assert {p: p.read_bytes() for p in (good, bad)} == before


def test_run_options_need_verify_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (path,) = _files(tmp_path, model=MODEL)
    before = path.read_bytes()
    assert main(["fix", str(path), "--factory", "model:make"]) == 2
    assert "--factory only applies with --verify-run" in capsys.readouterr().err
    assert main(["fix", str(path), "--verify-run", "--timeout", "0"]) == 2
    assert path.read_bytes() == before


def test_help_says_it_runs_the_users_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fix", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--verify-run RUNS YOUR CODE" in out and "subprocess with a timeout" in out


# -- the gate's logic, with the runs replaced (no torch) ------------------------------------------------

def _session() -> Session:
    rules = load_rules(())
    return Session(RuleContext(tuple(rules.rules), (), detect_environment("cpu")))


def test_a_fix_that_agrees_alone_but_not_with_the_others_is_withdrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[tuple[str, ...]] = []

    def fake_run(path: Path, source: str, cases: Any, options: Options) -> dict[str, Any]:
        runs.append(tuple(c.rule_id for c in cases))
        if cases[0].rule_id != "(all fixes)":  # each fix alone: every one agrees
            return {"rows": [{"rule": c.rule_id, "line": c.line, "scope": c.scope, "class": n, "equivalent": True}
                             for c in cases for n in c.classes]}
        return {"rows": [{"rule": "(all fixes)", "line": 1, "scope": "", "class": n, "equivalent": n != "Block",
                          "max_abs": 0.5, "worst": "output 0"} for n in cases[0].classes]}

    monkeypatch.setattr(gate, "run_cases", fake_run)
    two = MODEL.replace("class Gate", "class Other").replace(
        "        a = torch.relu(h)\n        b = torch.relu(a)\n        return b",
        "        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))")
    gated = gate.verified_fix(_session(), two, "two.py", Options())
    # Each fix alone, then both together; what is left is Other's fix alone, which already ran.
    assert len(runs) == 2 and runs[1] == ("(all fixes)",)
    assert gated.withdrawn == 1 and gated.fix.changed
    (left,) = [(f.span.start_line + 1, why) for f, why in gated.fix.skipped]
    assert left[0] == GELU_LINE and "Block differs from the original" in left[1] and "other fixes" in left[1]
    assert gated.fix.new_source.count(GELU_FIXED) == 1


def test_nothing_to_fix_runs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "run_cases", lambda *a, **k: pytest.fail("ran"))
    text = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return x\n"
    gated = gate.verified_fix(_session(), text, "m.py", Options())
    assert not gated.fix.changed and gated.ran == 0
