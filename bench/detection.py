"""Detection benchmark: precision and recall of families 1–9 against hand-made labels.

Labels: `bench/data/detection_labels.json`, `{"files": {"modeling_bert.py": {"sites": [{"family": 5,
"class": "BertSelfOutput", "line": 123, "note": "..."}]}}}` with the 1-based line of the first statement
of each site. A finding counts as a true positive when its file, family and first line equal a label's.
Run: `.venv/bin/python bench/detection.py [--labels PATH] [--json OUT]`

`--set realworld` scores families 4–17 on the real-world set instead (`bench/data/realworld/`: model files
of 15 PyPI libraries and `transformers` 5.0, fetched by `bench/realworld_corpus.py`). There a finding
covers a label when the label's line lies on one of the finding's lines (its statements, its `__init__`
bindings): the site of a Sequential is its constructor in `__init__`, that of a chain its first statement.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

FAMILIES = range(1, 10)
DEFAULT_LABELS = Path(__file__).parent / "data" / "detection_labels.json"

Site = tuple[str, int, int]  # file, family, line


def predict(names: list[str]) -> dict[Site, str]:
    """Findings of families 1–9 in the named corpus files: site -> class name."""
    from adopter.analysis import analyse
    from adopter.corpus import modeling_file
    from adopter.engine import check, detect_environment, load_rules

    rules = [r for r in load_rules().rules if r.family in FAMILIES]
    env = detect_environment("cpu")
    out: dict[Site, str] = {}
    for name in names:
        f = modeling_file(name.removeprefix("modeling_").removesuffix(".py"))
        result = check(analyse(f.text, f.member), rules, env)
        for p in result.problems:
            print(f"problem: {name}: {p.render()}")
        for finding in result.findings:
            out[(name, finding.family, finding.span.start_line + 1)] = finding.scope_name
    return out


def score(labels: dict[Site, dict[str, str]], found: dict[Site, str]) -> dict[str, dict[str, float]]:
    """Precision/recall per family and overall."""
    table: dict[str, dict[str, float]] = {}
    for fam in [*FAMILIES, 0]:
        lab = {s for s in labels if fam in (0, s[1])}
        pred = {s for s in found if fam in (0, s[1])}
        tp = len(lab & pred)
        table["overall" if fam == 0 else str(fam)] = {
            "labels": len(lab), "found": len(pred), "tp": tp,
            "precision": tp / len(pred) if pred else 1.0, "recall": tp / len(lab) if lab else 1.0,
        }
    return table


def main() -> int:
    """Score the engine against the labels and print misses and false positives with file:line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument("--set", choices=("transformers435", "realworld", "heldout", "retired", "heldout-all", "dev2"), default="transformers435")
    parser.add_argument("--figures-only", action="store_true",
                        help="realworld/heldout: the table only, no misses or false positives (score the "
                             "held-out set this way: it is never studied)")
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="realworld/heldout/dev2: analyse each file inside its whole unpacked package under DIR "
                             "(`bench/<set>_corpus.py --packages`), so cross-file reach applies")
    parser.add_argument("--distributions", nargs="+", metavar="NAME",
                        help="realworld/heldout: score only these distributions (e.g. one batch of the held-out set)")
    args = parser.parse_args()
    if args.set in ("realworld", "heldout", "retired", "heldout-all", "dev2"):
        from detection_realworld import main as realworld

        return realworld(args.json, args.root, args.set, args.figures_only, args.distributions)
    data = json.loads(args.labels.read_text(encoding="utf-8"))
    labels: dict[Site, dict[str, str]] = {}
    for name, entry in data["files"].items():
        for site in entry.get("sites", ()):
            if site["family"] in FAMILIES:
                labels[(name, int(site["family"]), int(site["line"]))] = site
    judged: dict[Site, str] = {}  # near misses the labeller judged not to be sites, with the reason
    for name, entry in data["files"].items():
        for ns in entry.get("not_sites", ()):
            if "line" in ns and ns.get("family") in FAMILIES:
                judged[(name, int(ns["family"]), int(ns["line"]))] = ns.get("reason", "")
    found = predict(sorted(data["files"]))
    table = score(labels, found)
    print(f"{len(data['files'])} labelled files, {len(labels)} labelled sites of families 1-9")
    print(f"{'family':>8} {'labels':>7} {'found':>6} {'tp':>5} {'precision':>10} {'recall':>8}")
    for fam, row in table.items():
        print(f"{fam:>8} {row['labels']:>7} {row['found']:>6} {row['tp']:>5} {row['precision']:>10.1%} "
              f"{row['recall']:>8.1%}")
    misses = sorted(set(labels) - set(found))
    extra = sorted(set(found) - set(labels))
    if misses:
        print(f"\nmisses ({len(misses)}):")
        for s in misses:
            near = [p for p in found if p[0] == s[0] and p[1] == s[1] and abs(p[2] - s[2]) <= 3]
            hint = f" (found at line {near[0][2]})" if near else ""
            print(f"  {s[0]}:{s[2]}: family {s[1]} {labels[s].get('class', '')}{hint} — {labels[s].get('note', '')}")
    if extra:
        print(f"\nfalse positives ({len(extra)}):")
        for s in extra:
            why = f" — labelled not a site: {judged[s]}" if s in judged else ""
            print(f"  {s[0]}:{s[2]}: family {s[1]} in {found[s]}{why}")
    print("\nper family found:", dict(sorted(Counter(s[1] for s in found).items())))
    if args.json:
        Path(args.json).write_text(json.dumps({"table": table, "misses": misses, "false_positives": extra},
                                              indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
