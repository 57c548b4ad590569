"""Families 1–3: attention submodules rebound to synthesized SDPA subclasses (BERT, T5, GPT-2).

The code under test is each rule's own must-match example (a transformers-style block that binds
`BertSelfAttention`, `T5Attention` or `GPT2Attention`). The rewritten block is built next to the
original from the same small config (real head counts, dropout 0), loads the original's state dict
with `strict=True`, and must give the same outputs (atol 1e-5, rtol 1e-4) and gradients (atol 1e-4,
rtol 1e-4) in eval and train mode — on the SDPA path and on each eager fallback path (relative
position embeddings, head masks, returned attention probabilities, cross-attention, cache).
f02 (T5) is offered on CUDA only: its rewrite is synthesized for a CUDA environment and compared on
CPU tensors, and on CPU its site is reported without a fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from attention_harness import (  # noqa: E402
    CPU,
    CUDA,
    findings_of,
    fixed,
    load,
    rules_of,
    skip_reasons,
    transformers_on_path,
)

from adopter.engine import Environment  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def transformers() -> Iterator[Any]:
    with transformers_on_path():
        import transformers as tf

        yield tf


def _example(stem: str) -> str:
    rule = rules_of(stem)[0]
    return next(ex.code for ex in rule.examples if ex.should_match)


def _mask(batch: int, length: int) -> torch.Tensor:
    keep = torch.ones(batch, length)
    keep[-1, length // 2 :] = 0
    return ((1.0 - keep) * torch.finfo(torch.float32).min)[:, None, None, :]


def _pair(
    source: str, rules: Any, cls: str, *args: Any, env: Environment = CPU, **kwargs: Any
) -> tuple[Any, Any, str]:
    new = fixed(source, rules, applied=1, env=env)
    torch.manual_seed(0)
    original = load(source, "orig")[cls](*args, **kwargs)
    rewritten = load(new, "new")[cls](*args, **kwargs)
    return original, rewritten, new


@pytest.mark.parametrize("position", ["absolute", "relative_key_query"])
def test_bert_self_attention(transformers: Any, position: str) -> None:
    rules = rules_of("f01-bert-self-attention")
    config = transformers.BertConfig(
        hidden_size=64,
        num_attention_heads=4,
        attention_probs_dropout_prob=0.0,
        hidden_dropout_prob=0.0,
        position_embedding_type=position,
        max_position_embeddings=32,
    )
    original, rewritten, new = _pair(_example("f01-bert-self-attention"), rules, "BertAttention", config)
    assert "class SdpaBertSelfAttention(BertSelfAttention):" in new
    assert "self.self = SdpaBertSelfAttention(config, position_embedding_type=position_embedding_type)" in new
    assert type(rewritten.self).__name__ == "SdpaBertSelfAttention"
    compare_modules(original, rewritten, lambda: (torch.randn(2, 7, 64), _mask(2, 7)))
    compare_modules(original, rewritten, lambda: (torch.randn(2, 7, 64),))


def test_bert_fallback_when_probabilities_are_asked_for(transformers: Any) -> None:
    rules = rules_of("f01-bert-self-attention")
    config = transformers.BertConfig(hidden_size=64, num_attention_heads=4, attention_probs_dropout_prob=0.0)
    original, rewritten, _ = _pair(_example("f01-bert-self-attention"), rules, "BertAttention", config)
    rewritten.load_state_dict(original.state_dict(), strict=True)
    rewritten.eval(), original.eval()
    x, mask = torch.randn(2, 7, 64), _mask(2, 7)
    a = original.self(x, mask, output_attentions=True)
    b = rewritten.self(x, mask, output_attentions=True)
    assert len(a) == len(b) == 2
    torch.testing.assert_close(b[1], a[1])
    head_mask = torch.rand(1, 4, 1, 1)
    torch.testing.assert_close(rewritten.self(x, mask, head_mask)[0], original.self(x, mask, head_mask)[0])


def test_bert_decoder_cross_attention_and_cache(transformers: Any) -> None:
    mb = pytest.importorskip("transformers.models.bert.modeling_bert")
    rules = rules_of("f01-bert-self-attention")
    config = transformers.BertConfig(
        hidden_size=64, num_attention_heads=4, attention_probs_dropout_prob=0.0, is_decoder=True
    )
    new = fixed(_example("f01-bert-self-attention"), rules, applied=1)
    sdpa = load(new, "new")["SdpaBertSelfAttention"]
    torch.manual_seed(0)
    eager = mb.BertSelfAttention(config).eval()
    fast = sdpa(config).eval()
    fast.load_state_dict(eager.state_dict(), strict=True)
    x, enc, past = (
        torch.randn(2, 3, 64),
        torch.randn(2, 5, 64),
        (torch.randn(2, 4, 6, 16), torch.randn(2, 4, 6, 16)),
    )
    for kwargs in ({"encoder_hidden_states": enc}, {"past_key_value": past}, {}):
        a, b = eager(x, **kwargs), fast(x, **kwargs)
        torch.testing.assert_close(b[0], a[0], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(b[-1][0], a[-1][0])


def test_t5_attention(transformers: Any) -> None:
    rules = rules_of("f02-t5-attention")
    config = transformers.T5Config(
        d_model=64, d_kv=16, num_heads=4, dropout_rate=0.0, relative_attention_num_buckets=8
    )
    for relative in (True, False):
        original, rewritten, new = _pair(
            _example("f02-t5-attention"),
            rules,
            "T5LayerSelfAttention",
            config,
            env=CUDA,
            has_relative_attention_bias=relative,
        )
        assert "class SdpaT5Attention(T5Attention):" in new
        assert type(rewritten.SelfAttention).__name__ == "SdpaT5Attention"
        compare_modules(original, rewritten, lambda: (torch.randn(2, 6, 64), _mask(2, 6)))


def test_t5_attention_is_reported_without_a_fix_on_cpu() -> None:
    # Measured slower in CPU training (docs/benchmarks.md, Training gains), so CPU gets no fix.
    rules = rules_of("f02-t5-attention")
    source = _example("f02-t5-attention")
    (finding,) = findings_of(source, rules, env=CPU)
    assert finding.rule_id == "f02-t5-attention" and finding.scope_name == "T5LayerSelfAttention"
    assert not finding.fixable and finding.targets == ()
    assert finding.no_fix_reason is not None and "device cuda" in finding.no_fix_reason
    assert skip_reasons(source, rules, env=CPU) == [finding.no_fix_reason]
    (on_cuda,) = findings_of(source, rules, env=CUDA)
    assert on_cuda.fixable and on_cuda.targets == ("portable",)


def test_gpt2_attention(transformers: Any) -> None:
    rules = rules_of("f03-gpt2-attention")
    for scale_by_layer in (False, True):
        config = transformers.GPT2Config(
            n_embd=64,
            n_head=4,
            attn_pdrop=0.0,
            resid_pdrop=0.0,
            scale_attn_by_inverse_layer_idx=scale_by_layer,
        )
        original, rewritten, new = _pair(
            _example("f03-gpt2-attention"), rules, "GPT2Block", config, layer_idx=1
        )
        assert "class SdpaGPT2Attention(GPT2Attention):" in new
        compare_modules(original, rewritten, lambda: (torch.randn(2, 7, 64),))  # is_causal path
        compare_modules(original, rewritten, lambda: (torch.randn(2, 7, 64), _mask(2, 7)))  # causal + padding


def test_gpt2_cache_and_cross_attention(transformers: Any) -> None:
    mg = pytest.importorskip("transformers.models.gpt2.modeling_gpt2")
    new = fixed(_example("f03-gpt2-attention"), rules_of("f03-gpt2-attention"), applied=1)
    sdpa = load(new, "new")["SdpaGPT2Attention"]
    config = transformers.GPT2Config(n_embd=64, n_head=4, attn_pdrop=0.0, resid_pdrop=0.0)
    torch.manual_seed(0)
    for cross in (False, True):
        eager = mg.GPT2Attention(config, is_cross_attention=cross, layer_idx=0).eval()
        fast = sdpa(config, is_cross_attention=cross, layer_idx=0).eval()
        fast.load_state_dict(eager.state_dict(), strict=True)
        x, enc = torch.randn(2, 3, 64), torch.randn(2, 5, 64)
        past = (torch.randn(2, 4, 4, 16), torch.randn(2, 4, 4, 16))
        kwargs: dict[str, Any] = (
            {"encoder_hidden_states": enc} if cross else {"layer_past": past, "use_cache": True}
        )
        a, b = eager(x, **kwargs), fast(x, **kwargs)
        torch.testing.assert_close(b[0], a[0], atol=1e-5, rtol=1e-4)


def test_unknown_base_class_is_declined() -> None:
    source = _example("f01-bert-self-attention").replace(
        "from transformers.models.bert.modeling_bert import BertSelfAttention, BertSelfOutput",
        "from mylib.layers import BertSelfAttention, BertSelfOutput",
    )
    reasons = skip_reasons(source, rules_of("f01-bert-self-attention"))
    assert reasons == [
        "BertSelfAttention is imported from mylib.layers, not transformers: its interface is unknown"
    ]


def test_local_class_with_another_signature_is_declined() -> None:
    source = """
from torch import nn


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = BertSelfAttention(config)

    def forward(self, x):
        return self.attn(x)
"""
    reasons = skip_reasons(source, rules_of("f01-bert-self-attention"))
    assert len(reasons) == 1 and "not the transformers signature" in reasons[0]


MODULE_LIST = """
from torch import nn
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention


class Stack(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attns = nn.ModuleList([GPT2Attention(config, layer_idx=i) for i in range(config.n_layer)])

    def forward(self, x):
        for attn in self.attns:
            x = x + attn(x)[0]
        return x
"""


def test_attention_inside_a_module_list(transformers: Any) -> None:
    config = transformers.GPT2Config(n_embd=32, n_head=4, n_layer=2, attn_pdrop=0.0, resid_pdrop=0.0)
    original, rewritten, new = _pair(MODULE_LIST, rules_of("f03-gpt2-attention"), "Stack", config)
    assert "nn.ModuleList([SdpaGPT2Attention(config, layer_idx=i) for i in range(config.n_layer)])" in new
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 32),))
