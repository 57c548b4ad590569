"""Run the oracle: install the distributions, and attempt their classes in `jobs` host processes.

Local runs use a pool of host processes (each loads torch and the patterns once and forks a child per
distribution); `ray_address` spreads the hosts over a Ray cluster through `adopter.executors` (the
executor the accelerator search uses): each Ray task is one host process, and the nodes must share the
filesystem that holds this checkout, `.cache/oracle/venv` and the results (the hosts claim distributions
through files there, so a run stays resumable and a class keeps its time limit wherever it runs).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from oracle import stale
from oracle.install import CACHE, ensure_venv, excluded, install, ledger_entry
from oracle.upgrade import upgrade_quietly
from oracle.worker import PASS

# ADOPTER_ORACLE_RESULTS: a results folder of one's own (e.g. a copy of the shared one, to rerun some classes
# with changed patterns or construction without changing what other checkouts read).
RESULTS = Path(os.environ.get("ADOPTER_ORACLE_RESULTS") or CACHE / "results").resolve()
BENCH = Path(__file__).resolve().parents[1]
SERVER = BENCH.parent / "server"


def _normal(name: str) -> str:
    return name.split("==")[0].replace("_", "-").replace(".", "-").lower()


def selected(specs: Sequence[str]) -> list[str]:
    """The specs minus the held-out distributions (never downloaded, never opened)."""
    held = {_normal(d) for d in excluded()}
    return [s for s in specs if _normal(s) not in held]


def _site(python: Path) -> str:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return os.path.realpath(out.stdout.strip())


@dataclass(frozen=True, slots=True)
class HostTask:
    """One host process's work, with every path spelled out by the driver: a Ray worker runs the copy of
    this package that Ray shipped (elsewhere on disk), so nothing may be found relative to this file there.
    The results folder, the oracle's environment and the code must be on a filesystem every node shares
    (the hosts claim distributions through files in `results`)."""

    specs: tuple[str, ...]
    class_timeout: float
    max_classes: int
    results: str
    python: str  # the oracle environment's interpreter
    pythonpath: str  # this checkout's `server` and `bench`


def host(task: HostTask) -> int:
    """One host process over the distributions (it claims them one at a time); its exit status."""
    if not Path(task.python).exists():
        raise FileNotFoundError(f"{task.python}: the oracle's environment is not on this node (the results "
                                "folder, the environment and the checkout must be on a shared filesystem)")
    # No network for the model code: a package that downloads weights when imported or built (lpips did,
    # from download.pytorch.org) fails to, and the class is recorded as not built. Installs run elsewhere.
    env = dict(os.environ, PYTHONPATH=task.pythonpath, PYTHONDONTWRITEBYTECODE="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", no_proxy="", NO_PROXY="")
    cmd = [task.python, "-m", "oracle.worker", task.results, str(task.class_timeout), str(task.max_classes),
           _site(Path(task.python)), *task.specs]
    return subprocess.run(cmd, env=env, check=False).returncode


def host_tasks(specs: Sequence[str], jobs: int, class_timeout: float, max_classes: int) -> list[HostTask]:
    """`jobs` hosts, each given the whole list (they claim from it in turn)."""
    python = str(ensure_venv())
    path = os.pathsep.join([str(SERVER), str(BENCH)])
    return [HostTask(tuple(specs), class_timeout, max_classes, str(RESULTS), python, path) for _ in range(jobs)]


def run(specs: Sequence[str], *, jobs: int = 2, class_timeout: float = 20.0, max_classes: int = 20,
        ray_address: str | None = None, installs: bool = True) -> None:
    """Install (in a thread beside the hosts, which wait for each distribution) and attempt every class.
    `installs=False` runs only what the installer's ledger already holds (a rerun of some classes after a
    change of the oracle: no pip, no retry of the distributions that failed to install)."""
    specs = selected(specs)
    if not installs:  # only what the ledger holds: the hosts would wait for installs that never come
        specs = [s for s in specs if ledger_entry(s) is not None]
    ensure_venv()
    # Installers, each over every `n`-th distribution in the order the hosts take them (pip mostly waits on
    # the network, so more installers than hosts keep the hosts fed).
    n = max(2, 2 * jobs) if installs else 0
    installers = [threading.Thread(target=lambda part=part: [install(s) for s in part], daemon=True)
                  for part in (specs[i::n] for i in range(n))]
    for t in installers:
        t.start()
    for claim in RESULTS.glob("*/_claim"):  # claims of an earlier run's hosts, which are gone
        claim.unlink()
    _set_aside_stale(specs)
    marked, left = upgrade_quietly(RESULTS)
    print(f"oracle: {marked} distribution(s) brought to pass {PASS} from their results alone, {left} to redo in part",
          file=sys.stderr)
    _hosts(specs, jobs, class_timeout, max_classes, ray_address)
    for t in installers:
        t.join()
    # An install during this run may have changed files a finished distribution was traced from: run those
    # again (nothing installs now, so one more pass leaves none stale).
    if _set_aside_stale(specs):
        _hosts(specs, jobs, class_timeout, max_classes, ray_address)
    print(f"oracle: results in {RESULTS}", file=sys.stderr)


def _set_aside_stale(specs: Sequence[str]) -> list[str]:
    """Set aside the stale results of the distributions this run covers (their names)."""
    names = {s.split("==")[0] for s in specs}
    changed = {k: v for k, v in stale.stale_folders(RESULTS).items() if k in names}
    for name, files in changed.items():
        print(f"oracle: {name}: {len(files)} file(s) changed since it was traced (e.g. {files[0]}): run again",
              file=sys.stderr)
    stale.set_aside(RESULTS, changed)
    return list(changed)


def _hosts(specs: Sequence[str], jobs: int, class_timeout: float, max_classes: int, ray_address: str | None) -> None:
    tasks = host_tasks(specs, jobs, class_timeout, max_classes)
    if ray_address:
        from adopter.executors import ExecutorError, iter_tasks

        try:
            ran = iter(list(iter_tasks(host, tasks, executor="ray", workers=jobs, ray_address=ray_address,
                                       py_modules=[str(BENCH / "oracle")])))
        except ExecutorError as exc:
            raise SystemExit(f"oracle: {exc}") from exc
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:  # each task is a host process: threads suffice
            ran = iter(list(enumerate(pool.map(host, tasks))))
    for index, status in ran:
        if status != 0:
            print(f"oracle: host {index} exited {status}", file=sys.stderr)
