"""Start the verify worker in a subprocess with a timeout and read its result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from adopter.verify.cases import FixCase

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding `adopter`


@dataclass(frozen=True, slots=True)
class Options:
    """What the run is asked for: where, in which precision, how it builds the class, how long it may take."""

    device: str = "cpu"
    dtype: str = "fp32"
    factory: str | None = None
    inputs: str | None = None
    timeout: float = 300.0
    repeats: int = 10
    seed: int = 0
    python: str | None = None


class RunFailed(Exception):
    """The worker could not answer: a timeout, a crash, or bad input it named; the message says which."""


def resolve_device(device: str, python: str) -> str:
    """`auto` is CUDA when the worker's torch sees a GPU, else the CPU."""
    if device != "auto":
        return device
    probe = subprocess.run([python, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)
    return "cuda" if probe.stdout.strip() == "True" else "cpu"


def job_for(path: Path, source: str, cases: tuple[FixCase, ...], options: Options, out: Path) -> dict[str, Any]:
    """What the worker is told: the file's path and text (the text is run, not the file on disk), the fixes."""
    python = options.python or sys.executable
    return {"path": str(path.resolve()), "source": source, "cases": [asdict(c) for c in cases], "out": str(out),
            "device": resolve_device(options.device, python), "dtype": options.dtype,
            "factory": options.factory, "inputs": options.inputs, "repeats": options.repeats,
            "seed": options.seed}


def worker_command(options: Options) -> tuple[list[str], dict[str, str]]:
    """The worker's command line and environment (this `adopter` importable, no bytecode written)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the user's folders
    return [options.python or sys.executable, "-m", "adopter.verify.worker"], env


def read_result(path: Path, out: Path, returncode: int | None, stderr: str, python: str) -> dict[str, Any]:
    """The worker's result file, or `RunFailed` saying why there is none."""
    if not out.is_file():
        tail = (stderr or "").strip().splitlines()[-3:]
        if any("No module named 'torch'" in line for line in tail):
            raise RunFailed(f"{python} has no torch: verify runs your model, so it needs the Python your "
                            "project uses (give it with --python)")
        raise RunFailed(f"{path}: the run ended (exit {returncode}) without a result: " + " | ".join(tail))
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if "error" in result:
        raise RunFailed(f"{path}: {result['error']}")
    return result


def run_cases(path: Path, source: str, cases: tuple[FixCase, ...], options: Options) -> dict[str, Any]:
    """The worker's result for `cases` of `source` (the text of the file at `path`): `rows`, or raise
    `RunFailed`."""
    with tempfile.TemporaryDirectory(prefix="adopter-verify-") as tmp:
        out = Path(tmp) / "result.json"
        job = job_for(path, source, cases, options, out)
        command, env = worker_command(options)
        try:
            done = subprocess.run(command, input=json.dumps(job), text=True, capture_output=True,
                                  timeout=options.timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"{path}: the run took longer than {options.timeout:g} s and was stopped "
                            "(raise --timeout, or give a smaller model with --factory)") from exc
        except OSError as exc:
            raise RunFailed(f"cannot start {command[0]}: {exc}") from exc
        return read_result(path, out, done.returncode, done.stderr, command[0])
