"""bench/lsp_phases.py: one edit's timestamps and timers become phases that add up to its time in the server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from lsp_phases import PHASES, phases, table


def record(base: float = 10.0) -> dict[str, float]:
    """A published edit: change handled at t=base s, task 10 µs later, thread 40 µs after that, ..."""
    us = 1e-6
    return {
        "gc": 5.0, "parse": 50.0, "apply_all": 40.0, "handler": 15.0, "handler_end": base,
        "task_start": base + 10 * us, "compute_start": base + 50 * us, "edit": 60.0, "analysis": 1000.0,
        "match": 50.0, "copies": 10.0, "session": 1100.0, "compute": 1180.0, "compute_end": base + 1230 * us,
        "resumed": base + 1290 * us, "diagnostics": 20.0, "send": 30.0, "publish": 80.0,
        "publish_end": base + 1370 * us, "done": base + 1375 * us,
    }


def test_phases_split_the_edit_without_overlap() -> None:
    p = phases(record())
    assert p is not None and set(p) == set(PHASES)
    assert p["to_task"] == pytest.approx(10) and p["to_thread"] == pytest.approx(40)
    assert p["to_loop"] == pytest.approx(60) and p["after"] == pytest.approx(5)
    assert p["session_rest"] == pytest.approx(1100 - 1000 - 50 - 10)
    assert p["compute_rest"] == pytest.approx(1180 - 1100 - 60)
    assert p["publish_rest"] == pytest.approx(80 - 20 - 30)
    # handler end -> done, measured by the clock, is the sum of the phases on that path
    on_path = sum(v for k, v in p.items() if k not in ("gc", "parse", "apply", "handler"))
    assert on_path == pytest.approx(1375)


def test_an_edit_superseded_before_publishing_has_no_phases() -> None:
    r = record()
    del r["publish_end"]
    assert phases(r) is None


def test_table_leaves_out_the_first_edit_and_reports_the_outside() -> None:
    records = {str(v): record(10.0 + v) for v in range(2, 13)}
    records["2"]["analysis"] = 50_000.0  # the first keystroke waits for the open's prepare
    text = table(records)
    assert text.startswith("10 edits published")
    outside = next(line for line in text.splitlines() if line.startswith("| **outside"))
    # 50 + 40 + 15 + 10 + 40 + 40 (session_rest) + 20 (compute_rest) + 60 + 20 + 30 + 30 + 5 = 360
    assert outside.split("|")[2].strip() == "360"


def test_table_sums_gc_by_the_function_it_ran_in() -> None:
    records = {str(v): record(10.0 + v) | {"gc_in_analysis": 1500.0, "gc_in_match": 500.0} for v in range(2, 5)}
    assert table(records).splitlines()[-1].endswith(": analysis 3.0 ms, match 1.0 ms")
