"""Methods of a base class defined in another file, inlined into a subclass's forward (issue 20).

A model class split over two files (`class Net(NetBase)` holding only `forward`, `NetBase` in a sibling file
holding `__init__` and the helpers `forward` calls: `self._forward_impl(x)`, `self.forward_attention(...)`) is
read as if the base were in the same file: a `self.<m>(...)` that no class of the analysed file defines is
looked up in the imported bases (`idioms.inherited_methods`) and inlined like a same-file method. While its
body is walked the flow reads the base's file (its text, its imports, its classes); every op it emits is placed
at the statement of the analysed file that made the call (`PinnedText`), so that a finding names lines of the
file it is reported in. Its `via` label carries `FOREIGN` and the base's name; a match with such an op is
detection-only (`foreign_reason`): the fix would have to rewrite the base's file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

# imported at run time, not only for type checking: the native build (mypyc) resolves a dataclass's field types
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Op, Span

FOREIGN = "@"  # `self._forward_impl@NetBase`: the via label of a method inlined from a base of another file


@dataclass(frozen=True, slots=True)
class ForeignMethod:
    """A method found in a base class of another file: that file's reading and the method's definition."""

    symbols: ModuleSymbols  # the base's file
    table: ClassTable
    cls: str  # the imported base, a class of that file (the walk's class while the method runs)
    owner: str  # the class of that file that defines the method (`cls` or one of its same-file bases)
    node: Node  # its `def`
    where: str  # `NetBase (pkg/base.py:6)`


# `self.<m>` -> the method of a base of another file (None: none defines it)
BaseMethods = Callable[[str], ForeignMethod | None]


@dataclass(frozen=True, slots=True)
class Reading:
    """What the flow reads names and text through: the analysed file's, or a base's while its method runs."""

    src: SourceText
    symbols: ModuleSymbols
    table: ClassTable | None
    class_name: str | None


class PinnedText(SourceText):
    """A base's file whose every span is one statement of the analysed file (the call of its method)."""

    __slots__ = ("pinned",)

    def __init__(self, src: SourceText, pinned: Span) -> None:
        # the base's parse and memos, shared (not `SourceText.__init__`, which would index the text again)
        self.data, self.ascii, self._string, self.tree, self.path = src.data, src.ascii, src._string, src.tree, src.path
        self.index, self.memo, self._found, self.words = src.index, src.memo, src._found, src.words
        self.pinned = pinned

    def span(self, node: Node) -> Span:
        return self.pinned


def foreign_reason(ops: tuple[Op, ...]) -> str | None:
    """Why a match with ops of a method inlined from a base of another file has no automatic fix."""
    for op in ops:
        for label in op.via:
            if FOREIGN in label:
                method, _, base = label.partition(FOREIGN)
                return (f"`{method}` is a method of the base class `{base}` defined in another file; the rewrite "
                        f"would have to change that file, so change it by hand")
    return None
