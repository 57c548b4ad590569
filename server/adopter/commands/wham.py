"""`adopter wham`: search accelerator designs for training a model (WHAM)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the `wham` subcommand."""
    p = subparsers.add_parser(
        "wham", help="search accelerator designs for training a model",
        description="Search accelerator designs (tensor/vector cores, SRAM) that train MODEL fastest, or "
                    "with the best throughput per watt, within area and power limits. Exit 0: found, "
                    "1: no feasible design, 2: bad parameters or the model failed to trace.")
    p.add_argument("--model", default="bert-base",
                   help="zoo model (bert-base, bert-large, bert-base-pretrain, bert-large-pretrain, gpt2, gpt2-xl, t5-base, resnet50, vit-b16, llama-1b) "
                        "or module:factory; a comma-separated list (each NAME[@BATCH[xSEQ]]) searches one "
                        "common design for the set")
    p.add_argument("--aggregate", default="geomean",
                   help="for a set of models: geomean (of their objectives) | worst (the worst model's "
                        "fraction of its own best)")
    p.add_argument("--model-path", default=None, help="directory to import module:factory from (default: cwd)")
    p.add_argument("--batch", type=int, default=None, help="global batch (default: the model's)")
    p.add_argument("--seq", type=int, default=None, help="sequence length, or image side for vision models")
    p.add_argument("--objective", default="throughput", help="throughput | perf-per-tdp")
    p.add_argument("--area-mm2", type=float, default=606.7, help="area limit (default 606.7, WHAM's)")
    p.add_argument("--tdp-w", type=float, default=400.0, help="TDP limit in W (default 400)")
    p.add_argument("--min-throughput", type=float, default=0.0, help="samples/s floor for perf-per-tdp")
    p.add_argument("--pipeline", type=int, default=1, metavar="S", help="pipeline stages (1-64)")
    p.add_argument("--microbatches", type=int, default=None, metavar="M", help="micro-batches (default 4·S)")
    p.add_argument("--tensor-parallel", type=int, default=1, metavar="T", help="tensor-parallel devices")
    p.add_argument("--link-gbs", type=float, default=100.0, help="chip-to-chip link for all-reduce (GB/s)")
    p.add_argument("--strategy", default="wham", help="wham | random | nsga2 | tpe | gp | exhaustive | confuciux | spotlight")
    p.add_argument("--budget", type=int, default=200, help="designs to evaluate at most (per stage)")
    p.add_argument("--compare", default="", metavar="S1,S2",
                   help="also run these strategies at the same budget (convergence curves in --html)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--top-k", type=int, default=4, help="designs kept per stage for the global selection")
    p.add_argument("--executor", default="process", help="process | serial | ray (per-stage searches)")
    p.add_argument("--ray-address", default=None, help="Ray cluster address (default: a local instance)")
    p.add_argument("--workers", type=int, default=2, help="local processes for per-stage searches")
    p.add_argument("--trace-timeout", type=float, default=300.0, help="seconds allowed for tracing the model")
    p.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the report as JSON")
    p.add_argument("--html", type=Path, default=None, metavar="OUT", help="write a self-contained HTML report")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


class ProgressBar:
    """A one-line progress bar on stderr (only when stderr is a terminal, unless forced)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.last = ""

    def __call__(self, fraction: float, message: str) -> None:
        if not self.enabled:
            return
        width = 30
        filled = round(width * max(0.0, min(1.0, fraction)))
        line = f"\r[{'#' * filled}{'.' * (width - filled)}] {fraction:4.0%} {message[:50]:<50}"
        if line != self.last:
            sys.stderr.write(line)
            sys.stderr.flush()
            self.last = line

    def close(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\n")


def run(args: argparse.Namespace) -> int:
    """Run the search, print the summary, write the requested files."""
    from adopter.wham import SearchRequest, render_html, search, summary_table

    req = SearchRequest(
        model=args.model, batch=args.batch, seq=args.seq, objective=args.objective, area_mm2=args.area_mm2,
        tdp_w=args.tdp_w, min_throughput=args.min_throughput, pipeline=args.pipeline,
        microbatches=args.microbatches, tensor_parallel=args.tensor_parallel, link_gbs=args.link_gbs,
        strategy=args.strategy, budget=args.budget, seed=args.seed, top_k=args.top_k, executor=args.executor,
        ray_address=args.ray_address, workers=args.workers, trace_timeout_s=args.trace_timeout,
        model_path=args.model_path or (str(Path.cwd()) if ":" in args.model else None),
        compare=tuple(s for s in args.compare.split(",") if s), aggregate=args.aggregate,
    )
    bar = ProgressBar(not args.quiet and sys.stderr.isatty())
    try:
        report = search(req, progress=bar)
    finally:
        bar.close()
    data = report.to_json()
    try:
        if args.json is not None:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(data, indent=1), encoding="utf-8")
        if args.html is not None:
            args.html.parent.mkdir(parents=True, exist_ok=True)
            args.html.write_text(render_html(data), encoding="utf-8")
    except OSError as exc:
        print(f"adopter wham: cannot write output: {exc}", file=sys.stderr)
        return 2
    if report.error:
        print(f"adopter wham: {report.error}", file=sys.stderr)
        return 2
    print(summary_table(report))
    if args.html is not None:
        print(f"HTML report: {args.html}")
    ok = report.best is not None or (report.pipeline is not None and report.pipeline.get("global"))
    return 0 if ok else 1
