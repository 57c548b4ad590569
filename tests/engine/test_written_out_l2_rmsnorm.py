"""Family 12: F.normalize written out, then a factor (helper `mech39`, the oracle's miss in torchmultimodal).

torchmultimodal's `SimpleRMSNorm` divides x by its L2 norm clamped at eps (`x.norm(p=2, dim=-1,
keepdim=True).clamp_min(eps).expand_as(x)`), which is what `F.normalize` computes, and multiplies by
`dim ** 0.5`: an RMS normalisation (`f12-rmsnorm-unit`). `p=2` is the default of `torch.norm`, so the canonical
form drops it and `f12-rmsnorm-norm` reads `x / (x.norm(p=2, ...) * scale)` as it reads the default spelling.
Near forms that stay silent: the unit vector used without a factor, the norm of another tensor, an L1 norm.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")

HEAD = '''
import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-12):
        super().__init__()
        self.scaling = dim**0.5
        self.eps = eps

    def forward(self, x, ref):
'''


def _family12(body: str) -> list[Finding]:
    rules = [r for r in load_rules().rules if r.family == 12]
    return list(check(analyse(HEAD + body, "case.py"), rules, CPU).findings)


def _lines(f: Finding) -> set[int]:
    """The 0-based lines of the finding's statements."""
    return {line for s in f.stmt_spans for line in range(s.start_line, s.end_line + 1)}


def test_the_simple_rms_norm_of_torchmultimodal_is_one_site_over_both_lines() -> None:
    found = _family12('''        denom = x.norm(p=2, dim=-1, keepdim=True).clamp_min(self.eps).expand_as(x)
        return (x / denom) * self.scaling
''')
    assert [f.rule_id for f in found] == ["f12-rmsnorm-unit"]
    assert _lines(found[0]) == {12, 13}
    assert found[0].fixable is False


def test_the_norm_written_with_p2_is_the_default_norm() -> None:
    found = _family12('''        return x / (torch.norm(x, p=2, dim=-1, keepdim=True) * self.scaling).clamp(min=self.eps)
''')
    assert [f.rule_id for f in found] == ["f12-rmsnorm-norm"]


def test_near_forms_stay_silent() -> None:
    assert [f.rule_id for f in _family12('''        u = x / x.norm(dim=-1, keepdim=True).clamp_min(self.eps)
        return u * self.scaling
''')] == ["f12-rmsnorm-unit"]  # the positive form beside them
    assert _family12('''        u = x / x.norm(dim=-1, keepdim=True).clamp_min(self.eps)
        return u @ ref.t()
''') == []  # a unit vector in a cosine similarity: no factor
    assert _family12('''        return x / ref.norm(dim=-1, keepdim=True).clamp_min(self.eps) * self.scaling
''') == []  # the norm of another tensor
    assert _family12('''        return x / x.norm(p=1, dim=-1, keepdim=True).clamp_min(self.eps) * self.scaling
''') == []  # an L1 norm
    assert _family12('''        return x / (torch.norm(x, p=1, dim=-1, keepdim=True) * self.scaling)
''') == []  # p=1 is still kept
    assert _family12('''        return x * ref.norm(dim=-1, keepdim=True).clamp_min(self.eps) * self.scaling
''') == []  # multiplied, not divided
