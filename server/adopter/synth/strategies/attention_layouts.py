"""Axis layouts of an attention chain's products: einsum equations, permutations to SDPA's (..., n, d)."""

from __future__ import annotations

from adopter.dsl.types import Expr, Op, OpKind, Value
from adopter.synth.strategies.attention_text import paren

# Spellings of a matrix product whose operands the canonical pass may read through inserted transposes.
PRODUCTS = frozenset({("operator", "@"), ("function", "torch.matmul"), ("method", "matmul"),
                      ("function", "torch.bmm"), ("method", "bmm")})


def _letters(equation: str) -> tuple[list[str], str] | None:
    """The operands' and the output's axis letters of a two-operand einsum naming every axis (no `...`)."""
    text = equation.strip()
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        return None
    body = text[1:-1].replace(" ", "")
    if body.count("->") != 1 or "." in body:
        return None
    lhs, out = body.split("->")
    operands = lhs.split(",")
    if len(operands) != 2 or not all(s.isalpha() and len(set(s)) == len(s) for s in (*operands, out)):
        return None
    return operands, out


def einsum_layout(scores_eq: str | None, out_eq: str | None) -> tuple[list[tuple[int, ...] | None], tuple[int, ...] | None] | None:
    """For the chain's einsum products with their axes in another order than SDPA's (`"nqhd,nkhd->nhqk"` and
    `"nhql,nlhd->nqhd"`): the permutations bringing q, k and v to (batch..., n, d) and the one bringing SDPA's
    (batch..., n, e) output to the einsum's output order (None where the order already holds). The scores
    must come out as (batch..., i, j), which the mask, the softmax over the last axis and the probabilities'
    product read; every batch axis must be named by every operand. None for any other layout."""
    perms: list[tuple[int, ...] | None] = [None, None, None]
    batch: list[str] | None = None
    i = j = None
    if scores_eq is None:
        batch_len = None
    else:
        read = _letters(scores_eq)
        if read is None:
            return None
        (a, b), s = read
        contracted = [c for c in a if c in b and c not in s]
        only_a, only_b = [c for c in a if c not in b], [c for c in b if c not in a]
        if len(contracted) != 1 or len(only_a) != 1 or len(only_b) != 1 or s[-2:] != only_a[0] + only_b[0]:
            return None
        batch, i, j, c = list(s[:-2]), only_a[0], only_b[0], contracted[0]
        if sorted(a) != sorted([*batch, i, c]) or sorted(b) != sorted([*batch, j, c]):
            return None
        perms[0], perms[1] = _perm(a, [*batch, i, c]), _perm(b, [*batch, j, c])
        batch_len = len(batch)
    out_perm: tuple[int, ...] | None = None
    if out_eq is not None:
        read = _letters(out_eq)
        if read is None:
            return None
        (p, v), o = read
        if batch_len is not None and len(p) != batch_len + 2:
            return None
        pb, pi, pj = list(p[:-2]), p[-2], p[-1]
        es = [c for c in v if c not in p]
        if len(es) != 1 or pj not in v or pj in o or pi in v or pi not in o:
            return None
        e = es[0]
        if sorted(v) != sorted([*pb, pj, e]) or sorted(o) != sorted([*pb, pi, e]):
            return None
        perms[2] = _perm(v, [*pb, pj, e])
        out_perm = _perm("".join([*pb, pi, e]), list(o))
    return perms, out_perm


def _perm(source: str, target: list[str]) -> tuple[int, ...] | None:
    """The `permute` dims bringing axes `source` to the order `target`; None when it is the same order."""
    order = tuple(source.index(x) for x in target)
    return None if order == tuple(range(len(source))) else order


def permuted(text: str, perm: tuple[int, ...] | None) -> str:
    """`text` with its axes permuted: `.transpose(a, b)` for one swap, else `.permute(...)`."""
    if perm is None:
        return text
    moved = [k for k, d in enumerate(perm) if d != k]
    if len(moved) == 2:
        return f"{paren(text)}.transpose({moved[0]}, {moved[1]})"
    return f"{paren(text)}.permute({', '.join(map(str, perm))})"


def einsum_equation(op: Op) -> str | None:
    """The equation of the `einsum` (torch's or einops') a canonical op was written as, else None."""
    origin = op.origin
    if origin is None or origin.kind != OpKind.FUNCTION or origin.target not in ("torch.einsum", "einops.einsum"):
        return None
    equation = origin.args[-1] if origin.target == "einops.einsum" else origin.args[0]
    return equation.text if isinstance(equation, Expr) else None


def product_operands(op: Op) -> tuple[Value, ...]:
    """The two tensors of a matrix product as written (`bmm(v, p)`, `einsum("bij,bjk->bik", v, p)` without its
    equation), else ()."""
    if (op.kind.value, op.target) in PRODUCTS:
        return op.args if len(op.args) == 2 else ()
    if op.kind != OpKind.FUNCTION or op.target not in ("torch.einsum", "einops.einsum") or len(op.args) != 3:
        return ()
    return op.args[:2] if op.target == "einops.einsum" else op.args[1:]


def is_layout(transpose: Op, scores: Op) -> bool:
    """Whether the chain's kᵀ is a layout the source wrote without a transpose: the keys' last two axes swapped
    by a `permute` or `rearrange` (the canonical pass reads it as that layout and a transpose), or a local
    already laid out (..., d, n) that the product reads as it is (two transposes inserted at the product)."""
    origin = transpose.origin
    if origin is None:
        return False
    if origin.target in ("permute", "einops.rearrange"):
        return True
    return (origin.kind.value, origin.target) in PRODUCTS and transpose.span == scores.span
