"""Training gains of Adopter's rewrites on nine transformers 4.35.0 models (issue 5).

For each model: copy its package out of .cache/tf435, run `adopter fix` on the copied modeling file and
on a copy of bench/train_script.py, then in one worker process train the original and the rewritten
model (same config, same weights, same synthetic batches), interleaved A/B:
  original = original model + original script, model = rewritten model + original script,
  full = rewritten model + rewritten script (its AdamW becomes fused).
Losses of the first steps are compared with dropout off; step times are taken with dropout on. On CPU
each variant's peak memory is measured again alone in its own process (peak RSS over training, and the
torch.profiler memory timeline of one step); on CUDA, torch.cuda.max_memory_allocated per variant.

Run: `.venv/bin/python bench/gains.py [--models bert-large,gpt2] [--steps 20] [--layers 1] [--quick]
      [--device cpu|cuda --dtype fp32|fp16|bf16] [--update-docs]`
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from gains.models import SPECS, spec  # noqa: E402
from gains.report import peak_table, replace_section, rule_table, summary, svg_chart, table  # noqa: E402

WORKER_TIMEOUT_S = 3600
SECTION = "Training gains"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", action="append", default=[], metavar="KEYS",
                   help=f"comma-separated models (default: all): {', '.join(s.key for s in SPECS)}")
    p.add_argument("--steps", type=int, default=20, help="timed steps per variant after warm-up (default 20)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    p.add_argument("--loss-steps", type=int, default=3, help="steps compared with dropout off (default 3)")
    p.add_argument("--memory-steps", type=int, default=1,
                   help="warm-up steps before the measured step in each memory process (default 1)")
    p.add_argument("--layers", type=int, default=1,
                   help="transformer layers per stack (ResNet: blocks per stage cap); default 1 on CPU")
    p.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--dtype", choices=("fp32", "fp16", "bf16"), default=None,
                   help="autocast dtype (default fp32 on CPU, bf16 on CUDA)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-memory", action="store_true", help="skip the per-variant memory processes")
    p.add_argument("--per-rule", action="store_true",
                   help="also time (and check the losses of) a copy fixed with each fired rule alone")
    p.add_argument("--quick", action="store_true",
                   help="smoke mode: 3 steps, 1 warm-up, 2 loss steps, 1 memory step, batch 1 (figures meaningless)")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default bench/out/gains-<device>.json)")
    p.add_argument("--chart", type=Path, default=None, help="also write the SVG chart here")
    p.add_argument("--update-docs", action="store_true",
                   help=f"rewrite the '## {SECTION}' section of docs/benchmarks.md and docs/img/gains.svg")
    p.add_argument("--merge", type=Path, default=None,
                   help="a previous results JSON: its models not measured in this run are carried over")
    p.add_argument("--report", type=Path, default=None,
                   help="measure nothing: print (and with --update-docs/--chart write) the report of this JSON")
    p.add_argument("--workdir", type=Path, default=None, help="where the copies go (default: a temp dir)")
    p.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.warmup, args.loss_steps, args.memory_steps, args.batch = 3, 1, 2, 1, 1
    args.dtype = args.dtype or ("bf16" if args.device == "cuda" else "fp32")
    bad = [n for n in ("steps", "loss_steps", "memory_steps", "layers", "batch", "threads") if getattr(args, n) < 1]
    if bad or args.warmup < 0:
        p.error(f"must be positive: {', '.join('--' + b.replace('_', '-') for b in bad) or '--warmup'}")
    keys = [k.strip() for value in args.models for k in value.split(",") if k.strip()]
    try:
        args.specs = [spec(k) for k in keys] if keys else list(SPECS)
    except ValueError as exc:
        p.error(str(exc))
    if args.device == "cpu" and args.dtype != "fp32":
        p.error("CPU runs are float32 (autocast on CPU is not what the rewrites target); use --device cuda")
    return args


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    info: dict[str, Any] = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
                            "torch": torch.__version__, "platform": platform.platform()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    try:
        load = os.getloadavg()
        info["load_avg_at_start"] = [round(x, 2) for x in load]
    except OSError:
        pass
    info["summary"] = f"{cpu}, {info['cores']} cores" + (f", {info['gpu']}" if "gpu" in info else "")
    return info


def git_commit() -> str:
    """HEAD of the checkout `adopter` runs from, with '+dirty' when its rules/ or server/ have changes."""
    import adopter

    repo = Path(adopter.__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=repo, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "rules", "server"], capture_output=True,
                               text=True, cwd=repo, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def run_worker(job: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Run one measurement in a fresh process; its result, or {'error': ...}."""
    name = f"{job['model']}-{job['mode']}-{job.get('variant', 'ab')}"
    job_path = workdir / f"{name}.job.json"
    out_path = workdir / f"{name}.out.json"
    job_path.write_text(json.dumps(job))
    try:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(job_path)],
                              capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"{name}: worker timed out after {WORKER_TIMEOUT_S} s"}
    if proc.returncode != 0 or not out_path.exists():
        tail = " | ".join(proc.stderr.strip().splitlines()[-4:])
        return {"error": f"{name}: worker exit {proc.returncode}: {tail}"}
    result: dict[str, Any] = json.loads(out_path.read_text())
    return result


