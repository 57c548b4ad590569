"""The oracle's report runs `adopter check` in the oracle's own environment, where the distributions and their
dependencies are installed and their classes were traced, as a user runs the checker in the environment that runs
their model (`bench/oracle/report.py`, `checker_python`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle import report  # noqa: E402


def test_the_checker_runs_in_the_oracle_environment_when_it_exists(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADOPTER_ORACLE_CHECK_PYTHON", raising=False)
    monkeypatch.setattr(report, "VENV", tmp_path / "venv")
    assert report.checker_python() == sys.executable  # no environment yet: the running interpreter
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    assert report.checker_python() == str(python)
    monkeypatch.setenv("ADOPTER_ORACLE_CHECK_PYTHON", sys.executable)  # the checker's own environment, asked for
    assert report.checker_python() == sys.executable


def test_a_cached_check_is_kept_apart_per_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def uncached(files: list[str]) -> tuple[list[dict[str, object]], bool]:
        calls.append(report.checker_python())
        return [{"interpreter": calls[-1]}], True

    monkeypatch.setattr(report, "CHECK_CACHE", tmp_path / "check")
    monkeypatch.setattr(report, "_check_uncached", uncached)
    monkeypatch.setenv("ADOPTER_ORACLE_CHECK_PYTHON", "/one/python")
    assert report.check(["a.py"]) == [{"interpreter": "/one/python"}]
    assert report.check(["a.py"]) == [{"interpreter": "/one/python"}]  # cached
    monkeypatch.setenv("ADOPTER_ORACLE_CHECK_PYTHON", "/other/python")
    assert report.check(["a.py"]) == [{"interpreter": "/other/python"}]
    assert calls == ["/one/python", "/other/python"]
