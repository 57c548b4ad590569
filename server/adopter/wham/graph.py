"""The training-step operator graph: ops, fusion (GEMM + epilogue, element-wise chains) and repeated blocks.

`build_workload(raw)` turns the tracer's plain records into a `Workload`: a sequence of segments
(embedding, layer 0, layer 1, …, head) whose op DAGs are deduplicated into unique `Block`s, so a
24-layer model is analysed as one layer replicated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adopter.wham.constants import REDUCTIONS


@dataclass(frozen=True, slots=True)
class VectorWork:
    """Element-wise or row-reduction work: `elements` processed by op `name`, `rows` rows reduced."""

    name: str
    elements: int
    rows: int = 0


@dataclass(frozen=True, slots=True)
class Op:
    """One (possibly fused) operator: a GEMM with its epilogue, or a chain of vector ops."""

    name: str
    kind: str  # "gemm" | "vector"
    phase: str  # "fwd" | "bwd" | "opt"
    flops: float
    bytes_in: float
    bytes_out: float
    deps: tuple[int, ...]  # indices of ops in the same block
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    vector: tuple[VectorWork, ...] = ()  # the vector op itself, or the GEMM's fused epilogue

    @property
    def is_gemm(self) -> bool:
        """Whether the op runs on tensor cores."""
        return self.kind == "gemm"


@dataclass(frozen=True, slots=True)
class Block:
    """The op DAG of one segment; identical segments share one block."""

    ops: tuple[Op, ...]

    @property
    def flops(self) -> float:
        """Total FLOPs of the block's GEMMs and vector ops."""
        return sum(op.flops for op in self.ops)


@dataclass(frozen=True, slots=True)
class Segment:
    """A named part of the model in forward order (e.g. `layers.3`) and the block it runs."""

    name: str
    block: int


@dataclass(frozen=True, slots=True)
class Memory:
    """Bytes one training step keeps allocated, at the accelerator's 16-bit width (AdamW step counters
    in float32): parameters, gradients, optimizer state, and the activations saved for the backward."""

    param_bytes: int = 0
    grad_bytes: int = 0
    optimizer_bytes: int = 0
    saved_activation_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        """Everything the step holds at its peak (saved activations are all alive when backward starts)."""
        return self.param_bytes + self.grad_bytes + self.optimizer_bytes + self.saved_activation_bytes


