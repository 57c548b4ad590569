"""OpenMMLab's container classes, read as the torch containers they extend: a table of library names.

mmengine's `Sequential` (`mmengine/model/base_module.py`, and mmcv 1.x's `mmcv/runner/base_module.py` before
it) is `class Sequential(BaseModule, nn.Sequential)` whose `__init__` only calls both bases' and which defines
no `forward`: calling it runs its children in order, as `nn.Sequential` does. The library is never imported,
so the names it exports are this table. A pair of layers built in one is a family 7/8 site like any other, but
the in-place fold (`FoldedConvBnSequential`, a `torch.nn.Sequential`) would drop the `BaseModule` base and its
`init_weights` walk, so the fix declines these (`spelled_by_library`).
"""

from __future__ import annotations

from typing import Final

SEQUENTIALS: Final = frozenset({
    "mmengine.model.Sequential",
    "mmengine.model.base_module.Sequential",
    "mmcv.runner.Sequential",
    "mmcv.runner.base_module.Sequential",
})


def torch_container(qualified: str) -> str:
    """`mmengine.model.Sequential` -> `torch.nn.Sequential`; any other name as given."""
    return "torch.nn.Sequential" if qualified in SEQUENTIALS else qualified


def spelled_by_library(imports: dict[tuple[str, str | None], str], callee: str) -> bool:
    """Whether the dotted callee `callee` (`Sequential`, `mm.Sequential`, `mmengine.model.Sequential`) names a
    Sequential of this table through the file's imports ((module, name or None) -> the local name bound)."""
    for (module, imported), local in imports.items():
        if callee == local or callee.startswith(f"{local}."):
            target = f"{module}.{imported}" if imported is not None else module
            if f"{target}{callee[len(local):]}" in SEQUENTIALS:
                return True
    return False
