"""The children of an empty `nn.Sequential()` that the statements after it add with `add_module`, in order.

RepVGG's branch builder and the builders copied from it (ACNet, DarkNet's conv block, MobileOne's
branches) fill a Sequential child by child instead of listing the children in the call:

    def conv_bn(c_in, c_out, k, stride, padding, groups=1):
        result = nn.Sequential()
        result.add_module("conv", nn.Conv2d(c_in, c_out, k, stride, padding, groups=groups, bias=False))
        result.add_module("bn", nn.BatchNorm2d(c_out))
        return result

`add_module` appends a child, and the Sequential runs its children in the order they were added, so the
values of the `add_module` calls that follow the construction in its own block are the children, read
like the arguments of `nn.Sequential(a, b, ...)`. An `if` the parameters' defaults decide is read on
their branch (`adopter.analysis.chains.default_branches`). Reading ends at the statement that hands the
Sequential over (`return result`, `branches.append(result)`, `self.branch = result`); nothing is read when
the Sequential is used any other way before that (a loop or an undecided `if` that adds, a call it is
passed to, an attribute of it read or set) or mentioned at all after it: its children could then depend on
the path, or change after it was handed over.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tree_sitter import Node

from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText, descendants

# (statements, function body, name, items so far, src, defaults) -> the items after them, None if unread
StepReader = Callable[[list[Node], Node, str, list[Node] | None, SourceText, Mapping[str, str | None]],
                      list[Node] | None]


def added_children(call: Node, function: Node, src: SourceText, defaults: Mapping[str, str | None],
                   steps: StepReader) -> list[Node] | None:
    """The children the statements after `name = nn.Sequential()` (`call`, with no arguments) add to it in
    `function`, read by `steps` (`adopter.analysis.chains.functions`' statement reader, which takes
    `name.add_module(key, child)` as one child added); None when the module doc's conditions fail."""
    args = call.child_by_field_id(Field.ARGUMENTS)
    body = function.child_by_field_id(Field.BODY)
    assignment = call.parent
    if (args is None or any(a.type != "comment" for a in args.named_children) or body is None
            or assignment is None or assignment.type != "assignment"
            or assignment.child_by_field_id(Field.RIGHT) != call):
        return None
    left = assignment.child_by_field_id(Field.LEFT)
    stmt = assignment.parent
    block = stmt.parent if stmt is not None and stmt.type == "expression_statement" else None
    if left is None or left.type != "identifier" or stmt is None or block is None or block.type != "block":
        return None
    name = src.text(left)
    after = [s for s in block.named_children if s.start_byte >= stmt.end_byte and s.type != "comment"]
    for i, s in enumerate(after):
        if _hands_over(s, name, src):
            if any(_mentions(t, name, src) for t in after[i + 1:]):
                return None  # changed or read after it was handed over
            return steps(after[:i], body, name, [], src, defaults)
    return steps(after, body, name, [], src, defaults)


def _hands_over(stmt: Node, name: str, src: SourceText) -> bool:
    """`return name`, `x.append(name)`, `x = name`: the statement names the Sequential once, as a whole value."""
    uses = [n for n in descendants(stmt) if n.type == "identifier" and src.text(n) == name]
    if len(uses) != 1 or stmt.type not in ("return_statement", "expression_statement"):
        return False
    parent = uses[0].parent
    if parent is not None and parent.type == "assignment":
        return parent.child_by_field_id(Field.RIGHT) == uses[0]  # `x = name`, not `name = ...`
    return parent is not None and parent.type in ("return_statement", "argument_list")


def _mentions(stmt: Node, name: str, src: SourceText) -> bool:
    return name.encode() in code_bytes(src, stmt) and any(
        n.type == "identifier" and src.text(n) == name for n in descendants(stmt))
