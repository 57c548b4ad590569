"""Worker-side measurements: losses with dropout off, interleaved A/B step times, peak memory per variant."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gains.loading import Code, build_models, dropout_left, load_variants, use_transformers
from gains.models import ModelSpec, spec

LOSS_TOL = 1e-4  # |loss - original loss| <= LOSS_TOL * max(1, |original loss|), float32, first steps
DTYPES = {"fp32": None, "fp16": "float16", "bf16": "bfloat16"}


def _setup(job: dict[str, Any]) -> tuple[Any, ModelSpec, dict[str, Code]]:
    import torch

    torch.set_num_threads(job["threads"])
    torch.set_num_interop_threads(1)
    s = spec(job["model"])
    code = load_variants(s, job.get("rewritten_model"), job["original_script"], job.get("rewritten_script"),
                         job.get("per_rule"))
    return torch, s, code


def _autocast(torch: Any, job: dict[str, Any]) -> Any:
    name = DTYPES[job["dtype"]]
    return getattr(torch, name) if name else None


def _scaler(torch: Any, job: dict[str, Any]) -> Any:
    # fp16 needs loss scaling; bf16 and fp32 do not.
    return torch.amp.GradScaler("cuda") if job["device"] == "cuda" and job["dtype"] == "fp16" else None


def _clock(job: dict[str, Any]) -> tuple[str, Callable[[], float]]:
    # With one intra-op thread on CPU every op (backward included) runs on the calling thread, so its CPU
    # time is the step's compute time without the time other processes on this shared machine took.
    if job["device"] == "cpu" and job["threads"] == 1:
        return "thread_cpu", time.thread_time
    return "wall", time.perf_counter


def losses_dropout_off(torch: Any, s: ModelSpec, code: dict[str, Code], job: dict[str, Any]) -> dict[str, Any]:
    """The first `loss_steps` losses of every variant with dropout off, and whether they agree."""
    tf = use_transformers()
    config = s.make_config(tf, job["layers"], False)
    variants = tuple(code)
    models = build_models(s, code, config, job["seed"], variants, job["device"])
    left = {v: dropout_left(m) for v, m in models.items() if dropout_left(m)}
    if left:
        return {"error": f"dropout still on with the dropout-off config: {left}"}
    opts = {v: code[v].script.make_optimizer(models[v]) for v in variants}
    losses: dict[str, list[float]] = {v: [] for v in variants}
    batches = code["original"].script.synthetic_batches(s.make_batch, job["loss_steps"], batch_size=job["batch"],
                                                       seq_len=s.seq_len, seed=job["seed"], device=job["device"])
    for step, batch in enumerate(batches):
        for v in variants:
            # Some forwards draw random numbers besides dropout (GroupViT's Gumbel-softmax grouping).
            torch.manual_seed(job["seed"] * 7919 + step)
            losses[v].append(code[v].script.train_step(models[v], opts[v], batch,
                                                       autocast_dtype=_autocast(torch, job),
                                                       scaler=_scaler(torch, job)))
    ref = losses["original"]
    diffs = {v: max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(losses[v], ref, strict=True))
             for v in variants if v != "original"}
    del models, opts
    gc.collect()
    return {"losses": losses, "max_rel_diff": diffs, "tolerance": LOSS_TOL,
            "equal": all(d <= LOSS_TOL for d in diffs.values())}


def interleaved_speed(torch: Any, s: ModelSpec, code: dict[str, Code], job: dict[str, Any]) -> dict[str, Any]:
    """Step times of the three variants, run round-robin (rotating order) on the same batches, dropout on."""
    tf = use_transformers()
    config = s.make_config(tf, job["layers"], True)
    variants = tuple(code)
    models = build_models(s, code, config, job["seed"], variants, job["device"])
    opts = {v: code[v].script.make_optimizer(models[v]) for v in variants}
    clock_name, clock = _clock(job)
    cuda = job["device"] == "cuda"
    times: dict[str, list[float]] = {v: [] for v in variants}
    walls: dict[str, list[float]] = {v: [] for v in variants}
    opt_times: dict[str, list[float]] = {v: [] for v in variants}
    marks: dict[str, float] = {}
    for v in variants:  # the optimizer's own step hooks split each step into forward/backward and update
        opts[v].register_step_pre_hook(lambda *_: marks.__setitem__("pre", clock()))
        opts[v].register_step_post_hook(lambda *_: marks.__setitem__("post", clock()))
    losses: dict[str, list[float]] = {v: [] for v in variants}
    cuda_peak: dict[str, int] = dict.fromkeys(variants, 0)
    rounds = job["warmup"] + job["steps"]
    batches = code["original"].script.synthetic_batches(s.make_batch, rounds, batch_size=job["batch"],
                                                       seq_len=s.seq_len, seed=job["seed"] + 1,
                                                       device=job["device"])
    for r, batch in enumerate(batches):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v in order:
            torch.manual_seed(job["seed"] * 7919 + r)  # same dropout stream start for every variant
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            w0, t0 = time.perf_counter(), clock()
            loss = code[v].script.train_step(models[v], opts[v], batch, autocast_dtype=_autocast(torch, job),
                                             scaler=_scaler(torch, job))
            if cuda:
                torch.cuda.synchronize()
                cuda_peak[v] = max(cuda_peak[v], int(torch.cuda.max_memory_allocated()))
            t1, w1 = clock(), time.perf_counter()
            if r >= job["warmup"]:
                times[v].append(t1 - t0)
                walls[v].append(w1 - w0)
                opt_times[v].append(marks["post"] - marks["pre"])
            losses[v].append(loss)
    ratios = {v: [o / x for o, x in zip(times["original"], times[v], strict=True)] for v in variants[1:]}
    result: dict[str, Any] = {
        "clock": clock_name, "steps": job["steps"], "warmup": job["warmup"],
        "median_s": {v: statistics.median(t) for v, t in times.items()},
        "median_wall_s": {v: statistics.median(t) for v, t in walls.items()},
        "speedup": {v: statistics.median(r) for v, r in ratios.items()},
        # Forward + backward (+ gradient clipping) is what the model rewrites change; the update is the script's.
        "median_fwd_bwd_s": {v: statistics.median(t - o for t, o in zip(times[v], opt_times[v], strict=True))
                             for v in variants},
        "median_optimizer_s": {v: statistics.median(o) for v, o in opt_times.items()},
        "speedup_fwd_bwd": {v: statistics.median(
            (to - oo) / (tx - ox) for to, oo, tx, ox in zip(times["original"], opt_times["original"],
                                                             times[v], opt_times[v], strict=True))
            for v in variants[1:]},
        "times_s": times, "optimizer_times_s": opt_times, "losses_dropout_on": losses,
    }
    if cuda:
        result["cuda_max_memory_allocated"] = cuda_peak
    return result


def run_speed(job: dict[str, Any]) -> dict[str, Any]:
    """Worker entry: loss agreement (dropout off), then the interleaved A/B step times (dropout on)."""
    torch, s, code = _setup(job)
    out: dict[str, Any] = {"model": s.key, "torch": torch.__version__, "threads": torch.get_num_threads()}
    out["loss_check"] = losses_dropout_off(torch, s, code, job)
    out["speed"] = interleaved_speed(torch, s, code, job)
    out["params"] = _param_count(torch, s, code, job)
    return out


def _param_count(torch: Any, s: ModelSpec, code: dict[str, Code], job: dict[str, Any]) -> int:
    tf = use_transformers()
    with torch.device("meta"):
        model = getattr(code["original"].modeling, s.task_class)(s.make_config(tf, job["layers"], True))
    return int(sum(p.numel() for p in model.parameters()))


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> bool:
    # Writing 5 to clear_refs resets the process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0).
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def profiler_peak(torch: Any, step: Callable[[], float]) -> dict[str, Any]:
    """Peak bytes of live CPU tensors during one call of `step`, from torch.profiler's memory timeline."""
    from torch.profiler import ProfilerActivity, profile

    try:
        from torch.profiler._memory_profiler import _CATEGORY_TO_INDEX, MemoryProfileTimeline
    except ImportError as exc:
        return {"error": f"torch.profiler memory timeline unavailable: {exc}"}
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        step()
    try:
        # Categories (parameters, gradients, optimizer state, activations, ...) summed per instant; tensors
        # alive before the step (weights, optimizer state) count from the start.
        timeline = MemoryProfileTimeline(prof._memory_profile())
        times, sizes = timeline._coalesce_timeline("cpu")  # times in microseconds of the kineto clock
        starts = [e.start_ns() for e in prof.profiler.kineto_results.events()
                  if e.name().startswith("Optimizer.step")]
    except Exception as exc:  # a private API: report, do not crash the benchmark
        return {"error": f"memory timeline failed: {type(exc).__name__}: {exc}"}
    # Each row is [unused, one size per category in _CATEGORY_TO_INDEX order (None last: uncategorised)].
    names = [c.name.lower() if c is not None else "unknown" for c in _CATEGORY_TO_INDEX]

    def breakdown(i: int) -> dict[str, int]:
        return {n: int(b) for n, b in zip(names, sizes[i][1:], strict=True) if b}

    totals = [sum(row) for row in sizes]
    if not totals:
        return {"error": "memory timeline has no CPU tensors"}
    peak = max(range(len(totals)), key=totals.__getitem__)
    # Where the peak comes from: parameters, gradients, optimizer state, activations, temporaries, ...
    out: dict[str, Any] = {"peak_bytes": int(totals[peak]), "peak_by_category": breakdown(peak)}
    if starts:
        # Up to the optimizer step: forward and backward, the part the model rewrites change.
        before = [i for i, when in enumerate(times) if when * 1000 < min(starts)]
        if before:
            at = max(before, key=totals.__getitem__)
            out["fwd_bwd_peak_bytes"] = int(totals[at])
            out["fwd_bwd_peak_by_category"] = breakdown(at)
    return out


