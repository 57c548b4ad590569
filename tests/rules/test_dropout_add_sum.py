"""Family 5: dropout-add-LayerNorm where the residual sum is read after the norm too (pre-norm blocks).

Each case is a real class (source named above it), rewritten, exec'd next to the original and compared
(torch, CPU, float32, seed 0; strict state-dict loading; outputs atol 1e-5 / rtol 1e-4, input and parameter
gradients atol 1e-4 / rtol 1e-4; eval and train mode, the dropout at p=0 and, in training, at p>0 with the
same seed). Each declined case states why.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of, skip_reasons  # noqa: E402

from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f05-dropout-add-layernorm")

# torchvision 0.20.1 `models/vision_transformer.py` `EncoderBlock` (MLPBlock as two Linears and a GELU):
# `x = x + input` is both the LayerNorm's input and the block's residual (`return x + y`).
TORCHVISION_ENCODER_BLOCK = """
import torch
from torch import nn


class EncoderBlock(nn.Module):
    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout):
        super().__init__()
        self.num_heads = num_heads

        # Attention block
        self.ln_1 = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)

        # MLP block
        self.ln_2 = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(hidden_dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, hidden_dim))

    def forward(self, input: torch.Tensor):
        torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x)
        x = x + input

        y = self.ln_2(x)
        y = self.mlp(y)
        return x + y
"""

# transformers 5.0 `models/whisper/modeling_whisper.py` `WhisperEncoderLayer.forward`'s feed-forward half:
# the sum is kept as the next residual (`residual = hidden_states`) between the add and the norm.
WHISPER_ENCODER_LAYER = """
import torch
from torch import nn


