"""The activation layers a file's constructions of a class pass to an `__init__` parameter it stores.

A feed-forward block whose activation is a constructor argument builds, as written, the default; the file's
other classes may build it with another (pytorch-tabular's gated units):

    class PositionWiseFeedForward(nn.Module):
        def __init__(self, d_model, d_ff, dropout=0.1, activation=nn.ReLU(), is_gated=False):
            self.activation = activation
            ...
    class GEGLU(nn.Module):
        def __init__(self, d_model, d_ff, dropout=0.1):
            self.ffn = PositionWiseFeedForward(d_model, d_ff, dropout, nn.GELU(), True)

The binding `self.activation = activation` (or `self.act = act_layer()` with a class default) is then one
binding per layer the module may hold, as an `if` on the parameter would bind them: the default, under
`not (<param> is <argument>)` for each other one, and each torch activation class a construction of the
file passes by position or keyword (`nn.GELU()` to an instance parameter, `nn.GELU` to a class one) under
`<param> is <argument>`. Only torch's activation modules are read (a norm or another layer passed in is
left as the default reads it), only calls of the class by its name in this file, and nothing when
`__init__` rebinds the parameter. What another file passes is not read: a file's analysis does not depend
on the files that import it.

A required parameter stored as it is (`self.activation = activation`, no default) and called by the class
(`self.activation(h)`) is read the same way: each passed torch activation is one more binding, and the
binding stays under `not (...)` of each of them.
When no construction in the file passes anything else (none at all, or only torch activations), the binding
is left to another file's caller and says so: `<param> is <ELSEWHERE>` joins its condition (composer's and
curated-transformers' gated layers; family 14's guard, `engine.gate_activations`, reads that as no evident
gated MLP). A construction that passes something else (a local, a call: x-transformers'
`GLU(dim, inner, activation)`, a wrapper's `PreNorm(dim, FeedForward(...))`) leaves the binding as it was.

The constructions lie outside the class's cached unit: `passed_activations` reads them afresh each run
(only for a class whose bindings store an activation: `stores_activation`), and the analyser reads the
class again with them (`with_passed`) when there are any.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from adopter.analysis.chains.call_arguments import argument_at, positional_names, rebinds, walk
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Binding, Ctor, Init, ParamKind, Span

# torch.nn's activation modules (torch/nn/modules/activation.py), the ones applied to a tensor alone.
ACTIVATIONS = frozenset(f"torch.nn.{n}" for n in (
    "GELU", "ReLU", "ReLU6", "SiLU", "Mish", "Tanh", "Sigmoid", "ELU", "CELU", "SELU", "LeakyReLU", "PReLU",
    "Hardswish", "Hardsigmoid", "Hardtanh", "Softplus", "Softsign", "Tanhshrink", "LogSigmoid", "RReLU"))
_STORED = re.compile(r"^self\.([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*(\(\s*\))?$")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
# `self.act(...)`: the attributes a class calls, where `self` starts a word (`groups_at_word_starts`)
_SELF_CALLS = re.compile(r"self\.([A-Za-z_]\w*)\s*\(")
_WORD_CHAR = re.compile(r"\w")  # what `\b` reads as a word character (`parse.words`)
_CALL_OPENS = re.compile(r"\s*\(")
_NAME = re.compile(r"[A-Za-z_]\w*")
_NAMED = (ParamKind.POSITIONAL, ParamKind.KEYWORD_ONLY)
# the value a required parameter holds when no construction in the file passes it anything else than a torch
# activation (a name no code binds: conditions that hold it are never decided true or false)
ELSEWHERE = "__passed_by_another_file__"


@dataclass(frozen=True, slots=True)
class PassedActivation:
    """A construction of the class passes `callee` (qualified) where the binding at `span` stores `param`;
    `test` is the condition under which the module holds it (`activation is nn.GELU()`). `callee` is "" for
    a required parameter that no construction in the file passes anything else: `test` is then
    `<param> is <ELSEWHERE>`, the binding's value being another file's choice."""

    span: Span
    param: str
    test: str
    callee: str


def calls_attribute(text: str, attr: str) -> bool:
    """Whether `attr` is among `groups_at_word_starts(_SELF_CALLS, text)` (`self.<attr>(`, `self` starting a
    word), found from the occurrences of `self.<attr>` alone: the class's whole text was scanned for every call
    of an attribute to ask about one or two (`self.config = config`, stored in most classes, never called).
    A match of `_SELF_CALLS` holds the whole name after `self.` (what follows it is `(` or whitespace) and no
    other `self.`, so the scan's matches are the occurrences that pass these two tests."""
    if _NAME.fullmatch(attr) is None:
        return False  # the scan's group is such a name (an item's `layers[0]` is never one)
    needle = f"self.{attr}"
    at = text.find(needle)
    while at >= 0:
        if (not at or _WORD_CHAR.match(text, at - 1) is None) and _CALL_OPENS.match(text, at + len(needle)):
            return True
        at = text.find(needle, at + 1)
    return False


def stores_activation(init: Init | None) -> bool:
    """Whether `init` binds a torch activation without arguments, or stores a required parameter as it is
    (the only bindings read here)."""
    return init is not None and any(_plain_activation(b) or _required_parameter(b, init) for b in init.bindings)


