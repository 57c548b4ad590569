"""Which methods of a class are read like a forward (loss, entry, stored methods), kept by the class's text.

`loss_methods`, `entry_methods` and `stored_methods` read one class's source alone (its methods, their
parameters, decorators and words), so their answer for a class whose text is unchanged is the one found
before; a keystroke changes one class. The names are kept, not the nodes (those belong to one tree): the
nodes are the current tree's, looked up in the class's `methods` as the functions return them.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

# (which reading, the class's text)
_Key = tuple[str, bytes]


class MethodReadings:
    """The readings of the classes of the last runs of one `Analyser`.

    Lifecycle: `start()` when a run begins; `methods(...)` for each class and reading during it. What the
    run before the last one found is kept too: a character typed and deleted gives its classes back."""

    def __init__(self) -> None:
        # (reading, text) -> (text, names): the text kept once, shared by the runs that read it
        self._now: dict[_Key, tuple[bytes, tuple[str, ...]]] = {}
        self._last: dict[_Key, tuple[bytes, tuple[str, ...]]] = {}
        self._older: dict[_Key, tuple[bytes, tuple[str, ...]]] = {}

    def start(self) -> None:
        """A run begins: what the run before the last one found is dropped."""
        if self._now:
            self._older, self._last, self._now = self._last, self._now, {}

    def clear(self) -> None:
        self._now, self._last, self._older = {}, {}, {}

    def methods(self, reading: str, text: bytes, methods: dict[str, Node],
                find: Callable[[], list[tuple[str, Node]]]) -> list[tuple[str, Node]]:
        """`find()` (a reading of the class whose source is `text` and whose methods are `methods`), or the
        names it gave for the same text before, with their nodes in `methods`."""
        key = (reading, text)
        found = self._now.get(key)
        if found is None:
            found = self._last.get(key)
            if found is None:
                found = self._older.get(key)
            if found is None:
                found = (text, tuple(name for name, _ in find()))
            self._now[(reading, found[0])] = found
        return [(name, methods[name]) for name in found[1]]
