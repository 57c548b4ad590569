"""Numbers a function memoises on itself: `f._a = math.sqrt(2 / math.pi)` in `f`'s body, read as `f._a`.

fairseq's `gelu_accurate` (copied into s3prl, funasr, espnet and coqui's TTS) computes sqrt(2/pi) once and
keeps it on the function object:

    def gelu_accurate(x):
        if not hasattr(gelu_accurate, "_a"):
            gelu_accurate._a = math.sqrt(2 / math.pi)
        return 0.5 * x * (1 + torch.tanh(gelu_accurate._a * (x + 0.044715 * torch.pow(x, 3))))

Every read of `gelu_accurate._a` yields that number, so the flow reads it as the constant expression it is
bound to, as it reads a literal written in its place (`f13-gelu-tanh-pow`'s `one_of($k, ...)` compares it by
value, `engine/constants.py`).

Read only where the binding is evident: `f` is a module-level function of the file or a closure the flow holds
(fairseq's `get_activation_fn` defines its own `gelu_accurate`), and every statement of the file that binds,
updates or deletes `f.<attr>` lies in the body of a function named `f` that is not a method (inside it, `f`
names that function). Those in `f`'s own body must be exactly one plain assignment (so `f`'s text covers it:
an analysis cached on `f` sees the binding change); those in another function named `f` (a closure of the same
name elsewhere in the file) bind another object and are ignored. The file never passes `f` to `setattr`, and
the value is a numeric constant expression (`formula_functions.constant_value`: numbers, `pi`, `sqrt` and the
like). Anything else (`f.calls = 0` then `f.calls += 1`, a binding at module level or in another function, a
value computed from an argument) stays the opaque expression it was.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.dotted import dotted_text
from adopter.analysis.names.formula_functions import constant_value
from adopter.analysis.parse.source import Field, SourceText

_MEMO = "function_constants"


def function_constant(function: Node, attr: str, src: SourceText) -> str | None:
    """The constant expression that `function` (a `function_definition` of `src`) binds to its attribute `attr`
    in its own body, when that binding is evident (the module docstring), else None."""
    name_node = function.child_by_field_id(Field.NAME)
    if name_node is None:
        return None
    dotted = f"{src.text(name_node)}.{attr}"
    key = (f"{_MEMO}:{dotted}", function.start_byte)
    if key in src.memo:
        held = src.memo[key]
        return held if isinstance(held, str) else None
    found = _bound_constant(dotted, function, src)
    src.memo[key] = found if found is not None else False
    return found


def _bound_constant(dotted: str, function: Node, src: SourceText) -> str | None:
    name = dotted.partition(".")[0]
    if src.occurs(f"setattr({name}".encode()):
        return None
    word = dotted.encode()
    value: Node | None = None
    root = src.tree.root_node
    for at in src.positions(word):
        node = root.descendant_for_byte_range(at, at + len(word))  # the smallest node spanning it
        if node is None or node.type != "attribute" or node.start_byte != at or node.end_byte != at + len(word):
            continue  # part of a longer name (`my_f._a`, `f._ab`) or of another expression
        if dotted_text(node, src) != dotted or node.parent is None:
            continue
        parent = node.parent
        left = parent.child_by_field_id(Field.LEFT) if parent.type in ("assignment", "augmented_assignment") else None
        bound = left is not None and left.start_byte == node.start_byte and left.end_byte == node.end_byte
        if not bound and parent.type != "delete_statement":
            continue  # a read
        owner = enclosing_function(node, name, src)
        if owner is None:
            return None  # bound outside any function of that name: which object it names is not evident
        if owner.start_byte != function.start_byte:
            continue  # the attribute of another function of the same name (a closure `get_act` defines)
        right = parent.child_by_field_id(Field.RIGHT) if parent.type == "assignment" else None
        if value is not None or right is None or right.type == "assignment" or parent.parent is None \
                or parent.parent.type == "assignment":
            return None  # a second binding, an update, a `del`, or a chained binding
        value = right
    if value is None:
        return None
    text = src.norm(value)
    return text if constant_value(text) is not None else None


def enclosing_function(node: Node, name: str, src: SourceText) -> Node | None:
    """The innermost function definition named `name` that holds `node`: inside it, `name` is that function;
    None when there is none, or when it is a method (inside a method `name` is not the method)."""
    up = node.parent
    while up is not None:
        if up.type == "function_definition":
            head = up.child_by_field_id(Field.NAME)
            if head is not None and src.text(head) == name:
                holder = up.parent
                if holder is not None and holder.type == "decorated_definition":
                    holder = holder.parent
                in_class = holder is not None and holder.parent is not None and holder.parent.type == "class_definition"
                return None if in_class else up
        up = up.parent
    return None
