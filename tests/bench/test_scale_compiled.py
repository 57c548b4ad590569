"""`bench/scale.py` times the checker as a plain install runs it: from byte-compiled modules.

A tree run with `PYTHONDONTWRITEBYTECODE=1` (this project's sessions) never writes `.pyc` files, so every timed
`adopter check` process compiled the modules it imported again: 0.25-0.45 s of CPU per process (a one-file
check took 0.42 s of CPU without them and 0.16 s with them, 2026-12-07, issue 22). `pip install` writes them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import scale  # noqa: E402


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("X = 1\n")
    (root / "sub" / "b.py").write_text("def f():\n    return 2\n")
    return root


def test_every_module_is_compiled(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as under PYTHONDONTWRITEBYTECODE=1
    root = _package(tmp_path)
    scale.byte_compile(root)
    for module in ("__init__.py", "a.py", "sub/b.py"):
        assert Path(importlib.util.cache_from_source(str(root / module))).is_file(), module


def test_a_module_that_does_not_compile_is_left(tmp_path: Path) -> None:
    root = _package(tmp_path)
    (root / "broken.py").write_text("def (:\n")
    scale.byte_compile(root)  # no exception: the check reports the file itself
    assert not Path(importlib.util.cache_from_source(str(root / "broken.py"))).exists()
    assert Path(importlib.util.cache_from_source(str(root / "a.py"))).is_file()


def test_an_up_to_date_module_is_not_rewritten(tmp_path: Path) -> None:
    root = _package(tmp_path)
    scale.byte_compile(root)
    cached = Path(importlib.util.cache_from_source(str(root / "a.py")))
    before = cached.stat().st_mtime_ns
    scale.byte_compile(root)
    assert cached.stat().st_mtime_ns == before
