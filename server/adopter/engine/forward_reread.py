"""A match made only of the module's own forward, read again through `self(x)` in another method, is no site there.

A method that runs the module itself (`logits, _ = self(idx)` in a sampling loop, `self.forward(q=x, k=x, v=x)` in
a convenience wrapper, `self(x)` in a loss method) has the forward's ops inlined where it calls it, so that what the
method does with the result (a softmax of the logits, a cross-entropy) is matched against the layers that made it.
The forward is read as its own scope too, with its own parameters: a match lying wholly inside the inlined forward
is the forward's to find or refuse there. Read again with the method's arguments it can only differ by what those
arguments make equal (adn-torch 0.0.2 `adn/attentions/full.py:79`, `forward_single(x)` passing one `x` as the three
parameters of an attention whose projections take three: the dev2 labels refuse it as a fused q/k/v, line 59).
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.types import Op

# The `via` label of the forward inlined at a call of the module itself (`analysis.flow.calls`).
SELF_FORWARD = "self.forward"


def only_the_forward_reread(ops: Sequence[Op]) -> bool:
    """Whether every op of a match was inlined from the module's own forward at a `self(...)` call."""
    return bool(ops) and all(op.via[:1] == (SELF_FORWARD,) for op in ops)
