"""Build the extension's .vsix files: one per platform, and the universal one.

    python3 scripts/package_vsix.py               # this machine's platform (`npm run package`)
    python3 scripts/package_vsix.py all           # every platform (`npm run package:all`)
    python3 scripts/package_vsix.py universal     # pure Python only (`npm run package:universal`)
    python3 scripts/package_vsix.py darwin-arm64 win32-x64 ...

Each platform .vsix (`adopter-<target>-<version>.vsix`, `vsce package --target <target>`) carries the
compiled wheels of its platform for CPython 3.10-3.14 (scripts/bundle_python.py fetches them for any
platform from any machine) and, for this machine's own platform only, the mypyc-compiled analysis of
`build/native/` when `make native` built it (it cannot be cross-compiled). The universal .vsix
(`adopter-<version>.vsix`) carries only the pure-Python packages; with a Python that lacks the compiled
ones the extension offers to install them (client/python/launch.py exits with status 4 and says which).
Every package is checked with scripts/check_vsix.py before it is kept.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bundle_python import PLATFORMS, bundle, host_target
from check_vsix import check_vsix

ROOT = Path(__file__).resolve().parents[1]
IGNORE = ROOT / ".vscodeignore"  # the universal package's contents


def version() -> str:
    return str(json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["version"])


def output_name(target: str | None) -> str:
    return f"adopter-{target}-{version()}.vsix" if target else f"adopter-{version()}.vsix"


def ignore_file(target: str, native_analysis: bool) -> Path:
    """.vscodeignore plus the compiled wheels (and the mypyc build), written under build/."""
    extra = ["!bundled/native/**", *(["!build/native/**"] if native_analysis else [])]
    lines = IGNORE.read_text(encoding="utf-8").splitlines()
    at = lines.index("!bundled/libs/**") + 1
    out = ROOT / "build" / f"vscodeignore-{target}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join([*lines[:at], *extra, *lines[at:]]) + "\n", encoding="utf-8")
    return out


def vsce() -> str:
    found = shutil.which("vsce") or shutil.which("vsce", path=str(ROOT / "node_modules" / ".bin"))
    if found is None:
        raise SystemExit("package_vsix: vsce not found; run `npm ci` first")
    return found


def package(target: str | None) -> Path:
    """Bundle and package one target (None: universal); returns the checked .vsix."""
    missing = bundle(target)
    out = ROOT / output_name(target)
    cmd = [vsce(), "package", "--skip-license", "--out", str(out)]
    if target is not None:
        native = target == host_target() and (ROOT / "build" / "native" / "manifest.json").is_file()
        cmd += ["--target", target, "--ignoreFile", str(ignore_file(target, native))]
        print(f"package_vsix: {target}: compiled wheels for CPython 3.10-3.14"
              + (", the native analysis (build/native)" if native else "")
              + (f"; missing: {', '.join(missing)}" if missing else ""), file=sys.stderr)
    subprocess.run(cmd, cwd=ROOT, check=True)
    found, problems, binaries = check_vsix(str(out))
    if found != target or problems:
        out.unlink()
        raise SystemExit("package_vsix: " + "\n".join([f"{out.name} is for {found}, not {target}", *problems]))
    print(f"package_vsix: {out.name}: {binaries} binaries, all for {target or 'no platform (universal)'}",
          file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["host"],
                        help=f"host (default), all, universal, or any of {', '.join(sorted(PLATFORMS))}")
    args = parser.parse_args()
    targets: list[str | None] = []
    for name in args.targets:
        if name == "all":
            targets += sorted(PLATFORMS)
        elif name == "universal":
            targets.append(None)
        elif name == "host":
            targets.append(host_target())
        elif name in PLATFORMS:
            targets.append(name)
        else:
            parser.error(f"unknown target {name!r}")
    subprocess.run(["node", "esbuild.config.mjs", "--production"], cwd=ROOT, check=True)
    for target in dict.fromkeys(targets):
        package(target)


if __name__ == "__main__":
    main()