class WhisperEncoderLayer(nn.Module):
    def __init__(self, d_model, ffn_dim, dropout):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, 4, batch_first=True)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.dropout = dropout
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, attn_weights = self.self_attn(hidden_states, hidden_states, hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = nn.functional.gelu(self.fc1(hidden_states))
        hidden_states = self.fc2(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states
"""

# ultralytics 8.3.40 `nn/modules/transformer.py` `TransformerEncoderLayer` (its torch-version check left
# out): `forward` calls `forward_pre` or `forward_post`, which the analysis inlines (renaming their locals).
ULTRALYTICS_ENCODER_LAYER = """
import torch
from torch import nn


class TransformerEncoderLayer(nn.Module):
    def __init__(self, c1, cm=2048, num_heads=8, dropout=0.0, act=nn.GELU(), normalize_before=False):
        super().__init__()
        self.ma = nn.MultiheadAttention(c1, num_heads, dropout=dropout, batch_first=True)
        self.fc1 = nn.Linear(c1, cm)
        self.fc2 = nn.Linear(cm, c1)

        self.norm1 = nn.LayerNorm(c1)
        self.norm2 = nn.LayerNorm(c1)
        self.dropout = nn.Dropout(dropout)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

        self.act = act
        self.normalize_before = normalize_before

    @staticmethod
    def with_pos_embed(tensor, pos=None):
        return tensor if pos is None else tensor + pos

    def forward_post(self, src, src_mask=None, src_key_padding_mask=None, pos=None):
        q = k = self.with_pos_embed(src, pos)
        src2 = self.ma(q, k, value=src, attn_mask=src_mask, key_padding_mask=src_key_padding_mask)[0]
        src = src + self.dropout1(src2)
        src = self.norm1(src)
        src2 = self.fc2(self.dropout(self.act(self.fc1(src))))
        src = src + self.dropout2(src2)
        return self.norm2(src)

    def forward_pre(self, src, src_mask=None, src_key_padding_mask=None, pos=None):
        src2 = self.norm1(src)
        q = k = self.with_pos_embed(src2, pos)
        src2 = self.ma(q, k, value=src2, attn_mask=src_mask, key_padding_mask=src_key_padding_mask)[0]
        src = src + self.dropout1(src2)
        src2 = self.norm2(src)
        src2 = self.fc2(self.dropout(self.act(self.fc1(src2))))
        return src + self.dropout2(src2)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, pos=None):
        if self.normalize_before:
            return self.forward_pre(src, src_mask, src_key_padding_mask, pos)
        return self.forward_post(src, src_mask, src_key_padding_mask, pos)
"""


def _same_with_dropout(original, rewritten, inputs) -> None:  # type: ignore[no-untyped-def]
    """In training with p > 0: the same seed draws the same dropout mask in both."""
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.train()
    rewritten.train()
    args = inputs()
    torch.manual_seed(7)
    a = original(*args)
    torch.manual_seed(7)
    b = rewritten(*args)
    torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)


def test_torchvision_encoder_block_keeps_the_residual_sum() -> None:
    new = fixed(TORCHVISION_ENCODER_BLOCK, RULES, applied=1)
    assert ("y, x = fused_dropout_add_layer_norm_residual( x, input, self.ln_2, self.dropout.p, self.dropout.training, )"
            in " ".join(new.split())), new
    assert "x = x + input" not in new and "return x + y" in new
    for p in (0.0, 0.3):
        torch.manual_seed(0)
        original = load(TORCHVISION_ENCODER_BLOCK, "orig")["EncoderBlock"](4, 32, 64, p, 0.0)
        rewritten = load(new, "new")["EncoderBlock"](4, 32, 64, p, 0.0)
        if p == 0.0:
            compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 32),))
        else:
            _same_with_dropout(original, rewritten, lambda: (torch.randn(2, 5, 32),))


def test_whisper_encoder_layer_binds_the_next_residual() -> None:
    new = fixed(WHISPER_ENCODER_LAYER, RULES, applied=1)
    flat = " ".join(new.split())
    assert ("hidden_states, residual = fused_dropout_add_layer_norm_residual( hidden_states, residual, "
            "self.final_layer_norm, self.dropout, self.training, )") in flat, new
    assert "        residual = hidden_states\n        hidden_states = self.final_layer_norm" not in new
    for p in (0.0, 0.2):
        torch.manual_seed(0)
        original = load(WHISPER_ENCODER_LAYER, "orig")["WhisperEncoderLayer"](32, 64, p)
        rewritten = load(new, "new")["WhisperEncoderLayer"](32, 64, p)
        if p == 0.0:
            compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 32),))
        else:
            _same_with_dropout(original, rewritten, lambda: (torch.randn(2, 5, 32),))


@pytest.mark.parametrize("normalize_before", [False, True], ids=["post-norm", "pre-norm"])
def test_ultralytics_encoder_layer_inlined_helpers_are_fused(normalize_before: bool) -> None:
    new = fixed(ULTRALYTICS_ENCODER_LAYER, RULES, applied=3)
    assert "src = fused_dropout_add_layer_norm(src2, src, self.norm1," in new  # post-norm, renamed locals
    assert "return fused_dropout_add_layer_norm(src2, src, self.norm2," in new
    assert "src2, src = fused_dropout_add_layer_norm_residual(" in new  # pre-norm: `src` is read after
    torch.manual_seed(0)
    original = load(ULTRALYTICS_ENCODER_LAYER, "orig")["TransformerEncoderLayer"](32, 64, 4,
                                                                                   normalize_before=normalize_before)
    rewritten = load(new, "new")["TransformerEncoderLayer"](32, 64, 4, normalize_before=normalize_before)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 32),))


READ_BETWEEN = TORCHVISION_ENCODER_BLOCK.replace(
    "        x = x + input\n\n", "        x = x + input\n        self.last = x.detach()\n")


def test_a_statement_reading_the_sum_between_the_steps_is_declined() -> None:
    reasons = skip_reasons(READ_BETWEEN, RULES)
    assert reasons and all("reads `x` between the statements to fuse" in r for r in reasons), reasons


DROPOUT_READ_AFTER = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.1)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.drop(self.proj(x))
        t = h + x
        out = self.norm(t)
        return out, h
"""


def test_the_dropout_output_read_after_is_not_fused() -> None:
    reasons = skip_reasons(DROPOUT_READ_AFTER, RULES)
    assert reasons and all("used outside the matched code" in r or "dropout's output" in r for r in reasons), reasons
