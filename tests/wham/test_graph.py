"""Fusion and repeated-block detection on hand-built traces."""

from __future__ import annotations

import pytest

from adopter.wham.graph import GraphError, build_workload

from .synthetic import gemm, layer_ops, toy_workload, vec


def test_gemm_absorbs_one_elementwise_successor() -> None:
    raw = {"ops": [gemm("addmm", 8, 8, 8, [], "a"), vec("gelu", 64, [0], "a"), vec("mul", 64, [1], "a")]}
    w = build_workload(raw, model="m", batch=1, seq=1)
    ops = w.blocks[0].ops
    # GEMM + gelu fuse; the mul cannot join the GEMM's group (one epilogue), so it stays alone
    assert [o.name for o in ops] == ["addmm+gelu", "mul"]
    assert ops[0].vector[0].name == "gelu" and ops[1].deps == (0,)
    # the intermediate (GEMM output) is neither written nor re-read
    assert ops[0].bytes_out == 2.0 * 64
    assert ops[0].bytes_in == pytest.approx(2.0 * (64 + 64) + 2 * 64 - 2 * 64)


def test_elementwise_chain_fuses_but_not_across_fanout_or_reductions() -> None:
    raw = {"ops": [
        vec("add", 64, [], "a"), vec("mul", 64, [0], "a"), vec("div", 64, [1], "a"),  # chain → 1 op
        vec("_softmax", 64, [2], "a", rows=8),  # reduction: not fused
        vec("relu", 64, [3], "a"), vec("neg", 64, [3], "a"),  # fan-out of the softmax: neither fuses
    ]}
    ops = build_workload(raw, model="m", batch=1, seq=1).blocks[0].ops
    assert [o.name for o in ops] == ["add+mul+div", "_softmax", "relu", "neg"]
    assert ops[2].deps == (1,) and ops[3].deps == (1,)


def test_no_fusion_across_segments_or_phases() -> None:
    raw = {"ops": [gemm("mm", 8, 8, 8, [], "a"), vec("add", 64, [0], "b"),
                   gemm("mm", 8, 8, 8, [], "a"), vec("add", 64, [2], "a", "bwd")]}
    w = build_workload(raw, model="m", batch=1, seq=1)
    assert sum(len(w.blocks[s.block].ops) for s in w.segments) == 4


def test_repeated_layers_share_one_block() -> None:
    w = toy_workload(layers=6)
    assert len(w.segments) == 6 and len(w.blocks) == 1
    assert [s.name for s in w.segments] == [f"layers.{i}" for i in range(6)]
    assert w.flops == pytest.approx(6 * w.blocks[0].flops)


def test_different_layers_get_different_blocks() -> None:
    ops = layer_ops("layers.0", 0) + layer_ops("layers.1", 17, hidden=128)
    w = build_workload({"ops": ops}, model="m", batch=1, seq=1)
    assert len(w.blocks) == 2


def test_malformed_traces_raise_graph_error() -> None:
    with pytest.raises(GraphError, match="no operators"):
        build_workload({"ops": []}, model="m", batch=1, seq=1)
    with pytest.raises(GraphError, match="does not precede"):
        build_workload({"ops": [vec("add", 4, [0], "a")]}, model="m", batch=1, seq=1)


def test_unfused_build_keeps_every_op_and_its_traffic() -> None:
    raw = {"ops": [gemm("addmm", 8, 8, 8, [], "a"), vec("gelu", 64, [0], "a"), vec("mul", 64, [1], "a")]}
    fused = build_workload(raw, model="m", batch=1, seq=1).blocks[0].ops
    eager = build_workload(raw, model="m", batch=1, seq=1, fuse=False).blocks[0].ops
    assert [o.name for o in eager] == ["addmm", "gelu", "mul"]
    # the GEMM's output is written and the gelu reads it back: more off-chip bytes than the fused graph
    assert sum(o.bytes_in + o.bytes_out for o in eager) > sum(o.bytes_in + o.bytes_out for o in fused)
    assert sum(o.flops for o in eager) == sum(o.flops for o in fused)
