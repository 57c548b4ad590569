"""Detection of common model-code forms of families 5, 6, 7, 8, 10, 14, 15, 16 and 17 (issue 20, item 3).

The files in `bench/data/forms/` are small examples written for this measurement, each form as widely
used libraries write it (conv-BN blocks as `nn.Sequential` subclasses, builders, `norm_layer` defaults,
layer subclasses, ModuleList/ModuleDict; rotary embeddings in rotate_half, chunk, interleaved, einops,
complex and rotation-formula forms; LM heads into cross-entropy in forward or a loss method; optimizers
built in methods, through a class parameter or `getattr(torch.optim, name)`; hand-written attention in
einsum / einops / `@` forms and in module-level helpers; gated MLPs through `chunk`/`split` in any operand
order; activations chosen by parameters, dicts and `getattr`; post-norm dropout-add-LayerNorm). A line carrying
`# site: N` is a site of family N. A finding covers a site when the family is the same and the marked line
is one of the finding's lines (its statements or `__init__` bindings, as in `bench/detection_realworld.py`).
Run: `.venv/bin/python bench/forms.py [--json OUT]`
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

FORMS = Path(__file__).parent / "data" / "forms"
FAMILIES = (5, 6, 7, 8, 10, 14, 15, 16, 17)
_SITE = re.compile(r"#\s*site:\s*(\d+)\b")


def labels(text: str) -> list[tuple[int, int]]:
    """(family, 1-based line) of each `# site: N` mark."""
    return [(int(m.group(1)), i) for i, line in enumerate(text.splitlines(), 1) if (m := _SITE.search(line))]


def findings(text: str, path: str) -> list[tuple[int, frozenset[int], str]]:
    """(family, lines, rule id) of each finding of the scored families, one per family and line set."""
    from adopter.analysis import analyse
    from adopter.engine import Environment, check, load_rules

    rules = [r for r in load_rules().rules if r.family in FAMILIES]
    env = Environment("cuda", frozenset({"liger_kernel"}), "2.13.0")  # every target offered
    out: list[tuple[int, frozenset[int], str]] = []
    for f in check(analyse(text, path), rules, env).findings:
        spans = (f.span, *f.stmt_spans, *f.init_spans)
        lines = frozenset(n + 1 for s in spans for n in range(s.start_line, s.end_line + 1))
        if all((f.family, lines) != (g[0], g[1]) for g in out):
            out.append((f.family, lines, f.rule_id))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="write per-file results here")
    args = parser.parse_args()
    sites: Counter[int] = Counter()
    tp: Counter[int] = Counter()
    found: Counter[int] = Counter()
    report: dict[str, object] = {}
    misses: list[str] = []
    extra: list[str] = []
    for path in sorted(FORMS.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        marks = labels(text)
        preds = findings(text, path.name)
        used: set[int] = set()
        for family, line in marks:
            sites[family] += 1
            hit = next((i for i, p in enumerate(preds) if i not in used and p[0] == family and line in p[1]), None)
            if hit is None:
                misses.append(f"{path.name}:{line}: family {family}")
            else:
                used.add(hit)
                tp[family] += 1
        for i, p in enumerate(preds):
            found[p[0]] += 1
            if i not in used:
                extra.append(f"{path.name}:{min(p[1])}: family {p[0]} ({p[2]})")
        report[path.name] = {"sites": marks, "findings": [(p[0], sorted(p[1]), p[2]) for p in preds]}
    print(f"{len(report)} files, {sum(sites.values())} sites of families {', '.join(map(str, FAMILIES))}")
    print(f"  {'family':>6} {'sites':>6} {'found':>6} {'tp':>4} {'precision':>10} {'recall':>8}")
    for fam in FAMILIES:
        p = tp[fam] / found[fam] if found[fam] else 1.0
        r = tp[fam] / sites[fam] if sites[fam] else 1.0
        print(f"  {fam:>6} {sites[fam]:>6} {found[fam]:>6} {tp[fam]:>4} {p:>10.1%} {r:>8.1%}")
    total_tp, total_found, total_sites = sum(tp.values()), sum(found.values()), sum(sites.values())
    print(f"  {'all':>6} {total_sites:>6} {total_found:>6} {total_tp:>4} "
          f"{(total_tp / total_found if total_found else 1.0):>10.1%} {total_tp / total_sites:>8.1%}")
    for title, rows in (("misses", misses), ("false positives", extra)):
        print(f"\n{title} ({len(rows)}):")
        for row in rows:
            print("  " + row)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
