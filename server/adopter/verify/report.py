"""How `adopter verify` prints its rows: one line per fix (text) or one JSON document."""

from __future__ import annotations

from typing import Any

from adopter.verify.cases import Unfixed


def _memory(row: dict[str, Any]) -> str:
    a, b = row.get("original_peak"), row.get("rewritten_peak")
    if not a or b is None:
        return "memory n/a"
    return f"peak memory {100.0 * (b - a) / a:+.1f} %"


def text_line(path: str, row: dict[str, Any]) -> str:
    """`path:line: rule Class: verdict, checkpoint, speedup [IQR], memory`."""
    head = f"{path}:{row['line']}: {row['rule']} {row['class']}:"
    if "not_built" in row:
        return f"{head} not run: {row['not_built']}"
    if "error" in row:
        loads = "" if row.get("checkpoint_loads", True) else " (checkpoint does not load)"
        return f"{head} NOT equivalent{loads}: {row['error']}"
    verdict = "equivalent" if row["equivalent"] else "NOT equivalent"
    if row.get("switched"):  # the rewritten path runs only with a switch of the class flipped
        verdict += f" with {row['switched']}"
    parts = [f"{verdict} (max |diff| {row['max_abs']:.2g} over {row['compared']} tensors, worst: {row['worst']})",
             "checkpoint loads (strict)"]
    if "speedup" in row:
        parts.append(f"{row['speedup']:.2f}x [{row['speedup_q1']:.2f}-{row['speedup_q3']:.2f}] "
                     f"({row['original_ms']:.2f} -> {row['rewritten_ms']:.2f} ms fwd+bwd, {row['pairs']} pairs)")
        parts.append(_memory(row))
    return f"{head} " + ", ".join(parts)


def unfixed_line(path: str, u: Unfixed) -> str:
    return f"{path}:{u.line}: {u.rule_id} {u.scope}: no fix to verify: {u.reason}"


def as_json(path: str, result: dict[str, Any], unfixed: tuple[Unfixed, ...]) -> dict[str, Any]:
    """The same as the text, for CI: every row, and the findings that have no fix."""
    return {"path": path, "device": result.get("device"), "dtype": result.get("dtype"), "torch": result.get("torch"),
            "rows": [{"path": path, **r} for r in result.get("rows", [])],
            "unfixed": [{"path": path, "rule": u.rule_id, "line": u.line, "scope": u.scope, "reason": u.reason}
                        for u in unfixed]}
