"""The one owner of "analysis -> rule matching -> fix decision", shared by the CLI, the server and synth.

A `Session` holds the rules (bundled, `.adopter/rules/`, configured paths) and the environment (device,
installed kernels) once, and per text (keyed by path and the text itself, so an unchanged text is
never analysed twice) its `Analysed`: the `ModuleFile`, the findings, the problems and, computed
lazily and cached, each finding's `Decision`, in two strengths. `planned` (what `check` reports): the
finding's strategy, the code `fix` runs, plans edits that splice into whole statements; no rewritten
text is analysed. `decision` (the quick fix, and `fix` for what it writes): that rewrite applied and
verified (`adopter.synth.rewrite`). The two agree over the corpus (`tests/session/test_fix_contract.py`);
a planned site whose rewrite fails verification is reported by `fix` as not fixed, with the reason.
`Session.fix` rewrites until nothing fixable is left (a fixed point) and reports what it left alone at
the lines of the text it was given, never inside code it wrote itself; a class a fix wrote does not
repeat its base class's findings (`_without_copies`).

Pure: no pygls, lsprotocol or torch. The session drives `adopter.synth`, a leaf: synth plans and applies
edits and verifies a rewrite with the reading this session passes it (`reanalyse`), never calling back.
It is imported when a fix is first planned (a server that only shows findings starts without it).
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from adopter.dsl.types import Architecture, Forward, ModuleFile, Problem, Rule, Severity, Span
from adopter.engine.types import Finding

if TYPE_CHECKING:
    from adopter.analysis.crossfile.reach import CrossFileReach
    from adopter.analysis.incremental import DocumentAnalysis
    from adopter.engine.environment import Environment
    from adopter.engine.file_uses import StatementMemo
    from adopter.engine.sites import MatchMemo
    from adopter.parsed import ParsedText
    from adopter.synth.rewrite import Plan
    from adopter.synth.types import RewriteResult

UNAVAILABLE = "adopter-unavailable"  # the code of problems saying a layer is missing
MAX_FIX_ROUNDS = 8  # a fix can expose another site (a chain that becomes consecutive); bound the rounds
GENERATED_MARK = "Added by Adopter (rule "  # in the docstring of every class a fix writes (synth strategies)
CACHE_SIZE = 16  # analysed texts kept per session (the open document's last versions, a fix's result)


@dataclass(frozen=True, slots=True)
class RuleContext:
    """The rules and environment every finding and fix decision of a session is computed with."""

    rules: tuple[Rule, ...]
    problems: tuple[Problem, ...] = ()
    environment: Environment | None = None  # None when the engine is not available


def load_context(*, rule_paths: Sequence[str | Path] = (), root: Path | None = None,
                 select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
                 target: str = "auto") -> RuleContext:
    """Bundled rules, `.adopter/rules/` of `root`, and `rule_paths` (relative ones to `root`); the
    environment for `target`. Never raises: a failure becomes a problem."""
    try:
        from adopter.engine import detect_environment, load_rules, workspace_rule_paths
    except ImportError as exc:
        return RuleContext((), (problem(f"Adopter rules are not available in this installation ({exc})",
                                         UNAVAILABLE),))
    extra: list[str] = []
    for entry in rule_paths:
        path = Path(entry).expanduser()
        extra.append(str(path if path.is_absolute() or root is None else root / path))
    try:
        if root is not None:
            extra = [*(str(p) for p in workspace_rule_paths(root)), *extra]
        ruleset = load_rules(tuple(extra), select=list(select) if select else None,
                             ignore=list(ignore) if ignore else None)
        environment = detect_environment(target)
    except ValueError:
        raise  # a bad selector is the caller's usage error
    except Exception as exc:  # a broken engine must not take the caller down
        return RuleContext((), (problem(f"Adopter: loading rules failed ({type(exc).__name__}: {exc})"),))
    return RuleContext(tuple(ruleset.rules), tuple(ruleset.problems), environment)


def rules_near(path: str | None) -> tuple[Path, ...]:
    """The `.adopter/rules/` files of the nearest folder above `path` that has any."""
    from adopter.engine import workspace_rule_paths

    if path is None:
        return ()
    for folder in Path(path).resolve().parents:
        found = workspace_rule_paths(folder)
        if found:
            return tuple(found)
    return ()


def problem(message: str, code: str = "adopter-internal", severity: Severity = Severity.WARNING) -> Problem:
    """A problem of the whole text (no span in it): a layer missing or failing, for the CLI and the server."""
    return Problem(message=message, span=Span(0, 0, 0, 0), severity=severity, code=code)


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether one finding is fixed by `fix` (for one target), and why not; the verified new text."""

    fixable: bool
    reason: str | None = None
    new_source: str | None = None


