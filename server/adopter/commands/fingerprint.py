"""What a file's `check` or `fix` result depends on besides the file itself, as digests.

- `code_fingerprint`: Adopter's version, the interpreter, whether the compiled analysis runs, and the
  bytes of every module of the package that analysis, matching and fixing run (not the language
  server's nor the accelerator search's), so an edited checkout never reuses results of older code.
- `settings_digest`: the command, the code, the rules (each rule's id and the bytes of the file it came
  from, in order: `--select`/`--ignore`, `--rules` and `.adopter/rules/` are all in there) and the
  environment (`--target`'s device, the kernel packages present, torch's version).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adopter.session import RuleContext

_SKIPPED = ("lsp", "wham")  # packages whose code no `check` or `fix` result depends on
_CODE: list[str] = []


def code_fingerprint() -> str:
    """A digest of the code a result comes from (computed once per process)."""
    if not _CODE:
        from adopter import __version__, _native

        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256(f"{__version__}|{sys.version}|{_native.describe()}".encode())
        for source in sorted(package.rglob("*.py")):
            relative = source.relative_to(package)
            if relative.parts[0] in _SKIPPED:
                continue
            try:
                digest.update(relative.as_posix().encode() + b"\0" + source.read_bytes())
            except OSError:
                digest.update(relative.as_posix().encode() + b"\0?")
        _CODE.append(digest.hexdigest()[:24])
    return _CODE[0]


def settings_digest(command: str, context: RuleContext) -> str:
    """A digest of everything besides the file that one `command` ("check" or "fix") result depends on."""
    digest = hashlib.sha256(f"{command}|{code_fingerprint()}".encode())
    files: dict[str, str] = {}
    for rule in context.rules:
        source = rule.path or ""
        if source not in files:
            try:
                files[source] = hashlib.sha256(Path(source).read_bytes()).hexdigest() if source else ""
            except OSError:
                files[source] = repr(rule)  # no file to read: the parsed rule itself
        digest.update(f"\0{rule.id}\0{source}\0{files[source]}".encode())
    env = context.environment
    if env is not None:
        digest.update(f"\0env\0{env.device}\0{sorted(env.packages)}\0{env.torch_version}".encode())
    return digest.hexdigest()[:32]
