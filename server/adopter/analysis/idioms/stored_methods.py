"""Methods a module stores in `__init__` as a value, read like its forward: `self.act = self._gelu_python`.

A module may choose its computation once, in `__init__`, by storing one of its own methods:

    def __init__(self, use_python: bool = False):
        self.act = self._gelu_python if use_python else nn.functional.gelu
    def _gelu_python(self, x):
        return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
    def forward(self, x):
        return self.act(x)

The stored method runs whenever the attribute is called, but the forward does not name it, so it is never
inlined there. Such a method (any method other than `forward` and `__init__` that `__init__` names as
`self.<method>` without calling it: stored in an attribute, passed as a callback) becomes an `Architecture`
named `Class.method`, as loss methods do (`adopter.analysis.idioms.loss_methods`). A site found both here and
in `forward` has the same spans and is reported once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

_SKIP = frozenset({"forward", "__init__"})


def stored_methods(methods: dict[str, Node], raw: Callable[[Node], bytes]) -> list[tuple[str, Node]]:
    """The methods of a class that its `__init__` names without calling (`raw(node)`: its source bytes)."""
    init = methods.get("__init__")
    if init is None:
        return []
    # One copy of `__init__`'s source searched for every method's name (not the file's positions of each
    # name: one scan of the whole file per method name, `SourceText.contains`).
    text = raw(init)
    out: list[tuple[str, Node]] = []
    for name, node in methods.items():
        word = b"self." + name.encode()
        if name in _SKIP or word not in text:
            continue
        # `self.m` not followed by a call, an attribute or a longer name (`self.m(x)`, `self.m.x`, `self.mm`)
        if re.search(re.escape(word) + rb"(?![\w.(])(?!\s+\()", text):
            out.append((name, node))
    return out
