"""Run `adopter verify` on every fix `adopter fix` writes in a corpus, wherever the class constructs.

    python bench/verify_corpus.py --set transformers [--limit N] [--repeats 3] [--class-timeout 90]
    python bench/verify_corpus.py --set realworld [--folders] [--packages DIR] [--site DIR]
    python bench/verify_corpus.py --files a.py b.py --pythonpath SITE   # any files, their imports on SITE
    python bench/verify_corpus.py --summarise run1.jsonl run2.jsonl      # the table of earlier runs

`transformers`: the 4.35.0 modeling files as installed in `.cache/tf435` (scripts/fetch-corpus.sh), imported
as part of their package (relative imports work). `realworld`: the model files of the pinned real-world
distributions (bench/realworld_corpus.py; `--folders`: every module of the folders they are in), each run from its whole unpacked distribution (`--packages`,
default bench/out/rw_pkgs, unpacked on first use) with `--site` (folders holding their third-party
dependencies, e.g. `pip install --target DIR einops`) and `.cache/tf435` (huggingface_hub, safetensors) on
the path; a distribution's dependency that is not installed shows as a file that does not import.

The fixes are planned here, as `adopter verify` plans them (`adopter.verify.cases.fix_cases`: each fix
applied alone to the file). Each file's fixes then run in one worker subprocess (`adopter.verify.runner`,
the runner of `adopter verify`) with a timeout of `--import-allowance` + `--class-timeout` per class;
when that times out or crashes, each class runs again alone, with `--class-timeout` (plus the allowance).
The workers run with OMP_NUM_THREADS=1 (`--threads`): on a shared machine a single thread is the steadier
measure. Prints, per rule: fixes, classes run, built, equivalent, not equivalent, and the CPU speedup of
forward+backward over the built classes (median and interquartile range, one median of `--repeats` pairs
per class); then the totals, the load and the CPU time of the workers. Results go to `--out` (JSON) and,
as they come, to `--out` with `.jsonl`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from tf435 import TF435  # bench/tf435.py: .cache/tf435 unless ADOPTER_TF435 names another

ROOT = Path(__file__).resolve().parents[1]
RW_PACKAGES = ROOT / "bench" / "out" / "rw_pkgs"
DEFAULT_OUT = ROOT / "bench" / "out" / "verify_corpus.json"
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "bench"))

from adopter.verify.cases import FixCase, fix_cases  # noqa: E402
from adopter.verify.runner import Options, RunFailed, run_cases  # noqa: E402


def transformers_files(limit: int | None) -> tuple[list[Path], list[str]]:
    from adopter.corpus import modeling_files

    files = [TF435 / f.member for f in modeling_files("4.35.0")]
    missing = [f for f in files if not f.is_file()]
    if missing:
        sys.exit(f"{len(missing)} modeling files are not installed in {TF435}: run scripts/fetch-corpus.sh")
    return (files[:limit] if limit else files), [str(TF435)]


def realworld_files(packages: Path, limit: int | None, folders: bool) -> tuple[list[Path], list[str]]:
    """The listed files of each pinned distribution or, with `folders`, every module of the folders they
    are in (timm/models/, vit_pytorch/, ...: the same libraries' other model files)."""
    import realworld_corpus

    if not packages.is_dir():
        realworld_corpus.extract_packages(packages)
    files: list[Path] = []
    roots: list[str] = []
    for dist, _version, members in realworld_corpus.MANIFEST:
        roots.append(str(packages / dist))
        listed = [packages / dist / m for m in members]
        if folders:
            dirs = list(dict.fromkeys(f.parent for f in listed))
            listed = [f for d in dirs for f in sorted(d.glob("*.py")) if f.name != "__init__.py"]
        files.extend(f for f in listed if f not in files)
    missing = [f for f in files if not f.is_file()]
    if missing:
        sys.exit(f"{len(missing)} files missing under {packages} (first: {missing[0]}); remove it to unpack again")
    return (files[:limit] if limit else files), [*roots, str(TF435)]


def heldout_files(packages: Path) -> tuple[list[Path], list[str]]:
    """The listed files of the held-out distributions, each run from its whole unpacked distribution (under
    `packages`, unpacked on first use). Their paths are never printed: `--figures-only` is implied."""
    import heldout_corpus
    import realworld_corpus

    if not packages.is_dir():
        realworld_corpus.extract_packages(packages, heldout_corpus.MANIFEST, heldout_corpus.cache_dir())
    files = [packages / dist / m for dist, _version, members in heldout_corpus.MANIFEST for m in members]
    roots = [str(packages / dist) for dist, _version, _members in heldout_corpus.MANIFEST]
    if any(not f.is_file() for f in files):
        sys.exit(f"held-out files missing under {packages}; remove it to unpack again")
    return list(dict.fromkeys(files)), [*roots, str(TF435)]


def _not_run(case: FixCase, why: str) -> list[dict[str, Any]]:
    return [{"rule": case.rule_id, "line": case.line, "scope": case.scope, "class": c, "not_built": why[:600]}
            for c in case.classes or (case.scope,)]


def run_file(path: Path, source: str, cases: tuple[FixCase, ...], args: argparse.Namespace) -> dict[str, Any]:
    """The rows of every case of one file: all in one worker; each class alone when that fails."""
    n_classes = sum(max(len(c.classes), 1) for c in cases)
    options = Options(timeout=args.import_allowance + args.class_timeout * n_classes, repeats=args.repeats)
    try:
        return {"rows": run_cases(path, source, cases, options)["rows"], "mode": "file"}
    except RunFailed as exc:
        whole = str(exc)
    if n_classes == 1 or ("took longer" not in whole and "without a result" not in whole):
        return {"rows": [r for c in cases for r in _not_run(c, whole)], "mode": "file", "error": whole[:300]}
    rows: list[dict[str, Any]] = []
    alone = replace(options, timeout=args.import_allowance + args.class_timeout)
    for case in cases:
        for name in case.classes:
            one = replace(case, classes=(name,))
            try:
                rows.extend(run_cases(path, source, (one,), alone)["rows"])
            except RunFailed as exc:
                rows.extend(_not_run(one, str(exc)))
    return {"rows": rows, "mode": "per class", "error": whole[:300]}


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    per_rule: dict[str, dict[str, Any]] = defaultdict(lambda: {"fixes": 0, "classes": 0, "built": 0, "equivalent": 0,
                                                                 "not_equivalent": [], "speedups": []})
    for res in results:
        fixes = {(r["rule"], r["line"]) for r in res.get("rows", [])}
        for rule, _ in fixes:
            per_rule[rule]["fixes"] += 1
        for row in res.get("rows", []):
            tally = per_rule[row["rule"]]
            tally["classes"] += 1
            if "not_built" in row:
                continue
            tally["built"] += 1
            if row.get("equivalent"):
                tally["equivalent"] += 1
            else:
                tally["not_equivalent"].append(f"{res['path']}:{row['line']} {row['class']}: "
                                               f"{row.get('error') or row.get('worst')} (max |diff| {row.get('max_abs')})")
            if "speedup" in row:
                tally["speedups"].append(row["speedup"])
    return dict(per_rule)


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) >= 2 else [values[0]] * 3
    below = sum(1 for v in values if v < 1.0)
    return f"{statistics.median(values):.2f}x [{q[0]:.2f}-{q[2]:.2f}] ({below}/{len(values)} <1x)"


