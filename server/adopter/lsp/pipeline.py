"""The analysis one open document goes through: incremental parse, per-class analysis, rule matching.

Runs on the server's analysis thread only (never on the event loop). Every dependency is imported
lazily and guarded: a missing or failing layer turns into a visible `Problem`, never a dead server.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from adopter.dsl.types import Architecture, Forward, ModuleFile, Problem, Rule, Severity, Span
from adopter.engine.types import Finding
from adopter.lsp.settings import Settings
from adopter.lsp.sync import ByteEdit

if TYPE_CHECKING:
    from adopter.engine.environment import Environment

log = logging.getLogger(__name__)

UNAVAILABLE = "adopter-unavailable"  # the code of problems saying a layer is missing
Change = types.TextDocumentContentChangePartial | types.TextDocumentContentChangeWholeDocument


def _problem(message: str, code: str = "adopter-internal", severity: Severity = Severity.WARNING) -> Problem:
    return Problem(message=message, span=Span(0, 0, 0, 0), severity=severity, code=code)


def failure(what: str, exc: BaseException) -> Problem:
    """An internal failure as a visible problem (and a log line with the traceback)."""
    log.error("%s failed: %s", what, "".join(traceback.format_exception(exc)))
    return _problem(f"Adopter: {what} failed ({type(exc).__name__}: {exc}); see the server log")


@dataclass(frozen=True)
class RuleContext:
    """Rules and environment for the current settings, loaded once per settings change."""

    rules: tuple[Rule, ...]
    problems: tuple[Problem, ...]
    environment: Environment | None  # None when the engine is not available
    settings: Settings


def load_rule_context(settings: Settings, root: Path | None) -> RuleContext:
    """Load bundled + workspace + configured rules and detect the environment; never raises."""
    try:
        from adopter.engine import detect_environment, load_rules, workspace_rule_paths
    except ImportError as exc:
        problem = _problem(f"Adopter rules are not available in this installation ({exc})", UNAVAILABLE)
        return RuleContext((), (problem,), None, settings)
    extra: list[str] = []
    for entry in settings.rule_paths:
        path = Path(entry).expanduser()
        extra.append(str(path if path.is_absolute() or root is None else root / path))
    try:
        if root is not None:
            extra.extend(str(p) for p in workspace_rule_paths(root))
        ruleset = load_rules(tuple(extra), select=settings.select, ignore=settings.ignore or None)
        environment = detect_environment(settings.target)
    except Exception as exc:  # a broken engine must not take the server down
        return RuleContext((), (failure("loading rules", exc),), None, settings)
    return RuleContext(tuple(ruleset.rules), tuple(ruleset.problems), environment, settings)


@dataclass
class Snapshot:
    """What one analysis run produced for one version of a document."""

    version: int | None
    text: str
    module_file: ModuleFile | None = None
    findings: tuple[Finding, ...] = ()
    problems: tuple[Problem, ...] = ()
    rules: tuple[Rule, ...] = ()  # for rule files: the rules the file defines
    rule_problems: tuple[Problem, ...] = ()  # problems loading the rules this analysis used
    elapsed_ms: float = 0.0
    reparsed: str = "full"  # "incremental" when tree-sitter reused the previous tree

    def architecture(self, name: str) -> Architecture | None:
        for arch in self.module_file.architectures if self.module_file else ():
            if arch.name == name:
                return arch
        return None


class PythonModel:
    """The incremental analysis state of one Python document (owned by the analysis thread)."""

    def __init__(self, text: str, path: str | None, *, parse: bool = True) -> None:
        self.path = path
        self.text = text
        self._parse = parse  # False: keep the text in sync only (rule files)
        self._analysis: Any | None = None
        self._fresh = True
        # Findings per analysed unit (by object identity) for the rule context they were matched with.
        self._matched: dict[int, tuple[object, tuple[Finding, ...], tuple[Problem, ...]]] = {}
        self._matched_with: RuleContext | None = None
        self._make_analysis()

    def _make_analysis(self) -> None:
        if not self._parse:
            return
        try:
            from adopter.analysis.incremental import DocumentAnalysis
        except ImportError:
            self._analysis = None  # `analyse()` of the whole text stands in
            return
        self._analysis = DocumentAnalysis(self.text, self.path)
        self._fresh = True

    def reset(self, text: str) -> None:
        """Start over from `text` (a full re-parse)."""
        self.text = text
        self._make_analysis()

    def apply(self, edit: ByteEdit, text: str) -> None:
        """One edit, `text` being the whole document after it: tree-sitter re-parses incrementally."""
        self.text = text
        if self._analysis is not None:
            self._analysis.apply_edit(
                edit.start_byte,
                edit.old_end_byte,
                edit.new_end_byte,
                edit.start_point,
                edit.old_end_point,
                edit.new_end_point,
                text,
            )
            self._fresh = False

    def update(self, text: str) -> None:
        """Several edits at once: the analysis finds the changed region by comparing the texts."""
        self.text = text
        if self._analysis is not None:
            self._analysis.update(text)
            self._fresh = False

    def match(self, module_file: ModuleFile, context: RuleContext) -> tuple[tuple[Finding, ...], tuple[Problem, ...]]:
        """Findings of every class and function, matching only units the analysis re-created.

        The rule engine matches each class and function on its own, and the incremental analysis
        hands back the very same object for a unit it took from its cache; so findings are cached per
        unit object, and an edit re-matches the edited units only.
        """
        from adopter.engine import check

        if context.environment is None:
            return (), ()
        if self._matched_with is not context:
            self._matched, self._matched_with = {}, context
        units: list[tuple[Architecture | Forward, ModuleFile]] = [
            (arch, ModuleFile(module_file.path, (arch,))) for arch in module_file.architectures
        ] + [(fn, ModuleFile(module_file.path, (), functions=(fn,))) for fn in module_file.functions]
        fresh: dict[int, tuple[object, tuple[Finding, ...], tuple[Problem, ...]]] = {}
        findings: list[Finding] = []
        problems: list[Problem] = []
        for unit, single in units:
            cached = self._matched.get(id(unit))
            if cached is None or cached[0] is not unit:
                result = check(single, context.rules, context.environment)
                cached = (unit, tuple(result.findings), tuple(result.problems))
            fresh[id(unit)] = cached
            findings.extend(cached[1])
            problems.extend(cached[2])
        self._matched = fresh
        findings.sort(key=lambda f: (f.span.start_line, f.span.start_col, f.rule_id))
        return tuple(findings), tuple(problems)

    def module_file(self) -> tuple[ModuleFile, str]:
        """The analysis of the current text, and whether it came from an incremental re-parse."""
        how = "full" if self._fresh else "incremental"
        self._fresh = True
        if self._analysis is not None:
            return self._analysis.result(), how
        from adopter.analysis import analyse

        return analyse(self.text, self.path), "full"


def analyse_python(model: PythonModel, version: int | None, context: RuleContext) -> Snapshot:
    """Analyse the model's current text and match the rules; failures become problems."""
    started = time.perf_counter()
    snapshot = Snapshot(version=version, text=model.text, rule_problems=context.problems)
    try:
        snapshot.module_file, snapshot.reparsed = model.module_file()
    except ImportError as exc:
        snapshot.problems = (_problem(f"Adopter analysis is not available ({exc})", UNAVAILABLE),)
    except Exception as exc:
        snapshot.problems = (failure("analysis", exc),)
        model.reset(model.text)  # an incremental state that failed once is not trusted again
    if snapshot.module_file is not None and context.environment is not None:
        try:
            snapshot.findings, problems = model.match(snapshot.module_file, context)
            snapshot.problems += problems
        except Exception as exc:
            snapshot.problems += (failure("rule matching", exc),)
    snapshot.elapsed_ms = (time.perf_counter() - started) * 1000
    return snapshot


def analyse_rule_file(text: str, path: str | None, version: int | None) -> Snapshot:
    """Parse a `.adl` rule file; syntax and semantic errors become problems."""
    started = time.perf_counter()
    snapshot = Snapshot(version=version, text=text)
    try:
        from adopter.dsl import DslError, parse_rules
    except ImportError as exc:
        snapshot.problems = (_problem(f"the Adopter DSL parser is not available ({exc})", UNAVAILABLE),)
        return snapshot
    try:
        snapshot.rules = tuple(parse_rules(text, path))
    except DslError as exc:
        snapshot.problems = (exc.problem,)
    except Exception as exc:
        snapshot.problems = (failure("parsing the rule file", exc),)
    snapshot.elapsed_ms = (time.perf_counter() - started) * 1000
    return snapshot
