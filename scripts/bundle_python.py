"""Fill bundled/ with the Python packages the VS Code extension carries (the python-tools template's way).

    python3 scripts/bundle_python.py                       # pure-Python dependencies only (universal .vsix)
    python3 scripts/bundle_python.py --target linux-x64    # plus compiled wheels and the native analysis

`bundled/libs` gets the `[pure]` packages of scripts/extension-requirements.txt; with `--target`,
`bundled/native/cp3XY/` gets the `[native]` packages for each supported Python, and `build/native/` (the
mypyc analysis, when current) is kept for the .vsix. The server is launched by client/python/launch.py,
which puts these folders on `sys.path` in front of the interpreter's own packages.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "bundled"
REQUIREMENTS = ROOT / "scripts" / "extension-requirements.txt"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
# vsce target -> pip platform tags (newest first is not required: pip takes any listed).
PLATFORMS: dict[str, tuple[str, ...]] = {
    "linux-x64": ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "manylinux1_x86_64",
                  "manylinux_2_5_x86_64"),
    "linux-arm64": ("manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64"),
    "darwin-x64": ("macosx_10_9_x86_64", "macosx_10_13_x86_64", "macosx_11_0_x86_64", "macosx_10_9_universal2"),
    "darwin-arm64": ("macosx_11_0_arm64", "macosx_10_9_universal2", "macosx_10_13_universal2"),
    "win32-x64": ("win_amd64",),
}


def sections(text: str) -> dict[str, list[str]]:
    """`[name]` sections of the requirements file, each a list of `package==version` lines."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = out.setdefault(line[1:-1], [])
        elif current is None:
            raise ValueError(f"{REQUIREMENTS}: {line!r} is outside a [section]")
        else:
            current.append(line)
    return out


def pip(*args: str) -> int:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
           "--only-binary=:all:", "--ignore-requires-python", *args]
    return subprocess.call(cmd)


def bundle(target: str | None) -> None:
    reqs = sections(REQUIREMENTS.read_text(encoding="utf-8"))
    shutil.rmtree(BUNDLED, ignore_errors=True)
    libs = BUNDLED / "libs"
    if pip("--target", str(libs), "--implementation", "py", "--python-version", PYTHONS[0], *reqs["pure"]):
        raise SystemExit("bundle_python: installing the pure-Python packages failed")
    if target is None:
        return
    platforms = [a for tag in PLATFORMS[target] for a in ("--platform", tag)]
    for version in PYTHONS:
        folder = BUNDLED / "native" / f"cp{version.replace('.', '')}"
        for requirement in reqs["native"]:
            # A package without a wheel for this Python (pyyaml-ft before 3.13) is skipped, not fatal.
            if pip("--target", str(folder), "--implementation", "cp", "--python-version", version, *platforms,
                   requirement):
                print(f"bundle_python: no {target} wheel of {requirement} for Python {version}; skipped",
                      file=sys.stderr)
    for junk in BUNDLED.rglob("__pycache__"):
        shutil.rmtree(junk, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=sorted(PLATFORMS), help="also bundle compiled wheels for this platform")
    bundle(parser.parse_args().target)


if __name__ == "__main__":
    main()
