"""adopter.wham.cuda_step: a traced step rewritten as PyTorch's CUDA backend runs it (dropout kernel, autocast)."""

from __future__ import annotations

from typing import Any

import pytest

from adopter.wham.cuda_step import GRAD_UNSCALE, autocast, fused_dropout
from adopter.wham.graph import build_workload

N = 1000  # elements of the dropped-out activation


def _op(name: str, deps: list[int], elements: int = N, phase: str = "fwd", kind: str = "vector",
        inputs: list[list[int]] | None = None, bytes_in: float | None = None, bytes_out: float | None = None,
        ) -> dict[str, Any]:
    return {"name": name, "kind": kind, "phase": phase, "segment": "layers.0", "deps": deps, "elements": elements,
            "rows": 0, "flops": float(elements), "m": 10, "n": 10, "k": 10, "batch": 1,
            "bytes_in": float(2 * elements if bytes_in is None else bytes_in),
            "bytes_out": float(2 * elements if bytes_out is None else bytes_out),
            "inputs": inputs if inputs is not None else [[d, elements, -1, 1] for d in deps]}


def _dropout_trace() -> dict[str, Any]:
    """relu → dropout as the meta device decomposes it (bernoulli_, div_, mul) → gelu, and the backward mul."""
    return {"params": 0, "ops": [
        _op("relu", []),  # 0
        _op("bernoulli_", [0]),  # 1: empty_like(x) carries x's producer
        _op("div_", [1]),  # 2
        _op("mul", [0, 2], bytes_in=4 * N),  # 3
        _op("gelu", [3]),  # 4
        _op("gelu_backward", [4], phase="bwd", bytes_in=4 * N),  # 5
        _op("mul", [5, 2], phase="bwd", bytes_in=4 * N),  # 6
        _op("threshold_backward", [6, 0], phase="bwd", bytes_in=4 * N),  # 7
    ]}


def test_a_decomposed_dropout_becomes_one_kernel_forward_and_one_backward_with_a_one_byte_mask() -> None:
    before = _dropout_trace()
    after = fused_dropout(before)["ops"]
    assert [o["name"] for o in after] == ["relu", "native_dropout", "gelu", "gelu_backward",
                                          "native_dropout_backward", "threshold_backward"]
    fwd, bwd = after[1], after[4]
    assert (fwd["bytes_in"], fwd["bytes_out"]) == (2 * N, 3 * N)  # x in; y and the bool mask out
    assert (bwd["bytes_in"], bwd["bytes_out"]) == (3 * N, 2 * N)  # dy and the mask in; dx out
    assert fwd["deps"] == [0] and after[2]["deps"] == [1] and bwd["deps"] == [3, 1] and after[5]["deps"] == [4, 0]
    moved = sum(o["bytes_in"] + o["bytes_out"] for o in before["ops"][1:4] + before["ops"][6:7])
    assert moved == 20 * N and fwd["bytes_in"] + fwd["bytes_out"] + bwd["bytes_in"] + bwd["bytes_out"] == 10 * N
    build_workload(fused_dropout(before), model="m", batch=1, seq=1)  # still a well-formed trace


@pytest.mark.parametrize("change", [
    {2: {"name": "add_"}},  # not a division by 1 − p
    {6: {"name": "add"}},  # the mask read by something other than the two muls
])
def test_a_trace_without_the_whole_dropout_pattern_comes_back_unchanged(change: dict[int, dict[str, str]]) -> None:
    raw = _dropout_trace()
    for i, patch in change.items():
        raw["ops"][i] = {**raw["ops"][i], **patch}
    assert fused_dropout(raw)["ops"] == raw["ops"]