def print_table(per_rule: dict[str, Any], results: list[dict[str, Any]], figures_only: bool = False) -> None:
    print(f"{'rule':34} {'fixes':>5} {'cls':>4} {'built':>5} {'equiv':>5} {'not':>4}  speedup median [IQR] (slower)")
    totals = [0, 0, 0, 0, 0]
    for rule in sorted(per_rule):
        t = per_rule[rule]
        counts = (t["fixes"], t["classes"], t["built"], t["equivalent"], len(t["not_equivalent"]))
        print(f"{rule:34} {counts[0]:>5} {counts[1]:>4} {counts[2]:>5} {counts[3]:>5} {counts[4]:>4}  {_spread(t['speedups'])}")
        totals = [a + b for a, b in zip(totals, counts)]
    print(f"{'total (fix, class) rows':34} {totals[0]:>5} {totals[1]:>4} {totals[2]:>5} {totals[3]:>5} {totals[4]:>4}")
    classes = {(r["path"], row["class"]) for r in results for row in r.get("rows", [])}
    built = {(r["path"], row["class"]) for r in results for row in r.get("rows", []) if "not_built" not in row}
    bad = {(r["path"], row["class"]) for r in results for row in r.get("rows", [])
           if "not_built" not in row and not row.get("equivalent")}
    print(f"distinct classes attempted: {len(classes)}, constructed and run: {len(built)}"
          f" ({100.0 * len(built) / max(len(classes), 1):.0f} %), every fix equivalent: {len(built - bad)}"
          f" ({100.0 * len(built - bad) / max(len(built), 1):.0f} % of those run)")
    with_cases = [r for r in results if r.get("rows")]
    print(f"files: {len(results)}, with a fix to run: {len(with_cases)}, "
          f"whole-file failures: {sum(1 for r in with_cases if r.get('error') and r.get('mode') == 'file')}")
    reasons: dict[str, int] = defaultdict(int)
    for r in results:
        for row in r.get("rows", []):
            if "not_built" in row:
                reasons[_reason(row["not_built"])] += 1
    if figures_only:  # the held-out set: counts only, never its code, classes or lines
        print(f"not built: {sum(reasons.values())} rows (reasons withheld: --figures-only)")
        return
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  not built x{n}: {why}")
    for rule in sorted(per_rule):
        for line in per_rule[rule]["not_equivalent"][:10]:
            print(f"  NOT EQUIVALENT {rule}: {line}")


