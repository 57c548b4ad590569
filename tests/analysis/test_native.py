"""The optional native (mypyc) build: used only when current, and identical in output to pure Python."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adopter import _native

# Prints one digest line per corpus file: the analysis and the findings of every bundled rule, and what a session
# decides of them (fixable or why not, problems) where every kernel package is present: the session's file-wide
# checks (`engine.called_elsewhere`) run only there, and a compiled one once failed where the pure one did not.
_DIGEST = """
import hashlib, sys
from adopter import _native
from adopter.analysis import analyse
from adopter.corpus import modeling_files
from adopter.engine import Environment, check, detect_environment, load_rules
from adopter.session import RuleContext, Session
rules = load_rules().rules
env = detect_environment("cpu")
every = Environment(device="cuda", torch_version="2.13.0",
                    packages=frozenset({"liger_kernel", "apex", "flash_attn", "xformers", "transformer_engine"}))
print("native" if _native.state["active"] else "pure")
for f in modeling_files()[:: int(sys.argv[1])]:
    mf = analyse(f.text, f.member)
    found = check(mf, rules, env)
    decided = Session(RuleContext(tuple(rules), (), every)).analysed(f.text, f.member)
    fixes = [(x.rule_id, x.span, x.fixable, x.no_fix_reason) for x in decided.findings]
    print(f.name, hashlib.sha256(repr((mf, found.findings, found.problems, fixes, decided.problems)).encode()).hexdigest())
"""


def _run(native: bool, step: int) -> list[str]:
    env = {**os.environ, "ADOPTER_NATIVE": "1" if native else "0"}
    done = subprocess.run([sys.executable, "-c", _DIGEST, str(step)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


@pytest.mark.corpus
@pytest.mark.slow
def test_native_build_gives_the_same_analysis_and_findings_as_pure_python() -> None:
    if not (_native.BUILD / "manifest.json").exists():
        pytest.skip("no native build (scripts/build_native.py); nothing to compare")
    native, pure = _run(True, 8), _run(False, 8)
    if native[0] != "native":
        pytest.skip("the native build is not current for these sources (run scripts/build_native.py)")
    assert pure[0] == "pure"
    assert len(native) > 20 and native[1:] == pure[1:]


def test_a_changed_source_disables_the_build() -> None:
    source = Path(_native.__file__).resolve().parent / "positions.py"
    rel = str(source.relative_to(source.parents[1]))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    import sysconfig

    manifest = {"python": sysconfig.get_config_var("EXT_SUFFIX"), "sources": {rel: digest}}
    assert _native._current(manifest) is None
    assert "changed" in str(_native._current({**manifest, "sources": {rel: "0" * 64}}))
    assert "another Python" in str(_native._current({**manifest, "python": ".cpython-27.so"}))
    assert "missing" in str(_native._current({**manifest, "sources": {"adopter/nope.py": digest}}))


def test_disabled_by_environment_variable() -> None:
    env = {**os.environ, "ADOPTER_NATIVE": "0"}
    code = "import adopter, adopter._native as n, adopter.analysis.flow.forward as f; print(n.state['active'], f.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    active, path = out.stdout.split()
    assert active == "False" and path.endswith("forward.py")


def test_an_installed_wheel_serves_its_own_compiled_modules(tmp_path: Path) -> None:
    """The layout `hatch_build.py` gives a wheel: `adopter/_compiled/` beside the sources, no checkout."""
    import shutil

    build = _native.BUILD
    if not (build / "manifest.json").exists():
        pytest.skip("no native build (scripts/build_native.py) to lay out as a wheel")
    site = tmp_path / "site"
    shutil.copytree(Path(_native.__file__).resolve().parent, site / "adopter",
                    ignore=shutil.ignore_patterns("__pycache__", "_compiled"))
    shutil.copytree(build, site / "adopter" / "_compiled")
    code = ("import adopter, adopter._native as n, adopter.analysis.flow.forward as f; "
            "print(n.state['active'], n.build_folder() == n.WHEEL_BUILD, f.__file__)")
    env = {**os.environ, "PYTHONPATH": str(site), "ADOPTER_NATIVE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    active, wheel_folder, path = out.stdout.split()
    assert wheel_folder == "True"
    if active == "False":
        pytest.skip("the native build is not current for these sources (run scripts/build_native.py)")
    assert path.startswith(str(site / "adopter" / "_compiled"))
    # An edited installed source turns the wheel's build off, as in a checkout.
    flow = site / "adopter" / "analysis" / "flow" / "forward.py"
    flow.write_text(flow.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    active, _, path = out.stdout.split()
    assert active == "False" and path.endswith("forward.py")