@dataclass(frozen=True, slots=True)
class Workload:
    """One training step of a model at a given batch: unique blocks and the segment sequence."""

    model: str
    batch: int
    seq: int
    params: int
    blocks: tuple[Block, ...]
    segments: tuple[Segment, ...]
    memory: Memory = Memory()

    @property
    def flops(self) -> float:
        """FLOPs of the whole step."""
        return sum(self.blocks[s.block].flops for s in self.segments)

    @property
    def gemm_flops(self) -> float:
        """FLOPs of the step's GEMMs and convolutions."""
        return sum(op.flops for s in self.segments for op in self.blocks[s.block].ops if op.is_gemm)

    def op_count(self) -> int:
        """Number of (fused) ops in the whole step."""
        return sum(len(self.blocks[s.block].ops) for s in self.segments)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able summary (not the full graph)."""
        return {
            "model": self.model, "batch": self.batch, "seq": self.seq, "params": self.params,
            "flops": self.flops, "gemm_flops": self.gemm_flops, "ops": self.op_count(),
            "segments": len(self.segments), "unique_blocks": len(self.blocks),
            "memory": {"param_bytes": self.memory.param_bytes, "grad_bytes": self.memory.grad_bytes,
                       "optimizer_bytes": self.memory.optimizer_bytes,
                       "saved_activation_bytes": self.memory.saved_activation_bytes},
        }


class GraphError(ValueError):
    """The raw trace is malformed."""


def _fusable(rec: Mapping[str, Any]) -> bool:
    return rec["kind"] == "vector" and rec["name"] not in REDUCTIONS


def build_workload(raw: Mapping[str, Any], *, model: str, batch: int, seq: int, fuse: bool = True) -> Workload:
    """Fuse and segment a raw trace (`{"ops": [...], "params": N}`) into a `Workload`.

    `fuse=False` keeps every op on its own, as an eager framework runs it: each element-wise op and each GEMM
    epilogue reads its inputs from and writes its output to off-chip memory (the GPU validation's eager rows)."""
    recs: Sequence[Mapping[str, Any]] = raw.get("ops", ())
    if not recs:
        raise GraphError("the trace has no operators")
    n = len(recs)
    consumers: list[list[int]] = [[] for _ in range(n)]
    for i, r in enumerate(recs):
        for d in r["deps"]:
            if not 0 <= d < i:
                raise GraphError(f"op {i} depends on op {d}, which does not precede it")
            consumers[d].append(i)
    group = list(range(n))  # representative (first member) of each op's fused group
    members: dict[int, list[int]] = {i: [i] for i in range(n)}

    for j, r in enumerate(recs):
        if not fuse or not _fusable(r):
            continue
        # A vector op fuses into its producer when it is that producer's only consumer (TVM's rule):
        # into a GEMM as its single epilogue, or onto a chain of element-wise ops.
        for d in r["deps"]:
            if consumers[d] != [j] or recs[d]["segment"] != r["segment"] or recs[d]["phase"] != r["phase"]:
                continue
            g = group[d]
            head = recs[g]
            if head["kind"] == "gemm" and len(members[g]) > 1:
                continue
            if head["kind"] == "vector" and not _fusable(head):
                continue
            if members[g][-1] != d:
                continue  # only extend a group at its tail, so it stays a chain
            members[g].append(j)
            del members[j]
            group[j] = g
            break

    # Build fused ops per segment, in first-appearance order.
    seg_order: list[str] = []
    seg_ops: dict[str, list[int]] = {}
    for g in sorted(members):
        seg = str(recs[g]["segment"])
        if seg not in seg_ops:
            seg_order.append(seg)
            seg_ops[seg] = []
        seg_ops[seg].append(g)

    blocks: list[Block] = []
    index: dict[Block, int] = {}
    segments: list[Segment] = []
    for seg in seg_order:
        local = {g: i for i, g in enumerate(seg_ops[seg])}
        ops = tuple(_fuse(recs, members[g], group, local) for g in seg_ops[seg])
        block = Block(ops)
        if block not in index:
            index[block] = len(blocks)
            blocks.append(block)
        segments.append(Segment(seg, index[block]))
    mem = raw.get("memory") or {}
    memory = Memory(*(int(mem.get(k, 0)) for k in ("param_bytes", "grad_bytes", "optimizer_bytes",
                                                     "saved_activation_bytes")))
    return Workload(model, batch, seq, int(raw.get("params", 0)), tuple(blocks), tuple(segments), memory)


def _fuse(recs: Sequence[Mapping[str, Any]], ids: list[int], group: list[int], local: dict[int, int]) -> Op:
    """One fused op from a chain of raw records; intermediates are neither written nor re-read."""
    head = recs[ids[0]]
    inside = set(ids)
    deps: list[int] = []
    for i in ids:
        for d in recs[i]["deps"]:
            g = group[d]
            if d not in inside and g in local and local[g] not in deps:
                deps.append(local[g])
    bytes_in = sum(float(recs[i]["bytes_in"]) for i in ids)
    bytes_in -= sum(float(recs[i]["bytes_out"]) for i in ids[:-1])
    vec = tuple(
        VectorWork(str(recs[i]["name"]), int(recs[i]["elements"]), int(recs[i].get("rows", 0)))
        for i in ids if recs[i]["kind"] == "vector"
    )
    name = "+".join(str(recs[i]["name"]) for i in ids[:3]) + ("+…" if len(ids) > 3 else "")
    return Op(
        name=name, kind=str(head["kind"]), phase=str(head["phase"]),
        flops=sum(float(recs[i]["flops"]) for i in ids), bytes_in=max(0.0, bytes_in),
        bytes_out=float(recs[ids[-1]]["bytes_out"]), deps=tuple(sorted(deps)),
        m=int(head.get("m", 0)), n=int(head.get("n", 0)), k=int(head.get("k", 0)),
        batch=int(head.get("batch", 1)), vector=vec,
    )


def scaled_gemm_dims(op: Op) -> tuple[int, int, int, int]:
    """(M, N, K, batch) with zero dims clamped to 1 so cost formulas stay defined."""
    return max(1, op.m), max(1, op.n), max(1, op.k), max(1, op.batch)


def describe(work: Workload) -> str:
    """A one-line description for logs and reports."""
    return (f"{work.model} batch {work.batch} seq {work.seq}: {work.params / 1e6:.1f} M params, "
            f"{work.flops / 1e12:.2f} TFLOP/step, {work.op_count()} ops in {len(work.segments)} segments "
            f"({len(work.blocks)} unique)")


def ceil_div(a: float, b: float) -> int:
    """Ceiling division for positive numbers."""
    return math.ceil(a / b)
