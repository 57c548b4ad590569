"""What the user's environment offers kernels: device, optional kernel packages, torch version.

Never imports torch or the kernel packages: `importlib.util.find_spec`, torch's own `version.py` read as text,
and package metadata only where that file is missing, so detection is cheap and safe inside the language server.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from adopter.dsl.types import Target, picklable

# Import names of the optional kernel packages a rule target may require.
KERNEL_PACKAGES = ("liger_kernel", "apex", "flash_attn")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True, slots=True)
class Environment:
    """The device kernels run on, the importable kernel packages, and the installed torch version."""

    device: str = "cpu"  # "cpu" or "cuda"
    packages: frozenset[str] = frozenset()
    torch_version: str | None = None

    def offers(self, target: Target) -> bool:
        """Whether `target` can run here: device, packages and torch version all fit."""
        if self.device not in target.devices:
            return False
        if any(p not in self.packages for p in target.packages):
            return False
        if target.torch and self.torch_version is not None:
            return version_satisfies(self.torch_version, target.torch)
        return True


picklable(Environment)  # sent to the workers of `--ray-address` with the rules


def _package_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_VERSION_LINE = re.compile(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)


def _torch_version() -> str | None:
    """The installed torch's version, from the `__version__ = '...'` line of its `torch/version.py` (written by
    torch's build), else from its distribution metadata. The file is read, never imported; the metadata lookup
    scans every installed distribution (160-180 ms in an environment of a few hundred), so it is the fallback."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    if spec.origin:
        try:
            found = _VERSION_LINE.search((Path(spec.origin).parent / "version.py").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            found = None
        if found:
            return found.group(1)
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def _cuda_present() -> bool:
    # A driver is the cheapest reliable signal without importing torch.
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.isdir("/proc/driver/nvidia") or shutil.which("nvidia-smi") is not None


def detect_environment(target: str = "auto") -> Environment:
    """The environment for device setting `target` ("auto", "cpu" or "cuda")."""
    if target not in DEVICES:
        raise ValueError(f"unknown target device {target!r}; expected one of {', '.join(DEVICES)}")
    device = target if target != "auto" else ("cuda" if _cuda_present() else "cpu")
    packages = frozenset(p for p in KERNEL_PACKAGES if _package_present(p))
    return Environment(device=device, packages=packages, torch_version=_torch_version())


# ---------------------------------------------------------------------------------------------------
# Version specifiers (a small subset of PEP 440, enough for ">=2.1,<3")
# ---------------------------------------------------------------------------------------------------

_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|~=|>|<)?\s*([0-9][0-9A-Za-z.+]*)\s*$")


def _release(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split("+")[0].split("."):
        digits = re.match(r"\d+", piece)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def _compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    width = max(len(a), len(b))
    pa, pb = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (pa > pb) - (pa < pb)


def version_satisfies(version: str, spec: str) -> bool:
    """Whether `version` meets every comma-separated clause of `spec` (">=2.1,<3"); bad specs never do."""
    have = _release(version)
    for clause in spec.split(","):
        m = _CLAUSE.match(clause)
        if m is None:
            return False
        op, want_text = m.group(1) or "==", m.group(2)
        want = _release(want_text)
        c = _compare(have, want)
        if op == "~=":
            prefix = want[:-1] if len(want) > 1 else want
            ok = c >= 0 and have[: len(prefix)] == prefix
        else:
            ok = {">=": c >= 0, "<=": c <= 0, ">": c > 0, "<": c < 0, "==": c == 0, "!=": c != 0}[op]
        if not ok:
            return False
    return True
