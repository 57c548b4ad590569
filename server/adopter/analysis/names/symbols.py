"""The module-level symbol table of one file: imports, classes, functions and aliases, with qualification."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import TypeVar

from tree_sitter import Node

from adopter.analysis.names.conditional_bases import binding_key
from adopter.analysis.names.dotted import (
    dotted_text as dotted_text,  # re-exported: its readers import it from here
)
from adopter.analysis.names.dropout_form import dropout_form
from adopter.analysis.names.formula_functions import formula_gelu
from adopter.analysis.names.formula_norms import formula_norm
from adopter.analysis.names.forward_shape import head_shape
from adopter.analysis.names.function_classes import (
    FunctionReading,
    follow,
    function_reading,
    local_bindings,
    method_readings,
)
from adopter.analysis.names.import_helpers import import_helper_target
from adopter.analysis.names.library_containers import torch_container
from adopter.analysis.names.linear_shape import linear_shape
from adopter.analysis.names.pair_shape import pair_shape
from adopter.analysis.names.statement_reuse import StatementReadings, collect
from adopter.analysis.names.torch_nn_public import torch_nn_public
from adopter.analysis.names.torch_reexports import torch_reexport
from adopter.analysis.parse.code_text import code_key
from adopter.analysis.parse.source import Field, SourceText

BUILTIN_NAMES = frozenset(dir(builtins))


def _without_trailing_blanks(text: bytes) -> bytes:
    """`text` without blanks at line ends: they change no analysis (and a statement `salvage` blanks in
    a broken text leaves them). Most code has none, which two C-level scans tell.

    Each line's `rstrip`, not a regex: the pattern "blanks before a line break" tries every blank of
    every indentation run as a start and backtracks from the run's end (quadratic in a run's length):
    1.6 ms on a 20 KB masked method against 0.04 ms for the split. The same result: the end of a piece
    of the split is a line break or the end of the text, where the pattern's two branches strip.
    """
    if b" \n" in text or b"\t\n" in text or text.endswith((b" ", b"\t")):
        return b"\n".join([line.rstrip(b" \t") for line in text.split(b"\n")])
    return text

# Prefixes of the finer dependency keys of `ModuleSymbols.fingerprint` (not valid Python names).
CLASS_EXISTS = "class?:"
CLASS_HEAD = "class-head:"
METHOD = "method:"
METHOD_SHAPE = "method-shape:"
METHOD_EXISTS = "method?:"
METHOD_LINEAR = "method-linear:"  # the layer a Linear-like forward applies (`linear_shape`), not its text
METHOD_DROPOUT = "method-dropout:"  # whether a forward is a dropout of its input (`dropout_form`), not its text
METHOD_GELU = "method-gelu:"  # which GELU a forward writes out (`formula_gelu`), not its text
METHOD_NORM = "method-norm:"  # whether a forward writes a LayerNorm out, reading which attributes (`formula_norm`)
BINDING = "binding:"  # what an import or a module-level alias binds a name to (`qualify_binding`)
CONDITIONAL = "conditional:"  # the module class a name is bound to on some branches (`conditional_bases`), or None


def method_shapes(function: Node, src: SourceText) -> tuple[object, ...]:
    """What a user of a submodule reads of its forward: its chain shape (`forward_shape.head_shape`) and the
    layers it applies one to each input (`pair_shape`)."""
    return head_shape(function, src), pair_shape(function, src)


_PER_CLASS = (METHOD_EXISTS, METHOD_SHAPE, METHOD_LINEAR, METHOD_DROPOUT, METHOD_GELU, METHOD_NORM, METHOD)  # `<prefix>Class.method`
# The keys that depend on one answer read from a method, not its text: prefix -> (the fingerprint's tag, the reader)
_METHOD_ANSWERS: dict[str, tuple[str, Callable[[Node, SourceText], object]]] = {
    METHOD_SHAPE: ("shape", method_shapes),
    METHOD_LINEAR: ("linear", linear_shape),
    METHOD_DROPOUT: ("dropout", dropout_form),
    METHOD_GELU: ("gelu", formula_gelu),
    METHOD_NORM: ("norm", formula_norm),
}


def base_name(key: str) -> str:
    """The module-level name a fingerprint key reads (`method:Bert.forward` -> `Bert`)."""
    if ":" not in key:
        return key
    for prefix in _PER_CLASS:
        if key.startswith(prefix):
            return key[len(prefix) :].partition(".")[0]
    for prefix in (CLASS_EXISTS, CLASS_HEAD, BINDING):
        if key.startswith(prefix):
            return key[len(prefix) :].partition(".")[0]  # a nested class (`Outer.Inner`): its outer class
    return key


# Statements whose bodies still run at module level (classes defined under `if is_torch_available():`).
_CONTAINER_STATEMENTS = frozenset({"if_statement", "try_statement", "with_statement"})
_CONTAINER_CLAUSES = frozenset({"elif_clause", "else_clause", "except_clause", "finally_clause", "block"})



def resolve_relative(package: str | None, level: int, module: str) -> str:
    """The absolute dotted name of `from <level dots><module> import ...` inside `package`.

    Without a known package (or one too shallow) the dotted relative form is kept (`..activations`),
    consistently, so names still compare equal within one file.
    """
    if package is not None:
        parts = package.split(".")
        if level - 1 < len(parts):
            base = parts[: len(parts) - (level - 1)]
            return ".".join([*base, module] if module else base)
    return "." * level + module


def top_level_statements(root: Node) -> Iterator[Node]:
    """Statements executed at module level, looking inside top-level if/try/with blocks."""
    for node in root.children:  # most are plain statements: no stack for them (this runs on every keystroke)
        kind = node.type
        if kind in _CONTAINER_STATEMENTS or kind in _CONTAINER_CLAUSES:
            yield from _contained_statements(node)
        elif kind == "decorated_definition":
            inner = node.child_by_field_id(Field.DEFINITION)
            if inner is not None:
                yield inner
        else:
            yield node


def _contained_statements(container: Node) -> Iterator[Node]:
    """`top_level_statements` of the blocks of one top-level if/try/with statement, in order."""
    stack = [container]
    while stack:
        node = stack.pop()
        if node.type in _CONTAINER_STATEMENTS or node.type in _CONTAINER_CLAUSES:
            stack.extend(reversed([c for c in node.children if c.is_named]))
            continue
        if node.type == "decorated_definition":
            inner = node.child_by_field_id(Field.DEFINITION)
            if inner is not None:
                yield inner
            continue
        yield node


def class_methods(node: Node, src: SourceText) -> dict[str, Node]:
    """The methods a class body defines (decorated ones included), by name; the last one wins."""
    out: dict[str, Node] = {}
    body = node.child_by_field_id(Field.BODY)
    if body is None:
        return out
    for child in body.named_children:
        if child.type == "decorated_definition":
            child = child.child_by_field_id(Field.DEFINITION) or child
        if child.type == "function_definition":
            name = child.child_by_field_id(Field.NAME)
            if name is not None:
                out[src.text(name)] = child  # not `name.text`: None in a tree moved by `Tree.edit`
    return out


def class_base_names(node: Node, src: SourceText) -> list[str]:
    """The dotted base-class names of a class_definition (keywords like `metaclass=` skipped)."""
    bases = node.child_by_field_id(Field.SUPERCLASSES)
    if bases is None:
        return []
    out: list[str] = []
    for child in bases.named_children:
        if child.type == "subscript":  # Generic[T]
            child = child.child_by_field_id(Field.VALUE) or child
        name = dotted_text(child, src)
        if name is not None:
            out.append(name)
    return out


# What `ModuleSymbols` reads of a class and of each class nested in it, the class first, then its nested classes
# as `_collect_nested` visits them: (the suffix of its qualified name, the path to it: indices in the named
# children of the bodies it lies in, its methods as (name, index in its body, decorated), its bases).
_Shape = tuple[str, tuple[int, ...], tuple[tuple[str, int, bool], ...], tuple[str, ...]]


def _class_shapes(node: Node, src: SourceText, suffix: str, path: tuple[int, ...], out: list[_Shape]) -> None:
    methods: dict[str, tuple[int, bool]] = {}
    nested: list[tuple[str, tuple[int, ...], Node]] = []
    body = node.child_by_field_id(Field.BODY)
    for i, child in enumerate(body.named_children if body is not None else ()):
        decorated = child.type == "decorated_definition"
        if decorated:
            child = child.child_by_field_id(Field.DEFINITION) or child
        kind = child.type
        if kind == "function_definition" or kind == "class_definition":
            name = child.child_by_field_id(Field.NAME)
            if name is None:
                continue
            if kind == "function_definition":
                methods[src.text(name)] = (i, decorated)  # as `class_methods`: the last one wins
            else:
                nested.append((f"{suffix}.{src.text(name)}", (*path, i), child))
    out.append((suffix, path, tuple((m, i, d) for m, (i, d) in methods.items()), tuple(class_base_names(node, src))))
    for qualified, at, child in nested:
        _class_shapes(child, src, qualified, at, out)


def _follow(node: Node, path: tuple[int, ...]) -> Node:
    """The class `path` (`_Shape`) leads to from class `node`."""
    for i in path:
        body = node.child_by_field_id(Field.BODY)
        assert body is not None
        child = body.named_children[i]
        node = (child.child_by_field_id(Field.DEFINITION) or child) if child.type == "decorated_definition" else child
    return node


def import_from_names(node: Node, src: SourceText, package: str | None) -> dict[str, str]:
    """The local names a `from ... import ...` statement binds, each with its qualified name."""
    out: dict[str, str] = {}
    module_node = node.child_by_field_id(Field.MODULE_NAME)
    if module_node is None:
        return out
    if module_node.type == "relative_import":
        level = 0
        module = ""
        for child in module_node.children:
            if child.type == "import_prefix":
                level = src.text(child).count(".")
            elif child.type == "dotted_name":
                module = src.text(child)
        base = resolve_relative(package, level, module)
    else:
        base = src.text(module_node)
    sep = "" if base.endswith(".") else "."
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name_node = child.child_by_field_id(Field.NAME)
            alias = child.child_by_field_id(Field.ALIAS)
            if name_node is not None and alias is not None:
                out[src.text(alias)] = torch_reexport(f"{base}{sep}{src.text(name_node)}")
        elif child.type == "dotted_name":
            name = src.text(child)
            out[name.split(".")[0]] = torch_reexport(f"{base}{sep}{name}")
    return out


class ModuleSymbols:
    """Names defined at module level and how each one qualifies.

    Every lookup is recorded in `consulted` (when a set is installed), so a per-class cache can key
    its result on exactly the module-level names the class's analysis depended on.
    """

    def __init__(self, src: SourceText, package: str | None, last: StatementReadings | None = None,
                 keep: bool = False) -> None:
        """`last`: the readings of the statements of the last analysis of the same document
        (`statement_reuse`), taken for the statements this text has unchanged; with `keep`, `readings` are this
        one's for the next (None for a tree with errors)."""
        self.src = src
        self.package = package
        self.imports: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self.classes: dict[str, Node] = {}
        # Classes defined in a class body, by qualified name (`Outer.Inner`, as `__qualname__` spells it), and those
        # defined in a module-level function's or a top-level class's method's body (`build.<locals>.Block`,
        # `Model.__init__.<locals>.Block`: `function_classes`).
        self.nested_classes: dict[str, Node] = {}
        self.functions: dict[str, Node] = {}
        self.values: dict[str, Node] = {}
        self.toplevel: list[Node] = []
        self.consulted: set[str] | None = None
        self._methods: dict[str, dict[str, Node]] = {}  # memo of `methods_of`
        self._fingerprints: dict[str, tuple[object, ...]] = {}  # memo of `fingerprint`
        self._carried: dict[str, tuple[object, ...]] = {}  # an earlier analysis's (`carry`)
        self._changed: set[str] = set()  # the names whose carried fingerprints are not valid here
        self._shapes: dict[str, _Shape] = {}  # per class (nested ones by qualified name): its methods and bases
        self.readings: StatementReadings | None = None
        self.body_edit = False  # `Finder.body_edit`: the edit since `last` lies in one definition's body
        self._collect(src.tree.root_node, last, keep)

    # -- building ------------------------------------------------------------------------------------

    def _collect(self, root: Node, last: StatementReadings | None, keep: bool) -> None:
        clean = not root.has_error
        finder = last.finder(self.src.data, self.package) if last is not None and clean else None
        statements = list(top_level_statements(root))
        readings, kept = collect(statements, finder, self._read, keep and clean)
        if kept is not None:
            self.readings = StatementReadings(self.src.data, self.package, kept)
        self.body_edit = finder is not None and finder.body_edit()
        shapes: dict[str, tuple[_Shape, ...]] = {}
        # per function defining classes (a method by `Class.method`), where it is and what `function_classes` read of it
        local: dict[str, tuple[Node, tuple[int, ...], FunctionReading]] = {}
        for node, reading in zip(statements, readings, strict=True):
            assert isinstance(reading, tuple)
            kind = reading[0]
            if kind == "class":
                if reading[1] is not None:
                    self._define(self.classes, reading[1], node)
                    shapes[reading[1]] = reading[3]
                    for key in [k for k in local if k.partition(".")[0] == reading[1]]:
                        del local[key]
                    for method, path, found in reading[4]:
                        local[f"{reading[1]}.{method}"] = (node, path, found)
            elif kind == "function":
                if reading[1] is not None:
                    self._define(self.functions, reading[1], node)
                    if reading[3] is None:
                        local.pop(reading[1], None)
                    else:
                        local[reading[1]] = (node, (), reading[3])
            elif kind == "import":
                self.imports.update(reading[1])
            elif kind == "future":
                continue
            else:
                if kind == "expression":
                    self._assignment(node)
                self.toplevel.append(node)
        for name, node in self.classes.items():
            for suffix, path, methods, bases in shapes[name]:
                qualified = name + suffix
                self._shapes[qualified] = (suffix, path, methods, bases)
                if path:
                    self.nested_classes[qualified] = _follow(node, path)
        if local:
            self._function_classes(local)

    def _function_classes(self, local: dict[str, tuple[Node, tuple[int, ...], FunctionReading]]) -> None:
        """The classes of module-level functions and of top-level classes' methods, as nested classes, and the names
        those functions bind one way (`function_classes.local_bindings`) as aliases where the module binds them
        nowhere and no two such functions bind them differently."""
        qualified = {**self.aliases, **self.imports}
        imported = frozenset(self.imports)
        bound: dict[str, str | None] = {}  # None: bound differently by two functions
        for function, (statement, at, (classes, names)) in local.items():
            owner = function.partition(".")[0]
            if (self.classes if at else self.functions).get(owner) is not statement:
                continue  # shadowed by a later definition
            node = follow(statement, at)
            for suffix, path in classes:
                self.nested_classes[function + suffix] = follow(node, path)
            for name, target in local_bindings(names, qualified, imported).items():
                bound[name] = target if bound.get(name, target) == target else None
        for name, one in bound.items():
            if one is not None and name not in qualified and name not in BUILTIN_NAMES and not any(
                    name in t for t in (self.classes, self.functions, self.values)):  # a builtin is used elsewhere
                self.aliases[name] = one

    def _read(self, node: Node) -> tuple[object, ...]:
        """What the tables take from top-level statement `node` (`statement_reuse`): a function of its text."""
        kind = node.type
        if kind == "class_definition" or kind == "function_definition":
            name = node.child_by_field_id(Field.NAME)
            body = node.child_by_field_id(Field.BODY)
            head = (body.start_byte if body is not None else node.end_byte) - node.start_byte
            text = self.src.text(name) if name is not None else None
            if kind == "function_definition":
                return ("function", text, head, function_reading(
                    node, self.src, lambda n: import_from_names(n, self.src, self.package)))
            shapes: list[_Shape] = []
            _class_shapes(node, self.src, "", (), shapes)
            return ("class", text, head, tuple(shapes), method_readings(
                node, self.src, lambda n: import_from_names(n, self.src, self.package)))
        if kind == "import_statement":
            return ("import", tuple(self._import(node).items()))
        if kind == "import_from_statement":
            return ("import", tuple(import_from_names(node, self.src, self.package).items()))
        if kind == "future_import_statement":
            return ("future",)
        return ("expression",) if kind == "expression_statement" else ("other",)

    def _define(self, table: dict[str, Node], key: str, node: Node) -> None:
        # A later definition shadows an earlier one (and a class shadows nothing of another kind).
        table[key] = node
        for other in (self.classes, self.functions, self.values, self.aliases, self.imports):
            if other is not table:
                other.pop(key, None)

    def _import(self, node: Node) -> dict[str, str]:
        """The local names an `import` statement binds, each with the module it names."""
        out: dict[str, str] = {}
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                name_node = child.child_by_field_id(Field.NAME)
                alias = child.child_by_field_id(Field.ALIAS)
                if name_node is not None and alias is not None:
                    out[self.src.text(alias)] = self.src.text(name_node)
            else:
                name = self.src.text(child)
                if name:
                    root = name.split(".")[0]
                    out[root] = root
        return out

    def _assignment(self, stmt: Node) -> None:
        node = stmt.named_children[0] if stmt.named_child_count else None
        if node is None or node.type != "assignment":
            return
        left = node.child_by_field_id(Field.LEFT)
        right = node.child_by_field_id(Field.RIGHT)
        if left is None or left.type != "identifier":
            return
        name = self.src.text(left)
        dotted = dotted_text(_compat_choice(right, self.src), self.src)
        helper = import_helper_target(right, self.src, lambda root: root in self.imports)
        if dotted is not None and dotted.split(".")[0] in self.imports:
            self.aliases[name] = self.qualify(dotted)
            self.values.pop(name, None)
        elif helper is not None:
            self.aliases[name] = helper
            self.values.pop(name, None)
        else:
            self.values[name] = node
            self.aliases.pop(name, None)

    def star_imports(self) -> list[tuple[int, str]]:
        """`(level, module)` of each module-level `from m import *`, in order (`(1, "conv2d_layers")`)."""
        out: list[tuple[int, str]] = []
        for node in top_level_statements(self.src.tree.root_node):
            if node.type != "import_from_statement" or not any(c.type == "wildcard_import" for c in node.children):
                continue
            module_node = node.child_by_field_id(Field.MODULE_NAME)
            if module_node is None:
                continue
            if module_node.type == "relative_import":
                level, module = 0, ""
                for child in module_node.children:
                    if child.type == "import_prefix":
                        level = self.src.text(child).count(".")
                    elif child.type == "dotted_name":
                        module = self.src.text(child)
                out.append((level, module))
            else:
                out.append((0, self.src.text(module_node)))
        return out

    def add_star_names(self, names: dict[str, str]) -> None:
        """Names star imports bind (read from the other modules): the file's own bindings win."""
        for name, target in names.items():
            if not any(name in d for d in (self.imports, self.aliases, self.classes, self.functions, self.values)):
                self.imports[name] = target

    def add_reexports(self, names: dict[str, str]) -> None:
        """Imported names bound, in the module they come from, to another module's name (`crossfile.stars`)."""
        for name, target in names.items():
            if name in self.imports:
                self.imports[name] = target

    # -- queries -------------------------------------------------------------------------------------

    def _note(self, name: str) -> None:
        if self.consulted is not None:
            self.consulted.add(name)

    def qualify(self, dotted: str) -> str:
        """`F.softmax` → `torch.nn.functional.softmax`; names that are not imported stay as written."""
        root, dot, rest = dotted.partition(".")
        self._note(root)
        target = self.imports.get(root) or self.aliases.get(root)
        if target is None:
            return dotted
        return torch_container(torch_nn_public(f"{target}{dot}{rest}" if dot else target))

    def qualify_binding(self, dotted: str) -> str:
        """`qualify`, depending only on what the root name is imported or aliased as (all `qualify` reads),
        not on the definition it may have in this file: for a caller that reads nothing else of the name
        (a base class's qualified name), so that editing a method of a base class does not re-analyse
        every class whose analysis only asked whether that base is imported."""
        root, dot, rest = dotted.partition(".")
        self._note(BINDING + root)
        target = self.imports.get(root) or self.aliases.get(root)
        if target is None:
            return dotted
        return torch_container(torch_nn_public(f"{target}{dot}{rest}" if dot else target))

    def is_imported(self, name: str) -> bool:
        self._note(name)
        return name in self.imports or name in self.aliases

    def class_node(self, name: str) -> Node | None:
        self._note(name)
        return self.classes.get(name)

    def has_class(self, name: str) -> bool:
        """Whether `name` is a class of this file; a cache entry depends on the answer, not the body."""
        self._note(CLASS_EXISTS + name)
        return name in self.classes

    def note_class_head(self, name: str) -> None:
        """Record a dependency on class `name`'s header (its bases) and nothing of its body."""
        self._note(CLASS_HEAD + name)

    def note_method(self, class_name: str, method: str) -> None:
        """Record a dependency on method `method` of class `class_name` (its text, or its absence)."""
        self._note(f"{METHOD}{class_name}.{method}")

    def note_method_exists(self, class_name: str, method: str) -> None:
        """Record a dependency on whether class `class_name` defines `method`, not on its text."""
        self._note(f"{METHOD_EXISTS}{class_name}.{method}")

    def note_method_shape(self, class_name: str, method: str) -> None:
        """Record a dependency on the chain shape of method `method` of `class_name` (`forward_shape`, and
        `pair_shape`'s layer per input), not on its text: editing it re-analyses the dependent only when the shape changes."""
        self._note(f"{METHOD_SHAPE}{class_name}.{method}")

    def note_method_linear(self, class_name: str, method: str) -> None:
        """Record a dependency on the layer method `method` of `class_name` applies Linear-like
        (`linear_shape`), not on its text."""
        self._note(f"{METHOD_LINEAR}{class_name}.{method}")

    def note_method_dropout(self, class_name: str, method: str) -> None:
        """Record a dependency on whether method `method` of `class_name` is a dropout of its input, and with
        which callees (`dropout_form`), not on its text: editing it re-analyses the dependent only when that
        answer changes."""
        self._note(f"{METHOD_DROPOUT}{class_name}.{method}")

    def note_method_gelu(self, class_name: str, method: str) -> None:
        """Record a dependency on which GELU method `method` of `class_name` writes out (`formula_gelu`), not on
        its text."""
        self._note(f"{METHOD_GELU}{class_name}.{method}")

    def note_method_norm(self, class_name: str, method: str) -> None:
        """Record a dependency on whether method `method` of `class_name` writes a LayerNorm out, and reading which
        attributes (`formula_norm`), not on its text."""
        self._note(f"{METHOD_NORM}{class_name}.{method}")

    def function_node(self, name: str) -> Node | None:
        self._note(name)
        return self.functions.get(name)

    def is_module_value(self, name: str) -> bool:
        """A module-level variable (not an import, class or function): `logger`, `ACT2CLS`."""
        self._note(name)
        return name in self.values

    def fingerprint(self, name: str) -> tuple[object, ...]:
        """What a cached analysis that consulted `name` must see unchanged to stay valid.

        Besides plain module-level names, finer keys depend on part of a class only (so that editing one
        method of a base class does not re-analyse every subclass): `CLASS_EXISTS + X` (what kind of name
        X is), `CLASS_HEAD + X` (X's header: name and bases), `METHOD + "X.m"` (the text and position of
        method m defined in X's body, or its absence), `METHOD_SHAPE` / `METHOD_LINEAR` / `METHOD_DROPOUT` / `METHOD_GELU` / `METHOD_NORM +
        "X.m"` (one answer read from that method: its chain shape, the layer it applies Linear-like, whether it
        is a dropout of its input, the GELU or LayerNorm it writes out), and `BINDING + X` (what an import or alias binds X to, nothing of a
        definition). Memoised: the symbols of one run do not
        change, and every cached unit checks its dependencies.
        """
        found = self._fingerprints.get(name)
        if found is None:
            found = self._carried.get(name)
            if found is None or base_name(name) in self._changed:
                found = self._fingerprint(name)
            self._fingerprints[name] = found
        return found

    def carry(self, fingerprints: dict[str, tuple[object, ...]], changed: set[str]) -> None:
        """Take `fingerprints` (of the previous analysis of the file) instead of computing them again,
        but for the keys of the names in `changed` (`adopter.analysis.names.carry.changed_names`: every
        other name's fingerprints are still what `fingerprint` computes here)."""
        self._carried, self._changed = fingerprints, changed

    @property
    def fingerprints(self) -> dict[str, tuple[object, ...]]:
        """The fingerprints computed or carried so far (read-only by convention)."""
        return self._fingerprints

    def methods_of(self, class_name: str) -> dict[str, Node]:
        """The methods class `class_name` of this file defines (empty for an unknown class), memoised."""
        methods = self._methods.get(class_name)
        if methods is None:
            node = self.classes.get(class_name) or self.nested_classes.get(class_name)
            shape = self._shapes.get(class_name)
            if node is None:
                methods = {}
            elif shape is None:
                methods = class_methods(node, self.src)
            else:  # the nodes at the places its reading found them (`_class_shapes`), as `class_methods` finds them
                body = node.child_by_field_id(Field.BODY)
                children = body.named_children if body is not None else []
                methods = {}
                for name, i, decorated in shape[2]:
                    child = children[i]
                    methods[name] = (child.child_by_field_id(Field.DEFINITION) or child) if decorated else child
            self._methods[class_name] = methods
        return methods

    def bases_of(self, class_name: str) -> list[str]:
        """The dotted base names class `class_name` (of this file) is written with (`class_base_names`)."""
        shape = self._shapes.get(class_name)
        if shape is not None:
            return list(shape[3])
        node = self.classes.get(class_name) or self.nested_classes.get(class_name)
        return class_base_names(node, self.src) if node is not None else []

    def _fingerprint(self, name: str) -> tuple[object, ...]:
        if name.startswith(CLASS_EXISTS):
            return self.fingerprint(name[len(CLASS_EXISTS) :])[:1]
        if name.startswith(CLASS_HEAD):
            node = self.classes.get(name[len(CLASS_HEAD) :]) or self.nested_classes.get(name[len(CLASS_HEAD) :])
            if node is None:
                return self.fingerprint(name[len(CLASS_HEAD) :])
            body = node.child_by_field_id(Field.BODY)
            return ("class-head", code_key(self.src, node.start_byte, body.start_byte if body is not None else node.end_byte))
        if name.startswith(CONDITIONAL):
            return ("conditional", binding_key(self.src.tree.root_node, self.src, name[len(CONDITIONAL) :]))
        if name.startswith(BINDING):
            root = name[len(BINDING) :]
            return ("binding", self.imports.get(root), self.aliases.get(root))
        if name.startswith(METHOD_EXISTS):
            class_name, _, method = name[len(METHOD_EXISTS) :].rpartition(".")
            return ("present",) if method in self.methods_of(class_name) else ("absent",)
        for prefix, (kind, answer) in _METHOD_ANSWERS.items():
            if name.startswith(prefix):
                class_name, _, method = name[len(prefix) :].rpartition(".")
                found = self.methods_of(class_name).get(method)
                return ("absent",) if found is None else (kind, answer(found, self.src))
        if name.startswith(METHOD):
            class_name, _, method = name[len(METHOD) :].rpartition(".")
            found = self.methods_of(class_name).get(method)
            if found is None:
                return ("absent",)
            return ("method", _without_trailing_blanks(code_key(self.src, found.start_byte, found.end_byte)), found.start_point)
        for kind, table in (("class", self.classes), ("function", self.functions), ("value", self.values)):
            node = table.get(name)
            if node is not None:
                return (kind, code_key(self.src, node.start_byte, node.end_byte), node.start_point)
        if name in self.imports:
            return ("import", self.imports[name])
        if name in self.aliases:
            return ("alias", self.aliases[name])
        return ("absent",)


