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
    batch: int = 2
    seq: int = 16
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


def run_cases(path: Path, cases: tuple[FixCase, ...], options: Options) -> dict[str, Any]:
    """The worker's result for `cases` of the file at `path`: `rows`, or raise `RunFailed`."""
    python = options.python or sys.executable
    with tempfile.TemporaryDirectory(prefix="adopter-verify-") as tmp:
        out = Path(tmp) / "result.json"
        job = {"path": str(path.resolve()), "cases": [asdict(c) for c in cases], "out": str(out),
               "device": resolve_device(options.device, python), "dtype": options.dtype,
               "factory": options.factory, "inputs": options.inputs, "repeats": options.repeats,
               "seed": options.seed, "batch": options.batch, "seq": options.seq}
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # leave no __pycache__ in the user's folders
        try:
            done = subprocess.run([python, "-m", "adopter.verify.worker"], input=json.dumps(job), text=True,
                                  capture_output=True, timeout=options.timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"{path}: the run took longer than {options.timeout:g} s and was stopped "
                            "(raise --timeout, or give a smaller model with --factory)") from exc
        except OSError as exc:
            raise RunFailed(f"cannot start {python}: {exc}") from exc
        if not out.is_file():
            tail = (done.stderr or "").strip().splitlines()[-3:]
            if any("No module named 'torch'" in line for line in tail):
                raise RunFailed(f"{python} has no torch: verify runs your model, so it needs the Python your "
                                "project uses (give it with --python)")
            raise RunFailed(f"{path}: the run ended (exit {done.returncode}) without a result: " + " | ".join(tail))
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if "error" in result:
        raise RunFailed(f"{path}: {result['error']}")
    return result
