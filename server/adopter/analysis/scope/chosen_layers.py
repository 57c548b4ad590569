"""Layers whose class a caller chooses: `nn.Conv2d if dims == 2 else nn.Conv3d` with `dims` a parameter of `__init__`
without a default.

No default decides the test, so the class of the layer is the caller's choice (nvidia-modulus 0.9 `models/pix2pix/
pix2pix.py:164–182`, mech86's fixture `C`). The pair is a site on the path where the classes fit (the counting of
RULES.md: a site reached on one path is a site), but which layer the fix would meet is not known here: no
automatic fix. Choices among BatchNorm classes only (`nn.SyncBatchNorm if distributed else nn.BatchNorm2d`) keep
their fix: the folds fold each of them at run time.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.types import Binding, Ctor

__all__ = ["CHOSEN_BY", "chosen_layer_reason"]

CHOSEN_BY = "class chosen by "  # the prefix of `Ctor.origin` of such a layer, the test after it


def chosen_layer_reason(bindings: Sequence[Binding]) -> str | None:
    """Why a match over a layer whose class a caller chooses gets no automatic fix, else None."""
    for b in bindings:
        if isinstance(b.value, Ctor) and (test := _chosen(b.value)) is not None:
            return (f"the class of a layer in `self.{b.attr}` is chosen by {test}, a parameter without a default; "
                    "a caller may pick another kind of layer, so fold it by hand where the classes fit")
    return None


def _chosen(ctor: Ctor) -> str | None:
    if ctor.origin is not None and ctor.origin.startswith(CHOSEN_BY):
        return ctor.origin[len(CHOSEN_BY):]
    for item in ctor.items:
        if (found := _chosen(item)) is not None:
            return found
    return None
