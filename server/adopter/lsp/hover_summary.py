"""The short form of an architecture that a hover shows: its layers and its forward's operator sequence.

The full DSL (`adopter.dsl.format_architecture`) prints every binding and op with its source range; a
hover is read at a glance, so this form keeps what the architecture *is*:

- **Layers**: the submodules bound in `__init__`, grouped by constructor (`query, key, value: Linear`),
  a conditional one marked `?`; plain attributes (`self.scale = ...`) are left out.
- **Forward**: the ops in order, joined by `→`. A submodule call prints as its attribute (`query`), a
  function as its last name (`matmul`), a method as `.name`, an operator as its symbol. The ops of an
  inlined helper (`via self.transpose_for_scores`) print once, as the helper's name. Shape and
  bookkeeping steps (views, indexing, tuple packing, see `_PLUMBING`) are left out and counted. A branch
  prints its paths in brackets (`[a | b]`, an `if` without `else` as `[a]?`), or, when that would not fit,
  how many paths it has and which ops they use (`[optional: ...]` for an `if` without `else`); a loop
  prints as `for[ ... ]`.

No source range appears in it: the "Show architecture" link opens the full DSL with positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from adopter.dsl.types import Architecture, Block, Branch, Ctor, Loop, Op, OpKind, Return

WIDTH = 76  # characters per line of the code block (a hover is ~80 wide before it scrolls sideways)
MAX_LAYER_LINES = 6
MAX_FORWARD_LINES = 8
BRANCH_INLINE = 44  # a branch wider than this prints as a summary of its paths

# Steps that reshape, index or pack values without computing on their elements. The tensor methods are
# PyTorch's view and memory-layout operations ("Tensor Views", pytorch.org/docs/stable/tensor_view.html,
# plus `contiguous`, `size`, `dim` and the dtype/device casts); the operators are the analysis's own
# spellings of subscripts, attribute reads, tuple/list displays and casts (adopter.analysis.canonical.normalise).
_PLUMBING_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t", "contiguous", "size", "dim",
    "unsqueeze", "squeeze", "expand", "expand_as", "flatten", "unflatten", "narrow", "unbind", "split",
    "chunk", "movedim", "to", "type", "float", "half", "bfloat16", "double", "int", "long", "bool",
    "detach", "clone", "numel",
})
_PLUMBING_OPERATORS = frozenset({"getitem", "getattr", "tuple", "list", "dict", "cast", "set"})


def _short_callee(ctor: Ctor) -> str:
    name = ctor.callee.rsplit(".", 1)[-1]
    if ctor.lookup is not None:
        name += "[…]"
    if ctor.items or ctor.repeat is not None:
        inner = sorted({_short_callee(item) for item in ctor.items})
        repeat = f"{ctor.repeat} × " if ctor.repeat is not None else ""
        name += "{" + repeat + ", ".join(inner) + "}" if inner else ""
    return name


def layer_lines(arch: Architecture) -> list[str]:
    """`attr, attr: Callee` groups, in the order of first binding, wrapped to WIDTH."""
    if arch.init is None:
        return []
    groups: dict[str, list[str]] = {}
    for binding in arch.init.bindings:
        if not isinstance(binding.value, Ctor):
            continue
        names = groups.setdefault(_short_callee(binding.value), [])
        name = binding.attr + ("?" if binding.condition is not None else "")
        if name not in names:
            names.append(name)
    entries = [f"{', '.join(names)}: {callee}" for callee, names in groups.items()]
    return _wrap(entries, " · ", MAX_LAYER_LINES)


def _op_token(op: Op) -> str | None:
    if op.kind is OpKind.MODULE:
        return op.target.removeprefix("self.")
    if op.kind is OpKind.FUNCTION:
        return op.target.rsplit(".", 1)[-1]
    if op.kind is OpKind.METHOD:
        return None if op.target in _PLUMBING_METHODS else "." + op.target
    if op.kind is OpKind.OPERATOR:
        return None if op.target in _PLUMBING_OPERATORS else op.target
    return op.target.rsplit(".", 1)[-1] + "()"


class _Tokens:
    """Walks a block into tokens, counting the plumbing steps it leaves out."""

    def __init__(self) -> None:
        self.hidden = 0

    def block(self, block: Block) -> list[str]:
        out: list[str] = []
        for stmt in block:
            if isinstance(stmt, Op):
                token = self._op(stmt)
            elif isinstance(stmt, Branch):
                token = self._branch(stmt)
            elif isinstance(stmt, Loop):
                body = " → ".join(self.block(stmt.body))
                token = f"for[{body}]" if body else None
            else:
                assert isinstance(stmt, Return)
                token = None
            if token is not None and (not out or out[-1] != token):
                out.append(token)
        return out

    def _op(self, op: Op) -> str | None:
        if op.via:  # an inlined helper prints once, as its name
            return op.via[0].removeprefix("self.").rsplit(".", 1)[-1] + "()"
        token = _op_token(op)
        if token is None:
            self.hidden += 1
        return token

    def _branch(self, branch: Branch) -> str | None:
        arms = [self.block(path) for path in branch.paths]
        texts = [" → ".join(arm) for arm in arms]
        if not any(texts):
            return None
        if len(texts) == 2 and not texts[1]:  # `if` without `else` (or with an empty one)
            inline = f"[{texts[0]}]?"
        else:
            inline = "[" + " | ".join(text or "·" for text in texts) + "]"
        if len(inline) <= BRANCH_INLINE:
            return inline
        used = list(dict.fromkeys(token for arm in arms for token in _flat(arm)))
        head = "[optional: " if len(texts) == 2 and not texts[1] else f"[{len(texts)} paths: "
        shown: list[str] = []
        for token in used[:4]:  # the ops the paths use, as many as fit one line
            if len(head) + len(", ".join([*shown, token])) + len(", …]") > WIDTH - 2:
                break
            shown.append(token)
        return head + ", ".join([*shown, *(["…"] if len(shown) < len(used) else [])]) + "]"


def _flat(tokens: Iterable[str]) -> Iterable[str]:
    for token in tokens:
        if token.startswith("[") or token.startswith("for["):
            continue  # a nested branch is already a summary; its parts are not single ops
        yield token


def forward_lines(arch: Architecture) -> list[str]:
    """The forward's operator sequence, wrapped; the last line says how many plumbing steps were left out."""
    if arch.forward is None:
        return []
    walker = _Tokens()
    tokens = walker.block(arch.forward.body)
    lines = _wrap(tokens, " → ", MAX_FORWARD_LINES)
    if walker.hidden:
        lines.append(f"({walker.hidden} shape and indexing steps not shown)")
    return lines


def _wrap(items: Sequence[str], separator: str, max_lines: int) -> list[str]:
    """Join items with separator into lines of at most WIDTH, a line's trailing separator included (an
    over-long item gets its own line)."""
    lines: list[str] = []
    current = ""
    for item in items:
        candidate = current + separator + item if current else item
        if current and len(candidate) + len(separator.rstrip()) > WIDTH:  # room for the next separator
            lines.append(current + separator.rstrip())
            current = item
        else:
            current = candidate
    if current:
        lines.append(current)
    if len(lines) > max_lines:
        lines = [*lines[: max_lines - 1], f"… ({len(lines) - max_lines + 1} more lines: Show architecture)"]
    return lines
