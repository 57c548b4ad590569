"""Megatron's sequence parallelism on top of tensor parallelism (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", §4.2.2).

Tensor parallelism (`parallel.shard_block`) splits a layer's GEMMs and attention over `t` GPUs but leaves the
residual stream's ops — the LayerNorms and the bias-dropout-adds, forward and backward — whole on every GPU.
Sequence parallelism splits them along the sequence: each GPU runs them on s/t of the tokens (§4.2.2). The all-reduce after each sub-layer becomes a reduce-scatter and the one before it an all-gather,
which together move the bytes of the all-reduce they replace (the paper: "the same communication bandwidth";
a ring all-reduce is a reduce-scatter followed by an all-gather), so the comm ops are left as they are.

`sequence_parallel(work, t, unsharded)` divides by `t`, in each tensor-parallel transformer layer of `work` (a
block with an attention softmax), the ops `parallel.stream_ops` finds in the same block of `unsharded`,
the workload before `parallel.shard_workload` (which keeps a block's ops in place and appends its all-reduces):
after the split an MLP op can have the stream's element count (4h / t = h at t = 4), so the test is made before
it. The other blocks, the optimizer and the comm ops are unchanged.
"""

from __future__ import annotations

import math
from dataclasses import replace

from adopter.wham.graph import Block, Op, Workload
from adopter.wham.parallel import stream_ops
from adopter.wham.recompute import is_layer_block


def _split(op: Op, t: int) -> Op:
    return replace(op, flops=op.flops / t, bytes_in=op.bytes_in / t, bytes_out=op.bytes_out / t,
                   vector=tuple(replace(w, elements=math.ceil(w.elements / t), rows=math.ceil(w.rows / t))
                                for w in op.vector))


def sequence_parallel_block(block: Block, t: int, unsharded: Block) -> Block:
    """A tensor-parallel layer block (`parallel.shard_block` of `unsharded`) with its residual-stream ops split
    along the sequence over `t` GPUs."""
    if t <= 1 or not is_layer_block(unsharded):
        return block
    stream = stream_ops(unsharded)
    return Block(tuple(_split(op, t) if i in stream else op for i, op in enumerate(block.ops)))


def sequence_parallel(work: Workload, t: int, unsharded: Workload) -> Workload:
    """The per-GPU workload of a `t`-way tensor-parallel run (`work`, sharded from `unsharded`) with sequence
    parallelism."""
    if t <= 1:
        return work
    return replace(work, blocks=tuple(sequence_parallel_block(b, t, u)
                                      for b, u in zip(work.blocks, unsharded.blocks, strict=True)))
