"""Megatron's vocabulary-parallel embedding and output layer under tensor parallelism.

`parallel.shard_workload` splits the transformer layers over `t` GPUs and leaves every other block whole. In
Megatron-LM the input embedding and the output (language-model head) GEMM are split too, along the vocabulary
(Shoeybi et al. 2019, "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism",
§3: "we parallelize the input embedding weight matrix E_{H×v} along the vocabulary dimension"; the output GEMM
is column-parallel over the vocabulary and the cross-entropy is fused with it, so each GPU holds only its
v/t logits). Each GPU computes a masked lookup of its vocabulary slice followed by an all-reduce of the
embedded tokens (forward), and the head's input gradient is all-reduced in the backward pass (the column-parallel
layer's `f` operator). The cross-entropy's own all-reduces (a max, a sum and the target logit per token) are a
few bytes a token and left out.

`shard_vocab(work, t)` shards every block outside the transformer layers (no attention softmax) that touches the
vocabulary: its GEMMs as `parallel.shard_block` shards a layer's (the larger of n and k: the vocabulary), and its
vector ops that are not on the residual stream (the element count of the layers' normalisation inputs, which
stay replicated as in a layer) divided by `t`; one all-reduce of the residual stream follows: forward for a block
without GEMMs (the embedding lookup), backward for a block with one (the head). Blocks whose ops are all on the
residual stream (position embeddings, the final norm) are unchanged. A vocabulary-sized tensor (the v·h
weight, the b·s·v logits) is larger than the b·s·h residual stream whenever v > b·s, as in every GPT row of
bench/wham_gpu_published.py (v = 51,200, b·s ≤ 32,768).
"""

from __future__ import annotations

import math
from dataclasses import replace

from adopter.wham.constants import BYTES_PER_ELEMENT, NORMALISATIONS
from adopter.wham.graph import Block, Op, Workload
from adopter.wham.parallel import _shard_gemm
from adopter.wham.recompute import is_layer_block


def residual_elements(work: Workload) -> int:
    """The residual stream's element count: the largest input of a normalisation in a transformer layer."""
    return max((w.elements for b in work.blocks if is_layer_block(b) for op in b.ops for w in op.vector
                if w.name in NORMALISATIONS), default=0)


def _on_residual(op: Op, residual: int) -> bool:
    return not op.is_gemm and all(w.elements <= residual for w in op.vector)


def shard_vocab_block(block: Block, t: int, residual: int) -> Block:
    """One non-layer block split over `t` GPUs along the vocabulary, with its all-reduce (see the module)."""
    if t <= 1 or is_layer_block(block) or all(_on_residual(op, residual) for op in block.ops):
        return block
    ops: list[Op] = []
    for op in block.ops:
        if op.is_gemm:
            ops.append(_shard_gemm(op, t))
        elif _on_residual(op, residual):
            ops.append(op)
        else:
            ops.append(replace(op, flops=op.flops / t, bytes_in=op.bytes_in / t, bytes_out=op.bytes_out / t,
                               vector=tuple(replace(w, elements=math.ceil(w.elements / t),
                                                    rows=math.ceil(w.rows / t)) for w in op.vector)))
    phase = "bwd" if any(op.is_gemm for op in block.ops) else "fwd"
    last = max((i for i, op in enumerate(ops) if op.phase == phase), default=None)
    ops.append(Op(name=f"all-reduce ({phase}, vocabulary-parallel)", kind="comm", phase=phase, flops=0.0,
                  bytes_in=float(residual * BYTES_PER_ELEMENT), bytes_out=0.0,
                  deps=(last,) if last is not None else (), m=t))
    return Block(tuple(ops))


def shard_vocab(work: Workload, t: int) -> Workload:
    """The per-GPU workload with the embedding and the head split over `t` GPUs along the vocabulary."""
    if t <= 1:
        return work
    residual = residual_elements(work)
    return replace(work, blocks=tuple(shard_vocab_block(b, t, residual) for b in work.blocks))
