"""Fixing a whole file: find, rewrite, and repeat on the result until nothing more can be fixed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adopter.dsl.types import Problem, Rule
from adopter.engine import Environment, check
from adopter.engine.types import Finding
from adopter.synth.rewrite import rewrite
from adopter.synth.types import Rewritten, Skipped

MAX_ROUNDS = 4  # a fix can expose another site (e.g. a chain that becomes consecutive); bound the rounds


@dataclass(frozen=True, slots=True)
class FileFix:
    """The outcome of fixing one file: the verified new text and what was (not) fixed."""

    old_source: str
    new_source: str
    applied: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    problems: tuple[Problem, ...] = ()

    @property
    def changed(self) -> bool:
        return self.new_source != self.old_source


def fix_source(source: str, path: str | None, rules: Sequence[Rule], env: Environment,
               target: str | None = None) -> FileFix:
    """Apply every verified fix of `rules` to `source`; never raises."""
    from adopter.analysis import analyse

    current = source
    applied: list[Finding] = []
    skipped: list[Skipped] = []
    problems: list[Problem] = []
    for _ in range(MAX_ROUNDS):
        result = check(analyse(current, path), rules, env)
        problems = list(result.problems)
        # What is left unfixed is reported as of the last round (positions in the final text).
        skipped = [Skipped(f, f.no_fix_reason or "no automatic fix") for f in result.findings if not f.fixable]
        fixable = [f for f in result.findings if f.fixable]
        if not fixable:
            break
        outcome = rewrite(current, fixable, target=target, path=path, rules=rules, env=env)
        skipped.extend(outcome.skipped)
        if not isinstance(outcome, Rewritten) or not outcome.applied or outcome.new_source == current:
            break
        applied.extend(outcome.applied)
        current = outcome.new_source
    still = skipped
    return FileFix(source, current, tuple(applied), tuple(still), tuple(problems))
