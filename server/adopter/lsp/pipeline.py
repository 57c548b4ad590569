"""The analysis one open document goes through: incremental parse and per-class analysis here, then
the server's `adopter.session.Session` (rule matching, fix decisions: the same code as the CLI's).

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

from adopter.dsl.types import Architecture, ModuleFile, Problem, Rule
from adopter.engine.types import Finding
from adopter.lsp.settings import Settings
from adopter.lsp.sync import ByteEdit
from adopter.session import UNAVAILABLE, Analysed, RuleContext, Session, UnitMatcher, load_context, problem

if TYPE_CHECKING:
    from adopter.engine.environment import Environment

log = logging.getLogger(__name__)

__all__ = ["UNAVAILABLE", "Change", "Configured", "PythonModel", "Snapshot", "analyse_python", "failure"]
Change = types.TextDocumentContentChangePartial | types.TextDocumentContentChangeWholeDocument


def failure(what: str, exc: BaseException) -> Problem:
    """An internal failure as a visible problem (and a log line with the traceback)."""
    log.error("%s failed: %s", what, "".join(traceback.format_exception(exc)))
    return problem(f"Adopter: {what} failed ({type(exc).__name__}: {exc}); see the server log")


@dataclass(frozen=True)
class Configured:
    """The session (rules, environment, analyses, fix decisions) for the current settings."""

    session: Session
    settings: Settings

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.session.context.rules

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self.session.context.problems

    @property
    def environment(self) -> Environment | None:
        return self.session.context.environment


def load_rule_context(settings: Settings, root: Path | None) -> Configured:
    """Load bundled + workspace + configured rules and detect the environment; never raises."""
    try:
        context = load_context(rule_paths=settings.rule_paths, root=root, select=settings.select,
                               ignore=settings.ignore or None, target=settings.target)
    except Exception as exc:  # an unknown selector: the settings module reports it; run without rules
        context = RuleContext((), (failure("loading rules", exc),))
    return Configured(Session(context), settings)


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
    analysed: Analysed | None = None  # the session's record of this text (fix decisions are cached on it)
    session: Session | None = None  # the session that matched it (its rules and environment)
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
        self.matcher = UnitMatcher()  # findings per analysed class, re-matched only when it changes
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

    def module_file(self) -> tuple[ModuleFile, str]:
        """The analysis of the current text, and whether it came from an incremental re-parse."""
        how = "full" if self._fresh else "incremental"
        self._fresh = True
        if self._analysis is not None:
            return self._analysis.result(), how
        from adopter.analysis import analyse

        return analyse(self.text, self.path), "full"


def analyse_python(model: PythonModel, version: int | None, context: Configured) -> Snapshot:
    """Analyse the model's current text and match the rules; failures become problems."""
    started = time.perf_counter()
    snapshot = Snapshot(version=version, text=model.text, rule_problems=context.problems)
    try:
        snapshot.module_file, snapshot.reparsed = model.module_file()
    except ImportError as exc:
        snapshot.problems = (problem(f"Adopter analysis is not available ({exc})", UNAVAILABLE),)
    except Exception as exc:
        snapshot.problems = (failure("analysis", exc),)
        model.reset(model.text)  # an incremental state that failed once is not trusted again
    if snapshot.module_file is not None and context.environment is not None:
        analysed = context.session.adopt(model.text, model.path, snapshot.module_file, model.matcher)
        snapshot.analysed, snapshot.session = analysed, context.session
        snapshot.findings = analysed.findings
        snapshot.problems += analysed.problems[len(snapshot.module_file.problems):]
    snapshot.elapsed_ms = (time.perf_counter() - started) * 1000
    return snapshot


def analyse_rule_file(text: str, path: str | None, version: int | None) -> Snapshot:
    """Parse a `.adl` rule file; syntax and semantic errors become problems."""
    started = time.perf_counter()
    snapshot = Snapshot(version=version, text=text)
    try:
        from adopter.dsl import DslError, parse_rules
    except ImportError as exc:
        snapshot.problems = (problem(f"the Adopter DSL parser is not available ({exc})", UNAVAILABLE),)
        return snapshot
    try:
        snapshot.rules = tuple(parse_rules(text, path))
    except DslError as exc:
        snapshot.problems = (exc.problem,)
    except Exception as exc:
        snapshot.problems = (failure("parsing the rule file", exc),)
    snapshot.elapsed_ms = (time.perf_counter() - started) * 1000
    return snapshot
