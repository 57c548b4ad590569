"""The oracle run's plumbing: `--ray-address` sends one host task per job through `adopter.executors`
(executor "ray"), the local pool stays the default, held-out distributions never reach a host, and a
host task carries every path it needs, so it runs from the copy of the package Ray ships."""

from __future__ import annotations

import os
import pickle
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle import run as oracle_run  # noqa: E402
from oracle.run import HostTask, host  # noqa: E402


def _fake_python(tmp_path: Path) -> Path:
    """An interpreter stand-in: answers the site-packages query, and records a host's command line."""
    script = tmp_path / "python"
    script.write_text('#!/bin/sh\nif [ "$1" = "-c" ]; then echo "$(dirname "$0")"; exit 0; fi\n'
                      'echo "$PYTHONPATH $*" > "$(dirname "$0")/ran.txt"\nexit 3\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def _stub_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    python = _fake_python(tmp_path)
    monkeypatch.setattr(oracle_run, "ensure_venv", lambda: python)
    monkeypatch.setattr(oracle_run, "install", lambda spec: None)
    monkeypatch.setattr(oracle_run, "RESULTS", tmp_path / "results")
    names = tmp_path / "heldout.txt"
    names.write_text("held-dist\n", encoding="utf-8")
    monkeypatch.setenv("ADOPTER_ORACLE_HELDOUT", str(names))
    return python


def test_ray_address_sends_one_host_per_job_through_the_ray_executor(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    import adopter.executors

    python = _stub_run(monkeypatch, tmp_path)
    calls: list[dict[str, Any]] = []

    def fake_iter_tasks(fn: Any, tasks: Any, **kw: Any) -> Any:
        calls.append({"fn": fn, "tasks": list(tasks), **kw})
        return iter([(i, 0) for i in range(len(tasks))])

    monkeypatch.setattr(adopter.executors, "iter_tasks", fake_iter_tasks)
    oracle_run.run(["a-dist", "held_dist==1.0", "b-dist==2"], jobs=3, class_timeout=7.0, max_classes=11,
                   ray_address="ray://head:10001")
    (call,) = calls
    assert call["fn"] is host and call["executor"] == "ray" and call["ray_address"] == "ray://head:10001"
    assert call["workers"] == 3 and call["py_modules"] == [str(REPO / "bench" / "oracle")]
    assert len(call["tasks"]) == 3
    for task in call["tasks"]:
        assert task.specs == ("a-dist", "b-dist==2")  # the held-out distribution never reaches a host
        assert (task.class_timeout, task.max_classes) == (7.0, 11)
        assert task.results == str(tmp_path / "results") and task.python == str(python)
        assert task.pythonpath.split(os.pathsep) == [str(REPO / "server"), str(REPO / "bench")]
        assert pickle.loads(pickle.dumps(task)) == task  # it crosses to a Ray worker


def test_without_ray_address_the_local_pool_runs_the_hosts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import adopter.executors

    _stub_run(monkeypatch, tmp_path)
    monkeypatch.setattr(adopter.executors, "iter_tasks", lambda *a, **k: pytest.fail("Ray used without an address"))
    oracle_run.run(["a-dist"], jobs=2, class_timeout=5.0, max_classes=3)
    ran = (tmp_path / "ran.txt").read_text(encoding="utf-8").split()
    assert ran[1:] == ["-m", "oracle.worker", str(tmp_path / "results"), "5.0", "3", str(tmp_path), "a-dist"]
    assert capsys.readouterr().err.count("exited 3") == 2  # each host's failure is said, not swallowed


def test_a_host_whose_environment_is_not_on_its_node_says_so(tmp_path: Path) -> None:
    task = HostTask(("a",), 1.0, 1, str(tmp_path), str(tmp_path / "absent" / "python"), "")
    with pytest.raises(FileNotFoundError, match="shared filesystem"):
        host(task)


def test_an_unreachable_cluster_is_a_clear_exit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import adopter.executors

    _stub_run(monkeypatch, tmp_path)

    def refuse(*a: Any, **k: Any) -> Any:
        raise adopter.executors.ExecutorError("cannot reach the Ray cluster at ray://nowhere:1: refused")

    monkeypatch.setattr(adopter.executors, "iter_tasks", refuse)
    with pytest.raises(SystemExit, match="cannot reach the Ray cluster"):
        oracle_run.run(["a-dist"], jobs=1, ray_address="ray://nowhere:1")


@pytest.mark.slow
def test_a_host_runs_on_ray_from_the_shipped_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local Ray instance (started and shut down by the executor): the host function arrives from the
    package Ray ships, and runs the oracle's interpreter with the paths the driver gave it."""
    pytest.importorskip("ray", reason="needs Ray (a dev dependency)")
    from adopter.executors import iter_tasks

    python = _fake_python(tmp_path)
    task = HostTask(("a-dist",), 2.0, 4, str(tmp_path / "results"), str(python), "P")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    ran = list(iter_tasks(host, [task], executor="ray", workers=1, py_modules=[str(REPO / "bench" / "oracle")]))
    assert ran == [(0, 3)]
    assert (tmp_path / "ran.txt").read_text(encoding="utf-8").split() == [
        "P", "-m", "oracle.worker", str(tmp_path / "results"), "2.0", "4", str(tmp_path), "a-dist"]
