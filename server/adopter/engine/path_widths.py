"""Output widths that agree on some path only: a width held by an attribute of `__init__` that a conditional
expression binds (diffusers' `Attention`: `self.inner_kv_dim = self.inner_dim if kv_heads is None else
dim_head * kv_heads`, the key and value Linears `nn.Linear(..., self.inner_kv_dim)` beside the query's
`nn.Linear(..., self.inner_dim)`). Read by the matcher's `same_width` guard, which then reports the site as
one of that path (no fix: the fused Linear's width would hold on that path only)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import islice, product

from adopter.dsl.types import Expr
from adopter.engine.bindings import InitIndex, norm_text
from adopter.engine.layer_facts import widths_agree

_DEPTH = 3  # attributes read through, one inside another
_MAX_CHOICES = 64  # combinations of alternatives tried
_ATTR = re.compile(r"^self\.(\w+)$")


def agree_on_a_path(widths: Sequence[str | None], init: InitIndex) -> bool:
    """Whether one value of each width agrees with one of the others' on some path (an attribute of
    `__init__` bound under conditions stands for each value it is bound to)."""
    options = [alternatives(w, init) if w is not None else frozenset({""}) for w in widths]
    if all(len(o) == 1 for o in options):
        return False  # nothing conditional: the widths as written decide
    for choice in islice(product(*[sorted(o) for o in options]), _MAX_CHOICES):
        if widths_agree([c or None for c in choice]):
            return True
    return False


def alternatives(width: str, init: InitIndex) -> frozenset[str]:
    """The widths `width` (normalised text) may be: itself, and each expression an attribute `self.<name>` is
    bound to in `__init__` (on any path), a few attributes deep."""
    out: set[str] = set()
    todo = [(width, 0)]
    while todo:
        w, depth = todo.pop()
        if w in out:
            continue
        out.add(w)
        m = _ATTR.match(w)
        if m is None or depth >= _DEPTH:
            continue
        todo.extend((norm_text(b.value.text), depth + 1) for b in init.by_attr.get(m.group(1), ())
                    if isinstance(b.value, Expr))
    return frozenset(out)
