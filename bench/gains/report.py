"""Summaries of a gains run: geomeans, the markdown table, the SVG bar chart and the docs section."""

from __future__ import annotations

import math
import statistics
from html import escape
from typing import Any

SLOWER = 0.98  # below this median speedup a rewrite is checked for a slowdown ...
SLOWER_Q3 = 1.0  # ... and called SLOWER when its paired ratio's upper quartile is below this too
NO_GAIN = 1.02
# What a fixed rule does during training, where that differs from what its finding promises.
TRAINING_EFFECT = {
    "f07-conv-bn": "conv-BN folding applies in eval mode only; training keeps both modules (batch statistics)",
    "f08-linear-bn": "Linear-BN folding applies in eval mode only; training keeps both modules",
}


def geomean(values: list[float]) -> float | None:
    """Geometric mean of positive values; None when there are none."""
    vals = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def memory_ratio(row: dict[str, Any], variant: str, kind: str) -> float | None:
    """Peak memory of `variant` over the original's.

    kind: 'rss' (peak RSS of a steady-state step), 'rss_fwd_bwd' (up to the optimizer step), 'profiler' /
    'profiler_fwd_bwd' (live CPU tensors, torch.profiler), 'cuda' (torch.cuda.max_memory_allocated).
    """
    mem = row.get("memory") or {}
    if kind == "cuda":
        peaks = ((row.get("speed") or {}).get("speed") or {}).get("cuda_max_memory_allocated") or {}
        a, b = peaks.get("original"), peaks.get(variant)
    else:
        def pick(v: str) -> float | None:
            m = mem.get(v) or {}
            if kind.startswith("profiler"):
                key = "fwd_bwd_peak_bytes" if kind.endswith("fwd_bwd") else "peak_bytes"
                value: float | None = (m.get("profiler") or {}).get(key)
                return value
            return m.get("rss_fwd_bwd_kib" if kind.endswith("fwd_bwd") else "rss_train_kib")
        a, b = pick("original"), pick(variant)
    return b / a if a and b else None


def _speed(row: dict[str, Any]) -> dict[str, Any]:
    return ((row.get("speed") or {}).get("speed") or {})


def speedup(row: dict[str, Any], variant: str, part: str = "step") -> float | None:
    """Median paired speedup of `variant` over the original: the whole step or forward+backward only."""
    return (_speed(row).get("speedup_fwd_bwd" if part == "fwd_bwd" else "speedup") or {}).get(variant)


def optimizer_share(row: dict[str, Any]) -> float | None:
    """The original's AdamW step as a fraction of its whole training step."""
    sp = _speed(row)
    opt, step = (sp.get("median_optimizer_s") or {}).get("original"), (sp.get("median_s") or {}).get("original")
    return opt / step if opt is not None and step else None


def note(row: dict[str, Any]) -> str:
    """Why a model does not (fully) gain, or the error that stopped it."""
    notes: list[str] = []
    prep = row.get("prepared") or {}
    if row.get("error"):
        return f"not measured: {row['error']}"
    if prep.get("error"):
        notes.append(f"model not rewritten: {prep['error']}")
    elif not prep.get("rules_fixed"):
        reasons = sorted({f"{n['rule']}: {n['reason']}" for n in prep.get("not_fixed", [])})
        notes.append("no model rewrite" + (f" ({'; '.join(reasons)})" if reasons else " (no fixable site)"))
    for rule, effect in TRAINING_EFFECT.items():
        if rule in prep.get("rules_fixed", {}):
            notes.append(effect)
    check = (row.get("speed") or {}).get("loss_check") or {}
    if check.get("error"):
        notes.append(check["error"])
    elif check and not check.get("equal"):
        notes.append(f"LOSSES DIFFER (max rel {max(check['max_rel_diff'].values()):.1e} > {check['tolerance']:.0e})")
    s = speedup(row, "model")
    f = speedup(row, "model", "fwd_bwd")
    if not prep.get("changed"):
        # Both variants ran the same code: their difference is this run's measurement noise.
        notes.append(f"model variant ran the original code: {_fmt(s, '.3f', '×')} is the noise floor")
        return "; ".join(notes)
    if f is not None and f < SLOWER:
        notes.append(_slower(row, f, "fwd_bwd"))
    if s is not None and s < SLOWER:
        notes.append(_slower(row, s, "step"))
    elif s is not None and s < NO_GAIN and prep.get("rules_fixed"):
        notes.append("model rewrite: no measurable step gain")
    elif s is not None and prep.get("rules_fixed"):
        ratios = paired_ratios(row, "model")
        q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else (None, None, None)
        if q1 is not None and q3 is not None and q1 < 1.0:
            notes.append(f"model rewrite {s:.3f}×: within this run's noise (per-round ratio IQR {q1:.2f}–{q3:.2f})")
    return "; ".join(notes)


