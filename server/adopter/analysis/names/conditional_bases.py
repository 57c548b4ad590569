"""Module-level names bound to a torch module class on some branches and to a placeholder on the others.

Libraries with torch as an optional dependency give their model classes a base chosen when the module is
imported (sktime 0.x `networks/ltsf/layers/enc_dec.py`):

    if _check_soft_dependencies("torch", severity="none"):
        nn_module = nn.Module    # `nn` imported from torch inside this branch
    else:
        class nn_module:
            '''Dummy class if torch is unavailable.'''

and a JIT switch picks between two module classes (rwkv 0.8 `model.py`: `MyModule = torch.jit.ScriptModule`
under `if os.environ.get('RWKV_JIT_ON') != '0':`, `MyModule = torch.nn.Module` in the `else`). The symbol
table keeps a name's last binding only (the dummy class, the `ScriptModule`), so the classes built on the
name were not read as modules. A branch binding a placeholder (`object`, `None`, a builtin type, a class of
no base but `object`) is the branch where torch is absent, where no model runs; `torch.jit.ScriptModule` is
an `nn.Module` subclass whose `forward` runs as written. So a name all of whose run-time bindings are such
module classes or placeholders, at least one a module class and at least one under a test (`if`, `try`, a
conditional expression), is read as a module base.

A placeholder bound first on every run and replaced under a test (`Base = object`, then `try: ... Base =
nn.Module`) is the same form. Not read so: a placeholder bound on every run after the last module binding (it
is what every run ends with), a name whose only module binding is under `if TYPE_CHECKING:` (it never runs), a name with any
other run-time binding (a call's result, a class with bases, another name), a binding inside a function.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence

from tree_sitter import Node

from adopter.analysis.parse.source import Field, SourceText

# `torch.nn.Module`'s subclasses outside `torch.nn` that a model may take as its base
_EXTRA_MODULE_CLASSES = frozenset({"torch.jit.ScriptModule"})
_PLACEHOLDER_TYPES = frozenset(n for n in dir(builtins) if isinstance(getattr(builtins, n), type)) - {"BaseException"}
_MODULE, _PLACEHOLDER, _OTHER = "module", "placeholder", "other"
# name -> its module-level bindings: (kind, qualified target, under a test)
Seen = dict[str, list[tuple[str, str, bool]]]
Qualify = Callable[[str], str]
IsModuleClass = Callable[[str], bool]


def conditional_module_bases(root: Node, src: SourceText, qualify: Qualify,
                             is_module_class: IsModuleClass) -> dict[str, str]:
    """Name -> the module class (qualified) it is bound to, for each name of the form above.

    `qualify(dotted)` qualifies a dotted name by the file's imports; `is_module_class(qualified)` says
    whether a qualified name is a torch module class.
    """
    seen: Seen = {}
    _walk(root.children, src, False, seen, qualify, is_module_class)
    out: dict[str, str] = {}
    for name, bindings in seen.items():
        modules = [target for kind, target, _ in bindings if kind == _MODULE]
        if (
            modules
            and all(kind != _OTHER for kind, _, _ in bindings)
            and not any(  # a placeholder bound on every run after the last module binding
                kind == _PLACEHOLDER and not conditional
                for kind, _, conditional in bindings[_last_module(bindings) + 1 :]
            )
            and any(conditional for _, _, conditional in bindings)
        ):
            out[name] = modules[-1]
    return out


def _last_module(bindings: list[tuple[str, str, bool]]) -> int:
    return max(i for i, (kind, _, _) in enumerate(bindings) if kind == _MODULE)


def binding_key(root: Node, src: SourceText, name: str) -> tuple[object, ...]:
    """What the answer for `name` reads: each module-level binding of it (kind, text, whether under a test),
    with a test that takes every dotted value for a module class (a cache key, not an answer)."""
    seen: Seen = {}
    _walk(root.children, src, False, seen, lambda dotted: dotted, lambda _: True)
    return tuple(seen.get(name, ()))


def _walk(nodes: Sequence[Node], src: SourceText, conditional: bool, seen: Seen, qualify: Qualify,
          is_module_class: IsModuleClass) -> None:
    for node in nodes:
        kind = node.type
        if kind == "if_statement":
            condition = node.child_by_field_id(Field.CONDITION)
            typing_only = condition is not None and src.text(condition).split(".")[-1] == "TYPE_CHECKING"
            for child in node.named_children:
                if child is condition:
                    continue
                if child.type == "block":  # the consequence
                    if not typing_only:
                        _walk(child.children, src, True, seen, qualify, is_module_class)
                elif child.type in ("elif_clause", "else_clause"):
                    body = child.child_by_field_id(Field.BODY) or child.child_by_field_id(Field.CONSEQUENCE)
                    blocks = [body] if body is not None else [c for c in child.named_children if c.type == "block"]
                    for block in blocks:
                        _walk(block.children, src, True, seen, qualify, is_module_class)
        elif kind == "try_statement":
            for child in node.named_children:
                if child.type == "block":
                    _walk(child.children, src, True, seen, qualify, is_module_class)
                elif child.type in ("except_clause", "else_clause", "finally_clause"):
                    for block in (c for c in child.named_children if c.type == "block"):
                        _walk(block.children, src, child.type != "finally_clause" or conditional, seen, qualify,
                              is_module_class)
        elif kind == "with_statement":
            for block in (c for c in node.named_children if c.type == "block"):
                _walk(block.children, src, conditional, seen, qualify, is_module_class)
        elif kind == "decorated_definition":
            inner = node.child_by_field_id(Field.DEFINITION)
            if inner is not None and inner.type == "class_definition":
                _bind(seen, inner.child_by_field_id(Field.NAME), src, (_OTHER, ""), conditional)
        elif kind == "class_definition":
            _bind(seen, node.child_by_field_id(Field.NAME), src, _class_kind(node, src), conditional)
        elif kind == "expression_statement" and node.named_child_count:
            _assignment(node.named_children[0], src, conditional, seen, qualify, is_module_class)
        elif kind in ("import_statement", "import_from_statement"):
            _imports(node, src, conditional, seen, qualify, is_module_class)


def _bind(seen: Seen, name_node: Node | None, src: SourceText, found: tuple[str, str], conditional: bool) -> None:
    if name_node is not None:
        seen.setdefault(src.text(name_node), []).append((found[0], found[1], conditional))


def _class_kind(node: Node, src: SourceText) -> tuple[str, str]:
    bases = node.child_by_field_id(Field.SUPERCLASSES)
    names = [src.text(c) for c in bases.named_children] if bases is not None else []
    return (_PLACEHOLDER, "") if all(n == "object" for n in names) else (_OTHER, "")


def _value_kind(node: Node | None, src: SourceText, qualify: Qualify,
                is_module_class: IsModuleClass) -> list[tuple[str, str]]:
    if node is None:
        return [(_OTHER, "")]
    if node.type == "conditional_expression":
        parts = [c for c in node.named_children if c.type != "comment"]
        if len(parts) != 3:
            return [(_OTHER, "")]
        # both choices, each taken on some run: a test makes the binding conditional (see the caller)
        return _value_kind(parts[0], src, qualify, is_module_class) + _value_kind(parts[2], src, qualify, is_module_class)
    if node.type == "none":
        return [(_PLACEHOLDER, "")]
    if node.type == "identifier" and src.text(node) in _PLACEHOLDER_TYPES:
        return [(_PLACEHOLDER, "")]
    if node.type in ("identifier", "attribute"):
        qualified = qualify(src.text(node))
        if is_module_class(qualified) or qualified in _EXTRA_MODULE_CLASSES:
            return [(_MODULE, qualified)]
    return [(_OTHER, "")]


def _assignment(node: Node, src: SourceText, conditional: bool, seen: Seen, qualify: Qualify,
                is_module_class: IsModuleClass) -> None:
    if node.type != "assignment":
        return
    left = node.child_by_field_id(Field.LEFT)
    if left is None or left.type != "identifier":
        return
    right = node.child_by_field_id(Field.RIGHT)
    kinds = _value_kind(right, src, qualify, is_module_class)
    choice = right is not None and right.type == "conditional_expression"
    for found in kinds:
        _bind(seen, left, src, found, conditional or choice)


def _imports(node: Node, src: SourceText, conditional: bool, seen: Seen, qualify: Qualify,
             is_module_class: IsModuleClass) -> None:
    """`from torch.nn import Module` on one branch: a module binding of `Module` (any other name: other)."""
    if node.type != "import_from_statement":
        return
    module = node.child_by_field_id(Field.MODULE_NAME)
    if module is None or module.type == "relative_import":
        return
    for child in node.children_by_field_name("name"):
        name_node, alias = child, child
        if child.type == "aliased_import":
            name_node = child.child_by_field_id(Field.NAME) or child
            alias = child.child_by_field_id(Field.ALIAS) or name_node
        qualified = f"{src.text(module)}.{src.text(name_node)}"
        module_class = is_module_class(qualified) or qualified in _EXTRA_MODULE_CLASSES
        _bind(seen, alias, src, (_MODULE, qualified) if module_class else (_OTHER, ""), conditional)
