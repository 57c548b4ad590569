"""WHAM accelerator search: mine accelerator designs for training a PyTorch model (Adnan et al., 2024).

Stable entry points (used by the language server and the CLI):

- `search(request: SearchRequest, *, progress=None, cancelled=None) -> SearchReport` — never raises
  for bad user input: the report's `error` says what was wrong (validation errors name the parameter
  and the allowed range). `progress(fraction, message)` is called as the search advances;
  `cancelled()` is polled between evaluations.
- `SearchReport.to_json() -> dict` — plain JSON data (see docs/wham.md for the keys).
- `render_html(report_json: dict) -> str` — a self-contained HTML report (inline SVG, no network).
- `summary_table(report) -> str` — the CLI's text summary.

Only `adopter.wham.workload` imports torch, and only inside the tracing subprocess.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adopter.wham.html import render_html
    from adopter.wham.mining import search
    from adopter.wham.report import SearchReport, summary_table
    from adopter.wham.request import SearchRequest

__all__ = ["SearchReport", "SearchRequest", "render_html", "search", "summary_table"]

_EXPORTS = {
    "search": "adopter.wham.mining",
    "SearchRequest": "adopter.wham.request",
    "SearchReport": "adopter.wham.report",
    "summary_table": "adopter.wham.report",
    "render_html": "adopter.wham.html",
}


def __getattr__(name: str) -> Any:
    """Lazy exports: `import adopter.wham` stays cheap (optuna/numpy load only when searching)."""
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'adopter.wham' has no attribute {name!r}")
