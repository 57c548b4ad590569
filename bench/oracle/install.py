"""Install the oracle's distributions into one environment of their own, never another torch.

`.cache/oracle/venv` is a virtual environment whose `site-packages` ends with a `.pth` line pointing at
the project's venv, so the project's `torch==2.13.0` (and numpy) is what every distribution imports, and
pip sees it as installed. Each distribution is installed with its dependencies under the constraint
`torch==<the installed version>`: a distribution (or dependency) that demands another torch fails to
resolve, and is then installed with `--no-deps` plus those of its requirements that resolve alone.
The outcome of each install is kept in `.cache/oracle/installs.json`, so a rerun skips what is done.
"""

from __future__ import annotations

import ast
import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# ADOPTER_ORACLE_ROOT: an oracle folder of one's own (venv, installs ledger, constraints, results) instead of
# `.cache/oracle` (e.g. `bench/oracle_heldout.py`'s measurement over the held-out distributions).
CACHE = Path(os.environ.get("ADOPTER_ORACLE_ROOT") or ROOT / ".cache" / "oracle").resolve()
VENV = CACHE / "venv"
LEDGER = CACHE / "installs"  # one JSON file per spec: installers in parallel never lose each other's entries
HELDOUT_MANIFEST = ROOT / "bench" / "heldout_corpus.py"  # its MANIFEST; ADOPTER_ORACLE_HELDOUT (a file of names) overrides it
INSTALL_TIMEOUT_S = 240  # a source build past this is a compiled extension this machine cannot build


@dataclass(frozen=True, slots=True)
class Installed:
    dist: str
    ok: bool
    how: str  # "with-deps", "no-deps", or the error's last line