def _reason(text: str) -> str:
    for key in ("took longer", "No module named", "does not run on the inferred inputs", "inputs (", "missing",
                "importing", "without a result"):
        if key in text:
            at = text.index(key)
            return text[max(0, at - 20): at + 70].replace("\n", " ")
    return text[:90]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=("transformers", "realworld", "heldout"), help="a corpus of this repository "
                    "(heldout: scored only, its figures printed and nothing else; results under .cache/)")
    ap.add_argument("--files", nargs="*", default=[], help="other files (their imports on --pythonpath)")
    ap.add_argument("--pythonpath", default="", help="folders the files' imports are in")
    ap.add_argument("--packages", type=Path, default=RW_PACKAGES, help="realworld: the unpacked distributions")
    ap.add_argument("--folders", action="store_true",
                    help="realworld: every module of the folders of the listed files, not only the listed ones")
    ap.add_argument("--site", action="append", default=[], help="realworld: folders of their dependencies")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--skip", type=int, default=0, help="leave out the first N files (to split a run)")
    ap.add_argument("--repeats", type=int, default=3, help="timed pairs per fix and class")
    ap.add_argument("--class-timeout", type=float, default=90.0, help="seconds per class")
    ap.add_argument("--import-allowance", type=float, default=60.0, help="seconds per run to import the file")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of the workers")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--summarise", nargs="+", type=Path, metavar="JSONL",
                    help="print the table of earlier runs' .jsonl results (a file in a later one replaces it)")
    args = ap.parse_args()
    if args.summarise:
        by_path: dict[str, dict[str, Any]] = {}
        for stream_path in args.summarise:
            for line in stream_path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    res = json.loads(line)
                    by_path[res["path"]] = res
        print(f"# {len(by_path)} files from {', '.join(map(str, args.summarise))}")
        print_table(summarise(list(by_path.values())), list(by_path.values()))
        return 0
    if args.set == "transformers":
        files, path = transformers_files(args.limit)
    elif args.set == "realworld":
        files, path = realworld_files(args.packages, args.limit, args.folders)
        path = [*args.site, *path]
    elif args.set == "heldout":
        files, path = heldout_files(ROOT / ".cache" / "heldout_pkgs")
        path = [*args.site, *path]
        if args.out == DEFAULT_OUT:
            args.out = ROOT / ".cache" / "heldout_verify.json"
    else:
        files, path = [Path(f) for f in args.files], []
    files = files[args.skip:]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (*path, args.pythonpath) if p)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from adopter.engine import detect_environment, load_rules
    from adopter.session import RuleContext, Session

    ruleset = load_rules(())
    session = Session(RuleContext(tuple(ruleset.rules), (), detect_environment("auto")))
    start, load0 = time.time(), os.getloadavg()[0]
    results: list[dict[str, Any]] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    stream = args.out.with_suffix(".jsonl").open("w", encoding="utf-8")
    for i, path_ in enumerate(files, 1):
        source = path_.read_text(encoding="utf-8")
        cases, unfixed = fix_cases(session, source, str(path_))
        session.forget()
        res: dict[str, Any] = {"path": str(path_), "rows": [], "unfixed": len(unfixed)}
        if cases:
            t0 = time.time()
            res.update(run_file(path_, source, cases, args))
            res["seconds"] = round(time.time() - t0, 1)
        results.append(res)
        stream.write(json.dumps(res) + "\n")
        stream.flush()
        print(f"[{i}/{len(files)}] {'(held-out file)' if args.set == 'heldout' else path_.name}: {len(cases)} fixes, {len(res['rows'])} rows, "
              f"{res.get('seconds', 0)} s{' (' + res['error'][:80] + ')' if res.get('error') and args.set != 'heldout' else ''}",
              file=sys.stderr)
    stream.close()
    per_rule = summarise(results)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    args.out.write_text(json.dumps({"results": results, "per_rule": per_rule}, indent=1), encoding="utf-8")
    print(f"# {len(files)} files in {time.time() - start:.0f} s wall; workers' CPU {usage.ru_utime:.0f} s user + "
          f"{usage.ru_stime:.0f} s sys; load {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end, on "
          f"{os.cpu_count()} CPUs; OMP_NUM_THREADS={args.threads}, {args.repeats} timed pairs per class")
    print_table(per_rule, results, figures_only=args.set == "heldout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