def _site(finding: Finding) -> tuple[object, ...]:
    s = finding.span
    # The statements too: two containers called in one statement are two sites with one span; and the
    # __init__ lines: two pairs of one Sequential's items, called in one statement, are two sites.
    return (finding.rule_id, finding.scope_name, s.start_line, s.start_col, s.end_line, s.end_col,
            finding.stmt_spans, finding.init_spans)


@dataclass(eq=False)
class Analysed:
    """One text's analysis, findings and problems; fix decisions are filled in lazily, per target."""

    text: str
    path: str | None
    module_file: ModuleFile
    findings: tuple[Finding, ...]
    problems: tuple[Problem, ...]  # analysis problems first, then rule-matching problems
    complete: bool = True  # False when rule matching failed: such a result is never reused
    decisions: dict[tuple[object, ...], Decision] = field(default_factory=dict)  # verified, and planned
    plans: dict[tuple[object, ...], Plan] = field(default_factory=dict)  # each site's edits, per target
    # The text's lines, outline, imports and `ast` trees for fix planning and verification, cut with the
    # analysis's own tree-sitter tree when the session analysed the text (built on first use otherwise).
    _parsed: ParsedText | None = None

    @property
    def parsed(self) -> ParsedText:
        if self._parsed is None:
            from adopter.parsed import ParsedText

            self._parsed = ParsedText.of(self.text)
        return self._parsed

    @property
    def lines(self) -> Sequence[str]:
        """`text.split("\\n")`: the shared lines of `parsed` when it is built (split once per text)."""
        return self._parsed.lines if self._parsed is not None else self.text.split("\n")

    @property
    def parses(self) -> bool:
        return not any(p.severity == Severity.ERROR for p in self.module_file.problems)

    def architecture(self, name: str) -> Architecture | None:
        for arch in self.module_file.architectures:
            if arch.name == name:
                return arch
        return None


