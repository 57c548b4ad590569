"""Check the GPU step model's batch-norm traffic on a real GPU (adopter.wham.gpu): run it where a GPU is lent.

Usage: python bench/wham_gpu_mechanisms.py [--device cuda] [--out FILE.json]

The model says a training batch norm whose input x does not fit in L2 moves 3 passes of x forward (read for
the statistics, read to normalise, write y) and 5 backward (read dy and x for Σdy and Σdy·x̂, read both again,
write dx), where a copy of x moves 2 (read, write). So at the same achieved bandwidth, forward / copy ≈ 1.5 and
backward / copy ≈ 2.5 (the trace alone would say 1.0 and 1.5). Measured with CUDA events on a 256×256×56×56
fp16 activation (ResNet-50's first stage at batch 256: 411 MB), in NCHW and channels-last. `--device cpu` is a
dry run of the script, not a measurement.

Prints one JSON object; nothing is fitted from it (the model's constants are derived, see constants.SOURCES).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _timer(device: str) -> Callable[[Callable[[], object], int], float]:
    import torch as T

    def timed(fn: Callable[[], object], n: int = 10) -> float:
        for _ in range(3):
            fn()
        if device == "cuda":
            start, end = T.cuda.Event(enable_timing=True), T.cuda.Event(enable_timing=True)
            T.cuda.synchronize()
            start.record()
            for _ in range(n):
                fn()
            end.record()
            T.cuda.synchronize()
            return float(start.elapsed_time(end)) / n / 1e3
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n

    return timed


def _batchnorm_over_copy(timed: Callable[[Callable[[], object], int], float], shape: tuple[int, int, int, int],
                         device: str, dtype: object, layout: str) -> dict[str, float]:
    """Training batch norm's forward and backward time over a copy's time, on one activation."""
    import torch as T
    import torch.nn.functional as F

    x = T.randn(*shape, device=device, dtype=dtype)  # type: ignore[call-overload]
    if layout == "channels_last":
        x = x.contiguous(memory_format=T.channels_last)
    x.requires_grad_(True)
    weight = T.ones(shape[1], device=device, requires_grad=True)
    bias = T.zeros(shape[1], device=device, requires_grad=True)
    copy_to = T.empty_like(x)
    copy_s = timed(lambda: copy_to.copy_(x), 10)
    y = F.batch_norm(x, None, None, weight, bias, True)
    dy = T.randn_like(y)
    fwd_s = timed(lambda: F.batch_norm(x, None, None, weight, bias, True), 10)
    bwd_s = timed(lambda: T.autograd.grad(y, (x, weight, bias), dy, retain_graph=True), 10)
    return {"copy_s": copy_s, "forward_over_copy": fwd_s / copy_s, "backward_over_copy": bwd_s / copy_s,
            "model_forward_over_copy": 1.5, "model_backward_over_copy": 2.5,
            "trace_only_forward_over_copy": 1.0, "trace_only_backward_over_copy": 1.5}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--shape", default="256,256,56,56", help="N,C,H,W of the batch-norm input")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import torch as T

    if args.device == "cuda" and not T.cuda.is_available():
        print("no CUDA device: run with --device cpu for a dry run", file=sys.stderr)
        return 2
    timed = _timer(args.device)
    dtype = T.float16 if args.device == "cuda" else T.float32
    n, c, h, w = (int(v) for v in args.shape.split(","))
    result: dict[str, object] = {"device": T.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
                                 "shape": [n, c, h, w], "dtype": str(dtype)}
    for layout in ("nchw", "channels_last"):
        result[layout] = _batchnorm_over_copy(timed, (n, c, h, w), args.device, dtype, layout)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
