"""Results of a rewrite (a closed union that `adopter.synth.rewrite` returns instead of raising), and what a
rewrite is given: the reading of a text (`Reading`) and how to read another (`Reanalyse`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from adopter.dsl.types import ModuleFile
from adopter.engine.types import Finding
from adopter.parsed import ParsedText


class Reading(Protocol):
    """One analysed text as synth reads it (the session's `Analysed` is one)."""

    @property
    def text(self) -> str: ...

    @property
    def module_file(self) -> ModuleFile: ...

    @property
    def findings(self) -> tuple[Finding, ...]: ...

    @property
    def parsed(self) -> ParsedText: ...


Reanalyse = Callable[[str], Reading]  # the reading of another text (a rewrite), from the caller's cache


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