class UnitMatcher:
    """Findings of a `ModuleFile` matched per class and function, re-matching only changed units.

    The incremental analysis hands back the very same `Architecture`/`Forward` object for a unit it
    took from its cache; the findings of a unit are kept with the unit object itself (held, so an id
    is never reused while cached) and the context they were matched with. The units' findings then
    go through the engine's file-level reduction (one finding per site across classes: an inherited
    forward is the defining class's site), so the result equals `check` of the whole file.

    `remember=False`: matched once (`Session.analysed` of a text), so no rule's result is kept for a later
    match (`MatchMemo`, with the questions each rule asked of `__init__`).
    """

    def __init__(self, *, remember: bool = True) -> None:
        self.remember = remember
        self._cache: dict[int, tuple[object, tuple[Finding, ...], tuple[Problem, ...]]] = {}
        # The units the last match dropped (one generation): the analysis hands back a unit's previous
        # object when its text returns (a keystroke deleted again, an undo), and its findings are here.
        self._older: dict[int, tuple[object, tuple[Finding, ...], tuple[Problem, ...]]] = {}
        self._context: RuleContext | None = None
        # The last file-level reduction: its input findings (the objects, in order), class spans and result.
        self._reduced: tuple[list[Finding], dict[str, Span], tuple[Finding, ...]] | None = None
        # Each rule's last result per scope, reused when only `__init__` changed in ways its matching did
        # not ask about (`adopter.engine.sites.MatchMemo`).
        self._memo: MatchMemo | None = None
        self._wrapped_memo: dict[tuple[int, tuple[Span, ...]], tuple[Finding, Finding]] = {}

    def match(self, module_file: ModuleFile, context: RuleContext) -> tuple[tuple[Finding, ...], tuple[Problem, ...]]:
        from adopter.engine import check
        from adopter.engine.passed_in import chain_statements
        from adopter.engine.sites import MatchMemo, reduce_sites

        if context.environment is None:
            return (), ()
        if self._context is not context or self._memo is None:
            self._cache, self._older, self._context, self._reduced = {}, {}, context, None
            self._memo = MatchMemo()
        units: list[tuple[Architecture | Forward, ModuleFile]] = []
        units.extend((arch, ModuleFile(module_file.path, (arch,))) for arch in module_file.architectures)
        units.extend((fn, ModuleFile(module_file.path, (), functions=(fn,))) for fn in module_file.functions)
        units.extend((chain, ModuleFile(module_file.path, (), chains=(chain,))) for chain in module_file.chains)
        fresh: dict[int, tuple[object, tuple[Finding, ...], tuple[Problem, ...]]] = {}
        # A chain's container passed to another class runs at that class's call (`engine.passed_in`):
        # read from the whole file, applied to the chain's findings (the same objects while unchanged).
        wrapped = chain_statements(module_file)
        wrapped_memo: dict[tuple[int, tuple[Span, ...]], tuple[Finding, Finding]] = {}
        findings: list[Finding] = []
        problems: list[Problem] = []
        last_units: dict[tuple[type, str], list[tuple[object, tuple[Finding, ...], tuple[Problem, ...]]]] | None = None
        for unit, single in units:
            cached = self._cache.get(id(unit))
            if cached is None or cached[0] is not unit:
                cached = self._older.get(id(unit))
                if cached is not None and cached[0] is unit:  # an edit undone: its forward is current again
                    forward = unit.forward if isinstance(unit, Architecture) else unit
                    if forward is not None:
                        self._memo.restored(unit.name, forward)
            if (cached is None or cached[0] is not unit) and self.remember:
                if last_units is None:  # the last match's units by name, read once a unit has changed
                    last_units = {}
                    for entry in self._cache.values():
                        if isinstance(entry[0], Architecture | Forward):
                            last_units.setdefault((type(entry[0]), entry[0].name), []).append(entry)
                cached = self._carried(unit, last_units, self._memo)
            if cached is None or cached[0] is not unit:
                result = check(single, context.rules, context.environment, self._memo if self.remember else None)
                cached = (unit, tuple(result.findings), tuple(result.problems))
            fresh[id(unit)] = cached
            extra = wrapped.get(id(unit)) if wrapped else None
            findings.extend(self._wrapped(cached[1], extra, wrapped_memo) if extra else cached[1])
            problems.extend(cached[2])
        self._wrapped_memo = wrapped_memo
        self._older = {k: v for k, v in self._cache.items() if k not in fresh}
        self._cache = fresh
        self._memo.keep_only({unit.name for unit, _ in units})
        class_spans = {a.name: a.span for a in module_file.architectures}
        last = self._reduced
        # `reduce_sites` is a function of the (immutable) findings and the class spans: when every unit
        # handed back the same finding objects (most edits re-match nothing, or a unit without findings),
        # its last result stands.
        if (last is not None and len(last[0]) == len(findings) and all(map(operator.is_, last[0], findings))
                and last[1] == class_spans):
            return last[2], tuple(problems)
        reduced = reduce_sites(findings, class_spans)
        self._reduced = (findings, class_spans, reduced)
        return reduced, tuple(problems)

    def unreduced(self) -> tuple[Finding, ...]:
        """The last `match`'s findings of every scope, before `reduce_sites` made them one per site."""
        return tuple(self._reduced[0]) if self._reduced is not None else ()

    @staticmethod
    def _carried(unit: Architecture | Forward,
               last_units: dict[tuple[type, str], list[tuple[object, tuple[Finding, ...], tuple[Problem, ...]]]],
               memo: MatchMemo | None = None) -> tuple[object, tuple[Finding, ...], tuple[Problem, ...]] | None:
        """The last match's findings of the unit of the same name, carried to `unit` when an edit only moved
        its code along its lines (`adopter.engine.moved`): the same findings, at the new columns; `memo`'s rule
        results for the unit's forward carried with them."""
        from functools import partial

        from adopter.engine.moved import carried, moved_points

        for old, found, problems in last_units.get((type(unit), unit.name), ()):
            points = moved_points(old, unit)
            if points is None:
                continue
            new_found, new_problems = carried(found, points), carried(problems, points)
            if new_found is not None and new_problems is not None:
                assert isinstance(old, Architecture | Forward)
                old_forward = old.forward if isinstance(old, Architecture) else old
                new_forward = unit.forward if isinstance(unit, Architecture) else unit
                if memo is not None and old_forward is not None and new_forward is not None:
                    memo.carry(unit.name, old_forward, new_forward, partial(carried, points=points))
                return (unit, new_found, new_problems)  # type: ignore[return-value]
        return None

    def _wrapped(self, found: tuple[Finding, ...], extra: tuple[Span, ...],
                 memo: dict[tuple[int, tuple[Span, ...]], tuple[Finding, Finding]]) -> tuple[Finding, ...]:
        """A chain's findings with the other statements that run it (`extra`), the same objects as last time."""
        from adopter.engine.passed_in import with_statements

        out: list[Finding] = []
        for f in found:
            key = (id(f), extra)
            last = self._wrapped_memo.get(key)
            done = last[1] if last is not None and last[0] is f else with_statements(f, extra)
            memo[key] = (f, done)
            out.append(done)
        return tuple(out)


