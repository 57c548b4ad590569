"""Tensor parallelism's replicated residual stream (`parallel.on_residual_stream`), Megatron's sequence
parallelism (`sequence_parallel`) and selective activation recomputation (`recompute.recompute_attention`).

Shaped on a pre-LN GPT layer as the bench traces it (bench/wham_gpu_megatron.py's 22B layer: a LayerNorm whose
traced element count is its output plus a mean and an rstd per row, the fused bias-dropout-add, the scores'
mask, softmax and dropout), written here at fixture size; on NVIDIA/Megatron-LM @de7dc40f
megatron/model/transformer.py lines 445-520 (ParallelTransformerLayer.forward: the LayerNorms and
bias_dropout_add run on the all-reduced [s, b, h] tensor on every tensor-parallel rank); and on Korthikanti et
al. 2022 (arXiv 2205.05198) §4.2.2 (sequence parallelism: those ops split along the sequence, reduce-scatter +
all-gather in place of each all-reduce) and §5 (selective recomputation: Q·Kᵀ, softmax, softmax dropout and the
attention over V).
"""

from __future__ import annotations

from typing import Any

from adopter.wham.graph import Block, Workload, build_workload
from adopter.wham.parallel import on_residual_stream, residual_stream, shard_workload, stream_ops
from adopter.wham.recompute import attention_core, recompute_attention, recompute_layers
from adopter.wham.sequence_parallel import sequence_parallel

from .synthetic import gemm, vec

