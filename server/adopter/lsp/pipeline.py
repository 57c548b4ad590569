"""The analysis one open document goes through: the server's `adopter.session.Session` re-parses its
`OpenText` incrementally, analyses and matches it (the same code as the CLI's), and the result becomes a
`Snapshot` for publishing.

Runs on the server's analysis thread only (never on the event loop). Every dependency is imported
lazily and guarded: a missing or failing layer turns into a visible `Problem`, never a dead server.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from adopter.dsl.types import Architecture, ModuleFile, Problem, Rule
from adopter.engine.types import Finding
from adopter.lsp.settings import Settings
from adopter.session import UNAVAILABLE, Analysed, OpenText, RuleContext, Session, load_context, problem

if TYPE_CHECKING:
    from adopter.analysis.crossfile.reach import CrossFileReach
    from adopter.engine.environment import Environment

log = logging.getLogger(__name__)

__all__ = ["UNAVAILABLE", "Configured", "Snapshot", "analyse_python", "failure", "is_rule_file"]


def is_rule_file(uri: str, language_id: str | None) -> bool:
    """`.adl` files and documents the client calls language `adopter` are rule files."""
    return language_id == "adopter" or uri.endswith(".adl")


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


def load_rule_context(settings: Settings, root: Path | None, reach: CrossFileReach | None = None) -> Configured:
    """Load bundled + workspace + configured rules and detect the environment; never raises. `reach`: the
    cross-file reach of the session's analyses (the server's deferred one; None: the process default)."""
    try:
        context = load_context(rule_paths=settings.rule_paths, root=root, select=settings.select,
                               ignore=settings.ignore or None, target=settings.target)
    except Exception as exc:  # an unknown selector: the settings module reports it; run without rules
        context = RuleContext((), (failure("loading rules", exc),))
    return Configured(Session(context, reach=reach), settings)


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


def analyse_python(document: OpenText, version: int | None, context: Configured) -> Snapshot:
    """Analyse the open document's current text through the session and match the rules; failures
    become problems."""
    started = time.perf_counter()
    snapshot = Snapshot(version=version, text=document.text, rule_problems=context.problems)
    try:
        analysed, snapshot.reparsed = context.session.update(document)
        snapshot.module_file = analysed.module_file
    except ImportError as exc:
        snapshot.problems = (problem(f"Adopter analysis is not available ({exc})", UNAVAILABLE),)
    except Exception as exc:
        snapshot.problems = (failure("analysis", exc),)
        document.reset(document.text)  # an incremental state that failed once is not trusted again
    else:
        if context.environment is not None:
            snapshot.analysed, snapshot.session = analysed, context.session
            snapshot.findings = analysed.findings
            snapshot.problems += analysed.problems[len(analysed.module_file.problems):]
    snapshot.elapsed_ms = (time.perf_counter() - started) * 1000
    return snapshot


def published_problems(snapshot: Snapshot, rule_file: bool) -> list[Problem]:
    """The problems a snapshot publishes as diagnostics, in order."""
    module_file = snapshot.module_file
    problems = list(snapshot.problems) + list(module_file.problems if module_file else ())
    if not rule_file:
        # A missing engine concerns every Python document; other rule problems (a broken rule file,
        # a selector matching nothing) are shown once as a message (see `report_rule_problems`).
        problems += [p for p in snapshot.rule_problems if p.code == UNAVAILABLE]
    return problems


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
