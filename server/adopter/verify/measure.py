"""Time forward+backward of an original module and its rewrite in alternating pairs; their peak memory."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from adopter.verify.compare import Inputs, call, tensors


@dataclass(frozen=True, slots=True)
class Timing:
    """original / rewritten time per pair (above 1: the rewrite is faster): median and quartiles."""

    speedup: float
    q1: float
    q3: float
    pairs: int
    original_ms: float  # medians of the step time
    rewritten_ms: float


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(module: torch.nn.Module, inputs: Inputs) -> None:
    """One forward and backward (sum of the floating outputs), gradients dropped."""
    module.zero_grad(set_to_none=True)
    outputs = [t for t in tensors(call(module, inputs)) if t.is_floating_point() and t.requires_grad]
    if outputs:
        sum(t.float().sum() for t in outputs).backward()  # type: ignore[union-attr]


def _once(module: torch.nn.Module, inputs: Inputs, device: torch.device) -> float:
    _sync(device)
    start = time.perf_counter()
    train_step(module, inputs)
    _sync(device)
    return time.perf_counter() - start


def timing(original: torch.nn.Module, rewritten: torch.nn.Module, inputs: Inputs, *, pairs: int,
           device: torch.device, warmup: int = 2) -> Timing:
    """Alternate the two (which goes first alternates too, so neither always runs on a warmer cache)."""
    for _ in range(warmup):
        _once(original, inputs, device)
        _once(rewritten, inputs, device)
    ratios: list[float] = []
    a_times: list[float] = []
    b_times: list[float] = []
    for i in range(pairs):
        if i % 2 == 0:
            a = _once(original, inputs, device)
            b = _once(rewritten, inputs, device)
        else:
            b = _once(rewritten, inputs, device)
            a = _once(original, inputs, device)
        a_times.append(a)
        b_times.append(b)
        ratios.append(a / b if b > 0 else float("inf"))
    quartiles = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) >= 2 else [ratios[0]] * 3
    return Timing(statistics.median(ratios), quartiles[0], quartiles[2], pairs,
                  statistics.median(a_times) * 1e3, statistics.median(b_times) * 1e3)


def peak_memory(module: torch.nn.Module, inputs: Inputs, device: torch.device) -> int | None:
    """Peak bytes of tensors alive during one training step: CUDA's `max_memory_allocated` above what
    was allocated before it; on CPU the running sum of the profiler's allocation and free events. The
    gradients of an earlier step are dropped first: `train_step` frees them as it starts, so counted in the
    base they hid the step's own gradients (a rewritten BERT attention measured 0 bytes on an H200)."""
    module.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        train_step(module, inputs)
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - base)
    from torch.profiler import ProfilerActivity, profile

    try:
        from torch.profiler._memory_profiler import Action

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                     with_stack=True) as prof:
            train_step(module, inputs)
        timeline = prof._memory_profile().timeline
    except Exception:  # the memory timeline is torch's private API: no figure rather than a wrong one
        return None
    # The profiler's memory timeline (what `export_memory_timeline` plots): tensors created and destroyed
    # during the step, in time order; the peak of their running sum.
    live = peak = 0
    for _, action, _, size in timeline:
        if action == Action.CREATE:
            live += size
        elif action == Action.DESTROY:
            live -= size
        peak = max(peak, live)
    return peak
