"""Fix coverage: of the true findings in the families that have a fix, the share `adopter fix` writes a fix for.

True findings: the labelled sites (`bench/data/<set>/labels`, families 4-17) that the checker finds, matched
as `bench/detection.py --set <set>` matches them (same file and family, the label's line among the
finding's lines; each label and finding used once). A family has a fix when one of its rules declares a
rewrite strategy (`rewrite <strategy>` in `rules/*.adl`); a true finding of such a family counts even when
the rule that found it has none (then it is not fixed). A true finding is fixed when `fix` of the whole
file (what `adopter fix FILE --target cpu` writes; `--target cuda` for the CUDA one) leaves no finding of its family at the label's line
(`FileFix.skipped` lists every finding left, at lines of the user's file) and a fix was written for it: one
applied at the label's line, or no finding of its family left in its class in the fixed text (`skipped`
leaves out findings inside code a fix wrote, so a copied line alone would look fixed).

    .venv/bin/python bench/fix_coverage.py --set realworld [--root DIR] [--json OUT]
    .venv/bin/python bench/fix_coverage.py --set heldout --figures-only   # scored, never studied

Without `--figures-only` it prints each true finding not fixed with the reason `fix` gives.
`--figures-only` prints the table only (the held-out set is run, its files and labels never read by a person).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from detection_realworld import FAMILIES, _files, _lines, load_labels


def fix_families(target: str = "cpu") -> frozenset[int]:
    """Families 4-17 with a rule that declares a rewrite strategy and has a kernel target for `target`
    (f04's and f06's targets are CUDA kernels: on the CPU target those families have no fix)."""
    from adopter.engine import detect_environment, load_rules

    env = detect_environment(target)
    return frozenset(r.family for r in load_rules().rules if r.family in FAMILIES and r.replacement is not None
                     and (not r.targets or any(env.offers(t) for t in r.targets)))


def measure(labelled_set: str, root: Path | None = None, target: str = "cpu") -> dict:
    """Per family: true findings, fixed, and the true findings not fixed (key, line, family, rule, reason)."""
    from adopter.session import Session, load_context

    sites, _ = load_labels(labelled_set)
    with_fix = fix_families(target)
    session = Session(load_context(target=target))
    true: dict[int, int] = defaultdict(int)
    fixed: dict[int, int] = defaultdict(int)
    left: list[tuple[str, int, int, str, str]] = []
    for f in _files(labelled_set):
        labels = sites.get(f.key)
        if not labels:
            continue
        path = str((root / f.package / f.member).resolve()) if root is not None else f.member
        analysed = session.analysed(f.text, path)
        preds: list[tuple[int, frozenset[int], str, str]] = []
        seen: set[tuple[int, frozenset[int]]] = set()
        for finding in analysed.findings:
            if finding.family not in FAMILIES:
                continue
            lines = _lines(finding)
            if (finding.family, lines) not in seen:
                seen.add((finding.family, lines))
                preds.append((finding.family, lines, finding.rule_id, finding.scope_name))
        used: set[int] = set()
        matched: list[tuple[dict, tuple[int, frozenset[int], str, str]]] = []
        for label in sorted(labels, key=lambda s: s["line"]):
            hit = next((i for i, p in enumerate(preds) if i not in used and p[0] == label["family"]
                        and label["line"] in p[1]), None)
            if hit is not None:
                used.add(hit)
                matched.append((label, preds[hit]))
        matched = [m for m in matched if m[0]["family"] in with_fix]
        if not matched:
            continue
        result = session.fix(f.text, path)
        remaining = [(g.family, _lines(g), g.rule_id, reason) for g, reason in result.skipped]
        applied = [(g.family, _lines(g)) for g in result.applied]
        # `skipped` omits findings inside code a fix wrote: a rewrite that copied the site's line would look
        # fixed. So a site also needs a fix written at its line (spans of the user's text in the first round),
        # or, for a fix written in a later round (spans of a rewritten text), no finding of its family left in
        # its class in the fixed text.
        after = {(g.family, g.scope_name) for g in session.analysed(result.new_source, path).findings}
        for label, pred in matched:
            family = label["family"]
            true[family] += 1
            still = next((r for r in remaining if r[0] == family and label["line"] in r[1]), None)
            written = any(a[0] == family and label["line"] in a[1] for a in applied)
            if still is None and (written or (family, pred[3]) not in after):
                fixed[family] += 1
            elif still is not None:
                left.append((f.key, label["line"], family, still[2], still[3]))
            else:
                left.append((f.key, label["line"], family, pred[2], "no fix was written for it (the finding is "
                             "left inside code another fix wrote)"))
    return {"families_with_fix": sorted(with_fix), "true": dict(true), "fixed": dict(fixed), "left": left}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=("realworld", "heldout"), default="realworld")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="analyse and fix each file inside its whole unpacked package under DIR "
                             "(`bench/realworld_corpus.py --packages`)")
    parser.add_argument("--target", choices=("cpu", "cuda"), default="cpu",
                        help="the device `fix` writes for (default cpu; cuda adds the families whose kernels "
                             "are CUDA ones, where their packages are installed)")
    parser.add_argument("--figures-only", action="store_true",
                        help="the table only, no site or reason (score the held-out set this way)")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()
    out = measure(args.set, args.root, args.target)
    true, fixed = out["true"], out["fixed"]
    print(f"{args.set}, target {args.target}: true findings in families with a fix ({', '.join(map(str, out['families_with_fix']))})")
    print(f"{'family':>8} {'true':>6} {'fixed':>6} {'coverage':>9}")
    table = {}
    for fam in [*sorted(true), 0]:
        t = sum(true.values()) if fam == 0 else true[fam]
        x = sum(fixed.values()) if fam == 0 else fixed.get(fam, 0)
        share = x / t if t else 1.0
        table["overall" if fam == 0 else str(fam)] = {"true": t, "fixed": x, "coverage": share}
        print(f"{'overall' if fam == 0 else fam:>8} {t:>6} {x:>6} {share:>9.1%}")
    if not args.figures_only and out["left"]:
        print(f"\nnot fixed ({len(out['left'])}):")
        for key, line, family, rule, reason in out["left"]:
            print(f"  {key}:{line}: family {family} ({rule}): {reason}")
    if args.json:
        doc = {"table": table} if args.figures_only else {"table": table, "left": out["left"]}
        Path(args.json).write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
