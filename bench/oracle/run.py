"""Run the oracle: install the distributions, and attempt their classes in `jobs` host processes.

Local runs use a pool of host processes (each loads torch and the patterns once and forks a child per
distribution); `ray_address` spreads the hosts over a Ray cluster through `adopter.executors` (the
executor the accelerator search uses), when that module is present.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from oracle.install import CACHE, ensure_venv, excluded, install

RESULTS = CACHE / "results"
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


def host(task: tuple[list[str], float, int]) -> int:
    """One host process over a slice of the distributions; its exit status."""
    specs, class_timeout, max_classes = task
    python = ensure_venv()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SERVER), str(BENCH)]), PYTHONDONTWRITEBYTECODE="1")
    cmd = [str(python), "-m", "oracle.worker", str(RESULTS), str(class_timeout), str(max_classes), _site(python),
           *specs]
    return subprocess.run(cmd, env=env, check=False).returncode


def run(specs: Sequence[str], *, jobs: int = 2, class_timeout: float = 20.0, max_classes: int = 20,
        ray_address: str | None = None) -> None:
    """Install (in a thread beside the hosts, which wait for each distribution) and attempt every class."""
    specs = selected(specs)
    ensure_venv()
    # Installers, each over every `n`-th distribution in the order the hosts take them (pip mostly waits on
    # the network, so more installers than hosts keep the hosts fed).
    n = max(2, 2 * jobs)
    installers = [threading.Thread(target=lambda part=part: [install(s) for s in part], daemon=True)
                  for part in (specs[i::n] for i in range(n))]
    for t in installers:
        t.start()
    for claim in RESULTS.glob("*/_claim"):  # claims of an earlier run's hosts, which are gone
        claim.unlink()
    tasks = [(list(specs), class_timeout, max_classes) for _ in range(jobs)]  # hosts claim from one list
    if ray_address:
        try:
            from adopter.executors import run_tasks  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:  # TODO(lead): wire once adopter.executors (branch scale) is merged
            raise SystemExit(f"--ray-address needs adopter.executors, which this checkout lacks ({exc})") from exc
        run_tasks(host, tasks, executor="ray", workers=jobs, ray_address=ray_address,
                  py_modules=[str(BENCH / "oracle")])
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:  # each task is a host process: threads suffice
            list(pool.map(host, tasks))
    for t in installers:
        t.join()
    print(f"oracle: results in {RESULTS}", file=sys.stderr)
