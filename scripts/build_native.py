"""Build the optional native (mypyc-compiled) copy of Adopter's static analysis and rule matcher.

The pure-Python package is always complete; this only makes it faster (the analysis and matching of a
file take about a third less CPU). Compiled modules go to `build/native/` beside a manifest of the
source files' hashes, never next to the `.py` files: `adopter._native` loads them only while every
listed source is byte-identical to what was compiled, so editing a `.py` file silently falls back to
it until the next build instead of running stale code.

Usage: python scripts/build_native.py [--force] [--clean] [--strict]
Needs mypy (the dev extra), setuptools and a C compiler with the Python headers. Any failure prints a
warning and exits 0: set-up must not fail because an optimisation could not be built. `--strict` (what
`make test` runs) exits 1 when the tools are all there and the compilation itself fails: that is a bug in
the code (mypyc rejects what the interpreter accepts), which would otherwise go unseen while every test
runs the pure-Python fallback.

`hatch_build.py` calls `compile_native` when `pip install .` builds a wheel: the same modules, compiled
the same way, are shipped inside the package (`adopter/_compiled/`) with the same manifest.
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
COMPILED_GLOBS = ("adopter/analysis/*.py", "adopter/analysis/*/*.py", "adopter/engine/*.py")
COMPILED_FILES = ("adopter/positions.py", "adopter/dsl/types.py")
# Modules of those folders left interpreted: `engine/loading` and `engine/rule_docs` read data files
# at start-up only; cross-file reach (`analysis/crossfile/reach` and the parts split out of it) waits on
# jedi (untyped, in its own thread) and reads other files with `ast`: compiling them buys nothing.
EXCLUDED = frozenset({
    "adopter/engine/loading.py", "adopter/engine/rule_docs.py",
    "adopter/analysis/parse/read_input.py",  # counts references (sys.getrefcount): kept as the interpreter runs it
    *(f"adopter/analysis/crossfile/{name}.py"
      for name in ("reach", "jedi_lookup", "ast_files", "evaluator", "init_source", "summary")),
})


def sources(server: Path = SERVER) -> list[str]:
    """The source files to compile, relative to `server` (the folder holding `adopter/`), sorted."""
    found: set[str] = set(COMPILED_FILES)
    for pattern in COMPILED_GLOBS:
        found.update(p.relative_to(server).as_posix() for p in server.glob(pattern) if p.name != "__init__.py")
    return sorted(found - EXCLUDED)


def _mypy_version() -> str | None:
    try:
        from mypy.version import __version__
    except ImportError:
        return None
    return str(__version__)


def fingerprint(files: list[str], server: Path = SERVER) -> dict[str, object]:
    """What the compiled output depends on: interpreter, mypy version and every source's hash."""
    return {
        "python": sysconfig.get_config_var("EXT_SUFFIX"),
        "mypy": _mypy_version(),
        "sources": {f: hashlib.sha256((server / f).read_bytes()).hexdigest() for f in files},
    }


def current(out: Path, server: Path = SERVER, *, any_mypy: bool = False) -> bool:
    """Whether `out` holds a build of exactly these sources for this interpreter (and this mypy, unless
    `any_mypy`: the compiled code does not need mypy at run time, only a rebuild would differ)."""
    files = sources(server)
    want = fingerprint(files, server)
    try:
        have = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    keys = [k for k in want if not (any_mypy and k == "mypy")]
    return isinstance(have, dict) and all(have.get(k) == want[k] for k in keys) and bool(have.get("modules"))


def _module_name(path: Path, root: Path) -> str:
    """`adopter/analysis/flow/forward.cpython-311-x86_64-linux-gnu.so` -> `adopter.analysis.flow.forward`."""
    rel = path.relative_to(root)
    return ".".join((*rel.parts[:-1], rel.name.split(".")[0]))


