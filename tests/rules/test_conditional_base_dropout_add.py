"""Family 5 in a layer whose base is a name bound to `nn.Module` only when torch is installed
(`names/conditional_bases.py`): the fix rewrites the class body, never its base.

Shaped on sktime 0.36 `sktime/networks/ltsf/layers/enc_dec.py` lines 1-13 and 47-90
(`LTSFTransformerEncoderLayer._LTSFTransformerEncoderLayer`, nested in a plain builder class, its base
`nn_module` bound under a soft-dependency test with a dummy class in the `else`), cut to fixture size
(the activation fixed to ReLU, the soft-dependency check spelled with `importlib.util.find_spec`).
Compared with `equivalence.compare_modules` (torch, CPU, float32, seed 0; strict state-dict loading both
ways; outputs atol 1e-5 / rtol 1e-4, input and parameter gradients atol 1e-4 / rtol 1e-4; eval and train
mode, dropout p=0), and in training at p=0.2 with the same seed (outputs atol 1e-5 / rtol 1e-4).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fix, load, rules_of  # noqa: E402

from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f05-dropout-add-layernorm")

SKTIME_ENCODER_LAYER = '''
from importlib.util import find_spec

if find_spec("torch") is not None:
    import torch
    import torch.nn as nn

    nn_module = nn.Module
else:

    class nn_module:
        """Dummy class if torch is unavailable."""


class SelfAttention(nn_module):
    def __init__(self, d_model):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, attn_mask=None):
        return self.proj(v), None


class EncoderLayer:
    def __init__(self, d_model, d_ff, dropout):
        self.d_model, self.d_ff, self.dropout = d_model, d_ff, dropout

    def _build(self):
        return self._EncoderLayer(SelfAttention(self.d_model), self.d_model, self.d_ff, self.dropout)

    class _EncoderLayer(nn_module):
        def __init__(self, attention, d_model, d_ff=None, dropout=0.1):
            from torch.nn.functional import relu

            super().__init__()
            d_ff = d_ff or 4 * d_model
            self.attention = attention
            self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
            self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
            self.norm1 = nn.LayerNorm(d_model)
            self.norm2 = nn.LayerNorm(d_model)
            self.dropout = nn.Dropout(dropout)
            self.activation = relu

        def forward(self, x, attn_mask=None):
            new_x, attn = self.attention(x, x, x, attn_mask=attn_mask)
            x = x + self.dropout(new_x)

            y = x = self.norm1(x)
            y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1))))
            y = self.dropout(self.conv2(y).transpose(-1, 1))

            return self.norm2(x + y), attn
'''


def _layer(source: str, name: str, p: float):  # type: ignore[no-untyped-def]
    return load(source, name)["EncoderLayer"](16, 32, p)._build()


def test_the_dropout_add_norm_of_a_conditionally_based_layer_is_found() -> None:
    found = findings_of(SKTIME_ENCODER_LAYER, RULES)
    assert [f.scope_name for f in found] == ["EncoderLayer._EncoderLayer"] * 2, found  # the two residual adds
    assert all(f.fixable for f in found)


def test_the_fix_rewrites_the_body_and_keeps_the_base() -> None:
    # the two sites share `x`: one pass fixes the first, a second pass the other (then nothing is left)
    first = fix(SKTIME_ENCODER_LAYER, RULES)
    assert isinstance(first, Rewritten) and len(first.applied) == 1, first
    second = fix(first.new_source, RULES)
    assert isinstance(second, Rewritten) and len(second.applied) == 1, second
    new = second.new_source
    assert not [f for f in findings_of(new, RULES) if f.fixable]
    assert "class _EncoderLayer(nn_module):" in new and "nn_module = nn.Module" in new
    assert "x = x + self.dropout(new_x)" not in new and "return fused_dropout_add_layer_norm(" in new
    for p in (0.0, 0.2):
        torch.manual_seed(0)
        original = _layer(SKTIME_ENCODER_LAYER, "orig", p)
        torch.manual_seed(0)
        rewritten = _layer(new, "new", p)
        inputs = lambda: (torch.randn(2, 5, 16),)  # noqa: E731
        if p == 0.0:
            compare_modules(original, rewritten, inputs)
        else:
            rewritten.load_state_dict(original.state_dict(), strict=True)
            original.train()
            rewritten.train()
            args = inputs()
            torch.manual_seed(7)
            a = original(*args)[0]
            torch.manual_seed(7)
            b = rewritten(*args)[0]
            torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)
