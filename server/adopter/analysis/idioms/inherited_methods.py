"""Methods a class inherits from a base defined in another file of its package (issue 20).

A model class split over two files keeps `forward` in the subclass and `__init__` with the helpers `forward`
calls in the base (torchvision's `ResNet.forward` calling `self._forward_impl(x)`, chatterbox's attention calling
`self.forward_attention(...)`, open_clip's `ModifiedResNet.stem`): the base's layers were read
(`inherited_layers`), its methods were not, so the calls stayed opaque. `base_methods` finds such a method as the
analysis finds a same-file one: in the imported bases in order, each base's own file read through the resolver
(tree-sitter, cached, never imported or run) with that file's same-file MRO, then the bases that file imports,
up to `MAX_DEPTH`. Only bases of the analysed file's own package are read (a library's base class is not the
model's organisation, and its methods are not the author's code). The flow inlines what it finds
(`flow.foreign`); the analysed class's own definitions win, as the flow looks there first.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from adopter.analysis.flow.foreign import ForeignMethod
from adopter.analysis.idioms.inherited_layers import MAX_DEPTH, imported_bases
from adopter.analysis.scope.classes import ClassTable

if TYPE_CHECKING:
    from adopter.analysis.crossfile.resolver import ModuleResolver
    from adopter.analysis.crossfile.summary import Definition
    from adopter.analysis.parse.source import SourceText


class CrossFileReach(Protocol):
    """What of `reach.CrossFileReach` the look-up reads: where an imported name is defined, and the files' reader."""

    resolver: ModuleResolver

    def definition(self, qualified: str, from_path: str) -> Definition | None: ...


class MethodsOfBases:
    """`self.<m>` of class `name` -> its definition in a base of another file of the package (`BaseMethods`),
    each name looked up once."""

    def __init__(self, reach: CrossFileReach, name: str, table: ClassTable, path: str) -> None:
        self.reach = reach
        self.bases = imported_bases(name, table)
        self.path = os.path.abspath(path)
        self.found: dict[str, ForeignMethod | None] = {}

    def __call__(self, attr: str) -> ForeignMethod | None:
        if attr not in self.found:
            try:
                self.found[attr] = self._find(self.path, self.bases, attr, 0, set())
            except (RecursionError, ValueError, OSError, SyntaxError):
                self.found[attr] = None
        return self.found[attr]

    def _find(self, path: str, bases: list[str], attr: str, depth: int, seen: set[tuple[str, str]],
              ) -> ForeignMethod | None:
        resolver = self.reach.resolver
        for qualified in bases:
            if qualified.startswith("torch."):
                continue
            d = self.reach.definition(qualified, path)
            if d is None or (d.path, d.name) in seen or not same_package(resolver, self.path, d.path):
                continue
            seen.add((d.path, d.name))
            symbols = resolver.symbols(d.path)
            if symbols is None or d.name not in symbols.classes:
                continue
            table = ClassTable(symbols, resolver, d.path)
            found = table.find_method(d.name, attr)
            if found is not None:
                return ForeignMethod(symbols, table, d.name, found[0], found[1], d.name)
            if depth < MAX_DEPTH:
                deeper = self._find(d.path, imported_bases(d.name, table), attr, depth + 1, seen)
                if deeper is not None:
                    return deeper
        return None


def same_package(resolver: ModuleResolver, path: str, other: str) -> bool:
    """Whether file `other` belongs to the top-level package of file `path` (the same directory, without one)."""
    mine, theirs = resolver.package_of(path), resolver.package_of(other)
    if mine is None or theirs is None:
        return mine is None and theirs is None and os.path.dirname(path) == os.path.dirname(os.path.abspath(other))
    return mine.split(".")[0] == theirs.split(".")[0] and _root(path, mine) == _root(other, theirs)


def _root(path: str, package: str) -> str:
    """The directory that holds the top-level package of `path` (in `package`)."""
    root = os.path.dirname(os.path.abspath(path))
    for _ in package.split("."):
        root = os.path.dirname(root)
    return root


def base_methods(reach: CrossFileReach | None, name: str, table: ClassTable, src: SourceText,
                 ) -> MethodsOfBases | None:
    """The look-up of class `name`'s methods in its bases of other files of its package, None without such a base
    (the common class: no cost)."""
    if reach is None or not src.path or name not in table.infos:
        return None
    found = MethodsOfBases(reach, name, table, src.path)
    return found if found.bases else None

