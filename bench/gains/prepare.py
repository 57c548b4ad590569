"""Copy a model's transformers package and the training script aside, run `adopter check`/`fix` on the copies."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tf435 import TF435  # bench/tf435.py (bench/ is on sys.path: gains.py runs from it)

REPO = Path(__file__).resolve().parents[2]
FIX_TIMEOUT_S = 300
_NOT_FIXED = re.compile(r":(\d+):\d+: (?P<rule>[\w.-]+): not fixed: (?P<reason>.*)$")
# Where the frozen copy of the `adopter` package is (see freeze_adopter); None: the installed one.
_FROZEN: Path | None = None


def freeze_adopter(workdir: Path) -> Path:
    """Copy the `adopter` package (with its rules and grammar) into `workdir` and run that copy from now on.

    A full run takes an hour or more; the checkout's `adopter` may be edited meanwhile (on a shared machine
    other people commit to it), and a half-edited file made `adopter check` crash in the middle of an
    earlier run. The copy makes every check and fix of one run use the same code, the code at its start.
    """
    global _FROZEN
    import adopter
    from adopter.resources import grammar_dir, rules_dir

    package = Path(adopter.__file__).resolve().parent
    root = workdir / "adopter-frozen"
    if root.exists():
        shutil.rmtree(root)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so")
    shutil.copytree(package, root / "adopter", ignore=ignore)
    for name, source in (("rules", rules_dir()), ("dsl-grammar", grammar_dir())):
        dest = root / "adopter" / "_data" / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(source, dest, ignore=ignore)
    _FROZEN = root
    return root


@dataclass(slots=True)
class Prepared:
    """A rewritten copy of one file and what `adopter` said about it."""

    original: Path
    copy: Path  # the rewritten copy (identical to the original when nothing was fixed)
    findings: list[dict[str, Any]] = field(default_factory=list)  # `adopter check --format json` on the copy
    left: list[dict[str, Any]] = field(default_factory=list)  # check again after fixing
    not_fixed: list[dict[str, str]] = field(default_factory=list)  # rule and reason, from `fix` stderr
    fix_rc: int | None = None
    error: str | None = None  # why the copy could not be rewritten (the run goes on with the original code)

    @property
    def changed(self) -> bool:
        return self.copy.read_bytes() != self.original.read_bytes()

    def rules_fired(self) -> dict[str, int]:
        """Sites per rule id that `check` reported on the original code."""
        return dict(sorted(Counter(f["rule"] for f in self.findings).items()))

    def rules_fixed(self) -> dict[str, int]:
        """Sites per rule id that are gone after `fix` (reported before, not after)."""
        before = Counter(f["rule"] for f in self.findings)
        after = Counter(f["rule"] for f in self.left)
        return {r: n - after.get(r, 0) for r, n in sorted(before.items()) if n - after.get(r, 0) > 0}

    def as_json(self) -> dict[str, Any]:
        return {"original": str(self.original), "copy": str(self.copy), "changed": self.changed,
                "rules_fired": self.rules_fired(), "rules_fixed": self.rules_fixed(),
                "not_fixed": self.not_fixed, "fix_rc": self.fix_rc, "error": self.error}


def adopter(*args: str, timeout: float = FIX_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run the `adopter` CLI in a subprocess (as a user would): the frozen copy once there is one."""
    env = dict(os.environ)
    if _FROZEN is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(_FROZEN), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", "adopter", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, env=env, check=False)


def _check_json(path: Path, target: str) -> tuple[list[dict[str, Any]], str | None]:
    try:
        proc = adopter("check", "--format", "json", "--target", target, str(path))
    except subprocess.TimeoutExpired:
        return [], f"adopter check timed out after {FIX_TIMEOUT_S} s"
    if proc.returncode not in (0, 1):
        return [], f"adopter check exit {proc.returncode}: {_tail(proc.stderr)}"
    try:
        records = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        return [], f"adopter check (exit {proc.returncode}) printed no JSON ({exc}): {_tail(proc.stderr)}"
    return list(records), None


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "(no output)"


def fix_copy(original: Path, copy: Path, target: str, rule: str | None = None) -> Prepared:
    """Check and fix `copy` (already a copy of `original`), with every rule or only `rule`; never raises."""
    prepared = Prepared(original=original, copy=copy)
    prepared.findings, error = _check_json(copy, target)
    if error:
        prepared.error = error
        return prepared
    try:
        proc = adopter("fix", "--target", target, *(("--rule", rule) if rule else ()), str(copy))
    except subprocess.TimeoutExpired:
        prepared.error = f"adopter fix timed out after {FIX_TIMEOUT_S} s"
        shutil.copyfile(original, copy)
        return prepared
    prepared.fix_rc = proc.returncode
    for line in proc.stderr.splitlines():
        m = _NOT_FIXED.search(line)
        if m:
            prepared.not_fixed.append({"rule": m["rule"], "line": m.group(1), "reason": m["reason"]})
    if proc.returncode == 2:
        # fix writes only verified files, but exit 2 means something broke: measure the original code.
        prepared.error = f"adopter fix exit 2: {_tail(proc.stderr)}"
        shutil.copyfile(original, copy)
        return prepared
    prepared.left, error = _check_json(copy, target)
    if error:
        prepared.error = f"after fixing: {error}"
    return prepared


def prepare_model(package: str, workdir: Path, target: str, rule: str | None = None) -> Prepared:
    """Copy `transformers/models/<package>/` into `workdir` and fix the copied `modeling_<package>.py`."""
    source_dir = TF435 / "transformers" / "models" / package
    if not source_dir.is_dir():
        raise FileNotFoundError(f"{source_dir} is missing: run scripts/fetch-corpus.sh")
    dest = workdir / (f"{package}__{rule}" if rule else package)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source_dir, dest, ignore=shutil.ignore_patterns("__pycache__", "*_tf_*", "*_flax_*"))
    name = f"modeling_{package}.py"
    return fix_copy(source_dir / name, dest / name, target, rule)


def prepare_script(script: Path, workdir: Path, target: str) -> Prepared:
    """Copy the training script into `workdir` and fix the copy."""
    dest = workdir / "script" / script.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(script, dest)
    return fix_copy(script, dest, target)
