"""Every binary a .vsix carries matches its platform (scripts/check_vsix.py), on constructed packages and
on this machine's own platform .vsix (`npm run package`)."""

from __future__ import annotations

import importlib.util
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "scripts"))


check = _script("check_vsix")
bundle_python = _script("bundle_python")


def elf(machine: int, musl: bool = False) -> bytes:
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack("<HH", 3, machine)
    return header + bytes(64) + (b"libc.musl-x86_64.so.1\0" if musl else b"libc.so.6\0")


def macho(*cpus: int) -> bytes:
    if len(cpus) == 1:
        return b"\xcf\xfa\xed\xfe" + struct.pack("<I", cpus[0]) + bytes(64)
    arches = b"".join(struct.pack(">IIIII", cpu, 0, 0, 0, 0) for cpu in cpus)
    return b"\xca\xfe\xba\xbe" + struct.pack(">I", len(cpus)) + arches + bytes(64)


def pe(machine: int) -> bytes:
    return b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40) + b"PE\0\0" + struct.pack("<H", machine) + bytes(64)


X64, ARM64 = 62, 183
MAC_X64, MAC_ARM64 = 0x01000007, 0x0100000C
PE_X64, PE_ARM64 = 0x8664, 0xAA64


def vsix(tmp_path: Path, target: str | None, files: dict[str, bytes | str]) -> str:
    path = tmp_path / f"{target or 'universal'}.vsix"
    platform = f' TargetPlatform="{target}"' if target else ""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("extension.vsixmanifest", f'<PackageManifest><Metadata><Identity Id="adopter"{platform}/>'
                   "</Metadata></PackageManifest>")
        for name, data in files.items():
            z.writestr(f"extension/{name}", data)
    return str(path)


