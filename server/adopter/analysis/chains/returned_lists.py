"""Lists of layers a method returns for its callers to splat into `nn.Sequential(*self.method(...))`, read as chains.

VGG-style builders write the block once and splat it as often as the network needs it (pyiqa 0.1.16
`dbcnn_arch.py` `SCNN`, copied from DBCNN-PyTorch):

    self.features = nn.Sequential(*self._make_layers(3, 48, 3, 1, 1), *self._make_layers(48, 48, 3, 2, 1), ...)

    def _make_layers(self, in_ch, out_ch, ksz, stride, pad):
        if self.use_bn:
            layers = [nn.Conv2d(in_ch, out_ch, ksz, stride, pad), nn.BatchNorm2d(out_ch), nn.ReLU(True)]
        else:
            layers = [nn.Conv2d(in_ch, out_ch, ksz, stride, pad), nn.ReLU(True)]
        return layers

Each list display the method returns (`return [...]`, or a local assigned the display and returned as is)
holds children the Sequential runs one after the other, so it is a chain like a Sequential built in a
method (`adopter.analysis.chains.methods`): named `Class.method`, its layers at their constructor lines,
reported without an automatic fix. Only a method the class splats into a `nn.Sequential(...)` is read: a
list returned for another use (a `ModuleList`, a list of branches) runs nothing in order.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from adopter.analysis.chains.sequential_classes import chain_of
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Architecture

MIN_CHILDREN = 2
MAX_CHAINS = 16  # per class: a bound on generated code
_NESTED = ("function_definition", "class_definition", "decorated_definition", "lambda")


def returned_list_chains(class_name: str, src: SourceText, table: ClassTable) -> tuple[Architecture, ...]:
    """The chains of the lists the methods of module class `class_name` return to be splatted into one of
    its `nn.Sequential(...)` constructions (see the module doc)."""
    info = table.infos.get(class_name)
    if info is None:
        return ()
    splatted = {m.decode() for m in _splatted_methods(code_bytes(src, info.node))}
    chains: list[Architecture] = []
    for method in sorted(splatted):
        node = info.methods.get(method)
        if node is None or method in ("__init__", "forward"):
            continue
        displays = _returned_displays(node, src)
        if not displays:
            continue
        reader = InitAnalysis(class_name, table, src)
        reader.read_locals(node, {})
        for display in displays:
            children = [c for c in display.named_children if c.type != "comment"]
            if len(children) >= MIN_CHILDREN and all(c.type == "call" for c in children):
                chains.append(chain_of(children, f"{class_name}.{method}", src, reader, node, display))
            if len(chains) >= MAX_CHAINS:
                return tuple(chains)
    return tuple(chains)


def _splatted_methods(text: bytes) -> list[bytes]:
    """The `m` of each `*self.m(...)` inside a `Sequential(...)` call of `text` (several per call)."""
    out: list[bytes] = []
    for start in (m.start() for m in re.finditer(rb"Sequential\(", text)):
        depth, i = 0, start + len(b"Sequential")
        end = i
        while end < len(text):
            ch = text[end:end + 1]
            depth += ch == b"("
            depth -= ch == b")"
            end += 1
            if depth == 0:
                break
        out.extend(m.group(1) for m in re.finditer(rb"\*\s*self\.(\w+)\s*\(", text[i:end]))
    return out


def _returned_displays(function: Node, src: SourceText) -> list[Node]:
    """The list displays `function` returns: `return [...]`, or `name = [...]` with `return name` and `name`
    assigned nothing but displays (never appended to, extended or changed otherwise)."""
    body = function.child_by_field_id(Field.BODY)
    returns: list[Node] = []
    assigned: dict[str, list[Node]] = {}
    other: set[str] = set()
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop(0)
        if node.type in _NESTED:
            continue
        if node.type == "return_statement" and node.named_child_count == 1:
            returns.append(node.named_children[0])
        elif node.type == "assignment":
            left, right = node.child_by_field_id(Field.LEFT), node.child_by_field_id(Field.RIGHT)
            if left is not None and left.type == "identifier":
                if right is not None and right.type == "list":
                    assigned.setdefault(src.text(left), []).append(right)
                else:
                    other.add(src.text(left))
        elif node.type == "augmented_assignment":
            left = node.child_by_field_id(Field.LEFT)
            if left is not None:
                other.add(src.text(left))
        elif node.type == "attribute":
            obj = node.child_by_field_id(Field.OBJECT)
            if obj is not None and obj.type == "identifier":
                other.add(src.text(obj))  # `layers.append(...)`: its items are not the display's alone
        stack.extend(node.named_children)
    out: list[Node] = []
    for value in returns:
        if value.type == "list":
            out.append(value)
        elif value.type == "identifier" and (name := src.text(value)) in assigned and name not in other:
            out.extend(assigned[name])
    return out
