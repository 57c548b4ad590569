"""Loading rule files: the bundled `rules/` plus user files and folders, selected by id or family.

A broken file never stops the others: it becomes a `Problem` naming the file (and line and column when
the parser knows them) and is skipped.

Parsed files are kept in memory (keyed on path, mtime and size) and on disk, in the user's cache folder
(`rules/` of `$ADOPTER_CACHE_DIR`, else of `$XDG_CACHE_HOME/adopter` or `~/.cache/adopter`), keyed on each file's
SHA-256 and on the code that parses them: parsing the bundled rules with Lark is most of what a server
does before its first diagnostics, and the disk cache spares every start after the first. Anything
wrong with the cache (unreadable, another version, no permission) only means parsing again;
`ADOPTER_RULE_CACHE=0` turns it off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adopter import __version__
from adopter.dsl import types as dsl_types
from adopter.dsl.types import Problem, Rule, Severity

RULE_SUFFIX = ".adl"
WORKSPACE_RULES = Path(".adopter") / "rules"


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rules that loaded, and the problems of the files that did not."""

    rules: tuple[Rule, ...]
    problems: tuple[Problem, ...] = ()


Parsed = tuple[tuple[Rule, ...], Problem | None]
_KEEP_VERSIONS = 4  # cache files kept in the folder, one per parser version

# Parsed files keyed by (path, mtime_ns, size): the server reloads rules often, parsing is not free.
_cache: dict[tuple[str, int, int], Parsed] = {}


class DiskCache:
    """Parsed rule files by path, with the SHA-256 of the text they were parsed from, in one pickle per
    parser version. One entry per path (the latest text), and paths that no longer exist are dropped
    when it is written, so the file stays as small as the set of rule files in use."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.entries: dict[str, tuple[str, Parsed]] | None = None  # read on first use
        self.dirty = False

    @property
    def file(self) -> Path | None:
        return None if self.folder is None else self.folder / f"rules-{_parser_fingerprint()}.pickle"

    def get(self, path: str, digest: str) -> Parsed | None:
        if self.entries is None:
            self.entries = self._read()
        entry = self.entries.get(path)
        return entry[1] if entry is not None and entry[0] == digest else None

    def put(self, path: str, digest: str, parsed: Parsed) -> None:
        if self.entries is None:
            self.entries = self._read()
        self.entries[path] = (digest, parsed)
        self.dirty = True

    def _read(self) -> dict[str, tuple[str, Parsed]]:
        file = self.file
        if file is None:
            return {}
        try:
            # Only ever a file this user's own Adopter wrote (the folder is the user's cache).
            entries = pickle.loads(file.read_bytes())
        except Exception:  # missing, truncated, written by other code: parse again
            return {}
        return entries if isinstance(entries, dict) else {}

    def write(self) -> None:
        """Save the entries if something was added; never raises."""
        file = self.file
        if file is None or not self.dirty or self.entries is None:
            return
        self.dirty = False
        tmp: str | None = None
        try:
            self.entries = {p: e for p, e in self.entries.items() if Path(p).is_file()}
            file.parent.mkdir(parents=True, exist_ok=True)
            # Other parser versions' caches (pure and compiled builds, other checkouts): keep the newest few.
            others = sorted((p for p in file.parent.glob("rules-*.pickle") if p != file),
                            key=lambda p: p.stat().st_mtime, reverse=True)
            for old in others[_KEEP_VERSIONS - 1:]:
                old.unlink(missing_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".rules-", dir=file.parent)
            with os.fdopen(fd, "wb") as out:
                _DataclassPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(self.entries)
            os.replace(tmp, file)  # atomic: a concurrent server reads the old or the new file
        except Exception:  # a read-only or full disk: the next start parses again
            if tmp is not None:
                with contextlib.suppress(OSError):
                    Path(tmp).unlink()


class _DataclassPickler(pickle.Pickler):
    """Pickles the DSL's frozen dataclasses field by field, so that their mypyc-compiled versions (whose
    own unpickling goes through the frozen `__setattr__` and fails) load as well as the pure ones."""

    def reducer_override(self, obj: object) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            values = tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))
            return _rebuild, (type(obj), values)
        return NotImplemented


def _rebuild(cls: Any, values: tuple[object, ...]) -> object:
    """A dataclass instance with these field values, as they were (no `__init__` checks run again)."""
    obj: object = cls.__new__(cls)  # the class's own: a compiled class refuses object.__new__
    for f, value in zip(dataclasses.fields(cls), values):
        object.__setattr__(obj, f.name, value)
    return obj


def cache_folder() -> Path | None:
    """Where parsed rules are kept across processes, or None when that is turned off."""
    if os.environ.get("ADOPTER_RULE_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    explicit = os.environ.get("ADOPTER_CACHE_DIR")  # as the accelerator search's cache (`wham/`) reads it
    if explicit:
        return Path(explicit) / "rules"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "adopter" / "cache" / "rules"
    try:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except RuntimeError:  # no home folder
        return None
    return Path(base) / "adopter" / "rules"


_fingerprint: list[str] = []


def _parser_fingerprint() -> str:
    """What parsed rules depend on besides the rule text: the DSL code and grammar, the interpreter,
    and whether the rule types are compiled (their pickles differ)."""
    if not _fingerprint:
        digest = hashlib.sha256(f"{__version__}|{sys.version}|{dsl_types.__file__}".encode())
        dsl = Path(__file__).resolve().parents[1] / "dsl"
        sources = sorted(dsl.glob("*.py"))
        try:
            from adopter.resources import grammar_dir

            sources += sorted(grammar_dir().glob("*.lark"))
        except FileNotFoundError:
            pass
        for source in sources:
            try:
                digest.update(source.name.encode() + b"\0" + source.read_bytes())
            except OSError:
                digest.update(source.name.encode() + b"\0?")
        _fingerprint.append(digest.hexdigest()[:20])
    return _fingerprint[0]


_disk: list[DiskCache] = []


def _disk_cache() -> DiskCache:
    folder = cache_folder()
    if not _disk or _disk[0].folder != folder:
        _disk[:] = [DiskCache(folder)]
    return _disk[0]


def _parse_file(path: Path) -> Parsed:
    try:
        stat = path.stat()
    except OSError as exc:
        return (), Problem(f"cannot read rule file: {exc.strerror or exc}", path=str(path), severity=Severity.ERROR)
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key in _cache:
        return _cache[key]
    result = _parse_uncached(path)
    _cache[key] = result
    return result


def _parse_uncached(path: Path) -> Parsed:
    try:
        data = path.read_bytes()
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text() reads it
    except (OSError, UnicodeDecodeError) as exc:
        return (), Problem(f"cannot read rule file: {exc}", path=str(path), severity=Severity.ERROR)
    disk = _disk_cache()
    digest = hashlib.sha256(data).hexdigest()
    cached = disk.get(str(path), digest)
    if cached is not None:
        return cached
    parsed = _parse_text(text, path)
    disk.put(str(path), digest, parsed)
    return parsed


def _parse_text(text: str, path: Path) -> Parsed:
    try:
        from adopter.dsl import parse_rules

        return tuple(parse_rules(text, str(path))), None
    except Exception as exc:  # a DslError carries a positioned Problem; anything else is a parser bug
        problem = getattr(exc, "problem", None)
        if isinstance(problem, Problem):
            if problem.path is None:
                problem = Problem(problem.message, problem.span, str(path), Severity.ERROR, problem.code)
            return (), problem
        return (), Problem(f"rule file could not be parsed: {type(exc).__name__}: {exc}", path=str(path),
                           severity=Severity.ERROR)


def rule_files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Problem]]:
    """Expand files and folders (recursively, `*.adl`) into rule files, sorted per folder."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob(f"*{RULE_SUFFIX}") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem("rule path does not exist", path=str(path), severity=Severity.ERROR))
    return files, problems


