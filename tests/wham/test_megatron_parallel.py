"""Full activation recomputation (`recompute`) and the vocabulary-parallel embedding and head (`vocab_parallel`):
how a Megatron-LM GPT run executes its step, for bench/wham_gpu_published.py's SC21 Table 1 rows.

Shaped on NVIDIA/Megatron-LM @d98e8a64 examples/academic_paper_scripts/sc21/run_table_1.sh (lines 17-28: the 1.7B
row, --activations-checkpoint-method uniform; the 18B row, TP 8) and Shoeybi et al. 2019 §3 (the embedding and
the output layer split along the vocabulary): a toy decoder (tests/wham/synthetic.py's layer) with an embedding
block and a vocabulary head block, written here at fixture size.
"""

from __future__ import annotations

from typing import Any

import pytest

from adopter.wham.constants import BYTES_PER_ELEMENT
from adopter.wham.gpu import kernel_cost
from adopter.wham.graph import Block, Op, Workload, build_workload
from adopter.wham.hardware import Design
from adopter.wham.parallel import shard_workload
from adopter.wham.recompute import is_layer_block, recompute_block, recompute_layers
from adopter.wham.vocab_parallel import residual_elements, shard_vocab

from .synthetic import gemm, layer_ops, vec

TOKENS, HIDDEN, VOCAB = 512, 256, 4096  # a vocabulary larger than the tokens of a micro-batch, as in GPT rows


def _decoder() -> Workload:
    """Embedding, two layers, final norm, vocabulary head with its log-softmax loss, as a raw trace."""
    t, h, v = TOKENS, HIDDEN, VOCAB
    ops: list[dict[str, Any]] = [vec("embedding", v * h, [], "embed"),
                                 vec("embedding_dense_backward", v * h, [], "embed", "bwd"),
                                 vec("_foreach_addcdiv", v * h, [1], "embed", "opt")]
    for i in range(2):
        ops += layer_ops(f"layers.{i}", len(ops), t, h)
    n = len(ops)
    ops += [vec("native_layer_norm", t * h, [n - 1], "norm", rows=t),
            vec("native_layer_norm_backward", t * h, [], "norm", "bwd", rows=t)]
    n = len(ops)
    ops += [gemm("mm", t, v, h, [n - 2], "head"),
            vec("_log_softmax", t * v, [n], "head", rows=t),
            vec("_log_softmax_backward_data", t * v, [n + 1], "head", "bwd", rows=t),
            gemm("mm", t, h, v, [n + 2], "head", "bwd"),
            gemm("mm", v, h, t, [n + 2], "head", "bwd"),
            vec("_foreach_addcdiv", v * h, [n + 4], "head", "opt")]
    return build_workload({"ops": ops, "params": 2 * v * h + 24 * h * h}, model="toy-gpt", batch=1, seq=t)


def _block(work: Workload, segment: str) -> Block:
    return work.blocks[next(s.block for s in work.segments if s.name == segment)]


def _phase_flops(block: Block, phase: str) -> float:
    return sum(op.flops for op in block.ops if op.phase == phase)


def test_recomputation_runs_each_layers_forward_again_in_the_backward_pass() -> None:
    work = _decoder()
    layer = _block(work, "layers.0")
    again = recompute_block(layer)
    fwd = [op for op in layer.ops if op.phase == "fwd"]
    copies = again.ops[len(layer.ops):]
    assert len(copies) == len(fwd) and all(op.phase == "bwd" for op in copies)
    assert _phase_flops(again, "bwd") == pytest.approx(_phase_flops(layer, "bwd") + _phase_flops(layer, "fwd"))
    assert _phase_flops(again, "fwd") == _phase_flops(layer, "fwd")  # forward and optimizer unchanged
    assert _phase_flops(again, "opt") == _phase_flops(layer, "opt")
    # the copies depend on each other as the forward ops did, renumbered past the original ops
    base = len(layer.ops)
    index = {i: base + j for j, i in enumerate(i for i, op in enumerate(layer.ops) if op.phase == "fwd")}
    for i, copy in zip(index, copies, strict=True):
        assert copy.deps == tuple(index[d] for d in layer.ops[i].deps if d in index)


