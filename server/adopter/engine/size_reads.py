"""Whether an op reads only a tensor's size or metadata (`h.shape`, `h.size(1)`, `len(h)`), not its values."""

from __future__ import annotations

import re

from adopter.dsl.types import FUNCTION_OP, METHOD_OP, OPERATOR_OP, Expr, Op, Ref

_SIZE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement", "element_size"})
_SIZE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "layout"})
_SIZE_FUNCTIONS = frozenset({"len", "torch.numel"})


def reads_size_only(op: Op | None) -> bool:
    """Whether `op` reads its first argument only for its size, dtype or device: folding a layer into the
    next one leaves these unchanged, so such a reader does not see the value a rewrite replaces."""
    if op is None or not op.args or not isinstance(op.args[0], Ref):
        return False
    if op.kind == METHOD_OP:
        return op.target in _SIZE_METHODS
    if op.kind == FUNCTION_OP:
        return op.target in _SIZE_FUNCTIONS and len(op.args) == 1
    return (op.kind == OPERATOR_OP and op.target == "getattr" and len(op.args) == 2
            and isinstance(op.args[1], Expr) and op.args[1].text.strip("`") in _SIZE_ATTRS)


def text_reads_size_only(texts: tuple[str, ...], name: str) -> bool:
    """Whether source text (a branch test: `len(out.shape) == 3`) reads `name` only for its size or metadata."""
    n = rf"(?<![\w%.]){re.escape(name)}(?!\w)"  # the name alone (`out`, `%3`), not `outer`, `%31`, `self.out`
    sized = re.compile(rf"{n}\s*\.\s*(?:{'|'.join(_SIZE_ATTRS)})\b|{n}\s*\.\s*(?:{'|'.join(_SIZE_METHODS)})\s*\("
                       rf"|\blen\(\s*{n}\s*\)")
    return not any(re.search(n, sized.sub("", t)) for t in texts)