def worker_main(job_path: Path) -> int:
    """Inside a worker process: run the job, write `<job>.out.json`."""
    from gains.measure import run_memory, run_speed

    job = json.loads(job_path.read_text())
    result = run_speed(job) if job["mode"] == "speed" else run_memory(job)
    job_path.with_name(job_path.name.replace(".job.json", ".out.json")).write_text(json.dumps(result))
    return 0


def measure_model(args: argparse.Namespace, s: Any, workdir: Path, script: Any) -> dict[str, Any]:
    """Prepare, then the A/B worker, then (CPU) one memory worker per variant."""
    from gains.prepare import prepare_model

    row: dict[str, Any] = {"title": s.title, "task_class": s.task_class, "real_layers": s.real_layers,
                           "layers_note": s.layers_note(args.layers), "seq_len": s.seq_len}
    t0 = time.monotonic()
    try:
        prepared = prepare_model(s.package, workdir, args.device)
    except FileNotFoundError as exc:
        row["error"] = str(exc)
        return row
    row["prepared"] = prepared.as_json()
    if prepared.error:
        # Measuring the unrewritten copy would only time the original against itself: say why, move on.
        row["error"] = f"model not rewritten: {prepared.error}"
        return row
    row["batch"] = max(args.batch, s.min_batch)
    job = {"mode": "speed", "model": s.key, "layers": args.layers, "batch": row["batch"], "steps": args.steps,
           "warmup": args.warmup, "loss_steps": args.loss_steps, "memory_steps": args.memory_steps,
           "threads": args.threads, "device": args.device, "dtype": args.dtype, "seed": args.seed,
           "rewritten_model": str(prepared.copy) if prepared.changed else None,
           "original_script": str(script.original),
           "rewritten_script": str(script.copy) if script.changed else None}
    if args.per_rule and prepared.changed:
        alone = {rule: prepare_model(s.package, workdir, args.device, rule) for rule in prepared.rules_fixed()}
        row["per_rule_prepared"] = {rule: p.as_json() for rule, p in alone.items()}
        job["per_rule"] = {rule: str(p.copy) for rule, p in alone.items() if p.changed and not p.error}
    row["speed"] = run_worker(job, workdir)
    if row["speed"].get("error"):
        row["error"] = row["speed"]["error"]
    elif args.device == "cpu" and not args.no_memory:
        row["memory"] = {v: run_worker({**job, "mode": "memory", "variant": v}, workdir)
                         for v in ("original", "model", "full")}
    row["elapsed_s"] = round(time.monotonic() - t0, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    if args.report:
        return report(json.loads(args.report.read_text()), args)
    from gains.prepare import freeze_adopter, prepare_script

    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("error: --device cuda but torch.cuda.is_available() is False on this machine", file=sys.stderr)
            return 2
    started = time.monotonic()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="adopter-gains-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/gains.py", *(argv or sys.argv[1:])]),
        "machine": machine(), "workdir": str(workdir), "commit": git_commit(),
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                    if k not in ("specs", "worker")},
        "models": {},
    }
    results["adopter"] = str(freeze_adopter(workdir))
    script = prepare_script(BENCH / "train_script.py", workdir, args.device)
    results["script"] = script.as_json()
    print(f"training script: {'rewritten' if script.changed else 'NOT rewritten'} "
          f"{script.rules_fixed() or ''} {script.error or ''}", file=sys.stderr)
    if script.error:
        print(f"error: adopter failed on the training script, nothing measured: {script.error}", file=sys.stderr)
        return 2
    out = args.out or REPO / "bench" / "out" / f"gains-{args.device}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for s in args.specs:
        print(f"[{time.monotonic() - started:6.0f} s] {s.key} ...", file=sys.stderr, flush=True)
        row = measure_model(args, s, workdir, script)
        results["models"][s.key] = row
        out.write_text(json.dumps(results, indent=1))  # a partial run keeps what it measured
        print(f"[{time.monotonic() - started:6.0f} s] {s.key}: {row.get('error') or 'done'} "
              f"{(row.get('speed') or {}).get('speed', {}).get('speedup', '')}", file=sys.stderr, flush=True)
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    if args.merge:
        previous = json.loads(args.merge.read_text())
        carried = {k: {**row, "carried_from": str(args.merge)} for k, row in previous["models"].items()
                   if k not in results["models"]}
        results["models"] = {**carried, **results["models"]}
    results["summary"] = summary(results)
    out.write_text(json.dumps(results, indent=1))
    status = report(results, args)
    print(f"results: {out}")
    return status if all(not r.get("error") for r in results["models"].values()) else 1


