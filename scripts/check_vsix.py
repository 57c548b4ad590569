"""Check that every binary a .vsix carries is built for the .vsix's platform.

    python3 scripts/check_vsix.py adopter-linux-x64-0.1.0.vsix [more.vsix ...]

The target is read from the package's manifest (`extension.vsixmanifest`, `TargetPlatform`; none for the
universal .vsix, which must carry no binary at all). Checked, for each file under `extension/`:

- every wheel's `*.dist-info/WHEEL` `Tag:` lines: the platform tag must be one of the target's (manylinux
  for linux-*, musllinux for alpine-x64, macosx of the right architecture or universal2, win_amd64 /
  win_arm64), and under `bundled/native/cp3XY/` the Python tag must be that CPython (or a stable-ABI
  `abi3` tag of an older one);
- every `.so`, `.pyd` and `.dylib`: its name's platform part (`cpython-311-x86_64-linux-gnu`,
  `cp311-win_amd64`), and its header: ELF machine (x86-64 / AArch64) and C library (musl or glibc),
  Mach-O CPU type (a fat binary must contain the architecture), PE machine (AMD64 / ARM64);
- `build/native/` (the mypyc analysis) the same way: it is only ever built for the machine's platform.

Exit status 1 with one line per problem when any is found.
"""

from __future__ import annotations

import re
import struct
import sys
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True, slots=True)
class Platform:
    system: str  # "linux", "darwin", "win32"
    arch: str  # "x64", "arm64"
    musl: bool = False
    wheel_tags: tuple[str, ...] = ()  # regexes a wheel's platform tag must match (one of)


_X64_MAC = r"macosx_\d+_\d+_(x86_64|intel|universal2|fat64|universal)"
TARGETS: dict[str, Platform] = {
    "linux-x64": Platform("linux", "x64", wheel_tags=(r"manylinux_\d+_\d+_x86_64", r"manylinux(1|2010|2014)_x86_64")),
    "linux-arm64": Platform("linux", "arm64", wheel_tags=(r"manylinux_\d+_\d+_aarch64", r"manylinux2014_aarch64")),
    "alpine-x64": Platform("linux", "x64", musl=True, wheel_tags=(r"musllinux_\d+_\d+_x86_64",)),
    "darwin-x64": Platform("darwin", "x64", wheel_tags=(_X64_MAC,)),
    "darwin-arm64": Platform("darwin", "arm64", wheel_tags=(r"macosx_\d+_\d+_(arm64|universal2)",)),
    "win32-x64": Platform("win32", "x64", wheel_tags=("win_amd64",)),
    "win32-arm64": Platform("win32", "arm64", wheel_tags=("win_arm64",)),
}

BINARY_SUFFIXES = (".so", ".pyd", ".dylib", ".dll")
_ELF_MACHINE = {62: "x64", 183: "arm64"}
_MACHO_CPU = {0x01000007: "x64", 0x0100000C: "arm64"}
_PE_MACHINE = {0x8664: "x64", 0xAA64: "arm64"}
_SO_TAG = re.compile(r"\.cpython-(\d+)[a-z]*-([a-z0-9_]+)-(linux-gnu|linux-musl|darwin)\.so$")
_PYD_TAG = re.compile(r"\.cp(\d+)-(win_amd64|win_arm64)\.pyd$")
_NAME_ARCH = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64", "win_amd64": "x64", "win_arm64": "arm64"}


def target_of(manifest: str) -> str | None:
    """The vsce target named in `extension.vsixmanifest` (None for the universal package)."""
    m = re.search(r'TargetPlatform="([^"]+)"', manifest)
    return m.group(1) if m else None


def _python_folder(path: PurePosixPath) -> str | None:
    """`311` for a file under bundled/native/cp311/."""
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        if part == "native" and i > 0 and parts[i - 1] == "bundled" and re.fullmatch(r"cp\d+", parts[i + 1]):
            return parts[i + 1][2:]
    return None


def check_wheel_tags(name: str, text: str, target: Platform, python: str | None) -> list[str]:
    problems = []
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
    for tag in tags:
        try:
            interpreter, abi, plat = tag.split("-")
        except ValueError:
            problems.append(f"{name}: malformed wheel tag {tag!r}")
            continue
        if plat == "any":
            continue
        if not any(re.fullmatch(pattern, plat) for pattern in target.wheel_tags):
            problems.append(f"{name}: wheel tag {tag} is not for this platform")
        if python is not None:
            version = interpreter.removeprefix("cp")
            stable = abi == "abi3" and version.isdigit() and int(version) <= int(python)
            if not (version == python or stable):
                problems.append(f"{name}: wheel tag {tag} is not for CPython {python[0]}.{python[1:]}")
    return problems


