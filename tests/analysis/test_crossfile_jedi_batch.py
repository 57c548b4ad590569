"""In a batch of files (`check`, `fix`), a jedi look-up runs without garbage collections and what it keeps is taken
out of the collector's scans until the reach releases jedi's trees; a process that analysed files does not collect
its heap at exit (issue 22: transformers 5.25's `from transformers import UdopConfig` reads 2,252 modules through
star imports, and collecting them took most of `check`'s time for that file and 30 s of CPU at the process's end).
Outside a batch (the language server) nothing changes."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adopter.analysis.crossfile import jedi_lookup
from adopter.analysis.crossfile.jedi_lookup import JediLookup

pytest.importorskip("jedi")

SERVER = Path(__file__).resolve().parents[2] / "server"


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A package re-exporting a class through 30 star imports (what jedi follows module by module)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("".join(f"from .m{i} import *\n" for i in range(30)))
    for i in range(29):
        (pkg / f"m{i}.py").write_text(f"class Other{i}:\n    def forward(self, x):\n        return x\n")
    (pkg / "m29.py").write_text("class Thing:\n    pass\n")
    (tmp_path / "user.py").write_text("from pkg import Thing\n")
    return tmp_path


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The generations collected while jedi looks a name up (inside `JediLookup._goto`), with a young threshold
    of 100."""
    collected: list[int] = []
    inside = [False]
    real = JediLookup._goto

    def looking_up(self: JediLookup, *args: str) -> Any:
        inside[0] = True
        try:
            return real(self, *args)
        finally:
            inside[0] = False

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and inside[0]:
            collected.append(info["generation"])

    monkeypatch.setattr(JediLookup, "_goto", looking_up)
    before = gc.get_threshold()
    gc.set_threshold(100, before[1], before[2])
    gc.callbacks.append(note)
    try:
        yield collected
    finally:
        gc.callbacks.remove(note)
        gc.set_threshold(*before)
        gc.unfreeze()


def _lookup(root: Path, collected: list[int]) -> tuple[JediLookup, str | None, list[int]]:
    """`from pkg import Thing` looked up in a new `JediLookup`; the generations collected during the look-up."""
    jedi = JediLookup()
    found = jedi.goto("pkg", "Thing", str(root / "user.py"), str(root))
    return jedi, (f"{os.path.basename(found.path)}:{found.line}" if found else None), list(collected)


def test_a_batch_lookup_collects_nothing_and_freezes_what_it_keeps(package: Path, collector: list[int]) -> None:
    gc.unfreeze()
    with jedi_lookup.batch():
        jedi, found, during = _lookup(package, collector)
        assert found == "m29.py:1"
        assert during == []
        assert gc.get_threshold()[0] == 100  # the thresholds are back
        assert gc.get_freeze_count() > 1000
        jedi.release()  # the trees are dropped: what was frozen can be collected again
        assert gc.get_freeze_count() == 0


def test_outside_a_batch_a_lookup_collects_as_usual_and_freezes_nothing(package: Path, collector: list[int]) -> None:
    gc.unfreeze()
    jedi, found, during = _lookup(package, collector)
    assert found == "m29.py:1"
    assert len(during) > 10  # the control: the same look-up does collect
    assert gc.get_freeze_count() == 0
    jedi.release()


PROGRAM = """
import gc, os, sys
if sys.argv[1] == "analysed":
    from adopter.commands import filework
    filework.fewer_collections()
gc.set_threshold(1 << 30, 10, 10)
class Cycle:
    def __del__(self, write=os.write):
        write(1, b"collected at exit\\n")
c = Cycle(); c.me = c; del c
"""


@pytest.mark.parametrize(("process", "collected"), [("analysed", False), ("plain", True)])
def test_a_process_that_analysed_files_does_not_collect_its_heap_at_exit(process: str, collected: bool) -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM, process], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SERVER), "ADOPTER_NATIVE": "0", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert ("collected at exit" in out.stdout) is collected
