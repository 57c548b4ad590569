"""The HTML report: plots that fit their data, numbers that tell designs apart, times that agree."""

from __future__ import annotations

import re

from adopter.wham.html import render_html, svg_plot


def test_scatter_axes_fit_their_data_and_ticks_differ() -> None:
    svg = svg_plot([("p", [(100.0, 171.70), (120.0, 171.74), (140.0, 171.80)])], x_label="TDP", y_label="s/s",
                   points=True)
    cys = [float(v) for v in re.findall(r'cy="([\d.]+)"', svg)]
    assert max(cys) - min(cys) > 150  # the points spread over the plot, not squashed at its top
    labels = re.findall(r'text-anchor="end">([^<]+)<', svg)
    assert len(set(labels)) == len(labels) == 5
    assert float(labels[0]) <= 171.70 and float(labels[-1]) >= 171.80


def test_times_and_digits_agree_with_the_text_summary() -> None:
    best = {"design": {"n_tc": 1}, "label": "x", "throughput": 171.7449, "step_s": 0.0465, "perf_per_tdp": 0.61432,
            "area_mm2": 580.2, "tdp_w": 279.6, "tensor_util": 0.2, "vector_util": 0.05, "feasible": True,
            "critical": {}, "critical_ops": [], "objective": 171.7449}
    search = {"strategy": "wham", "best": best, "evals_to_best": 1, "seconds_to_best": 0.1, "evaluations": 33,
              "seconds": 0.634, "stopped": "converged", "trace": [], "bounded": 10}
    page = render_html({"request": {"model": "m"}, "best": best, "search": search, "seconds": 4.221})
    assert "171.745" in page  # six significant digits, as the text summary prints
    assert "4.221 s in all" in page and "the wham search 0.634 s" in page
