"""Names torch's own modules bind by importing another torch module, read as the module they bind.

`torch/functional.py` (the module of `torch.einsum`, `torch.split`, `torch.stft`, ...) starts with
`import torch.nn.functional as F`, so `from torch.functional import F` binds `torch.nn.functional` itself and
`F.softmax(x, dim=-1)` after it is torch's softmax. torch is never imported; this table is the fact, read from
torch's source (2.x; the line is there since 1.0). Only names that are a whole torch module go here: a function
re-exported under its own name keeps its spelling.

Census (dev code only): `from torch.functional import F` in 4 dev packages (prediction-flow 0.1.5
`prediction_flow/pytorch/nn/attention.py:17`, auto-round `auto_round/wrapper.py:20`, deepchem
`deepchem/models/torch_models/gnn.py:9`, elektronn3 `elektronn3/modules/wsconv.py:8`). Not this form:
`import torch.functional as F` (pywick), whose `F` is `torch.functional` and has no `softmax`.
"""

from __future__ import annotations

from typing import Final

from adopter.analysis.names.torch_nn_public import torch_nn_public

MODULE_REEXPORTS: Final = {
    "torch.functional.F": "torch.nn.functional",
}


def torch_reexport(qualified: str) -> str:
    """`torch.functional.F` -> `torch.nn.functional`, `torch.nn.modules.conv.Conv2d` -> `torch.nn.Conv2d`
    (`names.torch_nn_public`); any other qualified name as given."""
    return MODULE_REEXPORTS.get(qualified) or torch_nn_public(qualified)
