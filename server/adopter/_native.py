"""Use the native (mypyc-compiled) analysis and matcher when a current build exists.

Two places hold a build of `adopter.analysis`, `adopter.engine`, `adopter.positions` and
`adopter.dsl.types`, each with a manifest of the sources' SHA-256 hashes: `adopter/_compiled/` inside an
installed wheel (`pip install .` compiles it, see `hatch_build.py`), and `build/native/` of a source
checkout (`scripts/build_native.py`, `make native`; what an editable install uses). `install()` puts a
finder in front of the import system that serves those modules from the build, but only when every
listed source is byte-identical to what was compiled and the interpreter matches; otherwise (no build,
an edited source, another Python, `ADOPTER_NATIVE=0`) nothing changes and the `.py` files are used.
The compiled modules behave the same (a test compares their output with the pure ones on real models).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import sysconfig
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # server/ in a checkout, site-packages when installed
WHEEL_BUILD = _PACKAGE_ROOT / "adopter" / "_compiled"  # shipped in a wheel by hatch_build.py
BUILD = _PACKAGE_ROOT.parent / "build" / "native"  # a checkout's `make native`


def build_folder() -> Path:
    """Where this installation's build is, when it has one: the wheel's own, else the checkout's."""
    return WHEEL_BUILD if (WHEEL_BUILD / "manifest.json").is_file() else BUILD

state: dict[str, object] = {"active": False, "reason": "not checked"}


def describe() -> str:
    """One line for `adopter --version`: which analysis this process runs, and why."""
    return "compiled analysis (mypyc)" if state["active"] else f"pure-Python analysis: {state['reason']}"


class _NativeFinder:
    """Finds the compiled modules of one native build (and mypyc's shared runtime module).

    A meta path finder only needs `find_spec`; not deriving from `importlib.abc.MetaPathFinder` spares
    every start importing `importlib.abc` (and `importlib.resources` with it), ~20 ms.
    """

    def __init__(self, modules: dict[str, Path]) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        location = self.modules.get(fullname)
        if location is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(location))
        return importlib.util.spec_from_file_location(fullname, location, loader=loader)


def _current(manifest: dict[str, object]) -> str | None:
    """None when the build matches this interpreter and these sources, else why it does not."""
    if manifest.get("python") != sysconfig.get_config_var("EXT_SUFFIX"):
        return "built for another Python"
    recorded = manifest.get("sources")
    if not isinstance(recorded, dict) or not recorded:
        return "manifest lists no sources"
    for rel, digest in recorded.items():
        try:
            data = (_PACKAGE_ROOT / rel).read_bytes()
        except OSError:
            return f"{rel} is missing"
        if hashlib.sha256(data).hexdigest() != digest:
            return f"{rel} changed since the build"
    return None


def install() -> bool:
    """Serve the compiled modules when a current build exists; returns whether it does. Never raises."""
    if any(isinstance(f, _NativeFinder) for f in sys.meta_path):
        return True
    if os.environ.get("ADOPTER_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        state.update(active=False, reason="disabled by ADOPTER_NATIVE")
        return False
    build = build_folder()
    try:
        manifest = json.loads((build / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state.update(active=False, reason="no native build (built by `pip install .` with a C compiler, "
                                          "or `make native` in a checkout)")
        return False
    try:
        stale = _current(manifest)
        if stale is not None:
            state.update(active=False, reason=f"native build not used: {stale}")
            return False
        modules = {name: build / rel for name, rel in dict(manifest["modules"]).items()}
        if any(name in sys.modules for name in modules):  # too late: pure modules already imported
            state.update(active=False, reason="pure modules were imported first")
            return False
    except Exception as exc:  # a damaged manifest: use the pure modules
        state.update(active=False, reason=f"unreadable native manifest ({type(exc).__name__})")
        return False
    sys.meta_path.insert(0, _NativeFinder(modules))
    state.update(active=True, reason=f"native build in {build}")
    return True