def compile_native(out: Path, server: Path = SERVER) -> str | None:
    """Compile the sources under `server` into `out` (replaced only on success, with its manifest).

    Returns None on success, else why it could not (mypy or setuptools missing, no compiler, mypyc's
    last lines of output). Never raises for a failed compilation; `out` is then left as it was.
    """
    files = sources(server)
    if _mypy_version() is None:
        return "mypy is not installed"
    try:
        import setuptools  # noqa: F401  (mypyc builds its extensions with setuptools)
    except ImportError:
        return "setuptools is not installed"
    with tempfile.TemporaryDirectory(prefix="adopter-native-") as tmp:
        work = Path(tmp)
        # A copy of the package: mypyc writes its extension modules beside the sources it compiles.
        shutil.copytree(server / "adopter", work / "adopter", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        want = fingerprint(files, work)  # the bytes compiled, even if the tree changes meanwhile
        # `python -m mypyc` rather than the `mypyc` script: in pip's isolated build environment the
        # scripts are not beside the interpreter, and this is the interpreter the modules are for.
        # --ignore-missing-imports as pyproject's [tool.mypy] says (its other settings name a target version):
        # modules left interpreted are still type-checked through imports, and analysis/crossfile.py's
        # `import jedi` (no types shipped) failed the whole build without it.
        command = [sys.executable, "-m", "mypyc", "--ignore-missing-imports", *files]
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            log = (done.stdout + done.stderr).strip().splitlines()
            return "mypyc failed:\n" + "\n".join(f"  {line}" for line in log[-15:])
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        modules: dict[str, str] = {}
        staging = out.with_name(out.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        for so in sorted(work.rglob(f"*{suffix}")):
            if "build" in so.relative_to(work).parts[:1]:
                continue  # mypyc's intermediate build folder
            target = staging / so.relative_to(work)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(so, target)
            modules[_module_name(so, work)] = so.relative_to(work).as_posix()
        expected = {f[: -len(".py")].replace("/", ".") for f in files}
        if not expected <= modules.keys():
            shutil.rmtree(staging, ignore_errors=True)
            return f"mypyc did not produce {sorted(expected - modules.keys())}"
        (staging / "manifest.json").write_text(json.dumps({**want, "modules": modules}, indent=1), encoding="utf-8")
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
    return None


def toolchain_missing() -> str | None:
    """Why this machine cannot compile at all (no mypy, setuptools, C compiler or Python headers), else None."""
    if _mypy_version() is None:
        return "mypy is not installed"
    try:
        import setuptools  # noqa: F401
    except ImportError:
        return "setuptools is not installed"
    compiler = str(sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers (Python.h)"
    return None


def build(force: bool, strict: bool = False) -> int:
    """`make native`: compile into build/native unless it is current; warn (exit 0) on failure, or with
    `strict` exit 1 when the toolchain is complete and the compilation failed."""
    files = sources()
    if not force and current(OUT):
        print(f"native build: up to date ({len(files)} modules in {OUT.relative_to(ROOT)})")
        return 0
    print(f"native build: compiling {len(files)} modules with mypyc (about a minute) ...", flush=True)
    failed = compile_native(OUT)
    if failed is not None:
        if strict and toolchain_missing() is None:
            print(f"native build: FAILED with a complete toolchain ({failed})", file=sys.stderr)
            return 1
        print(f"native build: skipped ({failed}); the pure-Python analysis is used", file=sys.stderr)
        return 0
    print(f"native build: {len(files)} modules in {OUT.relative_to(ROOT)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="rebuild even when the manifest is current")
    parser.add_argument("--clean", action="store_true", help="remove the native build and exit")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when mypyc fails although mypy, setuptools, a C compiler and the headers are there")
    args = parser.parse_args()
    if args.clean:
        shutil.rmtree(OUT, ignore_errors=True)
        print(f"removed {OUT.relative_to(ROOT)}")
        return 0
    try:
        return build(args.force, args.strict)
    except Exception as exc:  # never fail the set-up for an optimisation
        if args.strict and toolchain_missing() is None:
            print(f"native build: FAILED ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 1
        print(f"native build: FAILED ({type(exc).__name__}: {exc}); the pure-Python analysis is used",
              file=sys.stderr)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