def _compat_choice(node: Node | None, src: SourceText) -> Node | None:
    """`nn.GELU if hasattr(nn, "GELU") else GELU_` (a shim for old versions): the attribute the test checks
    for, which is what runs wherever it exists; any other expression is returned as it is."""
    if node is None or node.type != "conditional_expression":
        return node
    parts = [c for c in node.named_children if c.type != "comment"]
    if len(parts) != 3 or parts[1].type != "call":
        return node
    func = parts[1].child_by_field_id(Field.FUNCTION)
    args = parts[1].child_by_field_id(Field.ARGUMENTS)
    items = [a for a in (args.named_children if args is not None else ()) if a.type != "comment"]
    if func is None or src.text(func) != "hasattr" or len(items) != 2 or items[1].type != "string":
        return node
    owner = dotted_text(items[0], src)
    attr = src.text(items[1]).strip("\"'")
    return parts[0] if owner is not None and dotted_text(parts[0], src) == f"{owner}.{attr}" else node


_T = TypeVar("_T")


def nested_reading(symbols: ModuleSymbols, record: bool, read: Callable[[], _T]) -> tuple[_T, set[str] | None]:
    """`read()` with `symbols` noting the names it looks up in a set of its own (None unless `record`); then the
    noting before it is restored, and those names are added to it (the enclosing reading depends on them too).
    Returns the result and the names noted. The one home of this bracket: the analyser's per-class readings and
    `scope.classes.ClassTable.init_reading` both use it."""
    outer = symbols.consulted
    symbols.consulted = set() if record else None
    try:
        result = read()
    finally:
        consulted = symbols.consulted
        symbols.consulted = outer
        if outer is not None and consulted is not None:
            outer |= consulted
    return result, consulted
