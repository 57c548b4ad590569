"""The environment's torch version: read from torch's own `version.py`, never by importing torch, and without
the metadata scan of every installed distribution unless that file is missing."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from pathlib import Path

import pytest

from adopter.engine import environment


def _fake_torch(root: Path, version_file: str | None) -> None:
    package = root / "torch"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('torch must not be imported')\n")
    if version_file is not None:
        (package / "version.py").write_text(version_file)


@pytest.fixture
def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    importlib.invalidate_caches()
    return tmp_path


def test_version_read_from_version_py_without_metadata(fake_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch(fake_path, "from typing import Optional\n__all__ = ['__version__']\n__version__ = '9.1.0+cpu'\n")

    def no_scan(name: str) -> str:
        raise AssertionError("the distribution metadata was scanned")

    monkeypatch.setattr(importlib.metadata, "version", no_scan)
    assert environment._torch_version() == "9.1.0+cpu"
    assert "torch" not in sys.modules  # found, read as text, never imported


def test_metadata_is_the_fallback_without_version_py(fake_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch(fake_path, None)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "8.0.0" if name == "torch" else "")
    assert environment._torch_version() == "8.0.0"


def test_unreadable_version_line_falls_back(fake_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_torch(fake_path, "__version__ = compute()\n")
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "7.0.0")
    assert environment._torch_version() == "7.0.0"


def test_no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment.importlib.util, "find_spec", lambda name: None)
    assert environment._torch_version() is None


def test_installed_torch_agrees_with_its_metadata() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    assert environment._torch_version() == importlib.metadata.version("torch")
