"""Family 4 of dev2 batch 17 (prediction-flow 0.1.5 `prediction_flow/pytorch/nn/attention.py:94`, DIN's attention):
two facts the checker lacked, each with the near forms that must stay silent.

- `from torch.functional import F`: `torch/functional.py` binds `torch.nn.functional` as `F`
  (`adopter.analysis.names.torch_reexports`); the same import in auto-round (`auto_round/wrapper.py:20`), deepchem
  (`deepchem/models/torch_models/gnn.py:9`) and elektronn3 (`elektronn3/modules/wsconv.py:8`).
  `import torch.functional as F` is not it: that `F` is `torch.functional`, which has no `softmax`.
- An index assignment writes into a tensor and keeps its rank: the `[B, T]` scores made by `.view(b, t)` are masked
  with `scores[~mask] = -inf` and then `F.softmax(scores, dim=1)` is the last axis
  (`normalise._writes_into_ranked`). The same write between the rank and the softmax in sentence-transformers
  (`cross_encoder/losses/list_net.py:164`), speechbrain (`alignment/aligner.py:447`), stanza
  (`models/common/relative_attn.py:98`, 5-D, `dim=3` not last) and transformers' deepseek_v4 (4-D, `dim=2`).
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nimport torch.nn as nn\n\n\n"

# prediction-flow's DIN attention, at fixture size: the scores `[B, T]` come from a view, are masked by an index
# assignment and normalised over dim=1.
DIN_ATTENTION = '''from torch.functional import F


class Attention(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc = nn.Linear(hidden, 1)

    def forward(self, keys, lengths):
        b, t, d = keys.size()
        scores = self.fc(keys).view(b, t)
        scores = scores / (d ** 0.5)
        mask = torch.arange(t).repeat(b, 1) < lengths.view(-1, 1)
        scores[~mask] = -1e9
        scores = F.softmax(scores, dim=1)
        return torch.matmul(scores.unsqueeze(1), keys).squeeze(1)
'''


def _family4(code: str) -> list[int]:
    env = Environment("cpu", frozenset(), "2.13.0")
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, env)
    return [f.span.start_line - HEADER.count("\n") for f in result.findings if f.family == 4]


def _line(code: str, what: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines()) if what in ln)


def test_din_attention_masked_by_an_index_write_is_a_last_axis_softmax() -> None:
    assert _family4(DIN_ATTENTION) == [_line(DIN_ATTENTION, "F.softmax(scores, dim=1)")]
    usual = DIN_ATTENTION.replace("from torch.functional import F", "import torch.nn.functional as F")
    assert _family4(usual) == [_line(usual, "F.softmax(scores, dim=1)")]  # the index write alone


def test_f_imported_from_torch_functional_is_torch_nn_functional() -> None:
    unmasked = DIN_ATTENTION.replace("        scores[~mask] = -1e9\n", "")
    assert _family4(unmasked) == [_line(unmasked, "F.softmax(scores, dim=1)")]


def test_torch_functional_imported_as_f_is_not_torch_nn_functional() -> None:
    # `import torch.functional as F`: the module of `torch.einsum`; `F.softmax` there is no torch softmax.
    module = DIN_ATTENTION.replace("from torch.functional import F", "import torch.functional as F")
    assert _family4(module) == []
    # Another name imported from torch.functional is not the functional module either.
    other = DIN_ATTENTION.replace("from torch.functional import F", "from torch.functional import einsum as F")
    assert _family4(other) == []


def test_an_index_write_into_a_3d_tensor_keeps_dim_1_off_the_last_axis() -> None:
    three_d = DIN_ATTENTION.replace("view(b, t)", "view(b, t, 1)").replace("scores.unsqueeze(1)", "scores")
    assert _family4(three_d) == []  # dim=1 of `[B, T, 1]` is not the last axis, written into or not


def test_an_index_write_into_a_tensor_of_unknown_rank_proves_nothing() -> None:
    unknown = DIN_ATTENTION.replace("self.fc(keys).view(b, t)", "self.fc(keys)")
    assert _family4(unknown) == []


def test_a_rebinding_after_the_index_write_still_ends_the_rank() -> None:
    rebound = DIN_ATTENTION.replace("        scores[~mask] = -1e9\n",
                                    "        scores[~mask] = -1e9\n        scores = torch.atleast_3d(scores)\n")
    assert _family4(rebound) == []
