"""The analysed class's `__init__`, read (tree-sitter) only when a cross-file lookup key needs it.

A registry lookup (`ACT2FN[config.hidden_act]`) needs what the key is: a parameter's default, a local
(`act = getattr(config, "act", None)`), an annotated config class's field default, and whether the class
is built at all under those defaults (`Scope.built_only_otherwise`).
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections.abc import Iterator
from typing import Any

from adopter.analysis.crossfile.ast_files import bound_names
from adopter.analysis.crossfile.evaluator import truth
from adopter.analysis.crossfile.summary import Summary

CALLED = re.compile(r"\bself\.(\w+)\s*\(")
_SINGLE_BASE_CLASS = re.compile(rb"^class (\w+)\(\s*([\w.]+)\s*\)\s*:", re.M)


@functools.lru_cache(maxsize=8)
def single_base_classes(data: bytes) -> dict[str, str]:
    """The module-level classes of a file's text that have one base, by name: the base as written. Read once
    per text (every class of the file asks)."""
    out: dict[str, str] = {}
    # The pattern matched at each line that starts `class ` (where `^` can match), found by `bytes.find`: a
    # scan of the pattern over every position of the text cost ~0.6 ms on T5's file at each keystroke that
    # re-analyses a class. A match cannot hold another such line (its gaps are whitespace before a name, a
    # `)` or a `:`), so these are the matches `finditer` gives, in the same order.
    for at in _class_lines(data):
        m = _SINGLE_BASE_CLASS.match(data, at)
        if m is not None:
            out.setdefault(m.group(1).decode(), m.group(2).decode())  # the first definition, as a search finds
    return out


def _class_lines(data: bytes) -> Iterator[int]:
    """The start of each line of `data` that starts with `class `."""
    if data.startswith(b"class "):
        yield 0
    at = data.find(b"\nclass ")
    while at >= 0:
        yield at + 1
        at = data.find(b"\nclass ", at + 1)


class InitSource:
    """`__init__` of the analysed class, read only when a lookup key needs it (tree-sitter node)."""

    def __init__(self, function: Any, src: Any, qualify: Any, owner: Any = None, name: str | None = None,
                 note: Any = None, qualify_base: Any = None, note_head: Any = None) -> None:
        self.function, self.src, self.qualify, self.owner = function, src, qualify, owner
        self.name = name  # the analysed class
        self.note = note  # records a dependency on a method of this file: note(class_name, method)
        # `imported_base`'s reads, recorded as finely as they are: a class's header, what its base is imported
        # as (`ModuleSymbols.note_class_head`, `.qualify_binding`); by default `qualify` (the base's whole text).
        self.qualify_base = qualify_base or qualify
        self.note_head = note_head

    def constructions(self) -> list[list[str] | None] | None:
        """How this file builds the analysed class: per construction (`Cls(...)` inside a method), the
        conditions around it (`config.is_gated_act`, `not (...)`), or None where they are not plain
        if/else tests. None when the file never builds it."""
        if not self.name:
            return None
        data, root = self.src.data, self.src.tree.root_node
        needle = f"{self.name}(".encode()
        found: list[list[str] | None] = []
        at = data.find(needle)
        while at >= 0:
            before = data[at - 1 : at]
            if not (before.isalnum() or before in (b"_", b".")):
                node = root.descendant_for_byte_range(at, at + len(self.name))
                conditions = self._conditions(node)
                if conditions is not False:
                    found.append(conditions if isinstance(conditions, list) else None)
            at = data.find(needle, at + 1)
        return found or None

    def _conditions(self, node: Any) -> list[str] | bool | None:
        """The tests around `node` up to its method (False: not inside a method of a class, so not a
        construction this reading covers; None: a branch other than if/else)."""
        out: list[str] = []
        child, parent = node, node.parent
        while parent is not None:
            if parent.type == "function_definition":
                owner = parent.parent.parent if parent.parent is not None else None
                if owner is None or owner.type != "class_definition":
                    return False
                name = owner.child_by_field_name("name")
                method = parent.child_by_field_name("name")
                if self.note is not None and name is not None and method is not None:
                    self.note(self.src.text(name), self.src.text(method))
                return out
            if parent.type == "if_statement" and child.type == "block":
                out.append(self.src.text(parent.child_by_field_name("condition")))
            elif parent.type == "else_clause" and parent.parent is not None:
                branch = parent.parent
                if any(c.type == "elif_clause" for c in branch.named_children):
                    return None
                out.append(f"not ({self.src.text(branch.child_by_field_name('condition'))})")
            elif parent.type == "elif_clause":
                return None
            elif parent.type == "conditional_expression" and len(parent.named_children) == 3:
                value, test, other = parent.named_children
                if child == value:
                    out.append(self.src.text(test))
                elif child == other:
                    out.append(f"not ({self.src.text(test)})")
            child, parent = parent, parent.parent
        return False

    def called(self) -> frozenset[str] | None:
        """The attributes `forward` calls (`self.<attr>(`), or None when there is no forward to read."""
        if self.owner is None:
            return None
        text = self.src.raw(self.owner).decode("utf-8", errors="replace")
        return frozenset(CALLED.findall(text))

    def annotations(self) -> dict[str, str]:
        return init_annotations(self.function, self.src, self.qualify)

    def imported_base(self, name: str) -> str | None:
        """The base, qualified, of a class of this file named `name` that has one base and that base imported
        (torchvision's `class MLPBlock(MLP)` beside the block that builds it), else None."""
        if self.note_head is not None:
            self.note_head(name)
        base = single_base_classes(self.src.data).get(name)
        qualified = self.qualify_base(base) if base is not None else None
        return qualified if isinstance(qualified, str) and "." in qualified.lstrip(".") else None

    def locals(self) -> dict[str, str]:
        """Names assigned once in the body, at its top level, to the source text of their value."""
        fn = self._function_ast()
        if fn is None:
            return {}
        stores: dict[str, int] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        return {s.targets[0].id: ast.unparse(s.value) for s in fn.body
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and stores.get(s.targets[0].id) == 1}

    def stored(self) -> frozenset[str]:
        """Every name the function binds (`bound_names`): its parameters and any name it assigns, anywhere."""
        fn = self._function_ast()
        return bound_names(fn) if fn is not None else frozenset()

    def _function_ast(self) -> ast.FunctionDef | None:
        """The function's own syntax tree (dedented), or None when it does not parse as a `def`."""
        text = textwrap.dedent(self.src.raw(self.function).decode("utf-8", errors="replace"))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        fn = tree.body[0] if tree.body else None
        return fn if isinstance(fn, ast.FunctionDef) else None

    def none_fallbacks(self) -> dict[str, str]:
        """Parameters given a value when passed None, by a top-level `if p is None: p = V` with no else
        (`norm_layer = nn.BatchNorm2d`): each to the source text of V."""
        fn = self._function_ast()
        if fn is None:
            return {}
        out: dict[str, str] = {}
        for s in fn.body:
            if not isinstance(s, ast.If) or s.orelse or len(s.body) != 1:
                continue
            test = s.test
            if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1
                    and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant)
                    and test.comparators[0].value is None):
                assign = s.body[0]
                if (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                        and isinstance(assign.targets[0], ast.Name) and assign.targets[0].id == test.left.id):
                    out[test.left.id] = ast.unparse(assign.value)
        return out


