"""bench/wham_gpu_ops.py: the paper's operator classes, the measured kernels' bandwidths and their sources."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import wham_gpu_ops as bench  # noqa: E402
from adopter.wham import constants as C  # noqa: E402
from adopter.wham.graph import Op  # noqa: E402


def _op(name: str, kind: str = "vector") -> Op:
    return Op(name, kind, "fwd", 1.0, 1.0, 1.0, ())


@pytest.mark.parametrize(("name", "kind", "cls"), [
    ("addmm", "gemm", bench.TENSOR), ("bmm", "gemm", bench.TENSOR), ("_softmax", "vector", bench.NORM),
    ("_softmax_backward_data", "vector", bench.NORM), ("native_layer_norm_backward", "vector", bench.NORM),
    ("sum", "vector", bench.NORM), ("native_dropout", "vector", bench.ELEMENTWISE),
    ("threshold_backward", "vector", bench.ELEMENTWISE), ("add:relu", "vector", bench.ELEMENTWISE),
])
def test_each_kernel_falls_in_the_papers_operator_class(name: str, kind: str, cls: str) -> None:
    assert bench.op_class(_op(name, kind)) == cls


def test_a_memory_bound_kernel_runs_at_its_kinds_measured_bandwidth_and_a_gemm_at_the_model() -> None:
    ln = bench.OpTime("fwd", "native_layer_norm", bench.NORM, 10.0, 1.0, "bandwidth")
    drln = next(k for k in bench.KERNELS if k.name == "drln")
    achieved = 2 * (drln.elements_in + drln.elements_out) / drln.measured_us / 1e3
    assert bench.measured_fraction(ln) == pytest.approx(achieved / C.V100_HBM_COPY_GBS)
    assert 0.5 < bench.measured_fraction(ln) < 0.7  # 25.2 MB in 50.8 µs: ~495 of 809 GB/s
    assert bench.measured_fraction(bench.OpTime("bwd", "mm", bench.TENSOR, 10.0, 1.0, "bandwidth")) == 1.0
    assert bench.measured_fraction(bench.OpTime("fwd", "relu", bench.ELEMENTWISE, 10.0, 1.0, "vector")) == 1.0


def test_every_measured_figure_names_its_repository_commit_and_file() -> None:
    for fig in (*bench.LAYERS, *bench.KERNELS):
        assert fig.source.startswith("spcl/substation @9ae8698 ")
        assert "README.md" in fig.source or "perf_" in fig.source
