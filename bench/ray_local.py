"""A local two-node Ray cluster for benchmarks and tests: a head and a worker node started as separate
`ray start` processes on this machine, each with its own CPUs, and stopped without touching any other
Ray on the machine (`ray stop` would stop every Ray of this user, other people's included).

Used by bench/scale.py and tests/cli/test_ray_cluster.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

START_TIMEOUT_S = 120  # `ray start` on a loaded 2-core machine took 3-17 s here


class LocalCluster:
    """Start with `LocalCluster(cpus)`; `address` to connect to, `env` (its HOME, where Ray keeps its auth
    token) for processes that connect; `stop()` ends it. Ray's sockets live under the temp folder and an
    AF_UNIX path has at most 107 bytes, so the folder is a short one directly under /tmp."""

    def __init__(self, cpus: int, *, env: Mapping[str, str] | None = None,
                 object_store_bytes: int = 200_000_000) -> None:
        self.temp = Path(tempfile.mkdtemp(prefix="adopter-ray-", dir="/tmp"))
        self.home = self.temp / "home"
        self.home.mkdir()
        # A local `ray.init` earlier in the calling process leaves RAY_AUTH_MODE=token in its environment,
        # and `ray start` then refuses to start without a token: this cluster runs without authentication,
        # and a process that connects to it must say so too (`env`).
        self.env = dict(env if env is not None else os.environ, HOME=str(self.home), RAY_USAGE_STATS_ENABLED="0",
                        RAY_AUTH_MODE="disabled")
        self.ray = ray_cli()
        common = [f"--num-cpus={cpus}", f"--object-store-memory={object_store_bytes}", "--disable-usage-stats"]
        try:
            self.address = self._start_head(common)
            self._run([self.ray, "start", f"--address={self.address}", *common])
        except BaseException:
            self.stop()
            raise

    def _start_head(self, common: list[str]) -> str:
        """The head on a free port; another port when one of Ray's own ports was taken meanwhile (a Ray
        instance another process starts at the same time picks its ports at random)."""
        for attempt in range(3):
            port = free_port()
            try:
                self._run([self.ray, "start", "--head", f"--port={port}", "--include-dashboard=false",
                           f"--temp-dir={self.temp / 'tmp'}", *common])
                return f"127.0.0.1:{port}"
            except RuntimeError:
                stop_processes_under(str(self.temp))
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _run(self, command: list[str]) -> None:
        result = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:3])} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")

    def stop(self) -> None:
        """Stop this cluster's processes only, and remove its folder."""
        stop_processes_under(str(self.temp))
        shutil.rmtree(self.temp, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ray_cli() -> str:
    """The `ray` command beside this interpreter (a venv's), else the one on PATH."""
    found = Path(sys.executable).with_name("ray")
    return str(found) if found.exists() else shutil.which("ray") or "ray"


def stop_processes_under(marker: str, timeout_s: float = 20.0) -> None:
    """SIGTERM, then SIGKILL, every process whose command line names `marker` (a cluster's temp folder: its
    GCS, raylets, monitors), with all their descendants (workers, agents)."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    pids.add(int(proc.name))
            except OSError:
                continue
    stack = list(pids)
    while stack:
        try:
            for task in Path(f"/proc/{stack.pop()}/task").iterdir():
                children = {int(c) for c in (task / "children").read_text().split()} - pids
                pids |= children
                stack.extend(children)
        except OSError:
            continue
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
            time.sleep(0.2)
