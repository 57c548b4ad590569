"""Pattern variables bound to a nested expression written as an argument of the match (`$x` of
`F.softmax(self.linear(x), dim=-1)`): the analysis gives such a value a temporary (`%1`) that no op of the
match produces, so it has no name; its text is the argument as written.

Moving that text into the template is the same computation only where the edit removes it from where it was
and evaluates it once, at the same point: the match is one statement of the scope itself (no inlined helper,
whose calls could hand other arguments, and no other statement to reorder it with), the variable appears
once in the forward template and in no `__init__` template, and it is the only such variable (two moved
arguments could swap their evaluation order).
"""

from __future__ import annotations

import ast
import re

from adopter.dsl.types import Ref
from adopter.synth.registry import SynthContext

_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def nested_argument_texts(ctx: SynthContext) -> dict[str, str]:
    """The variables (without `$`) the template may fill with a nested argument's written text, and that
    text (parenthesised unless atomic); empty where moving it would not be exact."""
    repl = ctx.rule.replacement
    ops = ctx.finding.match.ops
    if repl is None or not repl.forward or not ops or any(op.via for op in ops) or ctx.finding.call_spans:
        return {}
    if len(set(ctx.finding.stmt_spans)) != 1:
        return {}
    produced = {name for op in ops for name in op.outputs}
    outside = [(name, value) for name, value in ctx.finding.match.env
               if isinstance(value, Ref) and value.name.startswith("%") and value.name not in produced]
    if len(outside) != 1:
        return {}
    var, value = outside[0]
    uses = [m.group(1) for m in _VAR.finditer(repl.forward)]
    if uses.count(var) != 1 or any(var in {m.group(1) for m in _VAR.finditer(code)} for _, code in repl.init):
        return {}
    readers = [op for op in ops if value in op.args or any(k.value == value for k in op.kwargs)]
    if len(readers) != 1:
        return {}
    text = ctx.argument_text(readers[0], value)
    if text is None:
        return {}
    if re.search(rf"[\w)\]]\(\s*\${var}\s*\)", repl.forward):
        text = _unwrapped(text)  # the only argument of a call: its own parentheses are enough
    return {var: text}


def _unwrapped(text: str) -> str:
    """`text` without the parentheses `argument_text` put around a compound expression (`(a + b)`)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    inner = text[1:-1]
    try:
        node = ast.parse(inner.strip(), mode="eval").body
    except SyntaxError:
        return text  # `(a) + (b)`: the parentheses are not one pair
    return text if isinstance(node, ast.Tuple) else inner.strip()
