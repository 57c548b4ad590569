"""Family 16 with the LM head an `nn.Sequential(norm, nn.Linear(dim, num_tokens))`: the vocabulary guard reads
the item the forward runs (the Sequential's last Linear), not the Sequential's own constructor.

The form recurs across packages (local-attention `LocalTransformer`, ring-attention `RingTransformer`,
memorizing-transformers, memory-efficient-attention, product-key-memory, block-recurrent-transformer,
gateloop-transformer, zeta's `LocalTransformer`): `self.to_logits = nn.Sequential(nn.LayerNorm(dim),
nn.Linear(dim, num_tokens))`, its logits rearranged `b n c -> b c n` into `F.cross_entropy`.
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

RULES = rules_of("f16-linear-cross-entropy")

HEAD = '''
import torch.nn.functional as F
from torch import nn
from einops import rearrange


def exists(v):
    return v is not None


class LocalTransformer(nn.Module):
    def __init__(self, dim, num_tokens=None, ignore_index=-1):
        super().__init__()
        self.has_embed_unembed = exists(num_tokens)
        if self.has_embed_unembed:
            self.token_emb = nn.Embedding(num_tokens, dim)
        self.ignore_index = ignore_index
        if self.has_embed_unembed:
            self.to_logits = nn.Sequential(
                NORM,
                nn.Linear(dim, SIZE, bias=False)
            )

    def forward(self, x, labels=None, return_loss=False):
        x = self.token_emb(x)
        logits = self.to_logits(x)
        if not return_loss:
            return logits
        loss = F.cross_entropy(
            rearrange(logits, 'b n c -> b c n'),
            labels,
            ignore_index=self.ignore_index
        )
        return loss
'''


def _source(norm: str, size: str) -> str:
    return HEAD.replace("NORM", norm).replace("SIZE", size)


@pytest.mark.parametrize("norm", ["nn.LayerNorm(dim)", "nn.RMSNorm(dim)"])
def test_a_sequential_lm_head_feeding_cross_entropy_is_a_site(norm: str) -> None:
    found = [(f.rule_id, f.span.start_line + 1) for f in findings_of(_source(norm, "num_tokens"), RULES)]
    assert found == [("f16-linear-cross-entropy", 26)]


def test_a_sequential_classifier_head_is_not() -> None:
    # the same Sequential onto a class count (no vocabulary, no embedding table of that size): a classifier
    assert findings_of(_source("nn.LayerNorm(dim)", "num_classes"), RULES) == ()


def test_a_vocabulary_sized_linear_before_another_layer_is_not() -> None:
    # the vocabulary Linear is not the item whose output reaches the loss (a layer follows it)
    source = _source("nn.LayerNorm(dim)", "num_tokens").replace(
        "nn.Linear(dim, num_tokens, bias=False)",
        "nn.Linear(dim, num_tokens, bias=False),\n                nn.Linear(num_tokens, num_classes)")
    assert "nn.Linear(num_tokens, num_classes)" in source
    assert findings_of(source, RULES) == ()
