"""`adopter arch`: output formats, class selection, folders, and exit status 2 with clear messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adopter.cli import main

MODEL = "import torch.nn as nn\n\nclass A(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\nclass B(nn.Module):\n    pass\n"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    return path


def test_dsl_output(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["arch", str(model)]) == 0
    out = capsys.readouterr().out
    assert "A(torch.nn.Module)" in out and "self.fc" in out and "B(torch.nn.Module)" in out


def test_one_class_as_json(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["arch", f"{model}:A", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [a["name"] for a in data["architectures"]] == ["A"]
    op = data["architectures"][0]["forward"]["body"][0]
    assert op["kind"] == "module" and op["target"] == "self.fc"


def test_folder(tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other.py").write_text("import torch\nclass C(torch.nn.Module):\n    pass\n")
    assert main(["arch", str(tmp_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(a["name"] for mf in data for a in mf["architectures"]) == ["A", "B", "C"]


@pytest.mark.parametrize(
    "arg, words",
    [
        ("missing.py", "no such file"),
        ("model.py:Nope", "no nn.Module class 'Nope'"),
        ("binary.py", "binary"),
        ("latin.py", "not UTF-8"),
        (".:A", "is a folder"),
    ],
)
def test_errors_exit_2(tmp_path: Path, model: Path, arg: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02")
    (tmp_path / "latin.py").write_bytes("x = 'é'\n".encode("latin-1"))
    target = str(tmp_path / arg) if not arg.startswith(".") else str(tmp_path) + arg[1:]
    assert main(["arch", target]) == 2
    assert words in capsys.readouterr().err


def test_help_mentions_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["arch", "--help"])
    assert exc.value.code == 0
    assert "--format" in capsys.readouterr().out


def test_a_file_without_modules_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\n\noptimizer = torch.optim.AdamW(params, lr=1e-3)\n")
    assert main(["arch", str(script)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# no nn.Module classes in") and "--all" in out
    from adopter.dsl import parse_module_file

    assert main(["arch", str(script), "--all"]) == 0
    assert parse_module_file(capsys.readouterr().out).functions  # the top-level code is there
