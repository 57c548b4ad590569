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
    """Why a match over a layer whose class a caller chooses gets no automatic fix, else None. Only a binding's
    own layer is read: an item of a Sequential chosen so may be one the match does not hold (an `nn.AvgPool2d
    if downsample else nn.Identity()` beside the pair), and which items a match holds is not known here."""
    for b in bindings:
        if isinstance(b.value, Ctor) and b.value.origin is not None and b.value.origin.startswith(CHOSEN_BY):
            return (f"the class of `self.{b.attr}` is chosen by {b.value.origin[len(CHOSEN_BY):]}, a parameter "
                    "without a default; a caller may pick another kind of layer, so fold it by hand where the "
                    "classes fit")
    return None