class OpenText:
    """One open document's analysis kept between edits: tree-sitter re-parses only the edited region,
    unchanged classes keep their analysis (`adopter.analysis.incremental.DocumentAnalysis`) and their
    findings (`matcher`). The server keeps one per open Python document, on its analysis thread only;
    `Session.update` analyses and matches its current text."""

    def __init__(self, text: str, path: str | None, *, reach: CrossFileReach | None = None) -> None:
        self.path = path
        self.text = text
        self.reach = reach  # cross-file reach for the analysis (None: the process default)
        self.matcher = UnitMatcher()
        self._analysis: DocumentAnalysis | None = None
        self._fresh = True
        self._start()

    def _start(self) -> None:
        try:
            from adopter.analysis.incremental import DocumentAnalysis
        except ImportError:
            self._analysis = None  # `analyse()` of the whole text stands in
            return
        self._analysis = DocumentAnalysis(self.text, self.path, reach=self.reach)
        self._fresh = True

    def reset(self, text: str) -> None:
        """Start over from `text` (a full parse)."""
        self.text = text
        self._start()

    def apply(self, start_byte: int, old_end_byte: int, new_end_byte: int, start_point: tuple[int, int],
              old_end_point: tuple[int, int], new_end_point: tuple[int, int], text: str) -> None:
        """One edit (tree-sitter's arguments), `text` being the whole document after it."""
        self.text = text
        if self._analysis is not None:
            full = self._analysis.released  # no tree to re-parse from: a full parse
            self._analysis.apply_edit(start_byte, old_end_byte, new_end_byte, start_point, old_end_point,
                                      new_end_point, text)
            self._fresh = full

    def update(self, text: str) -> None:
        """Several edits at once: the analysis finds the changed region by comparing the texts."""
        self.text = text
        if self._analysis is not None:
            full = self._analysis.released and text != self._analysis.text
            self._analysis.update(text)
            self._fresh = full

    def prepare(self) -> None:
        """Work the first broken keystroke would do, done now (`DocumentAnalysis.prepare`): the server calls
        it when a document is opened, after its analysis. A pure cache; never raises."""
        if self._analysis is not None:
            self._analysis.prepare()

    @property
    def released(self) -> bool:
        """Whether the parse trees are dropped (`release`)."""
        return self._analysis is not None and self._analysis.released

    def release(self) -> None:
        """Drop the parse trees and the text's bytes, keeping the analysis of each unit and the findings:
        the next edit parses the whole text (not incrementally) and re-analyses and re-matches only the
        units that changed. For documents nobody is editing (`adopter.lsp.documents.Analyses`)."""
        if self._analysis is not None:
            self._analysis.release()

    def module_file(self) -> tuple[ModuleFile, str]:
        """The analysis of the current text, and "incremental" when it came from a re-parse of an edit."""
        how = "full" if self._fresh else "incremental"
        self._fresh = True
        if self._analysis is not None:
            return self._analysis.result(), how
        from adopter.analysis import analyse

        return analyse(self.text, self.path, reach=self.reach), "full"


@dataclass(frozen=True, slots=True)
class FileFix:
    """The outcome of fixing one text: the verified new text, what was fixed, and what was left alone.

    `skipped` findings carry spans of the *original* text (the file the user has); findings inside
    code the fix wrote are not among them.
    """

    old_source: str
    new_source: str
    applied: tuple[Finding, ...]
    skipped: tuple[tuple[Finding, str], ...]
    problems: tuple[Problem, ...] = ()
    parses: bool = True

    @property
    def changed(self) -> bool:
        return self.new_source != self.old_source


