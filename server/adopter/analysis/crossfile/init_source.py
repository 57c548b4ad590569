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
from typing import Any, Final

from adopter.analysis.crossfile.ast_files import bound_names
from adopter.analysis.crossfile.evaluator import truth
from adopter.analysis.crossfile.summary import Summary
from adopter.analysis.parse.code_text import code_bytes

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
        text = code_bytes(self.src, self.owner).decode("utf-8", errors="replace")  # a comment calls nothing
        return frozenset(CALLED.findall(text))

    def annotations(self) -> dict[str, str]:
        return init_annotations(self.function, self.src, self.qualify)

    def passed_class(self, param: str) -> str | None:
        """The class, qualified, of an unannotated `__init__` parameter where this file says it
        (`passed_classes`), else None."""
        if not self.name:
            return None
        return PassedClasses(self.src, self.qualify, self.note).of(self.name, param)

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

    @property
    def source(self) -> InitSource | None:
        """`__init__` of the analysed class, where at hand."""
        return self._source

    def annotations(self) -> dict[str, str]:
        if self._annotations is None:
            self._annotations = self._source.annotations() if self._source is not None else {}
        return self._annotations

    def class_of(self, param: str) -> str | None:
        """The class of `__init__` parameter `param`: its annotation, else what this file's code says it is
        (`InitSource.passed_class`), else None."""
        found = self.annotations().get(param)
        if found is None and self._source is not None and param in self.params:
            found = self._source.passed_class(param)
        return found

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


class PassedClasses:
    """The class of an unannotated `__init__` parameter, as the file the class is in says it, read without
    running anything (tree-sitter):

    - the parameter is the first of a class that declares, itself or through a base of the same file, the class
      its instances are built with (`config_class = BertConfig`: Hugging Face's documented contract of a
      `PreTrainedModel`, whose `__init__(self, config)` takes an instance of it);
    - or every construction of the class in the file (`BertIntermediate(config)` in `BertLayer.__init__`) passes
      it, at its position or by keyword, a parameter of the constructing class's `__init__` whose class is known
      the same way (annotated, declared, or passed on again), and all agree.

    Constructions passing different classes give their union (`A | B`). Anything else (no construction, a
    construction outside an `__init__`, an expression passed) is unknown. A few levels deep; read per analysed
    class, so that each records the methods it read."""

    _DEPTH: Final = 6

    def __init__(self, src: Any, qualify: Any, note: Any) -> None:
        self.src, self.qualify, self.note = src, qualify, note
        self._classes: dict[str, Any] | None = None
        self._known: dict[tuple[str, str], str | None] = {}

    def of(self, name: str, param: str, depth: int = 0) -> str | None:
        key = (name, param)
        if key in self._known:
            return self._known[key]
        self._known[key] = None  # a cycle of constructions says nothing
        found = self._find(name, param, depth)
        self._known[key] = found
        return found

    def _find(self, name: str, param: str, depth: int) -> str | None:
        init = self._init(name)
        if init is None or depth > self._DEPTH:
            return None
        order = _positional_params(init, self.src)
        if param not in order and param not in _all_params(init, self.src):
            return None
        annotated = init_annotations(init, self.src, self.qualify).get(param)
        if annotated is not None:
            return annotated
        if order[:1] == [param]:
            declared = self._declared(name)
            if declared is not None:
                return declared
        return self._passed(name, param, order.index(param) if param in order else None, depth)

    def _passed(self, name: str, param: str, index: int | None, depth: int) -> str | None:
        """The classes the constructions pass, as a union (`A | B`) where they differ: a reader of one
        field then needs every member to agree (`CrossFileReach._key`)."""
        found: set[str] = set()
        for passed in init_arguments(name, param, index, "identifier", self.src, self.note):
            if passed is None:
                return None
            argument, owner = passed
            cls = self.of(owner, self.src.text(argument), depth + 1)
            if cls is None:
                return None
            found.update(cls.split(" | "))
        return " | ".join(sorted(found)) if found else None

    def _declared(self, name: str, depth: int = 0) -> str | None:
        """`config_class = X` in the body of class `name` or of its same-file bases (the first found)."""
        node = self._class_nodes().get(name)
        if node is None or depth > self._DEPTH:
            return None
        self.qualify(name)  # a dependency on the class's text (its body's assignment)
        body = node.child_by_field_name("body")
        for stmt in body.named_children if body is not None else ():
            expr = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else None
            if expr is None or expr.type != "assignment":
                continue
            left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
            if left is not None and right is not None and self.src.text(left) == _DECLARED:
                text = self.src.text(right)
                return self.qualify(text) if text.replace(".", "").replace("_", "").isalnum() else None
        supers = node.child_by_field_name("superclasses")
        for base in supers.named_children if supers is not None else ():
            if base.type == "identifier" and self.src.text(base) in self._class_nodes():
                declared = self._declared(self.src.text(base), depth + 1)
                if declared is not None:
                    return declared
        return None

    def _class_nodes(self) -> dict[str, Any]:
        if self._classes is None:
            self._classes = {}
            for child in self.src.tree.root_node.named_children:
                node = child.child_by_field_name("definition") if child.type == "decorated_definition" else child
                if node is not None and node.type == "class_definition":
                    n = node.child_by_field_name("name")
                    if n is not None:
                        self._classes.setdefault(self.src.text(n), node)
        return self._classes

    def _init(self, name: str) -> Any:
        node = self._class_nodes().get(name)
        body = node.child_by_field_name("body") if node is not None else None
        for stmt in body.named_children if body is not None else ():
            fn = stmt.child_by_field_name("definition") if stmt.type == "decorated_definition" else stmt
            if fn is not None and fn.type == "function_definition":
                n = fn.child_by_field_name("name")
                if n is not None and self.src.text(n) == "__init__":
                    return fn
        return None


