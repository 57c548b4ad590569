"""The leaf layers of a head that applies one layer to each of its inputs, split by the layer they belong to.

`idioms.submodules` gives the leaves of such a head (BERT's `BertPreTrainingHeads`: `predictions` on the
sequence output, `seq_relationship` on the pooled one) in the order of its layers, each named by its path
from the caller (`cls.predictions.transform.dense`, `cls.predictions.decoder`, `cls.predictions.bias`,
`cls.seq_relationship`). The path's second name is the head's own layer: `paired_layers` cuts the leaves
there, so that the submodule view unrolls layer k from argument k to result k of `a, b = self.cls(x, y)`.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.types import Binding


def paired_layers(leaves: Sequence[Binding], count: int) -> tuple[tuple[Binding, ...], ...] | None:
    """`leaves` cut into `count` runs, one per layer of the head (the path's second name), or None when they
    do not fall into exactly that many runs (a chain's leaves, or a layer whose leaves are not together)."""
    runs: list[list[Binding]] = []
    names: list[str] = []
    for leaf in leaves:
        parts = leaf.attr.split(".")
        if len(parts) < 2:
            return None
        if not names or names[-1] != parts[1]:
            if parts[1] in names:
                return None
            names.append(parts[1])
            runs.append([])
        runs[-1].append(leaf)
    return tuple(tuple(run) for run in runs) if len(runs) == count else None
