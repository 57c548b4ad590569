"""A self-contained HTML report of a search (tables and inline SVG plots; no scripts, no network)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf")


def _e(v: Any) -> str:
    return html.escape(str(v))


def _num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"  # as the text summary: enough digits to tell designs apart
    return _e(v)


def svg_plot(series: Sequence[tuple[str, Sequence[tuple[float, float]]]], *, x_label: str, y_label: str,
             log_x: bool = False, step: bool = False, points: bool = False, width: int = 560,
             height: int = 320) -> str:
    """A line/scatter plot as an SVG string: one (name, [(x, y), …]) per series."""
    pts = [(x, y) for _, s in series for x, y in s if math.isfinite(x) and math.isfinite(y)]
    if not pts:
        return "<p><em>no data to plot</em></p>"
    tx = (lambda x: math.log10(max(x, 1e-12))) if log_x else (lambda x: x)
    xs = [tx(x) for x, _ in pts]
    ys = [y for _, y in pts]
    x0, x1 = _axis(min(xs), max(xs), pad=points)
    # Convergence curves start the y axis at 0 (progress reads as height); scatter plots fit their data.
    y0, y1 = _axis(min(ys) if points else min(0.0, min(ys)), max(ys), pad=points)
    ml, mr, mt, mb = 64, 16, 12, 44
    w, h = width - ml - mr, height - mt - mb

    def sx(x: float) -> float:
        return ml + (tx(x) - x0) / (x1 - x0) * w

    def sy(y: float) -> float:
        return mt + h - (y - y0) / (y1 - y0) * h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect x="{ml}" y="{mt}" width="{w}" height="{h}" fill="none" stroke="#999"/>']
    for i in range(5):
        gy = y0 + (y1 - y0) * i / 4
        out.append(f'<text x="{ml - 4}" y="{sy(gy) + 4:.1f}" text-anchor="end">{_tick(gy, y1 - y0)}</text>')
        gx = x0 + (x1 - x0) * i / 4
        label = f"{10 ** gx:.3g}" if log_x else _tick(gx, x1 - x0)
        out.append(f'<text x="{ml + (gx - x0) / (x1 - x0) * w:.1f}" y="{mt + h + 14}" '
                   f'text-anchor="middle">{label}</text>')
    out.append(f'<text x="{ml + w / 2}" y="{height - 6}" text-anchor="middle">{_e(x_label)}</text>')
    out.append(f'<text x="12" y="{mt + h / 2}" text-anchor="middle" transform="rotate(-90 12 {mt + h / 2})">'
               f'{_e(y_label)}</text>')
    for k, (name, s) in enumerate(series):
        color = _COLORS[k % len(_COLORS)]
        good = [(x, y) for x, y in s if math.isfinite(x) and math.isfinite(y)]
        if not good:
            continue
        if points:
            out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>' for x, y in good]
        if not points or len(good) > 1:
            coords = []
            prev_y: float | None = None
            for x, y in good:
                if step and prev_y is not None:
                    coords.append(f"{sx(x):.1f},{sy(prev_y):.1f}")
                coords.append(f"{sx(x):.1f},{sy(y):.1f}")
                prev_y = y
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(coords)}"/>')
        out.append(f'<text x="{ml + 8}" y="{mt + 14 + 13 * k}" fill="{color}">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _axis(lo: float, hi: float, *, pad: bool) -> tuple[float, float]:
    """An axis range that holds [lo, hi] (5 % margins when `pad`), never empty."""
    if hi <= lo:
        half = abs(lo) * 0.05 or 1.0
        return lo - half, hi + half
    margin = (hi - lo) * 0.05 if pad else 0.0
    return lo - margin, hi + margin


def _tick(v: float, span: float) -> str:
    """A tick label with enough significant digits that ticks a quarter of `span` apart differ."""
    if v == 0 or span <= 0:
        return f"{v:.3g}"
    digits = max(3, math.ceil(math.log10(abs(v) / (span / 4))) + 2)
    return f"{v:.{min(digits, 12)}g}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_num(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:72em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}.err{color:#b00}figure{margin:0 0 1.5em}"""