# Hugging Face's `PreTrainedModel.config_class`: the class of the config its `__init__` takes first.
_DECLARED: Final = "config_class"


def _param_names(function: Any, src: Any) -> list[tuple[str, bool]]:
    """`__init__`'s parameters after `self`, each with whether it may be passed by position."""
    params = function.child_by_field_name("parameters")
    out: list[tuple[str, bool]] = []
    positional = True
    for child in params.named_children if params is not None else ():
        if child.type in ("list_splat_pattern", "keyword_separator"):
            positional = False
            continue
        if child.type == "identifier":
            out.append((src.text(child), positional))
        elif child.type in ("default_parameter", "typed_default_parameter", "typed_parameter"):
            n = child.child_by_field_name("name") or (child.named_children[0] if child.named_child_count else None)
            if n is not None and n.type == "identifier":
                out.append((src.text(n), positional))
    return out[1:]


def _positional_params(function: Any, src: Any) -> list[str]:
    return [n for n, positional in _param_names(function, src) if positional]


def _all_params(function: Any, src: Any) -> set[str]:
    return {n for n, _ in _param_names(function, src)}


def _argument(call: Any, param: str, index: int | None, src: Any) -> Any:
    """The expression a call passes for `param` (by keyword, or at position `index`); None when it passes
    none or unpacks (`*args`, `**kwargs`)."""
    args = call.child_by_field_name("arguments")
    items = [a for a in (args.named_children if args is not None else ()) if a.type != "comment"]
    position = 0
    at_index = None
    for a in items:
        if a.type in ("list_splat", "dictionary_splat"):
            return None
        if a.type == "keyword_argument":
            n = a.child_by_field_name("name")
            if n is not None and src.text(n) == param:
                return a.child_by_field_name("value")
            continue
        if index is not None and position == index:
            at_index = a
        position += 1
    return at_index


def _enclosing_method(node: Any, src: Any) -> tuple[str, str] | None:
    """(class, method) of the method of a class that holds `node`; None outside a method of a class."""
    parent = node.parent
    while parent is not None:
        if parent.type == "function_definition":
            owner = parent.parent.parent if parent.parent is not None else None
            if owner is None or owner.type != "class_definition":
                return None
            name, method = owner.child_by_field_name("name"), parent.child_by_field_name("name")
            if name is None or method is None:
                return None
            return src.text(name), src.text(method)
        parent = parent.parent
    return None


def init_parameters(function: Any, src: Any) -> tuple[list[str], set[str]]:
    """`__init__`'s parameters after `self`: those a call may pass by position, in order, and all of them."""
    return _positional_params(function, src), _all_params(function, src)


def init_arguments(name: str, param: str, index: int | None, kind: str, src: Any,
                   note: Any) -> Iterator[tuple[Any, str] | None]:
    """For each construction `name(...)` in the file, in order (a call of the bare name: not a string, a comment,
    an attribute or the class's own header), the argument it passes for `param` (by keyword, or at position
    `index`), a node of type `kind`, with the class whose `__init__` makes it; then None, and no more, at the first
    construction that passes none or another kind, or is made outside an `__init__`. `note(class, method)` hears
    of each constructing method of a class (`PassedClasses`, `passed_fields`)."""
    data, root = src.data, src.tree.root_node
    needle = f"{name}(".encode()
    at = data.find(needle)
    while at >= 0:
        before = data[at - 1 : at]
        if not (before.isalnum() or before in (b"_", b".")):
            node = root.descendant_for_byte_range(at, at + len(name))
            call = node.parent if node is not None and node.type == "identifier" else None
            if call is not None and call.type == "call" and call.child_by_field_name("function") == node:
                passed = _argument(call, param, index, src)
                caller = _enclosing_method(call, src)
                if passed is None or passed.type != kind or caller is None:
                    yield None
                    return
                owner, method = caller
                if note is not None:
                    note(owner, method)
                if method != "__init__":
                    yield None
                    return
                yield passed, owner
        at = data.find(needle, at + 1)
