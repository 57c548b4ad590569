"""Build the optional native (mypyc-compiled) copy of Adopter's static analysis and rule matcher.

The pure-Python package is always complete; this only makes it faster (the analysis and matching of a
file take about a third less CPU). Compiled modules go to `build/native/` beside a manifest of the
source files' hashes, never next to the `.py` files: `adopter._native` loads them only while every
listed source is byte-identical to what was compiled, so editing a `.py` file silently falls back to
it until the next build instead of running stale code.

Usage: python scripts/build_native.py [--force] [--clean]
Needs mypy (the dev extra) and a C compiler with the Python headers. Any failure prints a warning and
exits 0: set-up must not fail because an optimisation could not be built.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "server"
OUT = ROOT / "build" / "native"

# What gets compiled: modules that are fully typed (mypy --strict) and hot on every keystroke.
# Package `__init__` modules stay interpreted (they are tiny and the loader keys on module files).
COMPILED_GLOBS = ("adopter/analysis/*.py", "adopter/engine/*.py")
COMPILED_FILES = ("adopter/positions.py", "adopter/dsl/types.py")
# Modules of those folders left interpreted: `engine/loading` and `engine/rule_docs` read data files
# at start-up only; compiling them buys nothing.
EXCLUDED = frozenset({"adopter/engine/loading.py", "adopter/engine/rule_docs.py"})


def sources() -> list[str]:
    """The source files to compile, relative to `server/`, sorted."""
    found: set[str] = set(COMPILED_FILES)
    for pattern in COMPILED_GLOBS:
        found.update(str(p.relative_to(SERVER)) for p in SERVER.glob(pattern) if p.name != "__init__.py")
    return sorted(found - EXCLUDED)


def fingerprint(files: list[str]) -> dict[str, object]:
    """What the compiled output depends on: interpreter, mypy version and every source's hash."""
    try:
        from mypy.version import __version__ as mypy_version
    except ImportError:
        mypy_version = None
    return {
        "python": sysconfig.get_config_var("EXT_SUFFIX"),
        "mypy": mypy_version,
        "sources": {f: hashlib.sha256((SERVER / f).read_bytes()).hexdigest() for f in files},
    }


def _module_name(path: Path, root: Path) -> str:
    """`adopter/analysis/flow.cpython-311-x86_64-linux-gnu.so` -> `adopter.analysis.flow`."""
    rel = path.relative_to(root)
    return ".".join((*rel.parts[:-1], rel.name.split(".")[0]))


def build(force: bool) -> int:
    files = sources()
    want = fingerprint(files)
    manifest_path = OUT / "manifest.json"
    if not force and manifest_path.exists():
        try:
            have = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            have = {}
        if {k: have.get(k) for k in want} == want:
            print(f"native build: up to date ({len(files)} modules in {OUT.relative_to(ROOT)})")
            return 0
    if want["mypy"] is None:
        print("native build: skipped (mypy is not installed); the pure-Python analysis is used", file=sys.stderr)
        return 0
    mypyc = Path(sys.executable).with_name("mypyc")
    with tempfile.TemporaryDirectory(prefix="adopter-native-") as tmp:
        work = Path(tmp)
        # A copy of the package: mypyc writes its extension modules beside the sources it compiles.
        shutil.copytree(SERVER / "adopter", work / "adopter", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        command = [str(mypyc) if mypyc.exists() else "mypyc", *files]
        print(f"native build: compiling {len(files)} modules with mypyc (about a minute) ...", flush=True)
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            log = (done.stdout + done.stderr).strip().splitlines()
            print("native build: FAILED, the pure-Python analysis is used. mypyc said:", file=sys.stderr)
            for line in log[-15:]:
                print(f"  {line}", file=sys.stderr)
            return 0
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        modules: dict[str, str] = {}
        staging = OUT.with_name("native.new")
        shutil.rmtree(staging, ignore_errors=True)
        for so in sorted(work.rglob(f"*{suffix}")):
            if "build" in so.relative_to(work).parts[:1]:
                continue  # mypyc's intermediate build folder
            target = staging / so.relative_to(work)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(so, target)
            modules[_module_name(so, work)] = str(so.relative_to(work))
        expected = {f[: -len(".py")].replace("/", ".") for f in files}
        if not expected <= modules.keys():
            print(f"native build: FAILED (missing {sorted(expected - modules.keys())}); pure Python is used",
                  file=sys.stderr)
            shutil.rmtree(staging, ignore_errors=True)
            return 0
        (staging / "manifest.json").write_text(json.dumps({**want, "modules": modules}, indent=1), encoding="utf-8")
        shutil.rmtree(OUT, ignore_errors=True)
        staging.rename(OUT)
    print(f"native build: {len(modules)} extension modules in {OUT.relative_to(ROOT)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="rebuild even when the manifest is current")
    parser.add_argument("--clean", action="store_true", help="remove the native build and exit")
    args = parser.parse_args()
    if args.clean:
        shutil.rmtree(OUT, ignore_errors=True)
        print(f"removed {OUT.relative_to(ROOT)}")
        return 0
    try:
        return build(args.force)
    except Exception as exc:  # never fail the set-up for an optimisation
        print(f"native build: FAILED ({type(exc).__name__}: {exc}); the pure-Python analysis is used",
              file=sys.stderr)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