def report(results: dict[str, Any], args: argparse.Namespace) -> int:
    """Print the table and summary; write the chart and the docs section when asked."""
    results["summary"] = summary(results)
    md = table(results)
    per_rule = rule_table(results)
    if per_rule:
        md += "\n\nRules one at a time (rewritten model, original script; same run, same interleaving):\n\n" + per_rule
    peaks = peak_table(results)
    if peaks:
        md += ("\n\nWhere the peak of a training step comes from (torch.profiler memory timeline, live CPU tensors "
               "by category; the original variant, and the rewritten model + script):\n\n" + peaks)
    print(md)
    print(json.dumps(results["summary"], indent=1))
    chart = svg_chart(results)
    if args.chart:
        args.chart.parent.mkdir(parents=True, exist_ok=True)
        args.chart.write_text(chart)
    if args.update_docs:
        update_docs(results, md, chart)
    return 0


def update_docs(results: dict[str, Any], md: str, chart: str) -> None:
    """Write the chart and this run's table into the '## Training gains' section (other sections untouched)."""
    img = REPO / "docs" / "img" / "gains.svg"
    img.parent.mkdir(parents=True, exist_ok=True)
    img.write_text(chart)
    doc = REPO / "docs" / "benchmarks.md"
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    notes = REPO / "bench" / "gains" / "NOTES.md"
    s, m, o = results["summary"], results["machine"], results["options"]
    body = "\n".join([
        f"Measured {results['date']} at commit {results['commit']} on {m['summary']} (python {m['python']}, torch {m['torch']}, "
        f"{o['threads']} thread(s), load average at start {m.get('load_avg_at_start')}); "
        f"{o['device']} {o['dtype']}, batch {o['batch']}, {o['steps']} timed steps after {o['warmup']} "
        f"warm-up round(s), {o['loss_steps']} loss steps"
        + (f"; whole run {results['elapsed_s'] / 60:.1f} min." if results.get("elapsed_s") else "."),
        "Reproduce all nine models with `.venv/bin/python bench/gains.py --update-docs` (the defaults are these "
        "settings); the runs recorded here:",
        "",
        "```",
        results["command"],
        "```",
        "",
        md,
        "",
        f"Over the {s['models_measured']} of {len(results['models'])} models measured: "
        f"geomean step speedup: {_x(s['geomean_step_model'])} (model rewrites only; forward+backward "
        f"{_x(s['geomean_fwd_bwd_model'])}), {_x(s['geomean_step_full'])} (with the script's fused AdamW); "
        f"target 1.25×: {'met' if s['target_speedup_1.25_met'] else 'NOT met'}. Peak memory of a step: "
        f"{_p(s['geomean_rss_model'])} (model rewrites), {_p(s['geomean_rss_full'])} (with the script's); "
        f"target −20%: {'met' if s['target_memory_-20%_met'] else 'NOT met'}. "
        f"Losses equal with dropout off: {'yes' if s['losses_equal'] else 'NO'}.",
        "",
        "![training gains](img/gains.svg)",
        "",
        notes.read_text().strip() if notes.exists() else "",
    ])
    doc.write_text(replace_section(text, SECTION, body))


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}×"


def _p(v: float | None) -> str:
    return "n/a" if v is None else f"{(v - 1) * 100:+.1f}%"


if __name__ == "__main__":
    sys.exit(main())