def binary_header(data: bytes) -> tuple[str, set[str]]:
    """The format (`elf`, `macho`, `pe` or `unknown`) and the architectures a binary is built for."""
    if data[:4] == b"\x7fELF":
        little = data[5] == 1
        machine = struct.unpack_from("<H" if little else ">H", data, 18)[0]
        return "elf", {_ELF_MACHINE.get(machine, f"machine {machine}")}
    magic = data[:4]
    if magic in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe"):  # thin Mach-O, little-endian
        cpu = struct.unpack_from("<I", data, 4)[0]
        return "macho", {_MACHO_CPU.get(cpu, f"cpu {cpu:#x}")}
    if magic == b"\xca\xfe\xba\xbe":  # fat (universal) Mach-O, big-endian header
        count = struct.unpack_from(">I", data, 4)[0]
        cpus = [struct.unpack_from(">I", data, 8 + 20 * i)[0] for i in range(min(count, 16))]
        return "macho", {_MACHO_CPU.get(cpu, f"cpu {cpu:#x}") for cpu in cpus}
    if data[:2] == b"MZ" and len(data) > 0x40:
        pe = struct.unpack_from("<I", data, 0x3C)[0]
        if data[pe:pe + 4] == b"PE\0\0":
            machine = struct.unpack_from("<H", data, pe + 4)[0]
            return "pe", {_PE_MACHINE.get(machine, f"machine {machine:#x}")}
    return "unknown", set()


def check_binary(name: str, data: bytes, target: Platform, python: str | None) -> list[str]:
    problems = []
    kind, arches = binary_header(data)
    want_kind = {"linux": "elf", "darwin": "macho", "win32": "pe"}[target.system]
    if kind != want_kind:
        return [f"{name}: a {kind} binary, not {want_kind} ({target.system})"]
    if target.arch not in arches:
        problems.append(f"{name}: built for {', '.join(sorted(arches))}, not {target.arch}")
    if kind == "elf":
        musl = b"libc.musl-" in data or b"ld-musl-" in data
        if musl != target.musl:
            problems.append(f"{name}: linked against {'musl' if musl else 'glibc'}, not "
                            f"{'musl' if target.musl else 'glibc'}")
    base = PurePosixPath(name).name
    so, pyd = _SO_TAG.search(base), _PYD_TAG.search(base)
    if so:
        version, arch, system = so.groups()
        want_system = {"linux": "linux-musl" if target.musl else "linux-gnu", "darwin": "darwin"}.get(target.system)
        # CPython before 3.11 called its musl builds linux-gnu too (bpo-43112), so their modules are named so.
        legacy_musl = target.musl and system == "linux-gnu" and int(version) < 311
        if system != want_system and not legacy_musl:
            problems.append(f"{name}: named for {system}, not {want_system}")
        if system != "darwin" and _NAME_ARCH.get(arch) != target.arch:
            problems.append(f"{name}: named for {arch}, not {target.arch}")
        if python is not None and version != python:
            problems.append(f"{name}: named for CPython {version}, in the folder of {python}")
    elif pyd:
        version, plat = pyd.groups()
        if target.system != "win32" or _NAME_ARCH[plat] != target.arch:
            problems.append(f"{name}: named for {plat}")
        if python is not None and version != python:
            problems.append(f"{name}: named for CPython {version}, in the folder of {python}")
    elif base.endswith(".pyd") and target.system != "win32":
        problems.append(f"{name}: a Windows extension module")
    return problems


def check_vsix(path: str) -> tuple[str | None, list[str], int]:
    """(target, problems, number of binaries checked) of one .vsix."""
    problems: list[str] = []
    binaries = 0
    with zipfile.ZipFile(path) as vsix:
        names = vsix.namelist()
        manifest = vsix.read("extension.vsixmanifest").decode("utf-8") if "extension.vsixmanifest" in names else ""
        target_name = target_of(manifest)
        if target_name is not None and target_name not in TARGETS:
            return target_name, [f"{path}: unknown target {target_name}"], 0
        target = TARGETS[target_name] if target_name else None
        for name in names:
            pure = PurePosixPath(name)
            python = _python_folder(pure)
            if pure.name == "WHEEL" and pure.parent.name.endswith(".dist-info"):
                text = vsix.read(name).decode("utf-8", "replace")
                if target is None:
                    if any(line.startswith("Tag:") and not line.rstrip().endswith("-any") for line in text.splitlines()):
                        problems.append(f"{name}: a binary wheel in the universal .vsix")
                else:
                    problems += check_wheel_tags(name, text, target, python)
            elif pure.suffix in BINARY_SUFFIXES or ".so." in pure.name:
                binaries += 1
                if target is None:
                    problems.append(f"{name}: a binary in the universal .vsix")
                else:
                    problems += check_binary(name, vsix.read(name), target, python)
    return target_name, problems, binaries


def main(argv: list[str]) -> int:
    status = 0
    for path in argv:
        target, problems, binaries = check_vsix(path)
        for problem in problems:
            print(f"{path}: {problem}")
        print(f"{path}: {target or 'universal'}: {binaries} binaries, {len(problems)} problems")
        status |= bool(problems)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
