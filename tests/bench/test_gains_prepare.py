"""The training-gains harness runs one frozen `adopter` per run and never times a model it could not rewrite."""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import gains.prepare as prepare  # noqa: E402
from gains.models import spec  # noqa: E402
from gains.report import peak_table  # noqa: E402

CONV_BN = '''import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, bias=False)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x
'''


def _gains_main() -> ModuleType:
    # bench/gains.py shares its name with the bench/gains/ package: import the script under another name.
    loaded = importlib.util.spec_from_file_location("gains_script", BENCH / "gains.py")
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def test_checks_use_the_frozen_copy_not_the_live_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prepare, "_FROZEN", None)
    model = tmp_path / "block.py"
    model.write_text(CONV_BN)
    live, error = prepare._check_json(model, "cpu")
    assert error is None
    assert [f["rule"] for f in live] == ["f07-conv-bn"]

    frozen = prepare.freeze_adopter(tmp_path / "work")
    assert (frozen / "adopter" / "cli.py").is_file()
    rules = frozen / "adopter" / "_data" / "rules"
    assert (rules / "f07-conv-bn.adl").is_file() and (frozen / "adopter" / "_data" / "dsl-grammar").is_dir()
    # Edits to the frozen copy are what the harness sees from now on (and edits to the checkout are not).
    (rules / "f07-conv-bn.adl").unlink()
    after, error = prepare._check_json(model, "cpu")
    assert error is None
    assert after == []


def test_a_crashing_check_is_an_error_with_its_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prepare, "_FROZEN", None)
    frozen = prepare.freeze_adopter(tmp_path / "work")
    # A half-edited module makes the CLI die with a traceback and exit 1, which is also "findings".
    (frozen / "adopter" / "commands" / "check.py").write_text("raise RuntimeError('half-edited module')\n")
    model = tmp_path / "block.py"
    model.write_text(CONV_BN)
    copy = tmp_path / "copy.py"
    copy.write_text(CONV_BN)
    prepared = prepare.fix_copy(model, copy, "cpu")
    assert prepared.error is not None
    assert "exit 1" in prepared.error and "half-edited module" in prepared.error
    assert not prepared.changed


def _args(tmp_path: Path) -> argparse.Namespace:
    return argparse.Namespace(layers=1, batch=1, steps=3, warmup=1, loss_steps=2, memory_steps=1, threads=1,
                              device="cpu", dtype="fp32", seed=0, per_rule=False, no_memory=False)


def test_a_model_adopter_could_not_rewrite_is_not_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gains = _gains_main()
    original = tmp_path / "modeling_resnet.py"
    original.write_text(CONV_BN)
    failed = prepare.Prepared(original=original, copy=original, error="adopter check (exit 1) printed no JSON")
    monkeypatch.setattr(prepare, "prepare_model", lambda *a, **k: failed)

    def no_worker(*_: Any) -> dict[str, Any]:
        raise AssertionError("a model that was not rewritten must not be measured")

    monkeypatch.setattr(gains, "run_worker", no_worker)
    row = gains.measure_model(_args(tmp_path), spec("resnet-50"), tmp_path, failed)
    assert row["error"].startswith("model not rewritten: adopter check (exit 1)")
    assert "speed" not in row and "memory" not in row


def test_no_run_when_the_training_script_could_not_be_rewritten(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")  # machine() reports torch's version
    gains = _gains_main()
    monkeypatch.setattr(prepare, "_FROZEN", None)
    script = tmp_path / "train_script.py"
    script.write_text("x = 1\n")
    failed = prepare.Prepared(original=script, copy=script, error="adopter fix exit 2: boom")
    monkeypatch.setattr(prepare, "prepare_script", lambda *a, **k: failed)
    monkeypatch.setattr(gains, "measure_model", lambda *a: pytest.fail("nothing may be measured"))
    out = tmp_path / "gains.json"
    status = gains.main(["--models", "albert-base-v2", "--out", str(out), "--workdir", str(tmp_path / "work")])
    assert status == 2
    assert not out.exists()


def test_peak_table_splits_state_from_the_rest() -> None:
    mib = 2**20
    state = {"parameter": 100 * mib, "gradient": 100 * mib, "optimizer_state": 200 * mib}
    row = {"title": "M", "speed": {"params": 26_214_400},
           "memory": {"original": {"profiler": {"peak_by_category": {**state, "unknown": 160 * mib},
                                                "fwd_bwd_peak_by_category": {**state, "activation": 30 * mib}}},
                      "full": {"profiler": {"peak_by_category": {**state, "autograd_detail": 2 * mib}}}}}
    md = peak_table({"models": {"m": row, "unmeasured": {"title": "X"}}})
    lines = md.splitlines()
    assert len(lines) == 3  # header, rule, one measured model
    assert lines[2] == "| M | 26.2 M | 560 MiB | 400 MiB | 160 MiB | 30 MiB | 402 MiB | 2 MiB |"
    assert peak_table({"models": {"unmeasured": {"title": "X"}}}) == ""


def _timed_row(model_times: list[float]) -> dict[str, Any]:
    n = len(model_times)
    return {"title": "M", "prepared": {"rules_fixed": {"f05": 1}, "changed": True, "not_fixed": []},
            "speed": {"speed": {"speedup": {"model": statistics.median(1.0 / t for t in model_times)},
                                "speedup_fwd_bwd": {"model": statistics.median(1.0 / t for t in model_times)},
                                "times_s": {"original": [1.0] * n, "model": model_times},
                                "optimizer_times_s": {"original": [0.0] * n, "model": [0.0] * n}}}}


def test_slowdown_notes_need_most_rounds_to_agree() -> None:
    from gains.report import note

    # Every round slower: a real slowdown.
    slow = note(_timed_row([1.05, 1.06, 1.04, 1.05, 1.07, 1.05, 1.06, 1.04]))
    assert "model rewrite SLOWER (" in slow and "SLOWER in forward+backward" in slow
    # Median below 0.98 but half the rounds faster: within noise, and it says so with the spread.
    noisy = note(_timed_row([1.10, 0.92, 1.12, 0.95, 1.15, 0.93, 1.09, 1.08]))
    assert "SLOWER" not in noisy and "within this run's noise" in noisy
    # A median gain that most rounds do not show is noise too.
    lucky = note(_timed_row([0.90, 1.08, 0.91, 1.10, 0.92, 0.95, 0.96, 0.97]))
    assert "within this run's noise" in lucky


@pytest.mark.torch
def test_saved_activation_bytes_exclude_weights_and_inputs() -> None:
    torch = pytest.importorskip("torch")
    from gains.activations import saved_bytes

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 32)

        def forward(self, x: Any) -> Any:
            h = torch.relu(self.fc(x))  # relu saves its output: 4 × 32 float32
            return type("Out", (), {"loss": (h * h).sum()})()  # the product saves h (the same storage)

    x = torch.randn(4, 16)
    # Linear saves x (an input) and its weight (a parameter): neither counts.
    assert saved_bytes(torch, Net(), {"x": x}) == 4 * 32 * 4
