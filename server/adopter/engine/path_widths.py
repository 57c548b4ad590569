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
from adopter.engine.layer_facts import factors, widths_agree

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


_HEAD_WIDTH = re.compile(r"^(.+?)//([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)$")  # `X // heads`: a count named, not a literal


def agree_by_head_split(widths: Sequence[str | None], init: InitIndex) -> bool:
    """Whether the widths are a query's `X` beside keys' and values' `m * (X // n)` (or `X // n` alone), where
    `__init__` splits `X` into `n` heads of `X // n` (basicts' `hidden_size` beside `self.kv_heads *
    self.head_size` with `self.head_size = hidden_size // n_heads`; zetascale's `dim` beside `kv_dim = dim //
    query_heads * kv_heads`): grouped- or multi-query attention written with the model width for the query.

    Each factor (top-level `*`) that is an attribute bound once, unconditionally, or a local of `__init__`
    (`InitIndex.size`) is read as what it holds. The widths agree when two of them are the same product of a
    count and a head width `X // n`, and the third is that `X`. The matcher binds the three Linears in every
    order, so which is the query is not known here: a lone head width (`X // n`, one key/value head) is not
    taken, since CMT's reduced query/key width `qk_dim = dim // qk_ratio` beside the values' `dim` (not heads of
    one width: the Perceiver's wrong kind) would read the same."""
    if len(widths) != 3 or any(w is None for w in widths) or len(set(widths)) == 1:
        return False
    held = [[_held(f, init) for f in factors(str(w))] for w in widths]
    for i, whole_width in enumerate(held):  # the three in any order: the matcher tries every assignment
        a, b = (h for j, h in enumerate(held) if j != i)
        if a != b or len(a) < 2:
            continue  # grouped heads give the keys and the values one width: a count times the head width
        for head in a:
            m = _HEAD_WIDTH.match(head)
            if m is not None and whole_width == [m.group(1)]:
                return True  # the query's width as written: the keys and values are groups of its heads
    return False


def _held(text: str, init: InitIndex) -> str:
    """A factor as what it holds: `self.<attr>` bound once, unconditionally, to an expression, or a local of
    `__init__` that holds one size; otherwise as written."""
    m = _ATTR.match(text)
    if m is not None:
        bound = init.by_attr.get(m.group(1), ())
        if len(bound) == 1 and bound[0].condition is None and isinstance(bound[0].value, Expr):
            return norm_text(bound[0].value.text)
        return text
    held = init.size(text) if text.isidentifier() else None
    return norm_text(held) if held is not None else text
