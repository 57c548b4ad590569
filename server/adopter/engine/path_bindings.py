"""Which conditional `__init__` binding a forward op runs, read from the branch tests around the op.

An attribute bound on several paths (`if ffn_type == "swiglu": self.ffn = swiglu_ffn(...)` / `elif ffn_type ==
"gelu": self.ffn = gelu_ffn(...)`) is called in the forward as one op per binding, each inside a branch the
flow makes of that binding's condition. A binding whose condition a branch test around the op contradicts
(the test taken false where the binding needs it true, or the reverse) does not run there. Conditions are
compared as source text, conjunct by conjunct (`Binding.condition` joins its `if` tests with `and`, `not (...)`
for an else); anything else (an `or`, a test spelled otherwise) contradicts nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Facts = tuple[frozenset[str], frozenset[str]]  # tests known true, tests known false

_NOT = re.compile(r"^not \((.*)\)$", re.DOTALL)


def path_facts(conditions: Sequence[tuple[tuple[str, ...], int]]) -> Facts:
    """The tests known true and false on a path, from `FlatForward.conditions` (each branch's tests, in
    source order, and the alternative taken: its own test is true, the earlier ones false)."""
    true: set[str] = set()
    false: set[str] = set()
    for tests, alt in conditions:
        if alt < len(tests) and tests[alt] != "else":
            true.add(_norm(tests[alt]))
            # A test taken true makes each of its `and` operands true, and the operand of a `not (...)` false
            # (the flow's branch over the bindings of a Sequential whose items are conditional expressions
            # inside an `if` tests `not (inp == hidden_dim) and use_hs and use_se`).
            for part in _conjuncts(tests[alt]):
                m = _NOT.match(part)
                if m is not None and _balanced(m.group(1)):
                    false.add(_norm(m.group(1)))
                true.add(_norm(part))
        false.update(_norm(t) for t in tests[:alt])
    return frozenset(true), frozenset(false)


def contradicts(condition: str, facts: Facts) -> bool:
    """Whether a binding's `condition` cannot hold on a path with these facts."""
    true, false = facts
    if not (true or false):
        return False
    for part in _conjuncts(condition):
        m = _NOT.match(part)
        if m is not None and _balanced(m.group(1)):
            if _norm(m.group(1)) in true:
                return True
        elif _norm(part) in false:
            return True
    return False


def _conjuncts(condition: str) -> list[str]:
    """The top-level `and` operands of `condition`; one operand when it has a top-level `or`."""
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(condition):
        ch = condition[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and condition.startswith(" or ", i):
            return [condition]
        elif depth == 0 and condition.startswith(" and ", i):
            parts.append(condition[start:i])
            start = i + 5
            i += 4
        i += 1
    parts.append(condition[start:])
    return [p.strip() for p in parts]


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _norm(text: str) -> str:
    return " ".join(text.split())
