"""Family 5: a dropout-add chain just before an `if` whose branch applies the LayerNorm (the match straddles the
`if`): the chain moves into both branches, fused with the norm where there is one.

Real classes: torchaudio 2.5.1 `models/wav2vec2/components.py` (`SelfAttention`, `FeedForward`, `EncoderLayer`,
verbatim; the `layer_norm_first` switch picks the pre-norm branch, whose norm sits inside a larger
statement, or the post-norm one) and transformers 4.35.0 `WhisperDecoderLayer` (its file rewritten whole; the
cross-attention block runs only with `encoder_hidden_states`). Compared with the original (torch, CPU, float32,
seed 0; strict state-dict loading both ways): with dropout p=0 in eval and train, outputs atol 1e-5 / rtol
1e-4, input and parameter gradients atol 1e-4 / rtol 1e-4; with p=0.1 in training, the same seed before each
side's forward (the moved dropout draws its mask at the same point of the forward): outputs, input and
parameter gradients, same tolerances.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from attention_harness import (  # noqa: E402
    fix,
    fixed,
    load,
    rules_of,
    skip_reasons,
    transformers_on_path,
)

from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f05-dropout-add-layernorm")

# torchaudio 2.5.1, torchaudio/models/wav2vec2/components.py: SelfAttention, FeedForward and EncoderLayer verbatim.
TORCHAUDIO_ENCODER_LAYER = '''
import torch
from torch import nn, Tensor
from torch.nn import Module
from typing import Optional, Tuple


class SelfAttention(Module):
    """Multihead Self Attention module

    Args:
        embed_dim (int): Total dimension of the model.
        num_heads (int): The number of heads.
        dropout (float, optional):
            Dropout probability on attn_output_weights. Default: ``0.0``
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
    ):
        super().__init__()
        head_dim = embed_dim // num_heads
        if head_dim * num_heads != embed_dim:
            raise ValueError(f"`embed_dim ({embed_dim})` is not divisible by `num_heads ({num_heads})`")

        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = head_dim

        self.scaling = self.head_dim**-0.5

        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)

    def forward(
        self,
        x: Tensor,
        attention_mask: Optional[Tensor] = None,
        position_bias: Optional[Tensor] = None,
        key_padding_mask: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """
        Args:
            x (Tensor): shape: ``[batch_size, sequence_length, embed_dim]``.
            attention_mask (Tensor or ``None``, optional):
                shape: ``[batch_size, 1, sequence_length, sequence_length]``
            position_bias: Not used. Only for the compatibility with :py:class:`WavLMSelfAttention`.
            key_padding_mask (Tensor or ``None``): Not used. Only for the compatibility with
                :py:class:`WavLMSelfAttention`.
        Returns:
            (Tensor, ``None``): The resulting attention output and ``None`` (necessary for compatibility
                with :py:class:`WavLMSelAttention`).
                Attention output shape: ``[batch, sequence_length, embed_dim]``.
        """
        if x.ndim != 3 or x.shape[2] != self.embed_dim:
            raise ValueError(
                f"The expected input shape is (batch, sequence, embed_dim=={self.embed_dim}). " f"Found {x.shape}."
            )
        batch_size, length, embed_dim = x.size()
        if attention_mask is not None:
            shape_ = (batch_size, 1, length, length)
            if attention_mask.size() != shape_:
                raise ValueError(f"The expected attention mask shape is {shape_}. " f"Found {attention_mask.size()}.")

        shape = (batch_size, length, self.num_heads, self.head_dim)
        q = self.q_proj(x).view(*shape).transpose(2, 1)  # B, nH, L, Hd
        k = self.k_proj(x).view(*shape).transpose(2, 1)  # B, nH, L, Hd
        v = self.v_proj(x).view(*shape).transpose(2, 1)  # B, nH, L, Hd
        dropout = self.dropout if self.training else 0.0
        attn_output = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask, dropout_p=dropout, is_causal=False
        )
        attn_output = attn_output.transpose(1, 2).reshape(batch_size, -1, self.num_heads * self.head_dim)
        output = self.out_proj(attn_output)
        return output, None


