"""Trace factories for the GPT models of Narayanan et al., SC21 Table 1 (bench/wham_gpu_published.py's GPT rows).

The models as `examples/academic_paper_scripts/sc21/run_table_1.sh` and `CONFIG.sh` configure them
(NVIDIA/Megatron-LM @d98e8a64; both identical to `examples/sc21/` at 6985e589, 2021-08-18): `pretrain_gpt.py` with
--num-layers, --hidden-size, --num-attention-heads per row, --seq-length 2048, the GPT-2 BPE vocabulary, --fp16.
The vocabulary is the paper's V = 51,200 (§5.1, and its Eq. 3, which converts the measured figure); the runs pad
GPT-2's 50,257 to a multiple of 128 × t (`megatron/tokenizer/tokenizer.py` `_vocab_size_with_padding` @6985e589):
50,304 / 50,432 / 50,688 / 51,200 at t = 1 / 2 / 4 / 8, a head up to 1.8 % narrower than traced at t < 8.
Megatron's GPT is a pre-LayerNorm decoder with learned absolute position embeddings, a 4h GELU MLP with biases and a causal mask —
the zoo's `LanguageModel` with those settings (its layer: q, k, v and output projections, scaled and masked
scores, softmax, dropout; no fused attention: the runs predate FlashAttention). Traced on the meta device as
`wham_gpu_megatron:gpt_<size>` with the row's micro-batch and sequence length; tensor parallelism and activation
recomputation are applied to the traced workload by the bench (`parallel.shard_workload`,
`recompute.recompute_layers`).

Differences left in: Megatron ties the output layer to the word embedding (the zoo's head is its own
parameter: the same FLOPs and bytes per step, V·h more parameters in the gradient all-reduce and optimizer:
7 % of the 1.7B model's, 2 % of the 18.4B's).
"""

from __future__ import annotations

from typing import Any

VOCAB = 51200  # Narayanan et al., SC21, §5.1: "All models use a vocabulary size of 51,200"

# size -> (layers, hidden, attention heads) of SC21 Table 1 (run_table_1.sh NLS, HS, NAH), and for the rows with
# pipeline size p > 1 the layers of one stage (NLS / p): `gpt_stage_<size>` traces one stage.
SIZES = {"1.7b": (24, 2304, 24), "3.6b": (30, 3072, 32), "7.5b": (36, 4096, 32), "18b": (40, 6144, 48),
         "39b": (48, 8192, 64), "76b": (60, 10240, 80), "145b": (80, 12288, 96), "310b": (96, 16384, 128),
         "530b": (105, 20480, 128), "1t": (128, 25600, 160),
         # Korthikanti et al. 2022 (arXiv 2205.05198) Table 3's two sizes SC21 lacks (its 530B and 1T are SC21's)
         "22b": (48, 6144, 64), "175b": (96, 12288, 96)}
STAGES = {"39b": 2, "76b": 4, "145b": 8, "310b": 16, "530b": 35, "1t": 64, "175b": 8}


def _gpt(size: str, batch: int, seq: int, stages: int = 1) -> tuple[Any, tuple[Any, ...], Any]:
    """The model, or with `stages` > 1 one pipeline stage of it: NLS / stages layers, with the embeddings and the
    head both (the first stage holds the embeddings and the last the head; one stage with both is at least as
    slow as either: the pipeline runs at its slowest stage's pace, and the embedding lookup is a gather, small
    next to the head's GEMM, V / (16·(l/p)·h) of a stage's layer FLOPs: 1.6 % (39B) to 6.3 % (1T))."""
    import torch

    from adopter.wham.workload.zoo import LanguageModel, TransformerConfig

    layers, hidden, heads = SIZES[size]
    layers //= stages
    cfg = TransformerConfig(layers, hidden, heads, 4 * hidden, VOCAB, causal=True)
    with torch.device("meta"):
        model = LanguageModel(cfg, seq, pre_norm=True, learned_pos=True, rope=False)
        ids = torch.zeros(batch, seq, dtype=torch.long)
    return model, (ids, ids.clone()), lambda out: out


def gpt_1_7b(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """SC21 Table 1's 1.7B GPT: 24 layers, hidden 2304, 24 heads."""
    return _gpt("1.7b", batch, seq)


def gpt_3_6b(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """SC21 Table 1's 3.6B GPT: 30 layers, hidden 3072, 32 heads."""
    return _gpt("3.6b", batch, seq)


def gpt_7_5b(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """SC21 Table 1's 7.5B GPT: 36 layers, hidden 4096, 32 heads."""
    return _gpt("7.5b", batch, seq)


def gpt_18b(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """SC21 Table 1's 18.4B GPT: 40 layers, hidden 6144, 48 heads."""
    return _gpt("18b", batch, seq)


def gpt_22b(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
    """Korthikanti et al. 2022 Table 3's 22B GPT: 48 layers, hidden 6144, 64 heads."""
    return _gpt("22b", batch, seq)


def _stage(size: str) -> Any:
    def build(batch: int, seq: int) -> tuple[Any, tuple[Any, ...], Any]:
        return _gpt(size, batch, seq, STAGES[size])

    build.__doc__ = f"One pipeline stage of the {size} GPT ({SIZES[size][0]} / {STAGES[size]} layers)."
    return build


gpt_stage_39b, gpt_stage_76b, gpt_stage_145b = _stage("39b"), _stage("76b"), _stage("145b")
gpt_stage_310b, gpt_stage_530b, gpt_stage_1t = _stage("310b"), _stage("530b"), _stage("1t")
gpt_stage_175b = _stage("175b")
