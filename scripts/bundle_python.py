"""Fill bundled/ with the Python packages the VS Code extension carries.

    python3 scripts/bundle_python.py                       # pure-Python dependencies only (universal .vsix)
    python3 scripts/bundle_python.py --target linux-arm64  # plus that platform's compiled wheels

`bundled/libs` gets the `[pure]` packages of scripts/extension-requirements.txt (py3-none-any wheels,
installed once for every Python). With `--target`, `bundled/native/cp3XY/` gets the `[native]` packages'
binary wheels of that platform for each supported CPython (3.10-3.14), fetched with
`pip install --target … --platform … --python-version … --only-binary=:all:` (pip's download with an
install layout), so any platform's .vsix can be built on any machine. The layout is that of Microsoft's
python-tools extension template (`bundled/libs` on `sys.path`, see ruff-vscode), with one folder per
CPython for the compiled packages, because a .vsix must work with whichever Python the user has.
client/python/launch.py puts `bundled/native/cp3XY` and `bundled/libs` on `sys.path`.
"""

from __future__ import annotations

import argparse
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "bundled"
REQUIREMENTS = ROOT / "scripts" / "extension-requirements.txt"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")


def _manylinux(arch: str) -> tuple[str, ...]:
    # VS Code 1.86+ needs glibc 2.28 on Linux, so every manylinux wheel up to glibc 2.28 runs where it
    # does (pip matches --platform tags exactly for the PEP 600 form, so each is listed).
    return (*(f"manylinux_2_{minor}_{arch}" for minor in range(28, 4, -1)), f"manylinux2014_{arch}",
            f"manylinux2010_{arch}", f"manylinux1_{arch}")


# vsce target -> pip platform tags. pip expands a macOS tag to every older macOS of that architecture
# (and universal2), so the newest one is enough there.
PLATFORMS: dict[str, tuple[str, ...]] = {
    "linux-x64": _manylinux("x86_64"),
    "linux-arm64": _manylinux("aarch64"),
    "alpine-x64": ("musllinux_1_2_x86_64", "musllinux_1_1_x86_64"),
    "darwin-x64": ("macosx_15_0_x86_64",),
    "darwin-arm64": ("macosx_15_0_arm64",),
    "win32-x64": ("win_amd64",),
    "win32-arm64": ("win_arm64",),
}

_MARKER = re.compile(r'^python_version\s*(==|!=|>=|<=|<|>)\s*["\'](\d+)\.(\d+)["\']$')


def host_target() -> str:
    """The vsce target of this machine (what `npm run package` builds)."""
    system, machine = platform.system(), platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    if arch is None:
        raise SystemExit(f"bundle_python: no .vsix target for a {machine} machine; use the universal one")
    if system == "Linux":
        musl = "musl" in (platform.libc_ver()[0] or "") or any(Path("/lib").glob("ld-musl-*"))
        if musl and arch != "x64":
            raise SystemExit("bundle_python: VS Code has no Alpine target for arm64; use the universal one")
        return "alpine-x64" if musl else f"linux-{arch}"
    if system == "Darwin":
        return f"darwin-{arch}"
    if system == "Windows":
        return f"win32-{arch}"
    raise SystemExit(f"bundle_python: no .vsix target for {system}; use the universal one")


def applies(requirement: str, version: str) -> bool:
    """Whether a `pkg==x; python_version <op> "3.N"` line applies to Python `version` (no marker: always)."""
    if ";" not in requirement:
        return True
    marker = requirement.split(";", 1)[1].strip()
    m = _MARKER.match(marker)
    if m is None:
        raise ValueError(f"{REQUIREMENTS}: only `python_version <op> \"3.N\"` markers are supported: {marker!r}")
    op, want = m.group(1), (int(m.group(2)), int(m.group(3)))
    have = tuple(int(part) for part in version.split("."))
    return {"==": have == want, "!=": have != want, ">=": have >= want, "<=": have <= want,
            "<": have < want, ">": have > want}[op]


def sections(text: str) -> dict[str, list[str]]:
    """`[name]` sections of the requirements file, each a list of requirement lines."""
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


def declared_range(requirement: str) -> str | None:
    """pyproject's own requirement for a pinned package (`lark==1.3.1` -> `lark>=1.2,<2`), if it has one:
    what a platform gets when the pin has no wheel for it."""
    name = re.split(r"[=<>!~;\s\[]", requirement, maxsplit=1)[0]
    key = re.sub(r"[-_.]+", "-", name).lower()
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^dependencies\s*=\s*\[(.*?)^\]", text, re.S | re.M)
    for spec in re.findall(r'"([^"]+)"', block.group(1) if block else ""):
        spec_name = re.split(r"[=<>!~;\s\[]", spec, maxsplit=1)[0]
        if re.sub(r"[-_.]+", "-", spec_name).lower() == key and spec != requirement:
            return spec
    return None


def pip(*args: str) -> int:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
           "--only-binary=:all:", "--ignore-requires-python", "--no-compile", *args]
    return subprocess.call(cmd)


def bundle(target: str | None) -> list[str]:
    """Fill bundled/; returns what could not be bundled (a package without a wheel for a Python)."""
    reqs = sections(REQUIREMENTS.read_text(encoding="utf-8"))
    shutil.rmtree(BUNDLED, ignore_errors=True)
    libs = BUNDLED / "libs"
    if pip("--target", str(libs), "--implementation", "py", "--python-version", PYTHONS[0], *reqs["pure"]):
        raise SystemExit("bundle_python: installing the pure-Python packages failed")
    # What the extension's Install button pip-installs into its private environment when the Python lacks
    # the compiled packages (the universal .vsix): the [native] pins, markers kept (pip evaluates them).
    (BUNDLED / "requirements.txt").write_text(
        "# The compiled packages of the Adopter server (written by scripts/bundle_python.py)\n"
        + "".join(f"{line}\n" for line in reqs["native"]), encoding="utf-8")
    missing: list[str] = []
    if target is not None:
        platforms = [a for tag in PLATFORMS[target] for a in ("--platform", tag)]
        for version in PYTHONS:
            folder = BUNDLED / "native" / f"cp{version.replace('.', '')}"
            wanted = [r.split(";", 1)[0].strip() for r in reqs["native"] if applies(r, version)]
            if pip("--target", str(folder), "--implementation", "cp", "--python-version", version, *platforms,
                   *wanted):
                # One at a time, to keep what exists: the launcher names what is missing at run time.
                shutil.rmtree(folder, ignore_errors=True)
                for requirement in wanted:
                    options = ("--target", str(folder), "--implementation", "cp", "--python-version", version,
                               *platforms)
                    if not pip(*options, requirement):
                        continue
                    fallback = declared_range(requirement)
                    if fallback is not None and not pip(*options, fallback):
                        print(f"bundle_python: no {target} wheel of {requirement} for Python {version}; "
                              f"bundled the newest that pyproject allows ({fallback})", file=sys.stderr)
                    else:
                        missing.append(f"{requirement} for Python {version}")
    for junk in BUNDLED.rglob("__pycache__"):
        shutil.rmtree(junk, ignore_errors=True)
    for line in missing:
        print(f"bundle_python: no {target} wheel of {line}; that Python gets the install prompt", file=sys.stderr)
    return missing


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--target", help="also bundle compiled wheels for this platform ('host': this machine's)",
                        choices=[*sorted(PLATFORMS), "host"])
    target = parser.parse_args().target
    bundle(host_target() if target == "host" else target)


if __name__ == "__main__":
    main()
