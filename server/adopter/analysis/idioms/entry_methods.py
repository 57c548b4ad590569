"""Public methods of a module that run its layers but that nothing in the class calls, read like its forward.

Model code exposes parts of its computation as methods other code calls on the module
(`self.resnet.forward_frames(fbank)` in a wrapper class, `model.encode(x)` in a pipeline):

    def forward_frames(self, fbank):
        out = F.relu(self.bn1(self.conv1(fbank)))
        return self.layer1(out)

Such a method (public, not `forward` or `__init__`, not decorated but by a gradient-mode or TorchScript marker
that leaves what it computes alone — `@torch.no_grad()`, `@torch.inference_mode()`, `@torch.jit.export`, as
`generate`, `sample` and visualisation methods are written — or by a decorator of the same file that runs it once
with its own arguments (`transparent_decorators`: lucidrains' `@eval_decorator`), taking an input besides `self`,
named nowhere in its class: methods the class calls are read where they are called) that calls a
layer of the class (`self.<attr>(...)`) or runs the module itself (`self(x)`, `self.forward(x)`: the forward is
read in its place, so its layers are the method's) becomes an `Architecture` named `Class.method`, as loss methods
do (`adopter.analysis.idioms.loss_methods`): the class's `__init__` bindings and the method's ops, so the
rules that match layers in a forward match there. A method that names a cross-entropy is a loss method
and read as one already.

Sampling loops run the module on their input and post-process its output (minGPT's `generate`, as kan-gpt 1.2.0
`kan_gpt/mingpt/model.py:380` writes it; a `predict` that returns `softmax(self.forward(x), dim=-1)`):

    @torch.no_grad()
    def generate(self, idx, steps):
        logits, _ = self(idx)
        probs = F.softmax(logits[:, -1, :], dim=-1)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from tree_sitter import Node

from adopter.analysis.idioms.method_forward import method_architecture
from adopter.analysis.idioms.transparent_decorators import runs_the_method_once
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.parse.words import matches_at_word_starts
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import MODULE_OP, Architecture, Problem, block_ops

_SKIP = frozenset({"forward", "__init__"})
# `\bself\.(\w+)\s*\(` and `\bself(?:\.forward)?\s*\(` (`self(x)`, `self.forward(x)`: the module's own forward),
# searched without their leading `\b` (`matches_at_word_starts`: a leading `\b` made the engine try every offset).
_LAYER_CALL = re.compile(rb"self\.(\w+)\s*\(")
_RUNS_ITSELF = re.compile(rb"self(?:\.forward)?\s*\(")
# Decorators that change neither the method's computation nor how it is called: autograd's modes and
# TorchScript's export markers (`torch.` optional: `from torch import no_grad`).
_SAME_FILE = re.compile(rb"@([A-Za-z_]\w*)\s*")  # `@name` as `same_file_decorators` finds it
_TRANSPARENT = re.compile(
    rb"@\s*(?:torch\.)?(?:(?:no_grad|inference_mode|enable_grad)\s*(?:\(\s*\))?|jit\.(?:export|ignore|unused))\s*")


def entry_methods(methods: dict[str, Node], class_node: Node, raw: Callable[[Node], bytes],
                  functions: Mapping[str, Node] | None = None) -> list[tuple[str, Node]]:
    """The methods of a module class read as entry points (see the module doc); `raw(node)`: its source;
    `functions`: the file's module-level functions, for decorators of the same file
    (`transparent_decorators`)."""
    out: list[tuple[str, Node]] = []
    class_text: bytes | None = None
    for name, node in methods.items():
        if name.startswith("_") or name in _SKIP or node.parent is None:
            continue
        if node.parent.type == "decorated_definition" and not all(
                _transparent(raw(d), functions or {}, raw)
                for d in node.parent.named_children if d.type == "decorator"):
            continue
        text = raw(node)
        if b"ross_entropy" in text or b"rossEntropy" in text:
            continue  # a loss method (`loss_methods`)
        if next(matches_at_word_starts(_RUNS_ITSELF, text), None) is None and not any(
                m.group(1).decode() not in methods for m in matches_at_word_starts(_LAYER_CALL, text)):
            continue
        parameters = node.child_by_field_id(Field.PARAMETERS)
        if parameters is None or len([p for p in parameters.named_children if p.type != "comment"]) < 2:
            continue
        class_text = raw(class_node) if class_text is None else class_text
        if re.search(rb"(?<!def )\b" + re.escape(name.encode()) + rb"\b", class_text.replace(text, b"")):
            continue  # the class calls it (or hands it on): read where it is called
        out.append((name, node))
    return out


def _transparent(decorator: bytes, functions: Mapping[str, Node], raw: Callable[[Node], bytes]) -> bool:
    """A gradient-mode or TorchScript marker, or `@name` of a same-file decorator that runs the method once with
    its own arguments. A comment after it on its line is no part of it (a decorator these patterns match holds no
    string, so its first `#` starts the comment)."""
    decorator = decorator.split(b"#", 1)[0]
    if _TRANSPARENT.fullmatch(decorator):
        return True
    named = _SAME_FILE.fullmatch(decorator)
    definition = functions.get(named.group(1).decode()) if named else None
    if definition is None or (definition.parent is not None and definition.parent.type == "decorated_definition"):
        return False  # not of this file, or itself decorated: what it returns is not evident
    return runs_the_method_once(raw(definition).decode("utf-8", "replace"))


def same_file_decorators(class_text: bytes, functions: Mapping[str, Node], raw: Callable[[Node], bytes]) -> bytes:
    """The definitions of the same-file functions `functions` (those some `@name` of the file names) whose `@name`
    the class's text holds, joined: what `entry_methods` reads beyond the class's text, for the readings' cache
    key (a trailing comment on the decorator's line does not hide it)."""
    return b"\0".join(raw(node) for name, node in sorted(functions.items()) if b"@" + name.encode() in class_text)


def entry_method_architecture(
    class_name: str, method: str, node: Node, src: SourceText, symbols: ModuleSymbols, table: ClassTable
) -> tuple[Architecture | None, list[Problem]]:
    """The class's `__init__` with `method` read as its forward, named `Class.method`; None when the method
    applies none of the class's layers."""
    arch, problems = method_architecture(class_name, f"{class_name}.{method}", method, node, src, symbols, table)
    if arch.forward is None or not any(op.kind is MODULE_OP for op in block_ops(arch.forward.body)):
        return None, problems
    return arch, problems

