"""Fixing a whole file with given rules and environment: `adopter.session.Session.fix` under the old name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adopter.dsl.types import Problem, Rule
from adopter.engine import Environment
from adopter.engine.types import Finding
from adopter.synth.types import Skipped


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
    """Apply every verified fix of `rules` to `source`, to a fixed point; never raises."""
    from adopter.session import RuleContext, Session

    out = Session(RuleContext(tuple(rules), (), env)).fix(source, path, target=target)
    return FileFix(source, out.new_source, out.applied, tuple(Skipped(f, r) for f, r in out.skipped), out.problems)
