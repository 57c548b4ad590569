"""Loss methods of a module read like its forward: `compute_loss(self, batch)`, `loss(self, x, y)`.

Language models often compute their loss outside `forward`, in a method that calls the model and
applies cross-entropy to the logits:

    def compute_loss(self, idx, targets):
        logits = self(idx)                      # or self.forward(idx), or self.lm_head(self.body(idx))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

Such a method (any method of an `nn.Module` other than `forward` and `__init__` whose text mentions a
cross-entropy) becomes an `Architecture` named `Class.method`: the class's `__init__` bindings and the
method's ops, with `self(...)`/`self.forward(...)` and same-class helpers inlined as in a forward, so the
rules that join a layer of `__init__` with ops of a forward (family 16: the LM head and the loss) match
there. A site found both here and in `forward` has the same spans and is reported once.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from adopter.analysis.idioms.method_forward import method_architecture
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture, Problem

_SKIP = frozenset({"forward", "__init__"})


def file_mentions_loss(occurs: Callable[[bytes], bool]) -> bool:
    """A cheap test before looking at classes: whether the file mentions a cross-entropy at all
    (`occurs(word)`: whether the file holds `word`, `SourceText.occurs`)."""
    return occurs(b"ross_entropy") or occurs(b"rossEntropy")


def loss_methods(methods: dict[str, Node], class_node: Node,
                 contains: Callable[[Node, bytes], bool]) -> list[tuple[str, Node]]:
    """The methods of a module class that may compute a cross-entropy loss (`contains(node, word)`: whether
    a node's source holds `word`, `SourceText.contains`)."""
    if not _mentions(class_node, contains):
        return []
    return [(name, node) for name, node in methods.items() if name not in _SKIP and _mentions(node, contains)]


def _mentions(node: Node, contains: Callable[[Node, bytes], bool]) -> bool:
    """Whether `node`'s source names a cross-entropy. Word look-ups, not a regular expression per node:
    this runs on every class of the file at every keystroke."""
    return contains(node, b"cross_entropy") or contains(node, b"CrossEntropy")


def loss_method_architecture(
    class_name: str, method: str, node: Node, src: SourceText, symbols: ModuleSymbols, table: ClassTable
) -> tuple[Architecture, list[Problem]]:
    """The class's `__init__` with `method` read as its forward, named `Class.method`."""
    return method_architecture(class_name, f"{class_name}.{method}", method, node, src, symbols, table)
