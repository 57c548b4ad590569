"""The bundled examples (`examples/`) with every attention-family fix applied at once.

`bert_encoder.py` gets the fused q/k/v projection (family 9) and SDPA (family 10) in the same class
— two fixes that edit neighbouring statements; `gpt_decoder.py` gets SDPA with its causal
`masked_fill` as a boolean mask. The whole models are compared with strict state-dict loading:
outputs within atol 1e-5 / rtol 1e-4, gradients within atol 1e-4 / rtol 1e-4 (the GPT example
builds its dropout at 0.1, so it is compared in eval mode only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from attention_harness import REPO, fix, load  # noqa: E402

from adopter.dsl import parse_rules  # noqa: E402
from adopter.dsl.types import Rule  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch


ATTENTION_FILES = ("f01-*.adl", "f02-*.adl", "f03-*.adl", "f04-*.adl", "f09-*.adl", "f10-*.adl")


def attention_rules() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    # Only the attention families' files: the other rule files are not this test's subject.
    for path in sorted(p for pattern in ATTENTION_FILES for p in (REPO / "rules").glob(pattern)):
        rules.extend(
            r
            for r in parse_rules(path.read_text(encoding="utf-8"), str(path))
            if r.family in {1, 2, 3, 4, 9, 10}
        )
    return tuple(rules)


def _fixed(name: str, expected: list[str]) -> tuple[str, str]:
    source = (REPO / "examples" / name).read_text(encoding="utf-8")
    result = fix(source, attention_rules(), str(Path("examples") / name))
    assert isinstance(result, Rewritten), result
    assert sorted(f.rule_id for f in result.applied) == expected, [s.reason for s in result.skipped]
    return source, result.new_source


def test_bert_encoder_fuses_qkv_and_uses_sdpa() -> None:
    source, new = _fixed("bert_encoder.py", ["f09-fused-qkv", "f10-manual-attention-sdpa"])
    old_ns, new_ns = load(source, "bert_encoder"), load(new, "bert_encoder_fixed")
    config = old_ns["EncoderConfig"](
        vocab_size=50,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(0)
    original = old_ns["Encoder"](config)
    rewritten = new_ns["Encoder"](new_ns["EncoderConfig"](**vars(config)))
    ids = torch.randint(0, 50, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, 4:] = 0  # padding in the second sequence
    compare_modules(original, rewritten, lambda: (ids, mask))


def test_gpt_decoder_causal_attention_uses_sdpa() -> None:
    source, new = _fixed("gpt_decoder.py", ["f10-manual-attention-sdpa"])
    assert "attn_mask=~(self.bias[:, :, :T, :T] == 0)" in new
    torch.manual_seed(0)
    kwargs = {"vocab_size": 50, "block_size": 16, "n_layer": 2, "n_head": 4, "n_embd": 32}
    original = load(source, "gpt_decoder")["GPT"](**kwargs)
    rewritten = load(new, "gpt_decoder_fixed")["GPT"](**kwargs)
    compare_modules(original, rewritten, lambda: (torch.randint(0, 50, (2, 9)),), modes=(False,))
