"""Family 16 in the oracle (pass 11): an LM head with a bias into cross-entropy is the family's site (the fused
linear cross-entropy takes a bias); the head without one stays a site."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from oracle.match import find_sites  # noqa: E402
from oracle.trace import trace_step  # noqa: E402

FORMS = '''import torch.nn.functional as F
from torch import nn


class Head(nn.Module):
    def __init__(self, dim=16, vocab=32, bias=True):
        super().__init__()
        self.to_logits = nn.Linear(dim, vocab, bias=bias)

    def forward(self, x, labels):
        logits = self.to_logits(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


class NoBias(Head):
    def __init__(self):
        super().__init__(bias=False)
'''


@pytest.mark.parametrize("name", ["Head", "NoBias"])
def test_an_lm_head_into_cross_entropy_is_a_site_with_or_without_a_bias(tmp_path: Path, name: str) -> None:
    path = tmp_path / "oracle_lm_head_forms.py"
    path.write_text(FORMS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("oracle_lm_head_forms", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        model = getattr(module, name)()
    args = (torch.randn(2, 8, 16, device="meta"), torch.randint(0, 32, (2, 8), device="meta"))
    traced = trace_step(model, args, {})
    where = str(path.resolve())
    lines = FORMS.splitlines()
    head = next(i for i, ln in enumerate(lines, 1) if "logits = self.to_logits(x)" in ln)
    sites = [s for s in find_sites(traced.forward, lambda f: f == where) if s.family == 16]
    assert any(head in {ln for _, ln in s.lines} for s in sites)
