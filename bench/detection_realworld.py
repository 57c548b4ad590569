"""Detection on the real-world or the held-out set: precision and recall of families 4–17 against hand-made labels.

Labels: `bench/data/<set>/labels/<distribution>.json` (method: `bench/data/<set>/LABELLING.md`);
files: `bench/realworld_corpus.py`, `bench/heldout_corpus.py` and `bench/dev2_corpus.py` (a second dev set). A finding covers a label when they name the same file and family and
the label's line is one of the finding's lines (any line of its statements or `__init__` bindings). Each
label and each finding is used once; findings at the same lines are one prediction.
Run: `.venv/bin/python bench/detection.py --set realworld|heldout|retired|heldout-all|dev2 [--json OUT] [--figures-only]`
(`--figures-only` prints the table without the misses: the held-out set is scored, never studied. Since stop 37
`heldout` is the kept half of the labelled held-out set and `retired` its retired half, now dev data whose misses
may be read; `heldout-all` scores both, as `heldout` did up to stop 36.)
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from realworld_corpus import files as corpus_files

FAMILIES = range(4, 18)
DATA = Path(__file__).parent / "data"


HELDOUT_SETS = ("heldout", "retired", "heldout-all")  # the labelled held-out set: kept half, retired half, both


def _files(labelled_set: str):
    if labelled_set in HELDOUT_SETS:
        from heldout_corpus import files

        return files()
    if labelled_set == "dev2":
        from dev2_corpus import files as dev2_files

        return dev2_files()
    return corpus_files()


def _distributions(labelled_set: str) -> frozenset[str] | None:
    """Which held-out distributions a set scores: `heldout` the kept batches, `retired` the retired ones
    (`heldout_corpus.RETIRED_BATCHES`), `heldout-all` both; None (every labelled one) for the other sets."""
    if labelled_set not in ("heldout", "retired"):
        return None
    from heldout_corpus import batches, retired

    gone = retired()
    return gone if labelled_set == "retired" else frozenset(batches()) - gone


def load_labels(labelled_set: str = "realworld") -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """Sites and not-sites per file key (`<distribution>/<member>`), of the files marked reviewed."""
    sites: dict[str, list[dict]] = {}
    not_sites: dict[str, list[dict]] = {}
    keep = _distributions(labelled_set)
    folder = "heldout" if labelled_set in HELDOUT_SETS else labelled_set
    for path in sorted((DATA / folder / "labels").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if keep is not None and data["distribution"] not in keep:
            continue
        for member, entry in data["files"].items():
            if not entry.get("reviewed"):
                continue
            key = f"{data['distribution']}/{member}"
            sites[key] = [s for s in entry.get("sites", ()) if s["family"] in FAMILIES]
            not_sites[key] = list(entry.get("not_sites", ()))
    return sites, not_sites


def _lines(finding) -> frozenset[int]:
    spans = (finding.span, *finding.stmt_spans, *finding.init_spans)
    return frozenset(n + 1 for s in spans for n in range(s.start_line, s.end_line + 1))


def predict(keys: set[str], root: Path | None = None,
            labelled_set: str = "realworld") -> dict[str, list[tuple[int, int, frozenset[int], str]]]:
    """Per file: (family, first line, lines, rule id) of each finding, one per family and line set.

    With `root` (whole packages unpacked by `realworld_corpus.py --packages`), each file is analysed at
    its path there, `root/<distribution>/<member>`, so imports from the package's other files resolve
    (cross-file reach); without it, at its member path, where nothing else can be read.
    """
    from adopter.analysis import analyse
    from adopter.engine import check, detect_environment, load_rules

    rules = [r for r in load_rules().rules if r.family in FAMILIES]
    env = detect_environment("cpu")
    out: dict[str, list[tuple[int, int, frozenset[int], str]]] = {}
    for f in _files(labelled_set):
        if f.key not in keys:
            continue
        path = str((root / f.package / f.member).resolve()) if root is not None else f.member
        result = check(analyse(f.text, path), rules, env)
        seen: set[tuple[int, frozenset[int]]] = set()
        found = []
        for finding in result.findings:
            lines = _lines(finding)
            if (finding.family, lines) in seen:
                continue
            seen.add((finding.family, lines))
            found.append((finding.family, finding.span.start_line + 1, lines, finding.rule_id))
        out[f.key] = found
    return out


def score(sites: dict[str, list[dict]], found: dict[str, list[tuple[int, int, frozenset[int], str]]]):
    """Greedy one-to-one matching per file and family: (tp, misses, false positives) per family."""
    tp: dict[int, int] = defaultdict(int)
    misses: list[tuple[str, dict]] = []
    extra: list[tuple[str, tuple[int, int, frozenset[int], str]]] = []
    for key, labels in sites.items():
        preds = list(found.get(key, ()))
        used: set[int] = set()
        for label in sorted(labels, key=lambda s: s["line"]):
            for _ in range(label.get("count", 1)):  # `count`: that many sites of the family begin on the line
                hit = next((i for i, p in enumerate(preds) if i not in used and p[0] == label["family"]
                            and label["line"] in p[2]), None)
                if hit is None:
                    misses.append((key, label))
                else:
                    used.add(hit)
                    tp[label["family"]] += 1
        extra.extend((key, p) for i, p in enumerate(preds) if i not in used)
    return tp, misses, extra


def main(json_out: str | None = None, root: Path | None = None, labelled_set: str = "realworld",
         figures_only: bool = False, distributions: Sequence[str] | None = None) -> int:
    sites, not_sites = load_labels(labelled_set)
    if distributions:
        unknown = set(distributions) - {k.split("/")[0] for k in sites}
        if unknown:
            raise SystemExit(f"no labelled files of {', '.join(sorted(unknown))} in the {labelled_set} set")
        sites = {k: v for k, v in sites.items() if k.split("/")[0] in distributions}
    found = predict(set(sites), root, labelled_set)
    tp, misses, extra = score(sites, found)
    n_labels = defaultdict(int)
    for labels in sites.values():
        for s in labels:
            n_labels[s["family"]] += s.get("count", 1)
    n_found = defaultdict(int)
    for preds in found.values():
        for p in preds:
            n_found[p[0]] += 1
    dists = {k.split("/")[0] for k in sites}
    print(f"{len(sites)} labelled files from {len(dists)} distributions, {sum(n_labels.values())} sites of "
          "families 4-17")
    print(f"{'family':>8} {'labels':>7} {'found':>6} {'tp':>5} {'precision':>10} {'recall':>8}")
    table = {}
    for fam in [*FAMILIES, 0]:
        lab = sum(n_labels.values()) if fam == 0 else n_labels[fam]
        fnd = sum(n_found.values()) if fam == 0 else n_found[fam]
        t = sum(tp.values()) if fam == 0 else tp[fam]
        if fam and not lab and not fnd:
            continue
        row = {"labels": lab, "found": fnd, "tp": t, "precision": t / fnd if fnd else 1.0,
               "recall": t / lab if lab else 1.0}
        table["overall" if fam == 0 else str(fam)] = row
        print(f"{'overall' if fam == 0 else fam:>8} {lab:>7} {fnd:>6} {t:>5} {row['precision']:>10.1%} "
              f"{row['recall']:>8.1%}")
    if misses and not figures_only:
        print(f"\nmisses ({len(misses)}):")
        for key, s in misses:
            print(f"  {key}:{s['line']}: family {s['family']} {s.get('scope', '')} — {s.get('text', '')}")
    if extra and not figures_only:
        print(f"\nfalse positives ({len(extra)}):")
        for key, p in extra:
            judged = [n for n in not_sites.get(key, ()) if n.get("family") == p[0] and n.get("line") in p[2]]
            why = f" — labelled not a site: {judged[0].get('reason', '')}" if judged else ""
            print(f"  {key}:{p[1]}: family {p[0]} ({p[3]}){why}")
    if json_out and not figures_only:
        Path(json_out).write_text(json.dumps({"table": table, "misses": [[k, s] for k, s in misses],
                                              "false_positives": [[k, p[1], p[0], p[3]] for k, p in extra]},
                                             indent=1), encoding="utf-8")
    return 0
