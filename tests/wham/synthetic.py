"""Hand-built raw traces for tests that must not need torch."""

from __future__ import annotations

from typing import Any

from adopter.wham.graph import Workload, build_workload


def gemm(name: str, m: int, n: int, k: int, deps: list[int], seg: str, phase: str = "fwd",
         batch: int = 1) -> dict[str, Any]:
    """A raw GEMM record."""
    return {"name": name, "kind": "gemm", "phase": phase, "segment": seg, "deps": deps, "m": m, "n": n, "k": k,
            "batch": batch, "flops": 2.0 * m * n * k * batch, "elements": m * n * batch, "rows": 0,
            "bytes_in": 2.0 * batch * (m * k + k * n), "bytes_out": 2.0 * batch * m * n}


def vec(name: str, elements: int, deps: list[int], seg: str, phase: str = "fwd", rows: int = 0) -> dict[str, Any]:
    """A raw vector record."""
    return {"name": name, "kind": "vector", "phase": phase, "segment": seg, "deps": deps, "elements": elements,
            "rows": rows, "flops": float(elements), "bytes_in": 2.0 * elements, "bytes_out": 2.0 * elements}


def layer_ops(seg: str, base: int, tokens: int = 512, hidden: int = 256) -> list[dict[str, Any]]:
    """A transformer-like layer (forward, backward, optimizer) starting at global index `base`."""
    t, h = tokens, hidden
    ops = [
        gemm("addmm", t, 3 * h, h, [], seg),                      # 0 qkv
        gemm("bmm", 64, 64, h // 4, [base], seg, batch=4 * 8),     # 1 scores
        vec("_softmax", 4 * 8 * 64 * 64, [base + 1], seg, rows=4 * 8 * 64),  # 2
        gemm("bmm", 64, h // 4, 64, [base + 2], seg, batch=4 * 8),  # 3 context
        gemm("addmm", t, h, h, [base + 3], seg),                   # 4 out proj
        vec("add", t * h, [base + 4], seg),                        # 5 residual (fused into 4)
        vec("native_layer_norm", t * h, [base + 5], seg, rows=t),  # 6
        gemm("addmm", t, 4 * h, h, [base + 6], seg),               # 7 fc1
        vec("gelu", t * 4 * h, [base + 7], seg),                   # 8 (fused into 7)
        gemm("addmm", t, h, 4 * h, [base + 8], seg),               # 9 fc2
        gemm("mm", t, 4 * h, h, [base + 9], seg, "bwd"),           # 10 dgrad fc2
        gemm("mm", 4 * h, h, t, [base + 9], seg, "bwd"),           # 11 wgrad fc2
        vec("gelu_backward", t * 4 * h, [base + 10], seg, "bwd"),  # 12
        gemm("mm", t, h, 4 * h, [base + 12], seg, "bwd"),          # 13 dgrad fc1
        gemm("mm", h, 4 * h, t, [base + 12], seg, "bwd"),          # 14 wgrad fc1
        vec("_foreach_mul", 12 * h * h, [base + 11, base + 14], seg, "opt"),  # 15
        vec("_foreach_addcdiv", 12 * h * h, [base + 15], seg, "opt"),         # 16
    ]
    return ops


def toy_workload(layers: int = 4, tokens: int = 512, hidden: int = 256) -> Workload:
    """A synthetic `layers`-layer transformer-like workload."""
    ops: list[dict[str, Any]] = []
    for i in range(layers):
        ops += layer_ops(f"layers.{i}", len(ops), tokens, hidden)
    return build_workload({"ops": ops, "params": layers * 12 * hidden * hidden}, model="toy", batch=8, seq=64)