T, H, HEADS, SEQ = 512, 256, 4, 128  # tokens (b·s), hidden, heads, sequence
SCORES = (T // SEQ) * HEADS * SEQ * SEQ


def _layer() -> Workload:
    """Embedding-free pre-LN GPT layer as traced, unfused so each op is its own."""
    t, h, d = T, H, H // HEADS
    bh = (T // SEQ) * HEADS
    ops: list[dict[str, Any]] = [
        vec("native_layer_norm", t * h + 2 * t, [], "layers.0"),                  # 0 (+ mean, rstd per row)
        gemm("addmm", t, 3 * h, h, [0], "layers.0"),                              # 1 qkv
        gemm("bmm", SEQ, SEQ, d, [1], "layers.0", batch=bh),                      # 2 Q·Kᵀ
        vec("masked_fill", SCORES, [2], "layers.0"),                              # 3
        vec("_softmax", SCORES, [3], "layers.0", rows=bh * SEQ),                  # 4
        vec("native_dropout", SCORES, [4], "layers.0"),                           # 5
        gemm("bmm", SEQ, d, SEQ, [5], "layers.0", batch=bh),                      # 6 attention over V
        gemm("addmm", t, h, h, [6], "layers.0"),                                  # 7 out proj
        vec("native_dropout", t * h, [7], "layers.0"),                            # 8 bias-dropout
        vec("add", t * h, [8], "layers.0"),                                       # 9 residual add
        vec("native_layer_norm", t * h + 2 * t, [9], "layers.0"),                 # 10
        gemm("addmm", t, 4 * h, h, [10], "layers.0"),                             # 11 fc1
        vec("gelu", t * 4 * h, [11], "layers.0"),                                 # 12
        gemm("addmm", t, h, 4 * h, [12], "layers.0"),                             # 13 fc2
        vec("add", t * h, [13], "layers.0"),                                      # 14 residual add: the output
        vec("native_dropout_backward", t * h, [14], "layers.0", "bwd"),           # 15
        vec("gelu_backward", t * 4 * h, [15], "layers.0", "bwd"),                 # 16
        vec("native_layer_norm_backward", t * h + 2 * h, [16], "layers.0", "bwd"),  # 17 (+ weight, bias grads)
        vec("add", t * h, [17], "layers.0", "bwd"),                               # 18 residual gradient
        vec("_softmax_backward_data", SCORES, [18], "layers.0", "bwd"),           # 19
        gemm("mm", t, h, 3 * h, [19], "layers.0", "bwd"),                         # 20
        vec("_foreach_addcdiv", 12 * h * h, [20], "layers.0", "opt"),             # 21
        gemm("bmm", SEQ, d, SEQ, [19], "layers.0", "bwd", batch=bh),              # 22 dQ over heads
        vec("sum", t * h, [22], "layers.0", "bwd"),                               # 23 Q's bias gradient
    ]
    return build_workload({"ops": ops, "params": 12 * h * h}, model="toy-gpt", batch=T // SEQ, seq=SEQ, fuse=False)


def _ops(work: Workload) -> list[Any]:
    return list(work.blocks[0].ops)


def _block(work: Workload) -> Block:
    return work.blocks[0]


def test_the_residual_stream_stays_whole_under_tensor_parallelism() -> None:
    """Megatron without sequence parallelism: LayerNorms (forward and backward), the bias-dropout and the residual
    adds and their gradients run whole on each of the t GPUs; the traced LayerNorm's count carries 2 per row."""
    work = _layer()
    assert T * H in residual_stream(_block(work))
    before, after = _ops(work), _ops(shard_workload(work, 4))
    for i in (0, 8, 9, 10, 14, 15, 17, 18):
        assert after[i] == before[i], before[i].name


def test_attention_and_mlp_element_wise_ops_are_split() -> None:
    """Refusal: the scores' mask, softmax and dropout, GELU and its backward, the softmax backward and the
    optimizer are split by t, as are the GEMMs; so is a Q/K/V bias gradient (the column-parallel QKV's)."""
    before, after = _ops(_layer()), _ops(shard_workload(_layer(), 4))
    # the Q bias gradient has the stream's element count but reads the attention's batched GEMM: split
    assert on_residual_stream(before[23], residual_stream(_block(_layer()))) and 23 not in stream_ops(_block(_layer()))
    assert after[23].flops == before[23].flops / 4
    for i in (3, 4, 5, 12, 16, 19, 21):
        assert after[i].flops == before[i].flops / 4, before[i].name
        assert not on_residual_stream(before[i], residual_stream(_block(_layer())))
    for i in (1, 2, 6, 7, 11, 13, 20):
        assert after[i].flops == before[i].flops / 4


def test_sequence_parallelism_splits_the_residual_stream_and_keeps_the_bytes_sent() -> None:
    work = shard_workload(_layer(), 4)
    sp = sequence_parallel(work, 4, _layer())
    before, after = _ops(work), _ops(sp)
    for i in (0, 8, 9, 10, 14, 15, 17, 18):
        assert after[i].flops == before[i].flops / 4 and after[i].bytes_in == before[i].bytes_in / 4
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        if i not in (0, 8, 9, 10, 14, 15, 17, 18):
            assert a == b  # GEMMs, attention, GELU (split, now h wide at t = 4: not the stream), optimizer, and
            # the comm ops (the same bytes: reduce-scatter + all-gather = all-reduce)
    assert sum(op.kind == "comm" for op in after) == sum(op.kind == "comm" for op in before) > 0


def test_sequence_parallelism_needs_tensor_parallelism() -> None:
    """Refusal: t = 1 and blocks without an attention softmax are unchanged."""
    work = _layer()
    assert sequence_parallel(work, 1, work) is work
    raw = {"ops": [vec("native_layer_norm", T * H, [], "norm"), vec("add", T * H, [0], "norm")], "params": 0}
    plain = build_workload(raw, model="norm", batch=1, seq=T, fuse=False)
    assert sequence_parallel(plain, 4, plain).blocks == plain.blocks


def test_selective_recomputation_copies_only_the_attention_core() -> None:
    work = _layer()
    assert attention_core(_block(work)) == [2, 3, 4, 5, 6]
    again = _ops(recompute_attention(work))
    copies = again[len(_ops(work)):]
    assert [c.name for c in copies] == [f"{_ops(work)[i].name} (recomputed)" for i in (2, 3, 4, 5, 6)]
    assert all(c.phase == "bwd" for c in copies)
    assert copies[0].deps == () and copies[1].deps == (len(_ops(work)),)  # renumbered among the copies
    # far less than full recomputation: no weight GEMM, LayerNorm or GELU is run again
    full = sum(op.flops for op in _ops(recompute_layers(work))) - sum(op.flops for op in _ops(work))
    part = sum(c.flops for c in copies)
    gemm_part = sum(c.flops for c in copies if c.is_gemm)
    assert 0 < part < full / 2 and gemm_part == 2 * 2.0 * SEQ * SEQ * (H // HEADS) * (T // SEQ) * HEADS


def test_selective_recomputation_leaves_other_blocks_alone() -> None:
    """Refusal: a block without an attention softmax (a head with a log-softmax) has no attention core."""
    raw = {"ops": [gemm("mm", T, 1024, H, [], "head"), vec("_log_softmax", T * 1024, [0], "head", rows=T)],
           "params": 0}
    head = build_workload(raw, model="head", batch=1, seq=T, fuse=False)
    assert attention_core(head.blocks[0]) == []
    assert recompute_attention(head).blocks == head.blocks