class Session:
    """Rules, environment and the analyses of recent texts; the fix decisions of their findings.

    Thread-safety: the server calls a session from its one analysis thread only; the CLI from its
    main thread. The cache has its own lock so a stray reader cannot corrupt it.
    """

    def __init__(self, context: RuleContext, *, analyse: Callable[[str, str | None], ModuleFile] | None = None,
                 reach: CrossFileReach | None = None) -> None:
        self.context = context
        self._analyse = analyse
        self.reach = reach  # cross-file reach of the analyses this session runs (None: the process default)
        self._cache: OrderedDict[tuple[str | None, str], Analysed] = OrderedDict()
        self._lock = threading.Lock()
        self.analyses = 0  # full analyses this session ran (for the benchmarks and tests)
        # Fix verdicts by what they depend on: the site and the text of the class (or function) holding
        # it, positions relative to that unit. Typing elsewhere in the file keeps them (see `verdict`).
        self._verdicts: OrderedDict[tuple[object, ...], Decision] = OrderedDict()
        # The use tables of the top-level statements of the texts this session analysed (the callee check,
        # `engine.file_uses`): a keystroke re-reads only the statement it is in. Made at the first check.
        self._statement_uses: StatementMemo | None = None

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.context.rules

    def forget(self) -> None:
        """Drop remembered analyses and fix verdicts: files they read changed (cross-file reach)."""
        with self._lock:
            self._cache.clear()
            self._verdicts.clear()

    # -- analysis and matching ------------------------------------------------------------------

    def analyse(self, text: str, path: str | None = None) -> ModuleFile:
        """The `ModuleFile` of `text` (cached with its findings; see `analysed`)."""
        return self.analysed(text, path).module_file

    def analysed(self, text: str, path: str | None = None) -> Analysed:
        """Analysis, findings and problems of `text`; an unchanged text is not analysed again."""
        key = (path, text)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        parsed: ParsedText | None = None
        if self._analyse is not None:
            module_file = self._analyse(text, path)
        else:
            from adopter.analysis import analyse
            from adopter.analysis.parse.source import check_input, new_parser
            from adopter.parsed import ParsedText

            data, _ = check_input(text, path)
            tree = new_parser().parse(data) if data is not None else None
            module_file = analyse(text, path, tree=tree, reach=self.reach)  # one parse for analysis and planning
            parsed = ParsedText(text, tree) if tree is not None else None
        self.analyses += 1
        analysed = self._matched(text, path, module_file, None)
        analysed._parsed = parsed
        return self._remember(analysed)

    def update(self, document: OpenText) -> tuple[Analysed, str]:
        """The analysis and findings of an open document's current text (re-parsed incrementally; see
        `adopt`), and how it was parsed ("full" or "incremental"). Raises when the analysis fails."""
        module_file, how = document.module_file()
        return self.adopt(document.text, document.path, module_file, document.matcher), how

    def adopt(self, text: str, path: str | None, module_file: ModuleFile, matcher: UnitMatcher) -> Analysed:
        """Findings of a `ModuleFile` the caller analysed itself (the server's incremental analysis, which
        equals the fresh analysis of `text`, broken text included: `adopter.analysis.parse.salvage`)."""
        return self._remember(self._matched(text, path, module_file, matcher))

    def _matched(self, text: str, path: str | None, module_file: ModuleFile, matcher: UnitMatcher | None) -> Analysed:
        problems = list(module_file.problems)
        findings: tuple[Finding, ...] = ()
        complete = True
        if self.context.environment is not None:
            try:
                units = matcher or UnitMatcher(remember=False)
                findings, found = units.match(module_file, self.context)
                problems.extend(found)
                if findings:
                    from adopter.engine.file_uses import StatementMemo
                    from adopter.engine.sites import with_callees_checked

                    if self._statement_uses is None:
                        self._statement_uses = StatementMemo()
                    findings = with_callees_checked(text, module_file, findings, units.unreduced(),
                                                    self._statement_uses)
            except Exception as exc:  # a failing engine is a problem, never a dead caller
                problems.append(problem(f"Adopter: rule matching failed ({type(exc).__name__}: {exc})"))
                complete = False
        return Analysed(text, path, module_file, _without_copies(text, module_file, findings), tuple(problems),
                        complete)

    def _remember(self, analysed: Analysed) -> Analysed:
        if not analysed.complete:
            return analysed
        key = (analysed.path, analysed.text)
        with self._lock:
            existing = self._cache.get(key)
            if existing is not None:  # keep the first: its decisions may already be computed
                self._cache.move_to_end(key)
                return existing
            self._cache[key] = analysed
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return analysed

    # -- fix decisions ----------------------------------------------------------------------------

    def decision(self, analysed: Analysed, finding: Finding, target: str | None = None) -> Decision:
        """Whether `fix` rewrites `finding` (for `target`, or the preferred one); computed once."""
        key = (_site(finding), target)
        cached = analysed.decisions.get(key)
        if cached is not None:
            return cached
        if not finding.fixable:  # the engine knows up front (no rewrite, no target, straddles code)
            result = Decision(False, finding.no_fix_reason or "no automatic fix for this site")
        else:
            result = self._rewrite_one(analysed, finding, target)
        analysed.decisions[key] = result
        return result

    def _rewrite_one(self, analysed: Analysed, finding: Finding, target: str | None) -> Decision:
        from adopter.synth.types import Rewritten

        outcome = self._rewrite(analysed, [finding], target)
        if isinstance(outcome, Rewritten) and outcome.applied:
            return Decision(True, None, outcome.new_source)
        reasons = [s.reason for s in outcome.skipped] or [getattr(outcome, "reason", "no automatic fix")]
        return Decision(False, reasons[0])

    def _plan(self, analysed: Analysed, finding: Finding, target: str | None) -> Plan:
        """The site's edits (its strategy's plan, when it splices into whole statements) or why it has
        none; the strategy runs once per site, target and text."""
        key = (_site(finding), target)
        cached = analysed.plans.get(key)
        if cached is None:
            from adopter.synth.rewrite import splices

            rule = next((r for r in self.rules if r.id == finding.rule_id), None)
            cached = splices(analysed.parsed, finding, rule, target, analysed.findings)
            analysed.plans[key] = cached
        return cached

    def _rewrite(self, analysed: Analysed, findings: Sequence[Finding], target: str | None) -> RewriteResult:
        """The verified rewrite of `findings` in `analysed`'s text; the rewritten text is read (and kept)
        through this session's cache."""
        from adopter.synth.rewrite import rewrite

        path = analysed.path
        return rewrite(analysed, findings, lambda text: self.analysed(text, path),
                       lambda f: self._plan(analysed, f, target))

    def rewrite(self, text: str, findings: Sequence[Finding], *, target: str | None = None,
                path: str | None = None) -> RewriteResult:
        """Rewrite `findings` (found in `text`) at once, verified; never raises."""
        return self._rewrite(self.analysed(text, path), findings, target)

    def verdict(self, analysed: Analysed, finding: Finding, target: str | None = None) -> Decision:
        """The decision without its text, reused across versions while the finding's class is unchanged.

        For the editor's action list, asked again after every keystroke: the rewrite of a site edits its
        own class (plus imports and new module code), so a change elsewhere keeps the verdict. The fix
        itself (`decision`) is always computed and verified on the exact text.
        """
        key = self._verdict_key(analysed, finding, target)
        if key is not None:
            with self._lock:
                hit = self._verdicts.get(key)
            if hit is not None:
                return hit
        decided = self.decision(analysed, finding, target)
        result = Decision(decided.fixable, decided.reason)
        if key is not None:
            with self._lock:
                self._verdicts[key] = result
                while len(self._verdicts) > 256:
                    self._verdicts.popitem(last=False)
        return result

    def _verdict_key(self, analysed: Analysed, finding: Finding, target: str | None) -> tuple[object, ...] | None:
        units = [a.span for a in analysed.module_file.architectures if a.name == finding.scope_name] + [
            fn.span for fn in analysed.module_file.functions if fn.name == finding.scope_name]
        if len(units) != 1 or not units[0].contains(finding.span):
            return None
        unit = units[0]
        lines = analysed.lines[unit.start_line : unit.end_line + 1]

        def rel(sp: Span) -> tuple[int, int, int, int]:
            return (sp.start_line - unit.start_line, sp.start_col, sp.end_line - unit.start_line, sp.end_col)

        if any(not unit.contains(sp) for sp in finding.init_spans):
            return None  # an __init__ binding in another class (an inherited one): not local
        return (analysed.path, finding.rule_id, finding.scope_name, "\n".join(lines), target,
                rel(finding.span), tuple(map(rel, finding.stmt_spans)), tuple(map(rel, finding.init_spans)))

    def planned(self, analysed: Analysed, finding: Finding, target: str | None = None) -> Decision:
        """Whether `fix` rewrites `finding`, decided without verifying: the strategy plans edits that
        splice into whole statements (`adopter.synth.rewrite.splices`); no rewritten text is analysed.

        What `check` reports. `fix` and the quick fix verify what they write (`decision`); a verified
        decision already computed for this text wins. Cached per text.
        """
        verified = analysed.decisions.get((_site(finding), target))
        if verified is not None:
            return Decision(verified.fixable, verified.reason)
        key = (_site(finding), target, "planned")
        cached = analysed.decisions.get(key)
        if cached is not None:
            return cached
        if not finding.fixable:
            result = Decision(False, finding.no_fix_reason or "no automatic fix for this site")
        else:
            plan = self._plan(analysed, finding, target)
            result = Decision(False, plan) if isinstance(plan, str) else Decision(True)
        analysed.decisions[key] = result
        return result

    def fixable(self, analysed: Analysed, target: str | None = None) -> tuple[Finding, ...]:
        """The findings `fix` rewrites in this text (`planned` decisions: what `check` calls fixable)."""
        return tuple(f for f in analysed.findings if self.planned(analysed, f, target).fixable)

    def fix(self, text: str, path: str | None = None, *, rules: Sequence[str] | None = None,
            target: str | None = None, exclude: Mapping[tuple[str, str], str] | None = None) -> FileFix:
        """Rewrite every fixable site, again on the result, until nothing fixable is left; never raises.

        `rules`: only findings of these rule ids. `exclude`: sites never rewritten, by (rule id, scope
        name: the class or function holding the site), each with the reason it is left (`fix
        --verify-run` withdraws the fixes whose run disagrees). What is left is reported at lines of `text`.
        """
        from adopter.synth.types import Rewritten

        first = self.analysed(text, path)
        if not first.parses:
            return FileFix(text, text, (), (), first.problems, parses=False)
        current, analysed = text, first
        applied: list[Finding] = []
        refused: dict[tuple[object, ...], str] = {}  # planned sites whose rewrite failed verification
        withheld = exclude or {}
        for _ in range(MAX_FIX_ROUNDS):
            todo = [f for f in self.fixable(analysed, target)
                    if (rules is None or f.rule_id in rules) and _where(analysed, f) not in refused
                    and (f.rule_id, f.scope_name) not in withheld]
            if not todo:
                break
            # One verification for the whole round; `rewrite` grows the batch one finding at a time
            # only when the batch as a whole fails.
            outcome = self._rewrite(analysed, todo, target)
            for skip in outcome.skipped:
                refused[_where(analysed, skip.finding)] = skip.reason
            if not isinstance(outcome, Rewritten) or not outcome.applied or outcome.new_source == current:
                for f in todo:  # nothing could be written: never try these again
                    refused.setdefault(_where(analysed, f), getattr(outcome, "reason", "the rewrite changed nothing"))
                continue
            applied.extend(outcome.applied)
            current = outcome.new_source
            analysed = self.analysed(current, path)
        left = [(f, withheld.get((f.rule_id, f.scope_name)) or refused.get(_where(analysed, f))
                 or self.planned(analysed, f, target).reason or "no automatic fix")
                for f in analysed.findings if rules is None or f.rule_id in rules]
        moved = _in_original(text, current, left)
        if current != text:
            # A reason may quote lines (`lines 832, 844, 845`): for a site the user's text has too, and
            # that no round refused, give the reason decided on the user's text.
            original = {(f.rule_id, f.span): f for f in first.findings}
            for i, (f, reason) in enumerate(moved):
                same = original.get((f.rule_id, f.span))
                if same is not None and _where(first, same) not in refused and (f.rule_id, f.scope_name) not in withheld:
                    moved[i] = (f, self.planned(first, same, target).reason or reason)
        return FileFix(text, current, tuple(applied), tuple(moved), analysed.problems)


