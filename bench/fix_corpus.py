"""Every fix over the corpus: each fix the session offers, alone, and `fix` of the whole file.

For every site whose fix decision is "fixable" (transformers 4.35 modeling files, and the real-world set
of `bench/realworld_corpus.py` when it is fetched): the rewritten file compiles; re-analysed, the site's
(rule, class) has one finding fewer and no other (rule, class) has more, except sites whose matched
code includes what the fix wrote (counted as exposed: a formula made `F.gelu` completes a Linear+GELU
site where the module is called); asking for the same rule's fix
again changes nothing. For `fix` of each whole file: the result compiles, nothing fixable is left,
and a second `fix` changes nothing.

    .venv/bin/python bench/fix_corpus.py [--limit N] [--realworld] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Tally:
    """Counts per stage: a site counts in a stage only when it passed every stage before it."""

    files: int = 0
    sites: int = 0  # findings
    fixable: int = 0  # fixes offered (the session's decision is "fixable")
    compiled: int = 0  # the file with that one fix compiles
    site_gone: int = 0  # re-analysed, the site's (rule, class) has one finding fewer
    nothing_new: int = 0  # ... and no other (rule, class) has more, except sites built on the written code
    exposed: int = 0  # sites a fix exposed: new findings whose matched code includes what the fix wrote
    fixes_ok: int = 0  # ... and the same rule is not offered again on the code the fix wrote
    fix_all_files_changed: int = 0  # files `fix` rewrote
    fix_all_compiled: int = 0
    fix_all_clean: int = 0  # nothing fixable left after `fix`
    fix_all_ok: int = 0  # ... and a second `fix` changes nothing
    failures: list[str] = field(default_factory=list)


def check_file(name: str, text: str, tally: Tally) -> None:
    """Every offered fix of `text`, alone, then `fix` of the whole file; failures go to `tally`."""
    from adopter.session import Session, load_context

    session = Session(load_context(target="cpu"))
    analysed = session.analysed(text, name)
    tally.files += 1
    tally.sites += len(analysed.findings)
    before = Counter((f.rule_id, f.scope_name) for f in analysed.findings)
    for f in analysed.findings:
        decision = session.decision(analysed, f)
        if not decision.fixable:
            continue
        tally.fixable += 1
        new = decision.new_source or ""
        where = f"{name}:{f.span.start_line + 1} {f.rule_id}"
        try:
            compile(new, name, "exec")
        except SyntaxError as exc:
            tally.failures.append(f"{where}: the fixed file does not compile ({exc.msg}, line {exc.lineno})")
            continue
        tally.compiled += 1
        after_analysis = session.analysed(new, name)
        after = Counter((g.rule_id, g.scope_name) for g in after_analysis.findings)
        key = (f.rule_id, f.scope_name)
        if after[key] > before[key] - 1:
            tally.failures.append(f"{where}: the site is still found after its fix")
            continue
        tally.site_gone += 1
        grown = [k for k in after if k != key and after[k] > before[k]]
        written = _written_lines(text, new)
        # A site built on the code the fix wrote (a hand-written GELU made `F.gelu`, now seen after the
        # Linear of the module that calls it) was exposed by the fix, not broken by it: counted apart.
        exposed = [k for k in grown if sum(1 for g in after_analysis.findings if (g.rule_id, g.scope_name) == k
                                           and _reads_written(g, written)) >= after[k] - before[k]]
        if len(exposed) < len(grown):
            tally.failures.append(f"{where}: new findings after the fix: {[k for k in grown if k not in exposed][:3]}")
            continue
        tally.exposed += len(exposed)
        tally.nothing_new += 1
        if any(g.rule_id == f.rule_id and session.decision(after_analysis, g).fixable
               and any(ln in written for s in g.stmt_spans for ln in range(s.start_line, s.end_line + 1))
               for g in after_analysis.findings):
            tally.failures.append(f"{where}: the code the fix wrote would be fixed again")
            continue
        tally.fixes_ok += 1
    out = session.fix(text, name)
    if not out.changed:
        return
    tally.fix_all_files_changed += 1
    try:
        compile(out.new_source, name, "exec")
    except SyntaxError as exc:
        tally.failures.append(f"{name}: fix does not compile ({exc.msg}, line {exc.lineno})")
        return
    tally.fix_all_compiled += 1
    fresh = Session(load_context(target="cpu"))
    left = fresh.fixable(fresh.analysed(out.new_source, name))
    if left:
        tally.failures.append(f"{name}: fixable after fix: {[(g.rule_id, g.span.start_line + 1) for g in left][:3]}")
        return
    tally.fix_all_clean += 1
    if fresh.fix(out.new_source, name).changed:
        tally.failures.append(f"{name}: a second fix changes the file")
        return
    tally.fix_all_ok += 1


def _reads_written(finding: Any, written: set[int]) -> bool:
    """Whether a finding's matched ops include code on the lines a fix wrote."""
    return any(ln in written for op in finding.match.ops for ln in range(op.span.start_line, op.span.end_line + 1))


def _written_lines(old: str, new: str) -> set[int]:
    """Lines of `new` (0-based) that the rewrite wrote or changed."""
    import difflib

    matcher = difflib.SequenceMatcher(None, old.split("\n"), new.split("\n"), autojunk=False)
    return {j for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal" for j in range(j1, j2)}


def corpus(limit: int | None) -> list[tuple[str, str]]:
    """The transformers 4.35 modeling files."""
    from adopter.corpus import modeling_files

    items = [(f.name, f.text) for f in modeling_files()]
    return items[:limit] if limit else items


def realworld(limit: int | None) -> list[tuple[str, str]]:
    """The real-world set (`bench/realworld_corpus.py`; raises FileNotFoundError when not fetched)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import realworld_corpus

    items = [(f.key, f.text) for f in realworld_corpus.files()]
    return items[:limit] if limit else items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, help="only the first N files of each set")
    parser.add_argument("--realworld", action="store_true", help="also the real-world set (fetched first)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sets = {"transformers-4.35": corpus(args.limit)}
    if args.realworld:
        sets["realworld"] = realworld(args.limit)
    summary: dict[str, Any] = {}
    failed = False
    for label, items in sets.items():
        tally = Tally()
        started = time.time()
        for name, text in items:
            check_file(name, text, tally)
        summary[label] = {**tally.__dict__, "seconds": round(time.time() - started)}
        failed = failed or bool(tally.failures)
        print(json.dumps({label: summary[label]}, indent=2), flush=True)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
