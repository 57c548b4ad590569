"""scripts/build_native.py: a failed compilation is a warning for set-up (`make native`), and an error for
`make test` (`--strict`) only when the toolchain is complete, so a mypyc-rejected change cannot pass the
tests by silently running the pure-Python fallback."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("adopter_build_native", REPO / "scripts" / "build_native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path / "native")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "compile_native", lambda out: "mypyc failed:\n  x.py:1: error: bad")
    return module


def test_a_failed_compilation_is_a_warning_for_set_up(script: Any, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(script, "toolchain_missing", lambda: None)
    assert script.build(force=True) == 0
    assert "skipped (mypyc failed" in capsys.readouterr().err


def test_strict_fails_when_the_toolchain_is_complete(script: Any, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(script, "toolchain_missing", lambda: None)
    assert script.build(force=True, strict=True) == 1
    assert "FAILED with a complete toolchain" in capsys.readouterr().err


def test_strict_still_warns_where_nothing_can_compile(script: Any, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(script, "toolchain_missing", lambda: "no C compiler (cc)")
    assert script.build(force=True, strict=True) == 0
    assert "pure-Python analysis is used" in capsys.readouterr().err


def test_this_machine_reports_its_toolchain(script: Any) -> None:
    missing = script.toolchain_missing()
    assert missing is None or missing.startswith(("mypy", "setuptools", "no C compiler", "no Python headers"))