def run_memory(job: dict[str, Any]) -> dict[str, Any]:
    """Worker entry: one variant alone in this process; peak RSS of a steady-state step and the profiler peak."""
    torch, s, code = _setup(job)
    tf = use_transformers()
    v = job["variant"]
    config = s.make_config(tf, job["layers"], True)
    gc.collect()
    base_kib = _rss_kib("VmRSS")
    torch.manual_seed(job["seed"])
    model = getattr(code[v].modeling, s.task_class)(config).to(job["device"]).train()
    opt = code[v].script.make_optimizer(model)
    batches = list(code[v].script.synthetic_batches(s.make_batch, job["memory_steps"] + 2, batch_size=job["batch"],
                                                    seq_len=s.seq_len, seed=job["seed"] + 1,
                                                    device=job["device"]))
    for batch in batches[:-2]:  # the first step allocates AdamW's state; the measured ones are steady state
        code[v].script.train_step(model, opt, batch)
    gc.collect()
    marks: dict[str, int] = {}
    opt.register_step_pre_hook(lambda *_: marks.__setitem__("fwd_bwd", _rss_kib("VmHWM")))
    start_kib = _rss_kib("VmRSS")
    reset = _reset_peak_rss()
    code[v].script.train_step(model, opt, batches[-2])
    peak_kib = _rss_kib("VmHWM")
    out: dict[str, Any] = {
        "model": s.key, "variant": v, "rss_base_kib": base_kib, "rss_step_start_kib": start_kib,
        "rss_peak_kib": peak_kib,
        # Peak RSS of one steady-state step above the RSS after imports (weights, AdamW state, activations).
        "rss_train_kib": peak_kib - base_kib if reset else None,
        "rss_fwd_bwd_kib": marks["fwd_bwd"] - base_kib if reset and "fwd_bwd" in marks else None,
        "rss_note": None if reset else "could not reset VmHWM (/proc/self/clear_refs); RSS peaks not measured"}
    out["profiler"] = profiler_peak(torch, lambda: code[v].script.train_step(model, opt, batches[-1]))
    return out
