"""Full activation recomputation: each transformer layer's forward runs again during the backward pass.

A run that checkpoints every transformer layer (Megatron-LM's `--activations-checkpoint-method uniform` with one
layer a checkpoint, the configuration of Narayanan et al. SC21's Table 1 runs) keeps only each layer's input
and, in the backward pass, re-runs the layer's forward before its backward (Chen et al. 2016, "Training Deep Nets
with Sublinear Memory Cost", §3; Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", §2: "full activation recomputation" costs one more forward pass of every layer). Narayanan et al.'s FLOP
count (their Eq. 3, 96·B·s·l·h² = 4 passes of 24·B·s·l·h²) counts it the same way: forward, backward (2×), and
the recomputed forward. Embeddings, the final norm, the head and the loss are outside the checkpointed layers
and run once.

`recompute_layers(work)` adds, to each transformer-layer block (a block with a softmax: attention, the same
test as `parallel.shard_block`), a copy of its forward ops in the backward phase, the copies' dependencies
renumbered among themselves. Costs are sums of ops (`gpu.serial_step`) so the copies' position does not matter.
"""

from __future__ import annotations

from dataclasses import replace

from adopter.wham.graph import Block, Workload


def is_layer_block(block: Block) -> bool:
    """Whether a block is a transformer layer (it holds an attention softmax)."""
    return any(w.name == "_softmax" for op in block.ops for w in op.vector)


def recompute_block(block: Block) -> Block:
    """The block with its forward ops run once more in the backward phase (a transformer layer), else as is."""
    if not is_layer_block(block):
        return block
    base = len(block.ops)
    fwd = [i for i, op in enumerate(block.ops) if op.phase == "fwd"]
    at = {i: base + j for j, i in enumerate(fwd)}
    copies = tuple(replace(block.ops[i], phase="bwd", name=f"{block.ops[i].name} (recomputed)",
                           deps=tuple(at[d] for d in block.ops[i].deps if d in at)) for i in fwd)
    return Block(block.ops + copies)


def recompute_layers(work: Workload) -> Workload:
    """The workload of a run that recomputes every transformer layer's forward in its backward pass."""
    return replace(work, blocks=tuple(recompute_block(b) for b in work.blocks))


def attention_core(block: Block) -> list[int]:
    """Indices of a transformer layer's attention core in its forward pass: the batched GEMMs over the heads
    (Q·Kᵀ and the scores times V) and the element-wise ops on the scores (their size: the softmax's)."""
    if not is_layer_block(block):
        return []
    scores = {w.elements for op in block.ops for w in op.vector if w.name == "_softmax" and op.phase == "fwd"}
    return [i for i, op in enumerate(block.ops) if op.phase == "fwd" and (
        (op.is_gemm and op.batch > 1) or (not op.is_gemm and any(w.elements in scores for w in op.vector)))]


def recompute_attention_block(block: Block) -> Block:
    """The block with only its attention core's forward run once more in the backward phase: Korthikanti et
    al. 2022 §5's selective activation recomputation (Q·Kᵀ, softmax, softmax dropout, attention over V: large
    activations, few FLOPs); the rest of the layer keeps its activations."""
    core = attention_core(block)
    if not core:
        return block
    base = len(block.ops)
    at = {i: base + j for j, i in enumerate(core)}
    copies = tuple(replace(block.ops[i], phase="bwd", name=f"{block.ops[i].name} (recomputed)",
                           deps=tuple(at[d] for d in block.ops[i].deps if d in at)) for i in core)
    return Block(block.ops + copies)


def recompute_attention(work: Workload) -> Workload:
    """The workload of a run that recomputes every layer's attention core (selective recomputation)."""
    return replace(work, blocks=tuple(recompute_attention_block(b) for b in work.blocks))