def _autocast_trace() -> dict[str, Any]:
    """Two linears sharing one weight (parameter 0, 100 elements), a softmax between them, a backward GEMM, an
    optimizer update of the weight."""
    w = [-1, 100, 0, 1]
    return {"params": 100, "ops": [
        _op("mm", [], kind="gemm", inputs=[[-1, N, -1, 1], w]),  # 0
        _op("_softmax", [0]),  # 1
        _op("mm", [1], kind="gemm", inputs=[[1, N, -1, 1], w]),  # 2
        _op("_softmax_backward_data", [2, 1], phase="bwd", inputs=[[2, N, -1, 1], [1, N, -1, 1]], bytes_in=4 * N),  # 3
        _op("mm", [3], phase="bwd", kind="gemm", inputs=[[3, N, -1, 1], w]),  # 4
        _op("_foreach_add", [4], elements=100, phase="opt", inputs=[], bytes_in=600),  # 5
    ]}


def test_autocast_casts_a_weight_once_a_forward_and_runs_the_fp32_list_in_fp32() -> None:
    after = autocast(_autocast_trace())["ops"]
    names = [o["name"] for o in after]
    assert names == ["_to_copy", "mm", "_to_copy", "_softmax", "_to_copy", "mm",
                     "_to_copy", "_softmax_backward_data", "_to_copy", "mm", "_to_copy", GRAD_UNSCALE, "_foreach_add"]
    cast = [(o["phase"], o["elements"], o["bytes_in"], o["bytes_out"]) for o in after if o["name"] == "_to_copy"]
    assert cast == [("fwd", 100, 400, 200),  # the weight, cached for the second mm
                    ("fwd", N, 2 * N, 4 * N),  # the mm's FP16 output up to the FP32 softmax
                    ("fwd", N, 4 * N, 2 * N),  # the softmax's FP32 output down for the second mm
                    ("bwd", N, 2 * N, 4 * N), ("bwd", N, 4 * N, 2 * N),  # the softmax backward's gradient, up and down
                    ("bwd", 100, 200, 400)]  # the weight's gradient back to FP32
    softmax = after[3]
    assert (softmax["bytes_in"], softmax["bytes_out"]) == (4 * N, 4 * N)
    assert (after[7]["bytes_in"], after[7]["bytes_out"]) == (8 * N, 4 * N)
    assert (after[-1]["bytes_in"], after[-1]["bytes_out"]) == (1200, 400)  # FP32 parameter, gradient, state
    assert (after[-2]["bytes_in"], after[-2]["bytes_out"]) == (400, 400)  # the GradScaler reads and writes each grad
    assert after[5]["deps"] == [3] and after[7]["deps"] == [5, 3]
    build_workload(autocast(_autocast_trace()), model="m", batch=1, seq=1)


def test_autocast_leaves_a_trace_without_input_records_as_it_is() -> None:
    raw = _autocast_trace()
    for o in raw["ops"]:
        o.pop("inputs")
    assert autocast(raw)["ops"] == raw["ops"]


@pytest.mark.torch
def test_the_tracer_records_each_input_and_the_parameters_a_gemm_reads() -> None:
    pytest.importorskip("torch")
    from adopter.wham.workload.trace import trace_training_step
    from adopter.wham.workload.zoo import ZOO

    model, inputs, loss = ZOO["tiny-transformer"][0](2, 32)
    raw = trace_training_step(model, inputs, loss_fn=loss)
    ops = raw["ops"]
    assert all(len(o["inputs"]) >= 1 for o in ops if o["phase"] != "opt")
    assert all(-1 <= p < i for i, o in enumerate(ops) if "inputs" in o for p, _, _, _ in o["inputs"])
    fwd_gemm_params = {q for o in ops if o["phase"] == "fwd" and o["kind"] == "gemm" for _, _, q, _ in o["inputs"]
                       if q >= 0}
    assert fwd_gemm_params, "no forward GEMM reads a parameter"
    assert sum(o["name"] == "bernoulli_" for o in ops) == sum(o["name"] == "native_dropout"
                                                             for o in fused_dropout(raw)["ops"])