class FeedForward(Module):
    """Layer that follows attention layer in encoder layer."""

    def __init__(
        self,
        io_features: int,
        intermediate_features: int,
        intermediate_dropout: float,
        output_dropout: float,
    ):
        super().__init__()
        self.intermediate_dense = nn.Linear(io_features, intermediate_features)
        self.intermediate_dropout = nn.Dropout(intermediate_dropout)
        self.output_dense = nn.Linear(intermediate_features, io_features)
        self.output_dropout = nn.Dropout(output_dropout)

    def forward(self, x):
        """
        Args:
            x (Tensor): shape: `(batch, sequence_length, io_features)`
        Returns:
            x (Tensor): shape: `(batch, sequence_length, io_features)`
        """
        x = self.intermediate_dense(x)
        x = torch.nn.functional.gelu(x)
        x = self.intermediate_dropout(x)

        x = self.output_dense(x)
        x = self.output_dropout(x)
        return x


class EncoderLayer(Module):
    """A layer unit in encoder. Combines multihead self attention and feed forward."""

    def __init__(
        self,
        attention: Module,
        dropout: float,
        layer_norm_first: bool,
        feed_forward: Module,
    ):
        super().__init__()
        self.attention = attention
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(attention.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.feed_forward = feed_forward
        self.final_layer_norm = nn.LayerNorm(attention.embed_dim)

    def forward(
        self,
        x: Tensor,
        attention_mask: Optional[Tensor] = None,
        position_bias: Optional[Tensor] = None,
        key_padding_mask: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """
        Args:
            x (Tensor): Input of shape ``(batch, sequence_length, embed_dim)``.
            attention_mask (Tensor or ``None``, optional): attention mask
                of shape ``(batch, 1, sequence_length, sequence_length)``. (Default: ``None``)
            position_bias (Tensor or ``None``, optional): position bias of shape
                ``(batch_size * num_heads, src_len, src_len)``.
                Only necessary for WavLM model, ``None`` otherwise. (Default: ``None``)
            key_padding_mask (Tensor or ``None``, optional): key padding mask of shape ``(batch_size, src_len)``.
                Only used for WavLM model, ignored otherwise. (Default: ``None``)
        Returns:
            (x, position_bias): Shapes are the same as in the input. Position bias is only relevant for WaLM model,
                ``None`` otherwise.
        """
        residual = x

        if self.layer_norm_first:
            x = self.layer_norm(x)

        x, position_bias = self.attention(
            x, attention_mask=attention_mask, position_bias=position_bias, key_padding_mask=key_padding_mask
        )

        x = self.dropout(x)
        x = residual + x

        if self.layer_norm_first:
            x = x + self.feed_forward(self.final_layer_norm(x))
        else:
            x = self.layer_norm(x)
            x = self.final_layer_norm(x + self.feed_forward(x))
        return x, position_bias
'''


def _encoder_layer(ns: dict, layer_norm_first: bool, p: float) -> torch.nn.Module:
    attention = ns["SelfAttention"](16, 4, dropout=p)
    feed_forward = ns["FeedForward"](16, 32, p, p)
    return ns["EncoderLayer"](attention, p, layer_norm_first, feed_forward)


def _same_with_dropout(original, rewritten, inputs, kwargs=None) -> None:  # type: ignore[no-untyped-def]
    """In training with p > 0: the same seed draws the same dropout masks in both; outputs and gradients."""
    rewritten.load_state_dict(original.state_dict(), strict=True)
    args = inputs()
    results = []
    for module in (original, rewritten):
        module.train()
        module.zero_grad(set_to_none=True)
        xs = [a.detach().clone().requires_grad_(True) for a in args]
        torch.manual_seed(7)
        out = module(*xs, **(kwargs or {}))
        out = out[0] if isinstance(out, tuple) else out
        out.backward(torch.ones_like(out))
        results.append((out.detach(), [x.grad for x in xs], {n: q.grad for n, q in module.named_parameters()}))
    (a, a_in, a_par), (b, b_in, b_par) = results
    torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)
    for x, y in zip(a_in, b_in):
        torch.testing.assert_close(y, x, atol=1e-4, rtol=1e-4)
    assert a_par.keys() == b_par.keys()
    for name, grad in a_par.items():
        if grad is None:
            assert b_par[name] is None, name
        else:
            torch.testing.assert_close(b_par[name], grad, atol=1e-4, rtol=1e-4, msg=name)


def test_torchaudio_encoder_layer_is_rewritten_in_both_branches() -> None:
    new = fixed(TORCHAUDIO_ENCODER_LAYER, RULES, applied=1)
    body = new[new.index("class EncoderLayer"):]
    assert "x = self.dropout(x)" not in body and "x = residual + x" not in body
    assert "normed, x = fused_dropout_add_layer_norm_residual(" in body  # the pre-norm branch keeps the sum
    assert "x = x + self.feed_forward(normed)" in body
    assert "x = fused_dropout_add_layer_norm(" in body  # the post-norm branch


@pytest.mark.parametrize("p", [0.0, 0.1])
@pytest.mark.parametrize("layer_norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_torchaudio_encoder_layer_is_equivalent(layer_norm_first: bool, p: float) -> None:
    new = fixed(TORCHAUDIO_ENCODER_LAYER, RULES, applied=1)
    old_ns, new_ns = load(TORCHAUDIO_ENCODER_LAYER, "ta_old"), load(new, "ta_new")
    torch.manual_seed(0)
    original = _encoder_layer(old_ns, layer_norm_first, p)
    rewritten = _encoder_layer(new_ns, layer_norm_first, p)
    _encoder_layer(old_ns, layer_norm_first, p).load_state_dict(rewritten.state_dict(), strict=True)
    if p == 0.0:
        compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 16),), atol=1e-5, rtol=1e-4)
    else:
        _same_with_dropout(original, rewritten, lambda: (torch.randn(2, 5, 16),))


@pytest.fixture(scope="module")
def whisper(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(original module, rewritten module) of transformers 4.35.0's modeling_whisper.py, f05 fixes applied."""
    with transformers_on_path():
        original = importlib.import_module("transformers.models.whisper.modeling_whisper")
        source = Path(original.__file__).read_text(encoding="utf-8")
        # The encoder layer and the decoder's chain before the cross-attention block; the block's own chain is
        # not the last statement of its branch in 4.35 (a cache tuple is extended after it): declined.
        result = fix(source, RULES, "modeling_whisper.py")
        assert isinstance(result, Rewritten) and len(result.applied) == 2, result
        new = result.new_source
        assert "        else:\n            hidden_states = nn.functional.dropout(" in new
        path = tmp_path_factory.mktemp("whisper") / "modeling_whisper_adopter.py"
        path.write_text(new, encoding="utf-8")
        name = "transformers.models.whisper.modeling_whisper_adopter"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        yield original, module


@pytest.mark.parametrize("p", [0.0, 0.1])
@pytest.mark.parametrize("cross", [True, False], ids=["cross-attention", "no-encoder-states"])
def test_whisper_decoder_layer_is_equivalent(whisper, cross: bool, p: float) -> None:  # type: ignore[no-untyped-def]
    original_module, rewritten_module = whisper
    config = original_module.WhisperConfig(d_model=16, decoder_attention_heads=4, decoder_ffn_dim=32,
                                            dropout=p, attention_dropout=p, activation_dropout=p)
    torch.manual_seed(0)
    original = original_module.WhisperDecoderLayer(config)
    rewritten = rewritten_module.WhisperDecoderLayer(config)
    original_module.WhisperDecoderLayer(config).load_state_dict(rewritten.state_dict(), strict=True)
    encoder = torch.randn(2, 7, 16)
    kwargs = {"encoder_hidden_states": encoder} if cross else {}
    if p == 0.0:
        compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 16),), kwargs=kwargs, atol=1e-5, rtol=1e-4)
    else:
        _same_with_dropout(original, rewritten, lambda: (torch.randn(2, 5, 16),), kwargs)


BRANCHED = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d, pre):
        super().__init__()
        self.dropout = nn.Dropout(0.0)
        self.norm = nn.LayerNorm(d)
        self.pre = pre

    def forward(self, x, residual):
        x = self.dropout(x)
        x = residual + x
        if TEST:
            x = self.norm(x)
        return x
'''


@pytest.mark.parametrize("test, reason", [
    ("self.pick(x)", "calls code"),  # a call could draw random numbers or change the inputs
    ("x.sum() > 0", "reads the chain"),
])
def test_an_if_test_that_calls_code_or_reads_the_chain_is_declined(test: str, reason: str) -> None:
    reasons = skip_reasons(BRANCHED.replace("TEST", test), RULES)
    assert len(reasons) == 1 and reason in reasons[0], reasons


def test_an_if_without_else_gets_one_with_the_chain() -> None:
    new = fixed(BRANCHED.replace("TEST", "self.pre"), RULES, applied=1)
    assert "        else:\n            x = self.dropout(x)\n            x = residual + x\n" in new
    old_ns, new_ns = load(BRANCHED.replace("TEST", "self.pre"), "br_old"), load(new, "br_new")
    for pre in (True, False):
        torch.manual_seed(0)
        compare_modules(old_ns["Block"](8, pre), new_ns["Block"](8, pre),
                        lambda: (torch.randn(3, 8), torch.randn(3, 8)))


# transformers 5.0 `WhisperDecoderLayer.forward`'s residual structure (the attention modules replaced by
# Linears, which take the same place in it): a chain before the optional cross-attention block, and the
# block's own chain ending it, whose norm (`final_layer_norm`) follows the `if`.
WHISPER_50_DECODER = '''
import torch
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.dropout = p
        self.self_attn = nn.Linear(d, d)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = nn.Linear(d, d)
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, hidden_states, encoder_hidden_states=None):
        residual = hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states = self.self_attn(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states

        # Cross-Attention Block
        cross_attn_weights = None
        if encoder_hidden_states is not None:
            residual = hidden_states
            hidden_states = self.encoder_attn_layer_norm(hidden_states)
            hidden_states = self.encoder_attn(hidden_states) + encoder_hidden_states
            hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
            hidden_states = residual + hidden_states

        # Fully Connected
        residual = hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = self.fc2(torch.relu(self.fc1(hidden_states)))
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        return hidden_states, cross_attn_weights
'''


@pytest.mark.parametrize("p", [0.0, 0.1])
@pytest.mark.parametrize("cross", [True, False], ids=["cross-attention", "no-encoder-states"])
def test_a_chain_ending_a_branch_gets_the_norm_after_the_if(cross: bool, p: float) -> None:
    # Both sites edit the `if`: one pass fixes the first and leaves the other (`fix` runs to a fixed point);
    # the second pass finds the block's chain ending both branches alike (a value with two definitions).
    first = fix(WHISPER_50_DECODER, RULES)
    assert isinstance(first, Rewritten) and len(first.applied) == 1, first
    new = fixed(first.new_source, RULES, applied=1)
    assert new.count("def fused_dropout_add_layer_norm_residual(") == 1  # one helper, found again by its tag
    assert new.count("self.final_layer_norm,") == 2  # fused at the end of both branches
    assert "residual = hidden_states\n" not in new.split("# Fully Connected")[1]
    old_ns, new_ns = load(WHISPER_50_DECODER, "w50_old"), load(new, "w50_new")
    torch.manual_seed(0)
    original, rewritten = old_ns["DecoderLayer"](16, p), new_ns["DecoderLayer"](16, p)
    old_ns["DecoderLayer"](16, p).load_state_dict(rewritten.state_dict(), strict=True)
    inputs = (lambda: (torch.randn(2, 5, 16), torch.randn(2, 5, 16))) if cross else (lambda: (torch.randn(2, 5, 16),))
    if p == 0.0:
        compare_modules(original, rewritten, inputs)
    else:
        _same_with_dropout(original, rewritten, inputs)
