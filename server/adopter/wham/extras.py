"""The optional dependencies of the accelerator search (the `wham` extra), checked before a search runs.

A missing dependency is an input error naming what to install, never a quietly worse search: the
search refuses to start rather than, say, run WHAM without its analytical bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.util import find_spec

INSTALL = "pip install 'adopter[wham]'"
# What tracing needs whatever the strategy (the model's training step is traced with torch).
TRACING = ("torch",)


class MissingDependency(ValueError):
    """A module the search needs is not installed; the message says which and how to install it."""


def missing(modules: Iterable[str]) -> list[str]:
    """The modules of `modules` that cannot be imported."""
    out = []
    for m in modules:
        try:
            if find_spec(m) is None:
                out.append(m)
        except (ImportError, ValueError):
            out.append(m)
    return out


def require(what: str, modules: Iterable[str]) -> None:
    """Raise `MissingDependency` naming the missing modules of `modules`, which `what` needs."""
    gone = missing(modules)
    if gone:
        verb = "is" if len(gone) == 1 else "are"
        raise MissingDependency(f"{what} needs {', '.join(gone)}, which {verb} not installed: {INSTALL}")
