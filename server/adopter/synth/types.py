"""Results of a rewrite: a closed union that `adopter.synth.rewrite` returns instead of raising."""

from __future__ import annotations

from dataclasses import dataclass

from adopter.engine.types import Finding


@dataclass(frozen=True, slots=True)
class Skipped:
    """A finding that was not rewritten, and why (shown to the user)."""

    finding: Finding
    reason: str


@dataclass(frozen=True, slots=True)
class Rewritten:
    """The verified new source, the findings fixed in it, and those left alone."""

    new_source: str
    applied: tuple[Finding, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.applied)


@dataclass(frozen=True, slots=True)
class RewriteFailed:
    """Nothing could be rewritten safely; `reason` says why."""

    reason: str
    skipped: tuple[Skipped, ...] = ()


RewriteResult = Rewritten | RewriteFailed