def paired_ratios(row: dict[str, Any], variant: str, part: str = "step") -> list[float]:
    """Per-round original time / `variant` time (the whole step, or forward+backward only)."""
    sp = _speed(row)
    times, opt = sp.get("times_s") or {}, sp.get("optimizer_times_s") or {}
    o, x = times.get("original") or [], times.get(variant) or []
    if part != "fwd_bwd":
        return [a / b for a, b in zip(o, x, strict=False) if b > 0]
    oo, ox = opt.get("original") or [], opt.get(variant) or []
    if len(oo) != len(o) or len(ox) != len(x):
        return []
    return [(a - c) / (b - d) for a, b, c, d in zip(o, x, oo, ox, strict=False) if b - d > 0]


def _slower(row: dict[str, Any], value: float, part: str) -> str:
    """The note for a median speedup below SLOWER: SLOWER only if most rounds agree, else within noise."""
    where = " in forward+backward" if part == "fwd_bwd" else ""
    ratios = paired_ratios(row, "model", part)
    if len(ratios) < 4:  # no per-round times: the median is all there is
        return f"model rewrite SLOWER{where} ({(1 - value) * 100:.1f}%)"
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    if q3 < SLOWER_Q3:
        return f"model rewrite SLOWER{where} ({(1 - value) * 100:.1f}%; per-round ratio IQR {q1:.2f}–{q3:.2f})"
    return (f"model rewrite {value:.3f}×{where}: within this run's noise (per-round ratio IQR "
            f"{q1:.2f}–{q3:.2f})")


def _fmt(x: float | None, spec: str, suffix: str = "") -> str:
    return "n/a" if x is None else f"{x:{spec}}{suffix}"