def python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> Path:
    """Create the environment once; its site-packages sees the running interpreter's (torch, numpy)."""
    if not python().exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    site = next((VENV / "lib").glob("python3*/site-packages"))
    import torch  # the project's torch: its folder is what the oracle's environment must share

    host = Path(torch.__file__).resolve().parents[1]
    (site / "zz_adopter_host.pth").write_text(f"{host}\n", encoding="utf-8")
    # `name<0` admits no version: a distribution that needs an excluded one fails to resolve, and is then
    # installed alone, so the excluded distribution is never downloaded.
    import numpy  # pinned too: a distribution's `numpy<2` would shadow the host's numpy that torch and scipy use

    lines = [f"torch=={torch.__version__.split('+')[0]}", f"numpy=={numpy.__version__}",
             *(f"{d}<0" for d in excluded())]
    (CACHE / "constraints.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python()


def excluded() -> tuple[str, ...]:
    """Distributions the oracle must never download or open: the held-out labelled set, read from the
    distribution names of `bench/heldout_corpus.py`'s MANIFEST (parsed, not imported), and every fresh slice
    (`oracle/fresh.py`: measured in folders of their own); or a file of names one per line in
    ADOPTER_ORACLE_HELDOUT (`bench/oracle_fresh.py` writes one without the slice it measures)."""
    override = os.environ.get("ADOPTER_ORACLE_HELDOUT")
    if override:
        text = Path(override).read_text(encoding="utf-8")
        return tuple(ln.strip() for ln in text.splitlines() if ln.strip())
    from oracle.fresh import other_names

    return heldout_names(HELDOUT_MANIFEST.read_text(encoding="utf-8")) + other_names()


def heldout_names(source: str) -> tuple[str, ...]:
    """The first string of each entry of the module-level `MANIFEST = (...)` tuple in `source`."""
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "MANIFEST" and isinstance(node.value, ast.Tuple):
            return tuple(e.elts[0].value for e in node.value.elts
                         if isinstance(e, ast.Tuple) and e.elts and isinstance(e.elts[0], ast.Constant)
                         and isinstance(e.elts[0].value, str))
    raise ValueError("no MANIFEST tuple in bench/heldout_corpus.py")


def ledger_entry(spec: str) -> dict[str, object] | None:
    """What the installer recorded for `spec` ({"ok": bool, "how": str}), None before it got there."""
    try:
        data = json.loads((LEDGER / f"{spec}.json").read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _record(spec: str, result: Installed) -> None:
    LEDGER.mkdir(parents=True, exist_ok=True)
    tmp = LEDGER / f".{spec}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"ok": result.ok, "how": result.how}), encoding="utf-8")
    tmp.replace(LEDGER / f"{spec}.json")


def _pip(args: list[str]) -> subprocess.CompletedProcess[str]:
    """One pip install at a time into the environment (an exclusive lock across installer threads and
    processes): pip reading a distribution another pip is half way through writing fails with
    `TypeError: expected string or bytes-like object` and leaves `~name` folders behind."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "pip.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _pip_unlocked(args)


_PENDING: dict[str, list[str]] = {}  # plans resolved by this process's installers, waiting for the lock
_INSTALLED: dict[str, subprocess.CompletedProcess[str] | None] = {}  # plans another thread installed
_MUTEX = threading.Lock()


def _install_plan(spec: str, plan: list[str]) -> subprocess.CompletedProcess[str] | None:
    """Install a resolved plan (`--no-deps`, exact versions) under the lock. Whoever gets the lock installs
    every plan waiting in this process in one pip call (one pip start for many small distributions), and
    each plan alone when the union does not install (two plans pinning different versions)."""
    with _MUTEX:
        _PENDING[spec] = plan
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "pip.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with _MUTEX:
            if spec in _INSTALLED:
                return _INSTALLED.pop(spec)
            batch = dict(_PENDING)
            _PENDING.clear()
        pins = sorted({p for pl in batch.values() for p in pl})
        union = _pip_unlocked(["--no-deps", *pins]) if pins else None
        if union is None or union.returncode == 0:
            results = {s: union for s in batch}
        else:
            results = {s: (_pip_unlocked(["--no-deps", *pl]) if pl else None) for s, pl in batch.items()}
        with _MUTEX:
            mine = results.pop(spec)
            _INSTALLED.update(results)
        return mine


def _pip_unlocked(args: list[str]) -> subprocess.CompletedProcess[str]:
    cmd = [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--prefer-binary", "--no-compile", "-c", str(CACHE / "constraints.txt"), *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"pip timed out after {INSTALL_TIMEOUT_S} s")


def _last_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in (proc.stderr or "").splitlines() if ln.strip() and "is ignored" not in ln]
    return lines[-1][:300] if lines else f"pip exited {proc.returncode}"


def resolve(spec: str, tries: int = 3) -> tuple[list[str] | None, str]:
    """(the exact `name==version`s pip would install for `spec`, "") or (None, pip's error). Resolving
    runs beside other installers (`--dry-run` writes nothing; the slow part, backtracking and downloads,
    runs in parallel) and only the installs of its plan take the lock; a resolution that read a
    distribution while another pip was writing it is retried."""
    error = ""
    for _ in range(tries):
        with tempfile.TemporaryDirectory(prefix="oracle-pip-") as tmp:
            report = Path(tmp) / "report.json"
            proc = _pip_unlocked(["--dry-run", "--report", str(report), spec])
            if proc.returncode == 0:
                try:
                    items = json.loads(report.read_text(encoding="utf-8")).get("install", [])
                    return [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items], ""
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    return None, f"pip's report could not be read ({exc})"
            error = _last_error(proc)
            if "TypeError" not in error and "invalid distribution" not in error:
                break
    return None, error


def install(spec: str) -> Installed:
    """Install `spec` (`name==version` or `name`) into the oracle's environment; never raises."""
    name = spec.split("==")[0].split("[")[0]
    if _normal(name) in {_normal(d) for d in excluded()}:
        return Installed(spec, False, "excluded: a held-out distribution")
    entry = ledger_entry(spec)
    if entry is not None and entry.get("ok"):
        return Installed(spec, True, str(entry["how"]))
    ensure_venv()
    plan, first = resolve(spec)
    if plan is not None:
        proc = _install_plan(spec, plan)
        if proc is None or proc.returncode == 0:
            _record(spec, Installed(spec, True, "with-deps"))
            return Installed(spec, True, "with-deps")
        first = _last_error(proc)
    alone = _pip(["--no-deps", spec])  # its dependencies do not resolve next to the host's torch/numpy
    result = (Installed(spec, True, f"no-deps ({first})") if alone.returncode == 0
              else Installed(spec, False, _last_error(alone)))
    _record(spec, result)
    return result


def _normal(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()


_NO_MODULE = re.compile(r"No module named '([^'.]+)")
# Modules a distribution imports that no distribution of that name provides. `pkg_resources` left
# setuptools in its version 81, and packages written before still import it at their top.
PROVIDED_BY = {"pkg_resources": "setuptools<81"}


def _site() -> Path:
    return next((VENV / "lib").glob("python3*/site-packages"))


def missing_requirements(dist: str, imports: dict[str, str]) -> list[str]:
    """The requirements to install so that more of `dist`'s modules import: for each top-level module its
    imports reported missing (`_imports.json`: "ModuleNotFoundError: No module named 'x'"), the
    requirement `dist` itself declares by that name (any extra: the distribution's own declared optional
    dependencies; its environment marker dropped, its version kept), or what provides a module no
    distribution is named for (`PROVIDED_BY`). A missing module `dist` does not declare is not guessed."""
    from importlib import metadata as md

    from packaging.requirements import InvalidRequirement, Requirement

    wanted = {m.group(1) for v in imports.values() if (m := _NO_MODULE.search(v))}
    try:
        declared = next(iter(md.distributions(name=dist, path=[str(_site())]))).requires or []
    except StopIteration:
        declared = []
    by_name: dict[str, str] = {}
    for text in declared:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        by_name.setdefault(_normal(req.name), f"{req.name}{req.specifier}")
    out = [by_name.get(_normal(m)) or PROVIDED_BY.get(m) for m in sorted(wanted)]
    return sorted({r for r in out if r and _normal(r.split("<")[0].split(">")[0].split("=")[0].split("~")[0])
                   not in {_normal(d) for d in excluded()}})


def install_missing(results: Path, dists: list[str]) -> list[Installed]:
    """Install every finished distribution's `missing_requirements` (those of `dists`, or all), each with
    its dependencies under the constraints (the project's torch and numpy), else alone."""
    done = []
    for imports in sorted(results.glob("*/_imports.json")):
        dist = imports.parent.name
        if dists and dist not in dists:
            continue
        for req in missing_requirements(dist, json.loads(imports.read_text(encoding="utf-8"))):
            proc = _pip([req])
            how = "with-deps" if proc.returncode == 0 else ""
            if not how:
                alone = _pip(["--no-deps", req])
                how = f"no-deps ({_last_error(proc)})" if alone.returncode == 0 else _last_error(alone)
            done.append(Installed(f"{dist}: {req}", how.startswith(("with-deps", "no-deps")), how))
    return done


def main(argv: list[str]) -> int:
    """`install.py SPEC...` installs distributions; `install.py --missing RESULTS [DIST...]` installs what
    their failed imports lack (`install_missing`)."""
    if argv[:1] == ["--missing"]:
        results = install_missing(Path(argv[1]), argv[2:])
    else:
        results = [install(spec) for spec in argv]
    for r in results:
        print(f"{'ok ' if r.ok else 'FAIL'} {r.dist}: {r.how}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
