"""`check` and `fix` stop parso's sweep of its parse-tree cache before a process's first file, not from its second
on (`adopter.commands.filework.fewer_collections`). Set only once parso had been loaded (by the cross-file reach's
first jedi call), the sweep ran during the first file of each process and not during the others, and jedi's answer
for a lazily exported name depends on whether its trees were swept: a file gave other findings as a process's first
file than later (transformers 5.25's `UdopDenseActDense`: `--jobs 1` and `--jobs 2` over its 544 modeling files
differed by that finding). Run in a fresh interpreter, where parso is not imported yet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("parso")

SERVER = Path(__file__).resolve().parents[2] / "server"

PROGRAM = """
import sys
from adopter.commands import filework
assert "parso.cache" not in sys.modules, "parso was imported before the first file"
filework.fewer_collections()
import parso.cache
print(parso.cache._CACHED_SIZE_TRIGGER == filework._PARSO_SWEEP)
"""


def test_the_sweep_is_off_before_the_first_file() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SERVER), "ADOPTER_NATIVE": "0", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