def _where(analysed: Analysed, finding: Finding) -> tuple[object, ...]:
    """A site by what survives a rewrite elsewhere in the file: rule, scope and the statements' text."""
    lines = analysed.text.split("\n")
    text = tuple("\n".join(lines[s.start_line : s.end_line + 1]) for s in (finding.span, *finding.stmt_spans))
    return (finding.rule_id, finding.scope_name, text)


def _without_copies(text: str, module_file: ModuleFile, findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
    """`findings` less those inside a class a fix wrote as a kernel subclass of a class of this file, where
    that base class has a finding of the same rule: the subclass repeats the base's code for the paths it
    keeps (BERT's SDPA subclass repeats the q/k/v projections of its eager forward), so the site is the
    base's, reported there, at the user's lines. A pattern only the written class has is still reported."""
    classes = {a.name: a for a in module_file.architectures}
    rules_in: dict[str, set[str]] = {}
    for f in findings:
        rules_in.setdefault(f.scope_name, set()).add(f.rule_id)

    def base_has(f: Finding) -> bool:
        arch = classes.get(f.scope_name)
        return arch is not None and any(f.rule_id in rules_in.get(b.rsplit(".", 1)[-1], ()) for b in arch.bases)

    candidates = [f for f in findings if base_has(f)]
    if not candidates:
        return findings
    lines = text.split("\n")
    written = {f.scope_name for f in candidates if _written_by_fix(lines, classes[f.scope_name].span)}
    return tuple(f for f in findings if not (f.scope_name in written and base_has(f)))


def _written_by_fix(lines: list[str], span: Span) -> bool:
    """Whether the class at `span` is one a fix wrote: its docstring says so (`GENERATED_MARK`)."""
    head = "\n".join(lines[span.start_line : min(span.end_line + 1, span.start_line + 12)])
    for stop in ("\n    def ", "\n    async def "):
        head = head.split(stop, 1)[0]
    return GENERATED_MARK in head


def _in_original(old: str, new: str, left: list[tuple[Finding, str]]) -> list[tuple[Finding, str]]:
    """`left` (findings of `new`) moved to the lines of `old`; those on lines the fix wrote are dropped.

    A finding is judged by its own span: one on the user's lines whose match also reads code the fix
    wrote (a GELU formula made `F.gelu` completing a Linear+GELU site in the caller) is the user's site,
    as `check` reports it; its statements on written lines are left out of the moved finding.
    """
    if old == new:
        return left
    # Lines compared without their indentation: a fix may keep the user's statements as written under a new
    # `if` (SDPA's fallback for `output_attentions`); a finding there is still on the user's lines.
    old_lines, new_lines = [line.strip() for line in old.split("\n")], [line.strip() for line in new.split("\n")]
    to_old: dict[int, int] = {}
    import difflib  # here: fixes only, not on the way to a server's first diagnostics

    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            to_old[block.b + k] = block.a + k
    out: list[tuple[Finding, str]] = []
    for finding, reason in left:
        if not all(ln in to_old for ln in range(finding.span.start_line, finding.span.end_line + 1)):
            continue  # written (or rewritten) by the fix: not the user's code
        out.append((_moved(finding, to_old), reason))
    return out


def _moved(finding: Finding, to_old: dict[int, int]) -> Finding:
    from dataclasses import replace

    def span(s: Span) -> Span:
        shift = to_old[s.start_line] - s.start_line
        return Span(s.start_line + shift, s.start_col, s.end_line + shift, s.end_col)

    def kept(spans: tuple[Span, ...]) -> tuple[Span, ...]:
        return tuple(span(s) for s in spans if s.start_line in to_old)

    return replace(finding, span=span(finding.span), stmt_spans=kept(finding.stmt_spans),
                   init_spans=kept(finding.init_spans), call_spans=kept(finding.call_spans))


def rewrite(source: str, findings: Sequence[Finding], *, target: str | None = None, path: str | None = None,
            rules: Sequence[Rule] | None = None, env: Environment | None = None) -> RewriteResult:
    """Rewrite `source` to fix `findings` (found in that same text), verified; never raises. A session
    of `rules` and `env` (or the bundled rules plus those of the nearest `.adopter/rules/` above `path`,
    and the detected environment) analyses and verifies."""
    from adopter.engine import detect_environment, load_rules
    from adopter.synth.types import RewriteFailed

    try:
        rule_list = tuple(rules) if rules is not None else tuple(load_rules(rules_near(path)).rules)
        session = Session(RuleContext(rule_list, (), env or detect_environment("auto")))
    except Exception as exc:  # the contract: results, not exceptions
        return RewriteFailed(f"internal error while rewriting: {type(exc).__name__}: {exc}")
    return session.rewrite(source, findings, target=target, path=path)
