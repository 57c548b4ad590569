"""Adopter on a local two-node Ray cluster: a head and a worker node started as separate `ray start`
processes (one CPU each), stopped when the module's tests are done (its own processes only, by id).

- `adopter check --ray-address` gives what one process gives, byte for byte.
- The executor ships the caller's code through `runtime_env`: a `module:factory` in a folder only this
  process has on `sys.path` imports on the workers (from the copy Ray sent, not from that folder), as the
  accelerator search's per-model tasks need it.

The cluster runs with its own HOME (Ray keeps an auth token and session files there) and temp folder,
and with this checkout's `adopter` on PYTHONPATH so the workers run the code under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import adopter
from adopter.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from ray_local import LocalCluster

ray = pytest.importorskip("ray", reason="the Ray tests need Ray (a dev dependency: pip install ray)")

HERE = Path(__file__).parent
EXAMPLES = HERE.parents[1] / "examples"
FACTORY = "def make_model(batch=2, seq=8):\n    return ('a model', (batch, seq))\n"


@pytest.fixture(scope="module")
def head() -> Iterator[tuple[str, Path]]:
    """(address, HOME) of a head node and one worker node, each a separate `ray start` with one CPU."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(adopter.__file__).parents[1]),
                                                                  os.environ.get("PYTHONPATH")])))
    try:
        local = LocalCluster(1, env=env, object_store_bytes=100_000_000)
    except RuntimeError as exc:
        raise AssertionError(str(exc)) from exc
    try:
        yield local.address, local.home
    finally:
        if ray.is_initialized():
            ray.shutdown()
        local.stop()


@pytest.fixture
def cluster(head: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> str:
    """The cluster's address, with this process's HOME the cluster's (Ray reads its auth token there)."""
    address, home = head
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # as the cluster (bench/ray_local.py)
    return address


def _nodes(address: str) -> int:
    """The cluster's live nodes, counted from another process: connecting this one to Ray and
    disconnecting again just before the command under test connects made that connection's objects'
    owner unreachable once (OwnerDiedError) in a full `pytest -n 2` run."""
    code = f"import ray; ray.init(address={address!r}, log_to_driver=False); print(sum(1 for n in ray.nodes() if n['Alive']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.strip().splitlines()[-1])


def test_check_on_the_cluster_prints_what_one_process_prints(cluster: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert _nodes(cluster) == 2
    for copy in ("a", "b"):
        shutil.copytree(EXAMPLES, tmp_path / "tree" / copy, ignore=shutil.ignore_patterns("__pycache__", "*.md"))
    (tmp_path / "tree" / "binary.py").write_bytes(b"\x00\xff")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADOPTER_RESULT_CACHE", "0")
    argv = ["check", "tree", "--format", "json", "--target", "cpu"]
    alone = main([*argv, "--jobs", "1"]), capsys.readouterr()
    on_ray = main([*argv, "--ray-address", cluster]), capsys.readouterr()
    assert on_ray == alone
    assert alone[0] == 2 and '"rule": "f07-conv-bn"' in alone[1].out
    assert not ray.is_initialized()  # the command disconnected


def test_the_users_factory_ships_to_the_workers(cluster: str, tmp_path: Path) -> None:
    from adopter.executors import run_tasks
    from adopter.wham.models import factory_origin

    folder = tmp_path / "only-here"
    folder.mkdir()
    (folder / "my_models.py").write_text(FACTORY)
    sys.path.insert(0, str(folder))  # the driver has it; the workers' sys.path does not
    try:
        assert factory_origin("my_models:make_model") == str(folder / "my_models.py")
        with pytest.raises(ModuleNotFoundError):
            run_tasks(factory_origin, ["my_models:make_model"], executor="ray", ray_address=cluster)
        origins = run_tasks(factory_origin, ["my_models:make_model"] * 2, executor="ray", ray_address=cluster,
                            working_dir=str(folder))
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("my_models", None)
    for origin in origins:
        assert Path(origin).name == "my_models.py" and Path(origin).parent != folder  # Ray's copy
        assert Path(origin).read_text() == FACTORY


def test_the_search_sends_the_factory_folder_to_ray(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`search_set` on Ray: the folder of `--model-path` is the workers' working_dir, the tasks import from "."."""
    from adopter.wham import multi
    from adopter.wham.request import SearchRequest

    seen: dict[str, object] = {}

    def fake_run_tasks(fn: object, tasks: list[tuple[object, ...]], **kwargs: object) -> list[object]:
        seen.update(kwargs, paths=[t[3] for t in tasks])
        raise RuntimeError("stop here")

    monkeypatch.setattr("adopter.executors.run_tasks", fake_run_tasks)
    for executor, working_dir, path in (("ray", str(tmp_path), "."), ("process", None, str(tmp_path))):
        req = SearchRequest(model="my_models:a,my_models:b", model_path=str(tmp_path), executor=executor)
        with pytest.raises(RuntimeError, match="stop here"):
            multi.search_set(req, lambda f, m: None, None, 0.0)
        assert seen["working_dir"] == working_dir and seen["paths"] == [path, path]
