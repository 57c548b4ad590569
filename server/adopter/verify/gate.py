"""`adopter fix --verify-run`: write only the rewrites whose run agrees with the original.

Each fix `fix` would write is run alone against the original class (`adopter verify`'s cases and runner:
the user's code runs in a subprocess with a timeout). A fix whose outputs or gradients differ, whose
checkpoint does not load, that fails to run, or whose class cannot be built is withdrawn: the session's
fix loop leaves its site (rule and class) alone and reports it with the reason. The text that would be
written (all the kept fixes together, to the fixed point) is then run once more against the original;
a class it changes that does not agree has its fixes withdrawn too, and the loop runs again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adopter.session import FileFix, Session
from adopter.verify.cases import FixCase, changed_classes, fix_cases
from adopter.verify.runner import Options, run_cases

MAX_ROUNDS = 4  # runs of the combined text; each withdraws at least one fix or ends


@dataclass(frozen=True, slots=True)
class Gated:
    """The fix to write (only agreeing rewrites; withdrawn sites are among its `skipped`, with the
    reason), and how many fixes were run and withdrawn."""

    fix: FileFix
    ran: int
    withdrawn: int


def disagreement(row: dict[str, Any]) -> str | None:
    """Why a row of the run withdraws its fix, or None when the rewrite agrees."""
    cls = row.get("class", "the class")
    if "not_built" in row:
        return f"not verified: {cls} could not be run ({row['not_built']})"
    if row.get("equivalent"):
        return None
    if "error" in row:
        return f"the run disagrees: {cls}: {row['error']}"
    return (f"the run disagrees: {cls} differs from the original (max |diff| {row.get('max_abs', float('nan')):.3g} "
            f"in {row.get('worst', '?')})")


def withdrawals(rows: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(rule, scope) -> reason for every row that disagrees (the first reason of a site wins)."""
    out: dict[tuple[str, str], str] = {}
    for row in rows:
        why = disagreement(row)
        if why is not None:
            out.setdefault((row["rule"], row["scope"]), f"{why}; not written (--verify-run)")
    return out


def verified_fix(session: Session, text: str, path: str, options: Options) -> Gated:
    """`session.fix` of `text` less the fixes whose run disagrees. Raises `RunFailed` (bad input: the file
    does not import, a run timed out, no torch), in which case nothing may be written."""
    from pathlib import Path

    first = session.fix(text, path)
    if not first.parses or not first.changed:
        return Gated(first, 0, 0)
    cases, _ = fix_cases(session, text, path)
    exclude: dict[tuple[str, str], str] = {}
    agreed: set[str] = set()  # rewritten texts whose every class agreed
    if cases:
        rows = run_cases(Path(path), text, cases, options)["rows"]
        exclude.update(withdrawals(rows))
        bad_lines = {(r["rule"], r["line"]) for r in rows if disagreement(r) is not None}
        agreed = {c.new_source for c in cases if (c.rule_id, c.line) not in bad_lines}
    original_classes = set(_class_names(session, text, path))
    fixed = session.fix(text, path, exclude=exclude)
    for _ in range(MAX_ROUNDS):
        if not fixed.changed or fixed.new_source in agreed:
            return Gated(fixed, len(cases), len(exclude))
        classes = changed_classes(text, fixed.new_source)
        case = FixCase("(all fixes)", 1, "", fixed.new_source, classes)
        rows = run_cases(Path(path), text, (case,), options)["rows"] if classes else [
            {"class": "", "equivalent": False, "error": "the fixes changed no class that could be run"}]
        failed = {r.get("class", ""): why for r in rows if (why := disagreement(r)) is not None}
        if not failed:
            return Gated(fixed, len(cases), len(exclude))
        applied = {(f.rule_id, f.scope_name) for f in fixed.applied} - exclude.keys()
        more = {site: f"{why}, with the file's other fixes; not written (--verify-run)"
                for site in applied for cls, why in failed.items()
                if site[1] == cls or site[1] not in original_classes or cls not in original_classes}
        exclude.update(more or {site: "not verified: the file's fixes together do not agree with the original; "
                                      "not written (--verify-run)" for site in applied})
        fixed = session.fix(text, path, exclude=exclude)
    # Out of rounds: write nothing of this file, every site reported.
    for f in session.analysed(text, path).findings:
        exclude.setdefault((f.rule_id, f.scope_name), "not verified: the file's fixes could not be verified "
                                                       "together; not written (--verify-run)")
    return Gated(session.fix(text, path, exclude=exclude), len(cases), len(exclude))


def _class_names(session: Session, text: str, path: str) -> list[str]:
    return [a.name for a in session.analysed(text, path).module_file.architectures]