def workspace_rule_paths(root: str | Path) -> tuple[Path, ...]:
    """The workspace's own rule folder (`.adopter/rules/`) when it exists."""
    folder = Path(root) / WORKSPACE_RULES
    return (folder,) if folder.is_dir() else ()


def selector_matches(selector: str, rule: Rule) -> bool:
    """A selector is a rule id, an id prefix (`f05`), or a family number (`5`, `family5`)."""
    sel = selector.strip().lower()
    if not sel:
        return False
    digits = sel.removeprefix("family").removeprefix("f")
    if sel.isdigit() or (sel.startswith("family") and digits.isdigit()):
        return int(digits) == rule.family
    return rule.id.lower() == sel or rule.id.lower().startswith(sel)


def _select(rules: list[Rule], select: Sequence[str] | None, ignore: Sequence[str] | None,
            problems: list[Problem]) -> list[Rule]:
    for selectors, what in ((select or (), "select"), (ignore or (), "ignore")):
        for s in selectors:
            if not any(selector_matches(s, r) for r in rules):
                problems.append(Problem(f"{what} {s!r} matches no rule (use a rule id, an id prefix or a "
                                        "family number)", severity=Severity.ERROR, code="selector"))
    if select:
        rules = [r for r in rules if any(selector_matches(s, r) for s in select)]
    if ignore:
        rules = [r for r in rules if not any(selector_matches(s, r) for s in ignore)]
    return rules


def load_rules(extra_paths: Iterable[str | Path] = (), *, select: Sequence[str] | None = None,
               ignore: Sequence[str] | None = None, bundled: bool = True) -> RuleSet:
    """The bundled rules plus `extra_paths` (files or folders), filtered by `select` and `ignore`."""
    paths: list[str | Path] = []
    problems: list[Problem] = []
    if bundled:
        try:
            from adopter.resources import rules_dir

            paths.append(rules_dir())
        except FileNotFoundError as exc:
            problems.append(Problem(str(exc), severity=Severity.ERROR))
    paths.extend(extra_paths)
    files, missing = rule_files(paths)
    problems.extend(missing)
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for file in files:
        parsed, problem = _parse_file(file)
        if problem is not None:
            problems.append(problem)
            continue
        for rule in parsed:
            if rule.id in seen:
                problems.append(Problem(f"duplicate rule id {rule.id!r} (first defined in {seen[rule.id]}); skipped",
                                        span=rule.span, path=str(file), severity=Severity.ERROR, code=rule.id))
                continue
            seen[rule.id] = str(file)
            rules.append(rule)
    _disk_cache().write()
    return RuleSet(tuple(_select(rules, select, ignore, problems)), tuple(problems))
