"""Loading rule files: the bundled `rules/` plus user files and folders, selected by id or family.

A broken file never stops the others: it becomes a `Problem` naming the file (and line and column when
the parser knows them) and is skipped.

Parsed files are kept in memory (keyed on path, mtime and size) and on disk (`adopter.dsl.cache`: the
user's cache folder, and for the bundled rules the seed an installed wheel carries), so that a server
parses a rule file once, not at every start.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from adopter.dsl.cache import DiskCache, Parsed, Seed, cache_folder, enabled, read_seed, rule_text
from adopter.dsl.types import Problem, Rule, Severity

RULE_SUFFIX = ".adl"
WORKSPACE_RULES = Path(".adopter") / "rules"


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The rules that loaded, and the problems of the files that did not."""

    rules: tuple[Rule, ...]
    problems: tuple[Problem, ...] = ()


# Parsed files keyed by (path, mtime_ns, size): the server reloads rules often, parsing is not free.
_cache: dict[tuple[str, int, int], Parsed] = {}
_disk: list[DiskCache] = []
_seed: list[Seed | None] = []  # the wheel's parsed bundled rules, read on first use


def _disk_cache() -> DiskCache:
    folder = cache_folder()
    if not _disk or _disk[0].folder != folder:
        _disk[:] = [DiskCache(folder)]
    return _disk[0]


def _from_seed(path: Path, digest: str) -> Parsed | None:
    """The bundled file `path` as the wheel's seed has it parsed, when it is one and unchanged."""
    try:
        from adopter.resources import rules_dir

        bundled = rules_dir()
    except FileNotFoundError:
        return None
    if path.parent != bundled or not enabled():
        return None
    if not _seed:
        _seed.append(read_seed(bundled))
    return None if _seed[0] is None else _seed[0].get(path, digest)


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
        text = rule_text(data)
    except (OSError, UnicodeDecodeError) as exc:
        return (), Problem(f"cannot read rule file: {exc}", path=str(path), severity=Severity.ERROR)
    disk = _disk_cache()
    digest = hashlib.sha256(data).hexdigest()
    cached = disk.get(str(path), digest) or _from_seed(path, digest)
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
