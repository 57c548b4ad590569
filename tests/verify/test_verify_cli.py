"""`adopter verify` end to end: the user's class and its fix built in a subprocess, compared, timed.

Each case runs the real worker (torch, CPU); timing is asked for with few pairs and only its presence
is checked, never its value.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from adopter.cli import main

torch = pytest.importorskip("torch")

# Hand-written tanh-GELU (family 13) in a class that builds from its defaults; its input from the Linear.
GELU_MODEL = '''import math
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        return 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
'''

NEEDS_ARG = GELU_MODEL.replace("def __init__(self, dim: int = 16):", "def __init__(self, tokenizer_thing):").replace(
    "nn.Linear(dim, dim)", "nn.Linear(16, 16)")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_equivalent_fix_exits_0_with_a_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "gelu_model.py", GELU_MODEL)
    before = path.read_bytes()
    code = main(["verify", f"{path}:Block", "--format", "json", "--repeats", "2"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    (row,) = out["rows"]
    assert row["rule"].startswith("f13") and row["class"] == "Block" and row["line"] == 13
    assert row["equivalent"] is True and row["checkpoint_loads"] is True and row["max_abs"] < 1e-4
    assert row["pairs"] == 2 and row["speedup"] > 0 and row["speedup_q1"] <= row["speedup_q3"]
    assert row["original_peak"] > 0 and row["rewritten_peak"] > 0
    # nothing written: the file as it was, no bytecode left beside it
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["gelu_model.py"]


def test_text_format_names_the_line_and_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "gelu_model.py", GELU_MODEL)
    assert main(["verify", str(path), "--repeats", "0"]) == 0
    out = capsys.readouterr().out
    assert f"{path}:13: f13" in out and "Block: equivalent" in out and "checkpoint loads (strict)" in out


def test_class_that_cannot_be_built_names_the_argument_and_factory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "needs_arg.py", NEEDS_ARG)
    assert main(["verify", str(path), "--repeats", "0"]) == 2
    out = capsys.readouterr().out
    assert "tokenizer_thing" in out and "--factory" in out


def test_inputs_stand_in_for_a_forward_argument_no_rule_infers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `bias_table` says nothing about what it holds: without --inputs the class is not run, with it it is.
    text = GELU_MODEL.replace("def forward(self, x):", "def forward(self, x, bias_table):").replace(
        "h = self.proj(x)", "h = self.proj(x) + bias_table")
    path = _write(tmp_path, "needs_inputs.py", text)
    _write(tmp_path, "block_inputs.py", "import torch\n\n\ndef make(model):\n    return torch.randn(2, 16), torch.randn(2, 16)\n")
    assert main(["verify", str(path), "--repeats", "0"]) == 2
    assert "pass --inputs module:fn" in capsys.readouterr().out
    code = main(["verify", str(path), "--repeats", "0", "--inputs", "block_inputs:make", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rows"][0]["equivalent"] is True and out["rows"][0]["compared"] > 0


def test_factory_in_the_file_builds_both_versions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = NEEDS_ARG + "\n\ndef make(cls):\n    return cls(tokenizer_thing=object()), torch.randn(3, 16)\n"
    path = _write(tmp_path, "with_factory.py", text)
    code = main(["verify", str(path), "--repeats", "0", "--factory", "with_factory:make", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rows"][0]["equivalent"] is True


@pytest.mark.parametrize(("argv", "message"), [
    (["missing.py"], "no such file"),
    (["{dir}/gelu_model.py:Nope"], "has no nn.Module class Nope"),
    (["{dir}/gelu_model.py", "--timeout", "0"], "--timeout must be positive"),
])
def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    _write(tmp_path, "gelu_model.py", GELU_MODEL)
    assert main(["verify", *[a.format(dir=tmp_path) for a in argv]]) == 2
    assert message in capsys.readouterr().err


def test_a_hang_is_stopped_at_the_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "hangs.py", "import time\ntime.sleep(600)\n" + GELU_MODEL)
    assert main(["verify", str(path), "--timeout", "4", "--repeats", "0"]) == 2
    assert "longer than 4 s" in capsys.readouterr().err


def test_a_python_without_torch_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = Path("/usr/bin/python3")
    if not bare.is_file() or bare.resolve() == Path(sys.executable).resolve():
        pytest.skip("no second Python without torch on this machine")
    path = _write(tmp_path, "gelu_model.py", GELU_MODEL)
    code = main(["verify", str(path), "--repeats", "0", "--python", str(bare)])
    err = capsys.readouterr().err
    if "has no torch" not in err:
        pytest.skip(f"{bare} is not a Python without torch: {err[:200]}")
    assert code == 2


@pytest.mark.parametrize(("name", "text", "extra", "message"), [
    ("broken.py", "def f(:\n", [], "the file does not parse"),
    ("raises.py", "raise RuntimeError('boom at import')\n" + GELU_MODEL, [], "importing"),
    ("gelu_model.py", GELU_MODEL, ["--factory", "no_such_module:make"], "--factory no_such_module:make: cannot import it"),
    ("gelu_model.py", GELU_MODEL, ["--inputs", "no_such_module:make"], "--inputs no_such_module:make: cannot import it"),
    ("gelu_model.py", GELU_MODEL, ["--factory", "gelu_model:nosuch"], "has no function nosuch"),
    ("gelu_model.py", GELU_MODEL, ["--rule", "no-such-rule"], "matches no rule"),
])
def test_more_bad_input_exits_2_with_its_message(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                text: str, extra: list[str], message: str) -> None:
    path = _write(tmp_path, name, text)
    assert main(["verify", str(path), "--repeats", "0", *extra]) == 2
    captured = capsys.readouterr()
    assert message in captured.err + captured.out
    sys.modules.pop("gelu_model", None)


def test_cuda_without_a_cuda_device_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    path = _write(tmp_path, "gelu_model.py", GELU_MODEL)
    assert main(["verify", str(path), "--repeats", "0", "--device", "cuda"]) == 2
    assert "--device cuda: this Python's torch" in capsys.readouterr().err


def test_nothing_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Neither the user's file nor anything beside it (no bytecode): verify only reads.
    path = _write(tmp_path, "gelu_model.py", GELU_MODEL)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    stamp = path.stat().st_mtime_ns
    assert main(["verify", str(path), "--repeats", "0"]) == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before and path.stat().st_mtime_ns == stamp


NESTED_MODEL = '''import torch
from torch import nn


class Builder:
    def build(self):
        return self.Block()

    class Block(nn.Module):
        def __init__(self, dim: int = 16):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.dropout = nn.Dropout(0.1)
            self.norm = nn.LayerNorm(dim)

        def forward(self, x):
            x = x + self.dropout(self.proj(x))
            x = self.norm(x)
            return x
'''


def test_a_class_nested_in_a_class_is_built_and_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "nested_model.py", NESTED_MODEL)
    code = main(["verify", f"{path}:Builder.Block", "--format", "json", "--repeats", "2"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    (row,) = out["rows"]
    assert row["class"] == "Builder.Block" and row["rule"].startswith("f05")
    assert row["equivalent"] is True and row["checkpoint_loads"] is True
