"""Server settings: a keyword-only dataclass read with cattrs from the client and `[tool.adopter]`
(the handlers that receive them are `adopter.lsp.configuration`).

Sources, lowest precedence first: defaults, `[tool.adopter]` in the workspace's `pyproject.toml`, the
client's settings (initializationOptions, then `workspace/didChangeConfiguration` or the pulled
`workspace/configuration` section "adopter"). Editor settings win, as in ruff's default
`editorFirst`. Keys may be written snake_case, camelCase or kebab-case. A bad key or value never
stops the server: it is reported (naming the key) and that key keeps its default.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import cattrs

TARGETS = ("auto", "cpu", "cuda")
SEVERITIES = ("error", "warning", "info", "hint")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """What a user can configure; every field has a working default."""

    select: tuple[str, ...] | None = None  # rule ids or family numbers to enable; None: all
    ignore: tuple[str, ...] = ()  # rule ids or family numbers to disable
    severity: dict[str, str] = field(default_factory=dict)  # rule id -> error|warning|info|hint
    target: str = "auto"  # auto | cpu | cuda: which kernels are offered
    rule_paths: tuple[str, ...] = ()  # extra .adl files or folders (relative to the workspace root)
    debounce_ms: int = 250  # wait after the last keystroke before analysing
    trusted: bool = True  # initializationOptions only: false refuses commands that run user code


# Resolved annotations (the module's `from __future__ import annotations` makes them strings).
_FIELDS: dict[str, Any] = typing.get_type_hints(Settings)


def _plain_type(hint: Any) -> Any:
    """The container or scalar type of an annotation, `None` aside: `tuple[str, ...] | None` -> tuple."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] if isinstance(hint, types.UnionType) else [hint]
    return typing.get_origin(args[0]) or args[0]


# Each field's value as the client writes it when it is already of the field's type: `_structure` takes
# it as it is (what cattrs returns for it). Anything else goes through cattrs.
_PLAIN: dict[str, Any] = {name: _plain_type(hint) for name, hint in _FIELDS.items()}
# Aliases users reach for; the dataclass field names are the canonical spelling.
_ALIASES = {"extra_rule_paths": "rule_paths", "rules": "rule_paths", "debounce": "debounce_ms"}


def _snake(key: str) -> str:
    key = key.replace("-", "_")
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _check(name: str, value: Any) -> Any:
    """Structure one field's value and check its domain; raise ValueError with a readable reason."""
    if name in ("select", "ignore", "rule_paths") and isinstance(value, str):
        value = [value]
    if name in ("select", "ignore") and isinstance(value, list):
        value = [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
    if name == "debounce_ms" and isinstance(value, bool):
        raise ValueError("expected a number of milliseconds")
    result = _structure(name, value)
    if name == "target" and result not in TARGETS:
        raise ValueError(f"{value!r} is not one of {', '.join(TARGETS)}")
    if name == "debounce_ms" and not 0 <= result <= 10_000:
        raise ValueError(f"{value!r} is not between 0 and 10000")
    if name == "severity":
        bad = {k: v for k, v in result.items() if v not in SEVERITIES}
        if bad:
            raise ValueError(f"{bad!r}: severities are {', '.join(SEVERITIES)}")
    return result


@functools.cache
def _converter() -> cattrs.Converter:
    """cattrs, imported when a value first needs it: with attrs it is ~30 ms of the server's start, and the
    settings an editor sends are usually of their fields' types already."""
    import cattrs

    return cattrs.Converter()


def _is_plain(name: str, value: Any) -> bool:
    """Whether `value` already has field `name`'s type exactly (strings, not merely things with a str())."""
    kind = _PLAIN[name]
    if kind is tuple:
        return type(value) in (list, tuple) and all(type(v) is str for v in value)
    if kind is dict:
        return type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items())
    return type(value) is kind


def _structure(name: str, value: Any) -> Any:
    """`value` as field `name`'s type, as cattrs structures it; raise ValueError with cattrs' reason."""
    if _is_plain(name, value):
        return tuple(value) if _PLAIN[name] is tuple else dict(value) if _PLAIN[name] is dict else value
    from cattrs import BaseValidationError

    try:
        return _converter().structure(value, _FIELDS[name])
    except (BaseValidationError, TypeError, ValueError, AttributeError) as exc:  # a list for a mapping: AttributeError
        raise ValueError(f"cannot read {value!r}: {exc}") from exc


def merge_settings(base: Settings, raw: Mapping[str, Any] | None, source: str) -> tuple[Settings, list[str]]:
    """Overlay the keys of `raw` on `base`; return the result and one message per bad key."""
    if raw is None:
        return base, []
    if not isinstance(raw, Mapping):
        return base, [f"Adopter settings from {source} must be an object, got {type(raw).__name__}"]
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        name = _ALIASES.get(_snake(str(key)), _snake(str(key)))
        if name not in _FIELDS:
            problems.append(f"Adopter: unknown setting {key!r} in {source} (ignored)")
            continue
        if value is None:
            continue
        try:
            changes[name] = _check(name, value)
        except ValueError as exc:
            problems.append(f"Adopter: bad setting {key!r} in {source}: {exc}; using the default")
    return dataclasses.replace(base, **changes), problems


def pyproject_settings(root: Path | None) -> tuple[dict[str, Any] | None, list[str]]:
    """Read `[tool.adopter]` from `root/pyproject.toml`; (None, []) when there is none."""
    if root is None:
        return None, []
    path = root / "pyproject.toml"
    if sys.version_info < (3, 11):  # no TOML reader in the standard library
        return None, ([f"Adopter: reading {path} needs Python 3.11 or later"] if path.is_file() else [])
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, []
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"Adopter: cannot read {path}: {exc}"]
    import tomllib  # only with a file to read: a few ms of the server's start

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [f"Adopter: cannot read {path}: {exc}"]
    section = data.get("tool", {}).get("adopter")
    return (section if isinstance(section, dict) else None), []


def client_section(raw: Any) -> Any:
    """The "adopter" section of a client settings object, or the object itself when it is flat."""
    if isinstance(raw, Mapping) and isinstance(raw.get("adopter"), Mapping):
        return raw["adopter"]
    return raw


# Keys the VS Code client sends that configure the client, not the server.
CLIENT_ONLY_KEYS = frozenset({"interpreter"})


def resolve_settings(sources: Mapping[str, Any]) -> tuple[Settings, list[str]]:
    """Merge the sources (in insertion order, later wins) over the defaults; collect the problems."""
    settings, problems = Settings(), []
    for source, raw in sources.items():
        raw = client_section(raw)
        if isinstance(raw, Mapping):
            raw = {k: v for k, v in raw.items() if k not in CLIENT_ONLY_KEYS}
            if source != "initializationOptions":  # trust is the client's call at start-up only
                raw = {k: v for k, v in raw.items() if _snake(str(k)) != "trusted"}
        settings, found = merge_settings(settings, raw, source)
        problems.extend(found)
    return settings, problems
