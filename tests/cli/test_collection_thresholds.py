"""`check` and `fix` collect the young generation every 100,000 net allocations, and the middle one as often as
before in allocations (`adopter.commands.filework.fewer_collections`): at 10,000 the young collections, each
costing about the file being analysed, took twice the CPU over the 210 modeling files of issue 22 at the same
peak memory. Run in a fresh interpreter: the thresholds are the process's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "server"

PROGRAM = """
import gc, json, sys
from adopter.commands import filework
gc.set_threshold(*json.loads(sys.argv[1]))
filework.fewer_collections()
first = gc.get_threshold()
filework.fewer_collections()  # the next chunk of the same worker
print(json.dumps([first, gc.get_threshold()]))
"""


def _thresholds(start: tuple[int, int, int]) -> list[list[int]]:
    out = subprocess.run([sys.executable, "-c", PROGRAM, json.dumps(start)], capture_output=True, text=True,
                         timeout=120, env={"PYTHONPATH": str(SERVER), "ADOPTER_NATIVE": "0", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    result: list[list[int]] = json.loads(out.stdout)
    return result


def test_young_collections_come_every_100k_allocations_and_middle_ones_every_500k() -> None:
    first, second = _thresholds((700, 10, 10))  # CPython's defaults
    young, middle, old = first
    assert young >= 100_000
    assert young * middle == 500_000  # the middle generation's cadence in allocations is unchanged
    assert old == 10
    assert second == first


def test_a_larger_young_threshold_is_kept() -> None:
    first, second = _thresholds((1 << 20, 3, 7))
    assert first == second == [1 << 20, 3, 7]