def passed_activations(name: str, init: Init, src: SourceText, table: ClassTable) -> tuple[PassedActivation, ...]:
    """Each activation other than its default that a construction of class `name` in this file passes to a
    parameter `__init__` stores unchanged."""
    info = table.infos.get(name)
    function = info.methods.get("__init__") if info is not None else None
    if info is None or function is None:
        return ()
    # a required parameter only where the class calls what it stores (`self.act(...)`): an activation, not a
    # config or a size
    called_attrs = {b.attr for b in init.bindings if _required_parameter(b, init)}
    if called_attrs:
        text = src.text(info.node)
        called_attrs = {attr for attr in called_attrs if calls_attribute(text, attr)}
    required_here = [b for b in init.bindings if b.attr in called_attrs and _required_parameter(b, init)]
    readable = [b for b in init.bindings if _plain_activation(b)] + required_here
    if not readable:
        return ()
    stored = {src.span(n): src.text(n) for n in walk(function) if n.type == "assignment"}
    defaults = {p.name: (p.default or "").strip() for p in init.params}
    order = positional_names(function, src)[1:]
    out: list[PassedActivation] = []
    for b in readable:
        required = b in required_here
        m = _STORED.match(stored.get(b.span, "").strip())
        if m is None or m.group(1) != b.attr:
            continue
        param, called = m.group(2), m.group(3) is not None
        default = defaults.get(param, "")
        if required:
            if called or rebinds(function, param, src):
                continue  # only an instance stored as it is
        elif not default or default.endswith("()") == called or rebinds(function, param, src):
            continue  # stored as is: an instance default; called once: a class default; nothing else
        held = b.value.callee if isinstance(b.value, Ctor) else None
        position = order.index(param) if param in order else -(1 << 20)
        unread = False
        for text in _arguments(name, position, param, src):
            callee = _activation_class(text if called else text[:-2] if text.endswith("()") else "", table)
            unread = unread or callee is None
            if callee is not None and callee != held and not any(
                    p.span == b.span and p.callee == callee for p in out):
                out.append(PassedActivation(b.span, param, f"{param} is {text}", callee))
        if required and not unread:  # no construction here passes anything else: the rest is another file's
            out.append(PassedActivation(b.span, param, f"{param} is {ELSEWHERE}", ""))
    return tuple(out)


def with_passed(init: Init, passed: Sequence[PassedActivation]) -> Init:
    """`init` with each binding `passed` names read as its default and every activation passed there."""
    bindings: list[Binding] = []
    for b in init.bindings:
        here = [p for p in passed if p.span == b.span]
        if not here:
            bindings.append(b)
            continue
        known = [p for p in here if p.callee]
        condition = b.condition
        if known:
            condition = _join(condition, " and ".join(f"not ({p.test})" for p in known))
        elsewhere = [p for p in here if not p.callee]
        if elsewhere:
            condition = _join(condition, elsewhere[0].test)
        bindings.append(replace(b, condition=condition))
        bindings.extend(replace(b, value=Ctor(p.callee), condition=_join(b.condition, p.test)) for p in known)
    return replace(init, bindings=tuple(bindings))


def chosen_elsewhere(condition: str | None, param: str) -> bool:
    """Whether a required parameter stored as it is holds, by `condition`, only what another file passes
    (`with_passed`'s `<param> is <ELSEWHERE>`: no construction in this file passes it anything but the torch
    activations read as bindings of their own)."""
    return condition is not None and f"{param} is {ELSEWHERE}" in condition


def _plain_activation(b: Binding) -> bool:
    return isinstance(b.value, Ctor) and b.value.callee in ACTIVATIONS and not b.value.args and not b.value.kwargs


def _required_parameter(b: Binding, init: Init) -> bool:
    """Whether `b` stores an `__init__` parameter without a default as it is (`self.act = act`)."""
    if isinstance(b.value, Ctor) or b.condition is not None:
        return False
    name = b.value.text.strip()
    return any(p.name == name and p.default is None and p.kind in _NAMED for p in init.params)


def _activation_class(written: str, table: ClassTable) -> str | None:
    """The torch activation class `written` (a dotted name) denotes in this file, else None."""
    if not written or not _DOTTED.match(written) or not written.rsplit(".", 1)[-1][:1].isupper():
        return None
    if table.symbols.has_class(written) or not table.symbols.is_imported(written.split(".")[0]):
        return None
    callee = table.symbols.qualify(written)
    return callee if callee in ACTIVATIONS else None


def _arguments(cls: str, position: int, keyword: str, src: SourceText) -> list[str]:
    """The texts the file's calls of `cls` by name pass at `position` or as `keyword` (left out: none)."""
    out: list[str] = []
    root = src.tree.root_node
    for m in re.finditer(rb"\b" + re.escape(cls.encode()) + rb"\s*\(", src.data):
        node = root.named_descendant_for_byte_range(m.start(), m.start() + len(cls))
        call = node.parent if node is not None else None
        if call is None or call.type != "call" or call.child_by_field_id(Field.FUNCTION) != node:
            continue
        value = argument_at(call, position, keyword, src)
        if value is not None:
            out.append(src.text(value).strip())
    return out


def _join(condition: str | None, test: str) -> str:
    return test if condition is None else f"{condition} and {test}"