def test_recomputation_leaves_the_embedding_norm_and_head_alone() -> None:
    """Refusal: only checkpointed transformer layers (a block with an attention softmax) run twice; the head's
    log-softmax is not an attention softmax, and the embedding and final norm are outside the layers."""
    work = _decoder()
    again = recompute_layers(work)
    for seg in ("embed", "norm", "head"):
        assert not is_layer_block(_block(work, seg))
        assert _block(again, seg) == _block(work, seg)
    assert sum(is_layer_block(b) for b in again.blocks) == sum(is_layer_block(b) for b in work.blocks)


def test_the_vocabulary_parallel_head_splits_its_gemms_logits_and_weights_and_all_reduces_backward() -> None:
    work = _decoder()
    t = 4
    head, split = _block(work, "head"), _block(shard_vocab(work, t), "head")
    # each GEMM split as `parallel.shard_block` splits a layer's: the logits along the vocabulary (n), the input
    # gradient along its reduction over the vocabulary (k); each GEMM a t-th of its FLOPs
    shapes = [(op.m, op.n, op.k) for op in split.ops if op.is_gemm]
    assert shapes[:2] == [(TOKENS, VOCAB // t, HIDDEN), (TOKENS, HIDDEN, VOCAB // t)]
    for a, b in zip([op for op in split.ops if op.is_gemm], [op for op in head.ops if op.is_gemm], strict=True):
        assert a.flops == pytest.approx(b.flops / t)
    assert sum(op.flops for op in split.ops if op.is_gemm) == pytest.approx(
        sum(op.flops for op in head.ops if op.is_gemm) / t)
    soft = [op for op in split.ops if op.vector and op.vector[0].name.startswith("_log_softmax")]
    assert soft and all(op.vector[0].elements == TOKENS * VOCAB // t for op in soft)
    comm = [op for op in split.ops if op.kind == "comm"]
    assert len(comm) == 1 and comm[0].phase == "bwd" and comm[0].m == t
    assert comm[0].bytes_in == residual_elements(work) * BYTES_PER_ELEMENT


def test_the_vocabulary_parallel_embedding_all_reduces_its_lookup_forward() -> None:
    work = _decoder()
    split = _block(shard_vocab(work, 2), "embed")
    assert [op.kind for op in split.ops].count("comm") == 1
    comm = next(op for op in split.ops if op.kind == "comm")
    assert comm.phase == "fwd" and comm.m == 2
    assert all(op.vector[0].elements == VOCAB * HIDDEN // 2 for op in split.ops if op.kind != "comm")


def test_the_residual_stream_blocks_and_the_layers_are_not_split_along_a_vocabulary() -> None:
    """Refusal: the final norm works on the residual stream (replicated under tensor parallelism, as in a
    layer), the layers are `parallel.shard_workload`'s, and one GPU (t = 1) is the whole model."""
    work = _decoder()
    split = shard_vocab(work, 4)
    assert _block(split, "norm") == _block(work, "norm")
    assert _block(split, "layers.0") == _block(work, "layers.0")
    assert shard_vocab(work, 1) == work
    # after the layers' own sharding, the residual stream is the same size (its norms stay replicated)
    assert residual_elements(shard_workload(work, 4)) == residual_elements(work) == TOKENS * HIDDEN


def test_a_tensor_parallel_all_reduce_runs_on_the_link_the_caller_names() -> None:
    d = Design(n_tc=4, pe_x=16, pe_y=16, n_vc=4, lanes=64, sram_mib=8.0, bandwidth_gbs=1000.0, clock_mhz=1000.0)
    op = Op(name="all-reduce (fwd)", kind="comm", phase="fwd", flops=0.0, bytes_in=1e9, bytes_out=0.0, deps=(), m=8)
    slow, fast = kernel_cost(op, d), kernel_cost(op, d, link_gbs=300.0)
    # ring all-reduce: 2 (n − 1) / n × bytes / link; at 1000 MHz a cycle is a ns
    assert fast.cycles == pytest.approx(2 * 7 / 8 * 1e9 / 300e9 * 1e9)
    assert slow.cycles > fast.cycles
