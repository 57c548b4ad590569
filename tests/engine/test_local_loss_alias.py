"""Family 16 through a local shorthand of the loss (lucidrains' CoCa-pytorch `coca_pytorch.py:501` and
MaMMUT-pytorch: `ce = F.cross_entropy`, then `ce(logits, labels, ignore_index=...)`): the vocabulary head is found
as when the loss is written `F.cross_entropy(...)` (`canonical.spellings.LOCAL_FUNCTIONS`). The rule offers no
automatic rewrite, so there is no fix to compare."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
ENV = Environment("cuda", frozenset({"liger_kernel"}), "2.13.0")

COCA = '''
class CoCa(nn.Module):
    def __init__(self, dim, num_tokens):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.to_logits = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_tokens, bias=False))

    def forward(self, text, labels):
        logits = self.to_logits(self.token_emb(text))
        ce = F.cross_entropy
        logits = logits.transpose(1, 2)
        return ce(logits, labels, ignore_index=0)
'''


def _family16(code: str) -> list[int]:
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, ENV)
    return [f.span.start_line - HEADER.count("\n") for f in result.findings if f.family == 16]


def _line(code: str, what: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines()) if what in ln)


def test_the_head_before_a_local_cross_entropy_shorthand_is_found() -> None:
    assert _family16(COCA) == [_line(COCA, "logits = self.to_logits(")]
    written = COCA.replace("        ce = F.cross_entropy\n", "").replace("return ce(", "return F.cross_entropy(")
    assert _family16(written) == [_line(written, "logits = self.to_logits(")]


def test_a_shorthand_rebound_before_the_call_is_not_the_loss() -> None:
    rebound = COCA.replace("        logits = logits.transpose(1, 2)\n",
                           "        logits = logits.transpose(1, 2)\n        ce = self.loss_fn\n")
    assert _family16(rebound) == []