class Scope:
    def __init__(self, params: dict[str, str | None], source: InitSource | None) -> None:
        self.params = params
        self._source = source
        self._annotations: dict[str, str] | None = None
        self._locals: dict[str, str] | None = None
        self._fallbacks: dict[str, str] | None = None
        self._stored: frozenset[str] | None = None

    def annotations(self) -> dict[str, str]:
        if self._annotations is None:
            self._annotations = self._source.annotations() if self._source is not None else {}
        return self._annotations

    def fallbacks(self) -> dict[str, str]:
        if self._fallbacks is None:
            self._fallbacks = self._source.none_fallbacks() if self._source is not None else {}
        return self._fallbacks

    def stored(self) -> frozenset[str] | None:
        """The names `__init__` binds (parameters and locals), None when its source is not at hand; read once."""
        if self._source is None:
            return None
        if self._stored is None:
            self._stored = self._source.stored()
        return self._stored

    def locals(self) -> dict[str, str]:
        if self._locals is None:
            self._locals = self._source.locals() if self._source is not None else {}
        return self._locals

    def built_only_otherwise(self, root: str, config: Summary) -> bool:
        """Whether every construction of the class in its file is under a test the config's defaults
        make false (`if config.is_gated_act:` with `is_gated_act` False by default)."""
        built = self._source.constructions() if self._source is not None else None
        if not built:
            return False
        defaults = dict(config.defaults)
        for conditions in built:
            if conditions is None:
                return False
            if not any(truth(c, root, defaults) is False for c in conditions):
                return False
        return True


def init_annotations(function: Any, src: Any, qualify: Any) -> dict[str, str]:
    """The qualified annotation of each annotated parameter of a tree-sitter function node
    (`config: ViTConfig` -> `{"config": ".configuration_vit.ViTConfig"}`)."""
    from adopter.analysis.parse.source import Field

    params = function.child_by_field_id(Field.PARAMETERS)
    out: dict[str, str] = {}
    for child in params.named_children if params is not None else ():
        if child.type not in ("typed_parameter", "typed_default_parameter"):
            continue
        name = child.child_by_field_id(Field.NAME) or (child.named_children[0] if child.named_child_count else None)
        kind = child.child_by_field_name("type")
        if name is None or kind is None or name.type != "identifier":
            continue
        text = src.text(kind).strip().strip("\"'")
        members = _union_members(text)
        if all(m.replace(".", "").replace("_", "").isalnum() for m in members):
            out[src.text(name)] = " | ".join(qualify(m) for m in members)
    return out


def _union_members(text: str) -> list[str]:
    """`A | B`, `Union[A, B]`, `Optional[A]` -> the member names; a plain name -> [name]."""
    for head in ("typing.Union[", "Union[", "typing.Optional[", "Optional["):
        if text.startswith(head) and text.endswith("]"):
            return [m.strip() for m in text[len(head):-1].split(",") if m.strip() not in ("None", "")]
    return [m.strip() for m in text.split("|") if m.strip() != "None"]
