"""Static architecture extraction from PyTorch source with tree-sitter (never imports the analysed code).

`analyse(source, path)` gives a `ModuleFile`; `adopter.analysis.incremental.DocumentAnalysis` is the
incremental form the language server keeps per open document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adopter.analysis.analyser import Analyser
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.parse.source import check_input, new_parser
from adopter.dsl.types import ModuleFile, Problem, Severity

if TYPE_CHECKING:
    from tree_sitter import Tree


def analyse(
    source: str | bytes,
    path: str | None = None,
    *,
    resolver: ModuleResolver | None = None,
    reach: CrossFileReach | None = None,
    tree: Tree | None = None,
) -> ModuleFile:
    """Every nn.Module class of `source` as an Architecture, plus functions and problems; never raises.

    `resolver` finds base classes imported from other files (default: the workspace on disk, from `path`);
    `reach` resolves what imported constructors compute (default: jedi over the disk, with the default
    resolver only; `ADOPTER_CROSSFILE=0` turns it off). `tree`: the tree-sitter tree of exactly `source`
    when the caller parsed it already (`adopter.session` shares one parse with the fix planning).
    """
    try:
        data, problem = check_input(source, path)
        if data is None:
            return ModuleFile(path, (), (problem,) if problem is not None else ())
        # The same code path as the incremental DocumentAnalysis, with a fresh (empty) cache.
        if tree is None:
            tree = new_parser().parse(data)
        return Analyser(resolver, reach, remember=False).run(data, tree, path)
    except Exception as exc:  # the contract: never raise, report
        return ModuleFile(
            path,
            (),
            (Problem(f"internal error: {type(exc).__name__}: {exc}", None, path, Severity.ERROR, "internal-error"),),
        )


__all__ = ["CrossFileReach", "ModuleResolver", "analyse"]