def wheel(tag: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n"


NATIVE = "bundled/native/cp311"


@pytest.mark.parametrize(("target", "files"), [
    ("linux-x64", {f"{NATIVE}/tree_sitter/_binding.cpython-311-x86_64-linux-gnu.so": elf(X64),
                   f"{NATIVE}/tree_sitter-0.26.1.dist-info/WHEEL": wheel("cp311-cp311-manylinux_2_17_x86_64"),
                   f"{NATIVE}/tree_sitter_python/_binding.abi3.so": elf(X64),
                   f"{NATIVE}/tree_sitter_python-0.25.0.dist-info/WHEEL": wheel("cp310-abi3-manylinux_2_5_x86_64")}),
    ("alpine-x64", {"bundled/native/cp310/tree_sitter/_binding.cpython-310-x86_64-linux-gnu.so": elf(X64, musl=True),
                    f"{NATIVE}/tree_sitter/_binding.cpython-311-x86_64-linux-musl.so": elf(X64, musl=True)}),
    ("darwin-arm64", {f"{NATIVE}/tree_sitter/_binding.cpython-311-darwin.so": macho(MAC_X64, MAC_ARM64),
                      f"{NATIVE}/tree_sitter-0.26.1.dist-info/WHEEL": wheel("cp311-cp311-macosx_11_0_arm64")}),
    ("win32-arm64", {f"{NATIVE}/tree_sitter/_binding.cp311-win_arm64.pyd": pe(PE_ARM64),
                     f"{NATIVE}/tree_sitter-0.26.1.dist-info/WHEEL": wheel("cp311-cp311-win_arm64")}),
    (None, {"bundled/libs/lark/__init__.py": "", "bundled/libs/lark-1.3.1.dist-info/WHEEL": wheel("py3-none-any")}),
])
def test_matching_binaries_pass(tmp_path: Path, target: str | None, files: dict[str, bytes | str]) -> None:
    found, problems, _ = check.check_vsix(vsix(tmp_path, target, files))
    assert found == target and problems == []


@pytest.mark.parametrize(("target", "name", "data", "why"), [
    ("linux-x64", f"{NATIVE}/t/_b.cpython-311-x86_64-linux-gnu.so", elf(ARM64), "not x64"),
    ("linux-x64", f"{NATIVE}/t/_b.cpython-311-aarch64-linux-gnu.so", elf(X64), "named for aarch64"),
    ("linux-x64", f"{NATIVE}/t/_b.cpython-312-x86_64-linux-gnu.so", elf(X64), "in the folder of 311"),
    ("linux-x64", f"{NATIVE}/t/_b.cpython-311-x86_64-linux-gnu.so", elf(X64, musl=True), "musl"),
    ("alpine-x64", f"{NATIVE}/t/_b.cpython-311-x86_64-linux-gnu.so", elf(X64), "glibc"),
    ("linux-x64", f"{NATIVE}/t/_b.cpython-311-darwin.so", macho(MAC_X64), "macho binary"),
    ("darwin-arm64", f"{NATIVE}/t/_b.cpython-311-darwin.so", macho(MAC_X64), "not arm64"),
    ("darwin-x64", f"{NATIVE}/t/_b.cpython-311-darwin.so", macho(MAC_ARM64), "not x64"),
    ("win32-x64", f"{NATIVE}/t/_b.cp311-win_amd64.pyd", pe(PE_ARM64), "not x64"),
    ("win32-x64", f"{NATIVE}/t/_b.cp311-win_arm64.pyd", pe(PE_X64), "named for win_arm64"),
    ("linux-x64", f"{NATIVE}/t-1.dist-info/WHEEL", wheel("cp311-cp311-win_amd64"), "not for this platform"),
    ("darwin-x64", f"{NATIVE}/t-1.dist-info/WHEEL", wheel("cp311-cp311-macosx_11_0_arm64"), "not for this platform"),
    ("linux-x64", f"{NATIVE}/t-1.dist-info/WHEEL", wheel("cp312-cp312-manylinux_2_17_x86_64"), "not for CPython 3.11"),
    ("linux-arm64", f"{NATIVE}/t-1.dist-info/WHEEL", wheel("cp311-cp311-musllinux_1_2_aarch64"), "not for this platform"),
    (None, "bundled/libs/t/_b.so", elf(X64), "universal"),
    (None, "bundled/libs/t-1.dist-info/WHEEL", wheel("cp311-cp311-manylinux_2_17_x86_64"), "universal"),
])
def test_each_mismatch_is_named(tmp_path: Path, target: str | None, name: str, data: bytes | str, why: str) -> None:
    _, problems, _ = check.check_vsix(vsix(tmp_path, target, {name: data}))
    assert len(problems) >= 1 and all(name in p for p in problems) and any(why in p for p in problems), problems


def test_requirement_markers_pick_yaml_per_python() -> None:
    lines = ['PyYAML==6.0.3; python_version != "3.13"', 'pyyaml-ft==8.0.0; python_version == "3.13"']
    assert [line for line in lines if bundle_python.applies(line, "3.13")] == [lines[1]]
    assert [line for line in lines if bundle_python.applies(line, "3.14")] == [lines[0]]
    with pytest.raises(ValueError):
        bundle_python.applies('x==1; sys_platform == "linux"', "3.11")


@pytest.fixture(scope="module")
def host_vsix() -> Path:
    """This machine's platform .vsix: the one `make e2e` (or `npm run package`) built, else built now."""
    target = bundle_python.host_target()
    path = REPO / _script("package_vsix").output_name(target)
    if not path.is_file():
        if shutil.which("vsce", path=str(REPO / "node_modules" / ".bin")) is None or shutil.which("node") is None:
            pytest.skip("no .vsix of this platform and no vsce to build it (npm ci)")
        subprocess.run([sys.executable, "scripts/package_vsix.py", "host"], cwd=REPO, check=True)
    return path


def test_the_platform_vsix_carries_only_its_platforms_binaries_for_every_python(host_vsix: Path) -> None:
    target, problems, binaries = check.check_vsix(str(host_vsix))
    assert target == bundle_python.host_target() and problems == []
    with zipfile.ZipFile(host_vsix) as z:
        names = z.namelist()
    for version in bundle_python.PYTHONS:
        folder = f"extension/bundled/native/cp{version.replace('.', '')}/"
        for package in ("tree_sitter/", "tree_sitter_python/"):
            assert any(n.startswith(folder + package) for n in names), f"{folder}{package} missing"
    assert binaries >= 2 * len(bundle_python.PYTHONS)