def _pct(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


COLUMNS = (  # (header, variant, metric kind) of the geomean-able columns
    ("step speedup: model", "model", "step"),
    ("step speedup: + script", "full", "step"),
    ("fwd+bwd speedup: model", "model", "fwd_bwd"),
    ("peak RSS, step: model", "model", "rss"),
    ("peak RSS, step: + script", "full", "rss"),
    ("peak RSS, fwd+bwd: model", "model", "rss_fwd_bwd"),
    ("tensor peak (profiler), step: + script", "full", "profiler"),
    ("tensor peak (profiler), fwd+bwd: model", "model", "profiler_fwd_bwd"),
)


def metric(row: dict[str, Any], variant: str, kind: str, cuda: bool = False) -> float | None:
    """One table cell's value: a speedup (step / fwd_bwd) or a memory ratio."""
    if kind in ("step", "fwd_bwd"):
        return speedup(row, variant, kind)
    if cuda and kind == "rss":
        return memory_ratio(row, variant, "cuda")
    return None if cuda else memory_ratio(row, variant, kind)


def _cell(kind: str, value: float | None) -> str:
    if kind in ("step", "fwd_bwd"):
        return _fmt(value, ".3f", "×")
    return _pct(value)


def table(results: dict[str, Any]) -> str:
    """The markdown results table (one row per model, then the geomean)."""
    cuda = results["options"]["device"] == "cuda"
    heads = [h.replace("peak RSS", "max_memory_allocated") if cuda else h for h, _, _ in COLUMNS]
    lines = ["| model | layers | rules fixed (sites) | original step | AdamW share | " + " | ".join(heads)
             + " | losses, dropout off (max rel. diff) | note |",
             "|" + "---|" * (len(COLUMNS) + 7)]
    acc: list[list[float]] = [[] for _ in COLUMNS]
    for key, row in results["models"].items():
        prep = row.get("prepared") or {}
        fixed = ", ".join(f"{r} ×{n}" for r, n in (prep.get("rules_fixed") or {}).items()) or "none"
        orig = (_speed(row).get("median_s") or {}).get("original")
        check = (row.get("speed") or {}).get("loss_check") or {}
        losses = ("n/a" if not check or check.get("error") else
                  ("equal" if check["equal"] else "**DIFFER**") + f" ({max(check['max_rel_diff'].values()):.0e})")
        cells = []
        for i, (_, variant, kind) in enumerate(COLUMNS):
            value = metric(row, variant, kind, cuda)
            if value is not None:
                acc[i].append(value)
            cells.append(_cell(kind, value))
        share = optimizer_share(row)
        lines.append(f"| {row.get('title', key)} | {row.get('layers_note', '')} | {fixed} | "
                     f"{_fmt(orig * 1e3 if orig else None, '.0f', ' ms')} | {_fmt(share and share * 100, '.0f', '%')} | "
                     + " | ".join(cells) + f" | {losses} | {note(row)} |")
    geo = [f"**{_cell(kind, geomean(a))}**" for a, (_, _, kind) in zip(acc, COLUMNS, strict=True)]
    lines.append("| **geomean** | | | | | " + " | ".join(geo) + " | | |")
    return "\n".join(lines)


def rule_table(results: dict[str, Any]) -> str:
    """Per model and fixed rule: the speedup and loss agreement of that rule's rewrite alone ('' if none)."""
    lines = ["| model | rule alone | fwd+bwd speedup | step speedup | losses, dropout off (max rel. diff) |",
             "|---|---|---|---|---|"]
    for key, row in results["models"].items():
        sp = _speed(row)
        check = (row.get("speed") or {}).get("loss_check") or {}
        for variant in (v for v in (sp.get("speedup") or {}) if v.startswith("rule:")):
            diff = (check.get("max_rel_diff") or {}).get(variant)
            ok = diff is not None and diff <= check.get("tolerance", 0.0)
            lines.append(f"| {row.get('title', key)} | {variant[5:]} | {_fmt(speedup(row, variant, 'fwd_bwd'), '.3f', '×')} | "
                         f"{_fmt(speedup(row, variant), '.3f', '×')} | "
                         f"{'n/a' if diff is None else ('equal' if ok else '**DIFFER**') + f' ({diff:.0e})'} |")
    return "\n".join(lines) if len(lines) > 2 else ""


STATE = ("parameter", "gradient", "optimizer_state")  # alive across steps (gradients until zero_grad)


def _peak_parts(row: dict[str, Any], variant: str, key: str = "peak_by_category") -> tuple[float, float] | None:
    """(weights + gradients + optimizer state, everything else) at `variant`'s profiler peak, in bytes."""
    parts = (((row.get("memory") or {}).get(variant) or {}).get("profiler") or {}).get(key)
    if not parts:
        return None
    state = sum(parts.get(c, 0) for c in STATE)
    return state, sum(parts.values()) - state


def peak_table(results: dict[str, Any]) -> str:
    """Where each model's tensor peak comes from (torch.profiler categories); '' when not recorded."""
    lines = ["| model | parameters | tensor peak: original | weights + grads + AdamW state | rest at the peak "
             "(activations, temporaries, optimizer scratch) | rest at the fwd+bwd peak | tensor peak: + script | "
             "rest at the peak: + script |",
             "|---|---|---|---|---|---|---|---|"]
    for key, row in results["models"].items():
        orig, full = _peak_parts(row, "original"), _peak_parts(row, "full")
        fb = _peak_parts(row, "original", "fwd_bwd_peak_by_category")
        if orig is None:
            continue
        params = (row.get("speed") or {}).get("params")
        lines.append(
            f"| {row.get('title', key)} | {_fmt(params and params / 1e6, '.1f', ' M')} | {_mb(sum(orig))} | "
            f"{_mb(orig[0])} | {_mb(orig[1])} | {_mb(fb and fb[1])} | {_mb(full and sum(full))} | "
            f"{_mb(full and full[1])} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.0f} MiB"


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """Geomeans of every column and whether the issue's CPU targets are met."""
    rows = list(results["models"].values())
    cuda = results["options"]["device"] == "cuda"
    out: dict[str, Any] = {}
    for _, variant, kind in COLUMNS:
        out[f"geomean_{kind}_{variant}"] = geomean(
            [m for r in rows if (m := metric(r, variant, kind, cuda)) is not None])
    checks = [((r.get("speed") or {}).get("loss_check") or {}) for r in rows]
    checks = [c for c in checks if "equal" in c]  # models that were not measured have no check
    out["losses_equal"] = bool(checks) and all(c["equal"] for c in checks)
    speed, mem = out["geomean_step_full"], out["geomean_rss_full"]
    out["target_speedup_1.25_met"] = speed is not None and speed >= 1.25
    out["target_memory_-20%_met"] = mem is not None and mem <= 0.80
    out["models_measured"] = sum(1 for r in rows if speedup(r, "full") is not None)
    return out


def svg_chart(results: dict[str, Any]) -> str:
    """A two-panel SVG bar chart: step speedup (model-only and with the script) and peak-memory change."""
    rows = [(row.get("title", key), row) for key, row in results["models"].items()]
    kind = "cuda" if results["options"]["device"] == "cuda" else "rss"
    width, bar_h, gap, top, left = 900, 11, 10, 60, 130
    panel_w = (width - left - 40) // 2
    height = top + len(rows) * (2 * bar_h + gap) + 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13" font-weight="bold">Adopter rewrites: training step '
           f'({escape(results["options"]["device"])}, {escape(results["machine"].get("summary", ""))})</text>']
    speeds = [s for _, r in rows for v in ("model", "full") if (s := speedup(r, v)) is not None]
    s_max = max([1.3, *speeds]) * 1.05
    mems = [m for _, r in rows for v in ("model", "full") if (m := memory_ratio(r, v, kind)) is not None]
    m_lo = min([-0.3, *[m - 1 for m in mems]]) * 1.1
    m_hi = max([0.1, *[m - 1 for m in mems]]) * 1.1
    x0, x1 = left, left + panel_w + 40
    out.append(f'<text x="{x0}" y="40" font-weight="bold">step speedup (× original; 1.25 target)</text>')
    out.append(f'<text x="{x1}" y="40" font-weight="bold">peak memory change ({"max_memory_allocated" if kind == "cuda" else "RSS over training"}; −20% target)</text>')
    colors = {"model": "#7fa7d9", "full": "#1f4e99"}

    def sx(v: float) -> float:
        return x0 + v / s_max * panel_w

    def mx(v: float) -> float:
        return x1 + (v - m_lo) / (m_hi - m_lo) * panel_w

    for i, (title, row) in enumerate(rows):
        y = top + i * (2 * bar_h + gap)
        out.append(f'<text x="{left - 6}" y="{y + bar_h + 4}" text-anchor="end">{escape(title)}</text>')
        for j, v in enumerate(("model", "full")):
            yy = y + j * bar_h
            s = speedup(row, v)
            if s is not None:
                out.append(f'<rect x="{x0}" y="{yy}" width="{sx(s) - x0:.1f}" height="{bar_h - 1}" '
                           f'fill="{colors[v]}"/>')
                out.append(f'<text x="{sx(s) + 3:.1f}" y="{yy + bar_h - 2}" font-size="9">{s:.2f}×</text>')
            m = memory_ratio(row, v, kind)
            if m is not None:
                a, b = sorted((mx(0.0), mx(m - 1)))
                out.append(f'<rect x="{a:.1f}" y="{yy}" width="{b - a:.1f}" height="{bar_h - 1}" '
                           f'fill="{colors[v]}"/>')
                out.append(f'<text x="{(b + 3 if m >= 1 else a - 3):.1f}" y="{yy + bar_h - 2}" font-size="9" '
                           f'text-anchor="{"start" if m >= 1 else "end"}">{(m - 1) * 100:+.0f}%</text>')
    bottom = top + len(rows) * (2 * bar_h + gap)
    for value, label, dash in ((1.0, "1.0", ""), (1.25, "1.25", ' stroke-dasharray="4 3"')):
        out.append(f'<line x1="{sx(value):.1f}" y1="{top - 4}" x2="{sx(value):.1f}" y2="{bottom}" '
                   f'stroke="#c33"{dash}/>')
        out.append(f'<text x="{sx(value):.1f}" y="{bottom + 12}" text-anchor="middle">{label}</text>')
    for value, label, dash in ((0.0, "0%", ""), (-0.2, "−20%", ' stroke-dasharray="4 3"')):
        out.append(f'<line x1="{mx(value):.1f}" y1="{top - 4}" x2="{mx(value):.1f}" y2="{bottom}" '
                   f'stroke="#c33"{dash}/>')
        out.append(f'<text x="{mx(value):.1f}" y="{bottom + 12}" text-anchor="middle">{label}</text>')
    ly = bottom + 30
    for j, (v, label) in enumerate((("model", "rewritten model, original script"),
                                     ("full", "rewritten model + rewritten script (fused AdamW)"))):
        lx = left + j * 330
        out.append(f'<rect x="{lx}" y="{ly - 9}" width="12" height="10" fill="{colors[v]}"/>')
        out.append(f'<text x="{lx + 16}" y="{ly}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def replace_section(markdown: str, heading: str, body: str) -> str:
    """`markdown` with the `## heading` section's body replaced (appended when missing); others untouched."""
    lines = markdown.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == f"## {heading}"), None)
    if start is None:
        sep = "" if markdown.endswith("\n") or not markdown else "\n"
        return f"{markdown}{sep}\n## {heading}\n\n{body.rstrip()}\n"
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start + 1]) + "\n" + body.rstrip() + "\n" + ("\n" + tail if tail else "")
