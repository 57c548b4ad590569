"""The fusion rules over the transformers 4.35.0 corpus: sites found, fixes verified, fixes declined.

Run: `.venv/bin/python bench/fusion_corpus.py [--rewrite] [--show-skips N]`. For each of the 202
`modeling_<m>.py` files it finds the sites of the fusion families (5-8, 11-17); with `--rewrite` it
also applies every fixable finding with `adopter.synth.rewrite` (which verifies: the result parses and
re-analyses with no finding left at the fixed sites) and counts applied and declined fixes per rule.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

from adopter.analysis import analyse
from adopter.corpus import modeling_files
from adopter.dsl import parse_rules
from adopter.dsl.types import Rule
from adopter.engine import Environment, find
from adopter.session import rewrite
from adopter.synth import Rewritten

FUSION_FAMILIES = {5, 6, 7, 8, 11, 12, 13, 14, 15, 16, 17}
REPO = Path(__file__).resolve().parents[1]


def fusion_rules() -> list[Rule]:
    rules: list[Rule] = []
    for path in sorted((REPO / "rules").glob("f*.adl")):
        rules.extend(r for r in parse_rules(path.read_text(encoding="utf-8"), str(path)) if r.family in FUSION_FAMILIES)
    return rules


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rewrite", action="store_true", help="also apply and verify the fixes")
    parser.add_argument("--show-skips", type=int, default=10, help="print this many decline reasons")
    args = parser.parse_args()
    rules = fusion_rules()
    env = Environment("cpu", frozenset(), "2.13.0")
    found: collections.Counter[str] = collections.Counter()
    files_with: collections.Counter[str] = collections.Counter()
    applied: collections.Counter[str] = collections.Counter()
    skipped: collections.Counter[str] = collections.Counter()
    reasons: list[str] = []
    failures: list[str] = []
    start = time.perf_counter()
    corpus = modeling_files()
    for cf in corpus:
        findings = find(analyse(cf.text, cf.name), rules, env)
        for rule_id in {f.rule_id for f in findings}:
            files_with[rule_id] += 1
        found.update(f.rule_id for f in findings)
        fixable = [f for f in findings if f.fixable]
        if not args.rewrite or not fixable:
            continue
        result = rewrite(cf.text, fixable, rules=rules, env=env, path=cf.name)
        if isinstance(result, Rewritten):
            applied.update(f.rule_id for f in result.applied)
        else:
            failures.append(f"{cf.name}: {result.reason}")
        for s in result.skipped:
            skipped[s.finding.rule_id] += 1
            reasons.append(f"{cf.name}:{s.finding.span.start_line + 1} {s.finding.rule_id}: {s.reason}")
    elapsed = time.perf_counter() - start
    print(f"{len(corpus)} files, {elapsed:.1f} s")
    print(f"{'rule':28} {'sites':>6} {'files':>6} {'fixed':>6} {'declined':>9}")
    for rule in rules:
        print(f"{rule.id:28} {found[rule.id]:6} {files_with[rule.id]:6} {applied[rule.id]:6} {skipped[rule.id]:9}")
    for line in reasons[: args.show_skips]:
        print("  declined:", line)
    for line in failures[: args.show_skips]:
        print("  failed:", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
