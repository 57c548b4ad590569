"""Hatch build hook: `pip install .` ships the mypyc-compiled analysis when it can be built.

A regular wheel gets the modules `scripts/build_native.py` compiles (the static analysis and the rule
matcher), with their manifest, in `adopter/_compiled/`; `adopter._native` serves them while every
listed source is byte-identical to the installed `.py` files. When they cannot be built (no C compiler,
no mypy or setuptools in the build environment, a mypyc error, `ADOPTER_NATIVE_BUILD=0`) the wheel is
the pure-Python one and the build prints a warning: an optimisation never fails an install.

Every regular wheel also carries the bundled rules already parsed (`adopter/_data/rules-seed.pickle`,
see `adopter.dsl.cache`), so the first start after installing does not parse them; Lark in the build
environment is all that takes.

Editable installs (`pip install -e .`, what `make setup` does) are left alone: they use the checkout's
`build/native/` from `make native`. A current `build/native/` is also reused for a regular wheel built
from the checkout, instead of compiling again (one to three CPU minutes).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# What the compilation needs in the build environment: mypy brings mypyc, mypyc builds with setuptools,
# and the project's own dependencies (tree-sitter, lark, ...) let it type the code exactly as
# `make native` does in the development environment. Asked for only when a compiler is there, so a
# machine without one downloads nothing more than hatchling.
COMPILE_REQUIREMENTS = ["mypy>=1.10", "setuptools>=61"]
WHEEL_FOLDER = "adopter/_compiled"
SEED_FILE = "adopter/_data/rules-seed.pickle"  # adopter.dsl.cache.SEED_NAME beside adopter/_data/rules


def _disabled() -> bool:
    return os.environ.get("ADOPTER_NATIVE_BUILD", "1").strip().lower() in ("0", "false", "no", "off")


def compiler_available() -> bool:
    """A C compiler and the Python headers, as far as can be told without running a build."""
    if os.name == "nt":  # MSVC is found by setuptools itself; try, and fall back if it is missing
        return True
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").is_file():
        return False
    configured = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()
    return bool(configured) and shutil.which(configured[0]) is not None


def _asked_for_editable() -> bool:
    """Whether hatchling is collecting the requirements of an editable build (which compiles nothing).

    Hatchling asks hooks for dependencies without saying which build they are for; its PEP 660 entry
    point is on the stack then. Missing it only costs downloading mypy into the build environment.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "get_requires_for_build_editable":
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _build_native(root: Path) -> ModuleType:
    """`scripts/build_native.py` of the tree being built (the same code `make native` runs)."""
    spec = importlib.util.spec_from_file_location("adopter_build_native", root / "scripts" / "build_native.py")
    if spec is None or spec.loader is None:
        raise ImportError("scripts/build_native.py is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CustomBuildHook(BuildHookInterface):
    """Adds the compiled modules to a regular wheel, or warns and leaves it pure Python."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        if _asked_for_editable():
            return []
        if _disabled() or not compiler_available():
            # The rule seed is written by the DSL's parser: Lark (pure Python) is all it needs.
            return [d for d in self.metadata.core.dependencies if d.startswith("lark")]
        return [*COMPILE_REQUIREMENTS, *self.metadata.core.dependencies]

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        self._tmp: str | None = None
        if self.target_name != "wheel" or version != "standard":
            return
        self._seed(build_data)
        if _disabled():
            self._warn("ADOPTER_NATIVE_BUILD=0")
            return
        if not compiler_available():
            self._warn("no C compiler or Python headers found")
            return
        try:
            folder = self._compiled()
        except Exception as exc:  # never fail an install for an optimisation
            self._warn(f"{type(exc).__name__}: {exc}")
            return
        if folder is None:
            return
        build_data["force_include"][str(folder)] = WHEEL_FOLDER
        build_data["pure_python"] = False
        build_data["infer_tag"] = True  # cpXY-cpXY-platform: the extension modules are for this Python

    def _seed(self, build_data: dict[str, Any]) -> None:
        """Ship the bundled rules parsed (`adopter.dsl.cache`), so that the first start after installing
        does not parse them; written by the tree's own code, in a child process (pure Python)."""
        root = Path(self.root)
        self._tmp = self._tmp or tempfile.mkdtemp(prefix="adopter-wheel-")
        out = Path(self._tmp) / SEED_FILE.rsplit("/", 1)[1]
        code = "import sys; from pathlib import Path; from adopter.dsl.cache import write_seed; " \
               "print(write_seed(Path(sys.argv[1]), Path(sys.argv[2])))"
        env = {**os.environ, "PYTHONPATH": str(root / "server"), "ADOPTER_NATIVE": "0"}
        done = subprocess.run([sys.executable, "-c", code, str(root / "rules"), str(out)], env=env, cwd=root,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:  # never fail an install for an optimisation: the first start parses
            self.app.display_warning(f"adopter: the parsed-rule seed was not written: {done.stderr.strip()[-500:]}")
            return
        build_data["force_include"][str(out)] = SEED_FILE
        self.app.display_info(f"adopter: {done.stdout.strip()} bundled rule files parsed into {SEED_FILE}")

    def _compiled(self) -> Path | None:
        """A folder holding a current build for this interpreter, or None (after a warning)."""
        root = Path(self.root)
        native = _build_native(root)
        server = root / "server"
        checkout_build = root / "build" / "native"
        if native.current(checkout_build, server, any_mypy=True):
            self.app.display_info(f"adopter: the compiled analysis from {checkout_build} (current)")
            return checkout_build
        self.app.display_info("adopter: compiling the analysis with mypyc (one to three CPU minutes) ...")
        self._tmp = self._tmp or tempfile.mkdtemp(prefix="adopter-wheel-")
        out = Path(self._tmp) / "native"
        failed = native.compile_native(out, server)
        if failed is not None:
            self._warn(failed)
            return None
        return out

    def _warn(self, why: str) -> None:
        message = f"adopter: the compiled analysis was not built ({why}); the wheel is pure Python (slower analysis)"
        self.app.display_warning(message)  # pip shows a backend's output with -v; `adopter --version` tells too

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_tmp", None):
            shutil.rmtree(self._tmp or "", ignore_errors=True)