def render_html(report: dict[str, Any], *, extra_traces: dict[str, Sequence[tuple[float, float]]] | None = None) -> str:
    """The report JSON (`SearchReport.to_json()`) as a standalone HTML page."""
    req = report.get("request", {})
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>WHAM search — {_e(req.get('model'))}"
             f"</title><style>{_CSS}</style></head><body>",
             f"<h1>WHAM accelerator search: {_e(req.get('model'))}</h1>"]
    if report.get("error"):
        parts.append(f"<p class='err'>Error: {_e(report['error'])}</p></body></html>")
        return "".join(parts)
    w = report.get("workload") or {}
    if report.get("models"):
        parts.append(f"<p>{len(report['models'])} models, one common design. Objective: "
                     f"{_e(report.get('objective', ''))}; limits: area ≤ {req.get('area_mm2')} mm², TDP ≤ "
                     f"{req.get('tdp_w')} W.</p>")
    elif w:
        parts.append(f"<p>Batch {w.get('batch')}, sequence {w.get('seq')}, {w.get('params', 0) / 1e6:.1f} M "
                     f"parameters, {w.get('flops', 0) / 1e12:.3g} TFLOP per training step, {w.get('ops')} fused "
                     f"ops in {w.get('segments')} segments ({w.get('unique_blocks')} unique). Objective: "
                     f"{_e(report.get('objective') or req.get('objective'))}; limits: area ≤ {req.get('area_mm2')} mm², TDP ≤ "
                     f"{req.get('tdp_w')} W.</p>")
    best = report.get("best")
    if best:
        d = best["design"]
        parts.append("<h2>Design</h2>")
        parts.append(_table(["parameter", "value"], [(k, v) for k, v in d.items()]))
        rows = [("found", best)] + [(r["name"], r) for r in report.get("references", [])]
        parts.append("<h2>Comparison with reference designs</h2>")
        parts.append(_table(
            ["design", "samples/s", "step ms", "Perf/TDP", "area mm²", "TDP W", "TC util", "VC util", "feasible"],
            [(n, e["throughput"], e["step_s"] * 1e3, e["perf_per_tdp"], e["area_mm2"], e["tdp_w"],
              f"{e['tensor_util']:.0%}", f"{e['vector_util']:.0%}", "yes" if e["feasible"] else "no")
             for n, e in rows]))
        models = report.get("models") or []
        if models:
            refs = [r["name"] for r in report.get("references", [])]
            per_tdp = (report.get("request") or {}).get("objective") == "perf-per-tdp"
            key, unit = ("perf_per_tdp", "Perf/TDP (samples/s per W)") if per_tdp else ("throughput", "Samples/s")
            parts.append(f"<h2>Per model</h2><p>Objective: {_e(report.get('objective', ''))}. {unit} of each "
                         "model on the common design, on its own best design, and on the reference designs.</p>")
            parts.append(_table(
                ["model", "batch × seq", "common", "own best", "common / own", *refs],
                [(m["model"], f"{m['batch']} × {m['seq']}", (m.get("common") or {}).get(key, "—"),
                  (m.get("own_best") or {}).get(key, "—"),
                  f"{m['common_vs_own']:.1%}" if m.get("common_vs_own") is not None else "—",
                  *(m["references"][n][key] for n in refs)) for m in models]))
        crit = best.get("critical") or {}
        total = sum(crit.values()) or 1.0
        parts.append("<h2>Critical path</h2><p>" + ", ".join(
            f"{_e(k)} {v / total:.0%}" for k, v in crit.items()) + "</p>")
        parts.append(_table(["segment", "operator", "ms"],
                            [(o["segment"], o["op"], o["seconds"] * 1e3) for o in best.get("critical_ops", [])]))
    s = report.get("search")
    if s:
        series = [(s["strategy"], [(float(t["n"]), float(t["best"])) for t in s.get("trace", [])
                                   if t["best"] is not None])]
        for c in report.get("comparisons", []):
            series.append((c["strategy"], [(float(t["n"]), float(t["best"])) for t in c.get("trace", [])
                                           if t["best"] is not None]))
        for name, tr in (extra_traces or {}).items():
            series.append((name, list(tr)))
        parts.append("<h2>Convergence</h2><figure>" + svg_plot(series, x_label="designs evaluated",
                                                            y_label="best objective", step=True) + "</figure>")
        runs = [s, *report.get("comparisons", [])]
        parts.append(_table(["strategy", "best objective", "evaluations to best", "s to best", "evaluations",
                             "s total", "stopped", "designs bounded"],
                            [(r["strategy"], r["best"]["objective"] if r["best"] else "none feasible",
                              r["evals_to_best"], r["seconds_to_best"], r["evaluations"], r["seconds"], r["stopped"],
                              r.get("bounded", 0))
                             for r in runs]))
    pareto = report.get("pareto") or []
    if pareto:
        parts.append("<h2>Pareto front (throughput vs TDP)</h2><figure>" + svg_plot(
            [("Pareto designs", [(p["tdp_w"], p["throughput"]) for p in pareto])],
            x_label="TDP (W)", y_label="samples/s", points=True) + "</figure>")
        parts.append(_table(["design", "samples/s", "TDP W", "area mm²"],
                            [(p["label"], p["throughput"], p["tdp_w"], p["area_mm2"]) for p in pareto]))
    pipe = report.get("pipeline")
    if pipe:
        parts.append(f"<h2>Pipeline: {pipe['stages']} stages × {pipe['microbatches']} micro-batches</h2>")
        g = pipe.get("global")
        ref = pipe.get("reference")
        rows2 = []
        if g:
            rows2.append(("replicated WHAM design", g["label"], g["throughput"], g["perf_per_tdp"]))
        rows2.append(("heterogeneous bound", "per-stage best", pipe["heterogeneous"]["throughput"], ""))
        if ref:
            rows2.append((ref["name"], ref["label"], ref["throughput"], ref["perf_per_tdp"]))
        parts.append(_table(["", "design", "samples/s", "Perf/TDP"], rows2))
        if g:
            parts.append(_table(["stage", "segments", "fwd+bwd ms", "optimizer ms"],
                                [(i, f"{p[0]} … {p[-1]}" if len(p) > 1 else p[0], g["stage_fb_s"][i] * 1e3,
                                  g["stage_opt_s"][i] * 1e3) for i, p in enumerate(pipe["partition"])]))
    tp = report.get("tensor_parallel")
    if tp:
        parts.append(f"<h2>Tensor parallel</h2><p>{tp['degree']}-way over {tp['link_gbs']} GB/s links: "
                     f"all-reduce {tp['allreduce_s'] * 1e3:.3f} ms of a {tp['step_s'] * 1e3:.3f} ms step.</p>")
    for n in report.get("notes", []):
        parts.append(f"<p><em>Note: {_e(n)}</em></p>")
    run = f"; the {s['strategy']} search {s['seconds']:.3f} s (the table above), the rest tracing or loading " \
          "graphs, per-model searches, references and comparisons" if s else ""
    parts.append(f"<p><small>Took {report.get('seconds', 0):.3f} s in all{_e(run)}. Generated by adopter wham."
                 "</small></p>")
    parts.append("</body></html>")
    return "".join(parts)
