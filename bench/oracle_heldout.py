"""The recall oracle over held-out distributions, as a measurement only (issue 20): why the oracle and the held-out
labels disagree.

`run` installs the chosen held-out distributions at the versions `bench/heldout_corpus.py`'s MANIFEST pins (the
labels' lines hold only there) into an oracle folder of its own (`ADOPTER_ORACLE_ROOT`, default `.cache/hocover`:
never the shared `.cache/oracle`) and runs the oracle's hosts over them. `report` joins the labels (sites and
not_sites) with those per-class results and with `adopter check --format json` on the same files, and prints
aggregate counts only, by family and overall: no site, file, line or distribution is ever printed (the held-out set
stays held out; there is no census of missed forms here).

    python bench/oracle_heldout.py run --dists-file B7.txt [--dists-file B8.txt] [--max-classes 150] [--jobs 1]
    python bench/oracle_heldout.py report --dists-file B7.txt [...] [--json OUT]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(ROOT / "server"))

DEFAULT_ROOT = ROOT / ".cache" / "hocover"
SHARED_ROOT = ROOT / ".cache" / "oracle"


def oracle_root(given: str | None) -> Path:
    """The oracle folder this measurement uses; never the shared one (the lead's run reads and writes it)."""
    root = Path(given or os.environ.get("ADOPTER_ORACLE_ROOT") or DEFAULT_ROOT).resolve()
    if root == SHARED_ROOT.resolve():
        raise SystemExit(f"oracle_heldout: {root} is the shared oracle folder; name a folder of its own")
    return root


def read_names(paths: list[Path]) -> list[str]:
    """Distribution names from files of whitespace-separated names, in order, each once."""
    names: list[str] = []
    for path in paths:
        for name in path.read_text(encoding="utf-8").split():
            if name not in names:
                names.append(name)
    return names


def pinned_specs(names: list[str], manifest: tuple[tuple[str, str, tuple[str, ...]], ...]) -> list[str]:
    """`name==version` for each name, at the version the manifest pins; a name not in it is an error."""
    pins = {dist: version for dist, version, _ in manifest}
    unknown = [n for n in names if n not in pins]
    if unknown:
        raise SystemExit(f"oracle_heldout: {len(unknown)} name(s) not in the held-out MANIFEST")
    return [f"{n}=={pins[n]}" for n in names]


def run(root: Path, specs: list[str], *, jobs: int, class_timeout: float, max_classes: int) -> None:
    """Run the oracle's installer and hosts over `specs` in `root`. Nothing is excluded there (an empty
    ADOPTER_ORACLE_HELDOUT): these are the held-out distributions, run on purpose, in a folder of their own."""
    root.mkdir(parents=True, exist_ok=True)
    nothing = root / "excluded-none.txt"
    nothing.write_text("\n", encoding="utf-8")  # a file with no names: `excluded()` reads it, excludes nothing
    os.environ["ADOPTER_ORACLE_ROOT"] = str(root)
    os.environ["ADOPTER_ORACLE_HELDOUT"] = str(nothing)
    os.environ.pop("ADOPTER_ORACLE_RESULTS", None)
    from oracle import install
    from oracle import run as oracle_run

    assert install.CACHE == root and oracle_run.RESULTS == root / "results", "the oracle read another root"
    oracle_run.run(specs, jobs=jobs, class_timeout=class_timeout, max_classes=max_classes)


def _tree(path: str) -> ast.Module:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


def _lines_hold(labels: dict[str, dict[str, Any]], names: list[str], site: Path) -> Counter[str]:
    """How many labels' `text` is on their line in the installed file (the installed copy is the labelled one)."""
    out: Counter[str] = Counter()
    for name in names:
        for member, entry in (labels.get(name) or {}).get("files", {}).items():
            try:
                lines = (site / member).read_text(encoding="utf-8").splitlines()
            except OSError:
                out["file not installed"] += len(entry.get("sites", ()))
                continue
            for s in entry.get("sites", ()):
                ok = 0 < s["line"] <= len(lines) and s["text"] in lines[s["line"] - 1]
                out["holds" if ok else "does not hold"] += 1
    return out


def report(root: Path, names: list[str], json_out: Path | None, *, whole: bool = True) -> int:
    """Print the aggregate tables (counts only) for the distributions `names` run in `root`."""
    os.environ["ADOPTER_ORACLE_ROOT"] = str(root)
    from heldout_corpus import load_labels, scope_of
    from oracle.patterns import retired
    from oracle.report import check
    from oracle_heldout_join import DEV_ORACLE, fractions, join, labels_of, load_classes

    site = next((root / "venv" / "lib").glob("python3*/site-packages"))
    labels = load_labels()
    classes, finished = load_classes(root / "results", names)
    run_names = [n for n in names if n in finished]  # labels of distributions that did not finish: counted apart
    sites, not_sites = labels_of(labels, run_names, site)
    left_out, _ = labels_of(labels, [n for n in names if n not in finished], site)
    files = sorted({lb.path for lb in sites} | set(not_sites))
    present = [f for f in files if Path(f).exists()]
    findings = [{**fd, "path": os.path.realpath(fd["path"])} for fd in check(present)]
    trees = {f: _tree(f) for f in present}
    table = join(sites, not_sites, classes, finished, findings, retired,
                 {f: {n.name for n in t.body if isinstance(n, ast.ClassDef)} for f, t in trees.items()},
                 lambda f, line: scope_of(trees[f], line) if f in trees else "", _failed_files(root, run_names, site))
    figures: dict[str, Any] = {
        "distributions": {"chosen": len(names), "finished": len(finished), "labelled files": len(files),
                          "installed": len(present), "sites in distributions not finished": len(left_out)},
        "label lines in the installed files": dict(_lines_hold(labels, run_names, site)),
        "classes, all": fractions(classes), "classes, labelled files": fractions(classes, set(files)),
        "dev oracle r4": DEV_ORACLE, "by family": {k: dict(v) for k, v in sorted(table.items(), key=_family_order)},
    }
    figures["module imports"] = dict(_imports(root / "results", run_names).most_common())
    if whole:
        figures["oracle recall, whole distributions"] = _whole(root, finished)
    print_tables(figures)
    if json_out:
        json_out.write_text(json.dumps(figures, indent=1, sort_keys=True), encoding="utf-8")
    return 0


def _imports(results: Path, names: list[str]) -> Counter[str]:
    """The distributions' module imports by outcome: "ok" or the exception's type (never its message)."""
    out: Counter[str] = Counter()
    for name in names:
        try:
            imports = json.loads((results / name / "_imports.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.update("ok" if v == "ok" else str(v).split(":")[0] for v in imports.values())
    return out


def _failed_files(root: Path, names: list[str], site: Path) -> set[str]:
    """The installed files whose module failed to import in the run."""
    out: set[str] = set()
    for name in names:
        try:
            imports = json.loads((root / "results" / name / "_imports.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for module, outcome in imports.items():
            if outcome != "ok":
                base = site / module.replace(".", "/")
                out.update(str(p.resolve()) for p in (base.with_suffix(".py"), base / "__init__.py"))
    return out


def _family_order(item: tuple[str, Any]) -> tuple[int, int]:
    return (1, 0) if item[0] == "all" else (0, int(item[0]))


def _whole(root: Path, finished: set[str]) -> dict[str, int]:
    """The oracle's own recall over every traced file of the finished distributions: its family counts, and how
    many distributions hold its sites and its misses (counted, never listed)."""
    from oracle.report import load, score

    dists = {k: v for k, v in load(root / "results").items() if k in finished}
    table = score(dists)
    fams = table["families"]
    return {"sites": sum(f["sites"] for f in fams.values()), "found": sum(f["found"] for f in fams.values()),
            "distributions with sites": sum(1 for d in table["dists"].values() if d.get("sites")),
            "distributions with a miss": len({m["dist"] for m in table["misses"]}),
            **{f"family {k} sites/found": f"{v['sites']}/{v['found']}" for k, v in fams.items() if v["sites"]}}


COLUMNS = (("labelled", "labelled"), ("checker", "chk"), ("class traced", "cls.tr"),
           ("class traced: checker", "cls:chk"), ("class traced: oracle agrees in class", "cls:agree"),
           ("class traced: oracle agrees in class: checker", "clsag:chk"),
           ("traced", "traced"), ("traced: checker", "tr:chk"), ("untraced", "untraced"),
           ("untraced: checker", "untr:chk"), ("traced: oracle agrees", "agree"),
           ("traced: oracle agrees: checker", "ag:chk"), ("traced: oracle agrees at its anchor", "ag@anchor"),
           ("traced: no oracle site", "tr:no-or"), ("oracle sites", "or.sites"), ("oracle sites: checker", "or:chk"),
           ("oracle sites not labelled", "or:unlab"), ("oracle sites not labelled: listed as not_sites", "unlab:ns"),
           ("oracle sites not labelled in class", "or:unl.cls"))


def print_tables(figures: dict[str, Any]) -> None:
    """The figures as plain-text tables: counts by family and reason, never a site."""
    for key in ("distributions", "label lines in the installed files", "classes, all", "classes, labelled files",
                "dev oracle r4", "module imports", "oracle recall, whole distributions"):
        if key in figures:
            print(f"{key}: {figures[key]}")
    by = figures["by family"]
    print("family " + " ".join(f"{short:>9}" for _, short in COLUMNS))
    for fam, row in by.items():
        print(f"{fam:>6} " + " ".join(f"{row.get(k, 0):>9}" for k, _ in COLUMNS))
    reasons = sorted({k for row in by.values() for k in row if k.startswith("untraced: ") and k != "untraced: checker"})
    print("untraced labels by reason (all families):")
    for r in reasons:
        print(f"  {by['all'].get(r, 0):>5}  {r.removeprefix('untraced: ')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("run", "report"))
    parser.add_argument("--dists-file", type=Path, action="append", required=True,
                        help="a file of held-out distribution names (repeatable)")
    parser.add_argument("--root", help="the oracle folder (default $ADOPTER_ORACLE_ROOT or .cache/hocover)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--class-timeout", type=float, default=20.0)
    parser.add_argument("--max-classes", type=int, default=150)
    parser.add_argument("--json", type=Path, help="write the aggregate figures as JSON here")
    parser.add_argument("--labelled-only", action="store_true",
                        help="skip the oracle's recall over every traced file of the distributions")
    args = parser.parse_args()
    from heldout_corpus import MANIFEST

    root = oracle_root(args.root)
    names = read_names(args.dists_file)
    if args.command == "run":
        run(root, pinned_specs(names, MANIFEST), jobs=args.jobs, class_timeout=args.class_timeout,
            max_classes=args.max_classes)
        return 0
    return report(root, names, args.json, whole=not args.labelled_only)


if __name__ == "__main__":
    raise SystemExit(main())
