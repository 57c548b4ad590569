"""One rewritten class of a benchmark model, timed alone: forward+backward, original vs rewritten, interleaved.

A whole training step of these models varies by ±10–30% from one step to the next on a shared machine, so a
model-level median cannot resolve a 3–5% effect of one rule. This isolates the class a rule rewrote: both
models are built with the same weights (bench/gains/models.py config, 1 layer), one real forward records the
inputs of the first instance of CLASS, then that instance's forward+backward is timed on those inputs, original
and rewritten alternating (order swapped every repetition), thread CPU time with one thread.

Run: `.venv/bin/python bench/gains/module_ab.py MODEL CLASS [--rule R] [--reps 60] [--dropout on|off] [--inference]
     [--batch N] [--seq N] [--threads N]`
e.g. `bench/gains/module_ab.py gpt-neo-125m GPTNeoSelfAttention --rule f09-fused-qkv`
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from gains.models import spec  # noqa: E402


def first_instance(model: Any, class_name: str) -> str:
    """The qualified name of the first submodule of class `class_name` (the rewrite may swap the class)."""
    for name, module in model.named_modules():
        if type(module).__name__ == class_name:
            return name
    raise SystemExit(f"no {class_name} in {type(model).__name__}")


def recorded_inputs(torch: Any, model: Any, module: Any, batch: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The (args, kwargs) `module` is called with during one forward of `model` on `batch`."""
    seen: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def hook(_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not seen:
            seen.append((args, kwargs))

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model(**batch)
    handle.remove()

    def detach(x: Any) -> Any:
        return x.detach().clone().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x

    args, kwargs = seen[0]
    return tuple(detach(a) for a in args), {k: detach(v) for k, v in kwargs.items()}


def fwd_bwd(torch: Any, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], backward: bool = True,
            clock: Any = time.thread_time) -> float:
    """CPU seconds of one forward (+ backward of the first output's sum) of `module`."""
    t0 = clock()
    if backward:
        out = module(*args, **kwargs)
        first = out[0] if isinstance(out, tuple) else out
        first.float().sum().backward()
    else:
        with torch.no_grad():
            module(*args, **kwargs)
    return clock() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("cls", metavar="CLASS")
    p.add_argument("--rule", default=None, help="fix with this rule alone (default: every rule)")
    p.add_argument("--reps", type=int, default=60)
    p.add_argument("--dropout", choices=("on", "off"), default="on")
    p.add_argument("--inference", action="store_true", help="time eval-mode forward under no_grad instead")
    p.add_argument("--batch", type=int, default=None, help="batch size (default: the benchmark's)")
    p.add_argument("--seq", type=int, default=None, help="sequence length (default: the benchmark's)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads (timed on the process CPU clock if > 1)")
    args = p.parse_args(argv)
    import torch

    from gains.loading import build_models, load_variants, use_transformers
    from gains.prepare import freeze_adopter, prepare_model

    torch.set_num_threads(args.threads)
    s = spec(args.model)
    clock = time.thread_time if args.threads == 1 else time.process_time
    with tempfile.TemporaryDirectory(prefix="adopter-module-ab-") as tmp:
        freeze_adopter(Path(tmp))
        prepared = prepare_model(s.package, Path(tmp), "cpu", args.rule)
        if prepared.error or not prepared.changed:
            print(f"{s.title}: not rewritten: {prepared.error or 'no fixable site'}", file=sys.stderr)
            return 2
        code = load_variants(s, str(prepared.copy), str(BENCH / "train_script.py"), None)
        config = s.make_config(use_transformers(), 1, args.dropout == "on")
        models = build_models(s, code, config, 0, ("original", "model"), "cpu")
        batch = next(code["original"].script.synthetic_batches(
            s.make_batch, 1, batch_size=args.batch or s.min_batch, seq_len=args.seq or s.seq_len, seed=0))
        where = first_instance(models["original"], args.cls)
        mods = {v: m.get_submodule(where).train(not args.inference) for v, m in models.items()}
        inputs = {v: recorded_inputs(torch, models[v], mods[v], batch) for v in mods}
        times: dict[str, list[float]] = {v: [] for v in mods}
        for rep in range(args.reps + 2):
            for v in (("original", "model") if rep % 2 == 0 else ("model", "original")):
                torch.manual_seed(rep)
                t = fwd_bwd(torch, mods[v], *inputs[v], backward=not args.inference, clock=clock)
                if rep >= 2:  # two warm-up repetitions
                    times[v].append(t)
    ratios = sorted(o / m for o, m in zip(times["original"], times["model"], strict=True))
    q = len(ratios) // 4
    print(f"{s.title} {args.cls} → {type(mods['model']).__name__} ({', '.join(prepared.rules_fixed())}; "
          f"{'inference' if args.inference else f'forward+backward, dropout {args.dropout}'}; "
          f"batch {args.batch or s.min_batch}, seq {args.seq or s.seq_len}, {args.threads} thread(s); {args.reps} reps): "
          f"original {statistics.median(times['original']) * 1e3:.1f} ms, rewritten "
          f"{statistics.median(times['model']) * 1e3:.1f} ms, speedup median {statistics.median(ratios):.3f}× "
          f"(interquartile {ratios[q]:.3f}–{ratios[-q - 1]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
