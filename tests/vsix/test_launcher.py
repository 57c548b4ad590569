"""client/python/launch.py: a Python without the server's packages gets exit status 4 and one JSON line
naming them, before any LSP traffic (the extension's probe reads it instead of crash-looping)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "client" / "python" / "launch.py"


def launch(tmp_path: Path, *args: str, site: bool) -> subprocess.CompletedProcess[str]:
    """The launcher with an extension root that has the server but no bundled packages; `-S` hides the
    interpreter's own site-packages (a bare Python)."""
    root = tmp_path / "ext"
    (root / "server").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ADOPTER_EXTENSION_ROOT": str(root), "PYTHONPATH": ""}
    flags = [] if site else ["-S"]
    return subprocess.run([sys.executable, *flags, str(LAUNCHER), *args], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=120)


def test_probe_names_each_missing_package_and_exits_4(tmp_path: Path) -> None:
    result = launch(tmp_path, "--probe", site=False)
    assert result.returncode == 4, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["adopter"] == "missing"
    assert report["python"] == list(sys.version_info[:3]) and report["executable"] == sys.executable
    packages = [m["package"] for m in report["missing"]]
    assert {"tree-sitter", "tree-sitter-python"} <= set(packages)
    assert all("Error" in m["error"] for m in report["missing"])


def test_probe_is_ready_when_everything_imports(tmp_path: Path) -> None:
    result = launch(tmp_path, "--probe", site=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["adopter"] == "ready"


def test_the_server_never_starts_without_them(tmp_path: Path) -> None:
    result = launch(tmp_path, "lsp", site=False)
    assert result.returncode == 4
    assert result.stdout == ""  # nothing on the LSP channel
    first = json.loads(result.stderr.splitlines()[0])
    assert first["adopter"] == "missing"
    assert "pip install tree-sitter tree-sitter-python" in result.stderr
