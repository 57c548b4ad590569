"""The wheel build hook (hatch_build.py): when it ships the compiled analysis, and that every way it
cannot is a warning and a pure wheel, never a failed build. Hatchling itself is not needed: the hook
is loaded against a stand-in for its one base class (building a real wheel takes minutes; the README's
install paragraph and docs/benchmarks.md record that check)."""

from __future__ import annotations

import importlib.util
import pickle
import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


class _App:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def display_info(self, message: str = "") -> None:
        pass

    def display_warning(self, message: str = "") -> None:
        self.warnings.append(message)


class _BuildHookInterface:
    """What the hook uses of hatchling's BuildHookInterface."""

    def __init__(self, root: str, target_name: str = "wheel") -> None:
        self.root = root
        self.target_name = target_name
        self.app = _App()
        self.metadata = types.SimpleNamespace(core=types.SimpleNamespace(dependencies=["lark>=1.2,<2"]))


@pytest.fixture
def hook_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    names = ["hatchling", "hatchling.builders", "hatchling.builders.hooks", "hatchling.builders.hooks.plugin",
             "hatchling.builders.hooks.plugin.interface"]
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules[names[-1]].BuildHookInterface = _BuildHookInterface  # type: ignore[attr-defined]
    spec = importlib.util.spec_from_file_location("adopter_hatch_build", REPO / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delenv("ADOPTER_NATIVE_BUILD", raising=False)
    monkeypatch.setattr(module, "compiler_available", lambda: True)
    return module


def _tree(tmp_path: Path, build_native_py: str | None = None) -> Path:
    """A source tree to build: the package, and `scripts/build_native.py` (the real one unless given)."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "server" / "adopter", root / "server" / "adopter",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for data in ("rules", "dsl-grammar"):
        shutil.copytree(REPO / data, root / data)
    (root / "scripts").mkdir()
    if build_native_py is None:
        shutil.copy(REPO / "scripts" / "build_native.py", root / "scripts" / "build_native.py")
    else:
        (root / "scripts" / "build_native.py").write_text(build_native_py, encoding="utf-8")
    return root


def _build_data() -> dict[str, Any]:
    return {"force_include": {}, "pure_python": True, "infer_tag": False}


SEED = "adopter/_data/rules-seed.pickle"


def _seeded(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the rule seed, after checking the seed was written and holds every bundled rule."""
    from adopter.dsl.cache import Seed

    sources = [k for k, v in data["force_include"].items() if v == SEED]
    assert len(sources) == 1
    seed = pickle.loads(Path(sources[0]).read_bytes())
    assert isinstance(seed, Seed) and sorted(seed.entries) == sorted(p.name for p in (REPO / "rules").glob("*.adl"))
    return {**data, "force_include": {k: v for k, v in data["force_include"].items() if v != SEED}}


def test_a_current_checkout_build_is_shipped_without_compiling(hook_module: Any, tmp_path: Path) -> None:
    root = _tree(tmp_path)
    native = hook_module._build_native(root)
    server = root / "server"
    out = root / "build" / "native"
    out.mkdir(parents=True)
    manifest = {**native.fingerprint(native.sources(server), server), "mypy": "another version",
                "modules": {"adopter.positions": "adopter/positions.so"}}
    (out / "manifest.json").write_text(__import__("json").dumps(manifest), encoding="utf-8")
    hook = hook_module.CustomBuildHook(str(root))
    data = _build_data()
    hook.initialize("standard", data)
    assert _seeded(data) == {"force_include": {str(out): "adopter/_compiled"}, "pure_python": False, "infer_tag": True}
    assert hook.app.warnings == []
    # A source edited since: not current any more, so the hook compiles (here: the stand-in fails).
    (server / "adopter" / "positions.py").write_text("# edited\n", encoding="utf-8")
    assert not native.current(out, server, any_mypy=True)


def test_a_failed_compilation_is_a_warning_and_a_pure_wheel(hook_module: Any, tmp_path: Path) -> None:
    failing = ("def current(out, server, any_mypy=False):\n    return False\n"
               "def compile_native(out, server):\n    return 'mypyc failed: error: no compiler'\n")
    hook = hook_module.CustomBuildHook(str(_tree(tmp_path, failing)))
    data = _build_data()
    hook.initialize("standard", data)
    assert _seeded(data) == _build_data()  # the rule seed ships with the pure wheel too
    assert len(hook.app.warnings) == 1 and "mypyc failed" in hook.app.warnings[0]
    hook.finalize("standard", data, "")  # removes its temporary folder, and does not raise


def test_a_crashing_build_script_is_a_warning_too(hook_module: Any, tmp_path: Path) -> None:
    hook = hook_module.CustomBuildHook(str(_tree(tmp_path, "raise RuntimeError('broken script')\n")))
    data = _build_data()
    hook.initialize("standard", data)
    assert _seeded(data) == _build_data() and "broken script" in hook.app.warnings[0]


def test_editable_disabled_and_compiler_less_builds_stay_pure(hook_module: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "nothing-to-build"  # the hook must not even look at it
    hook = hook_module.CustomBuildHook(str(root))
    data = _build_data()
    hook.initialize("editable", data)
    assert data == _build_data() and hook.app.warnings == []
    assert hook.dependencies() == ["mypy>=1.10", "setuptools>=61", "lark>=1.2,<2"]

    # Pure wheels: Lark alone in the build environment, for the rule seed.
    hook = hook_module.CustomBuildHook(str(_tree(tmp_path)))
    monkeypatch.setenv("ADOPTER_NATIVE_BUILD", "0")
    assert hook.dependencies() == ["lark>=1.2,<2"]
    hook.initialize("standard", data := _build_data())
    assert _seeded(data) == _build_data() and "ADOPTER_NATIVE_BUILD=0" in hook.app.warnings[-1]

    monkeypatch.delenv("ADOPTER_NATIVE_BUILD")
    monkeypatch.setattr(hook_module, "compiler_available", lambda: False)
    assert hook.dependencies() == ["lark>=1.2,<2"]
    hook.initialize("standard", data := _build_data())
    assert _seeded(data) == _build_data() and "no C compiler" in hook.app.warnings[-1]


def test_a_seed_that_cannot_be_written_is_a_warning(hook_module: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    (root / "rules" / "f04-softmax.adl").write_text("rule broken {", encoding="utf-8")
    monkeypatch.setenv("ADOPTER_NATIVE_BUILD", "0")
    hook = hook_module.CustomBuildHook(str(root))
    hook.initialize("standard", data := _build_data())
    assert data == _build_data() and "seed was not written" in hook.app.warnings[0]


def test_requirements_of_an_editable_build_ask_for_no_compiler_tools(hook_module: Any) -> None:
    hook = hook_module.CustomBuildHook("unused")

    def get_requires_for_build_editable() -> list[str]:  # hatchling's PEP 660 entry point's name
        return list(hook.dependencies())

    def get_requires_for_build_wheel() -> list[str]:
        return list(hook.dependencies())

    assert get_requires_for_build_editable() == []
    assert "mypy>=1.10" in get_requires_for_build_wheel()
