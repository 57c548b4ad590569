"""Metamorphic invariance of detection: does a finding survive the same model written another way?

Each dev file the checker finds something in (realworld, dev2) is rewritten by every meaning-keeping rewrite
of `metamorphic_rewrites` (import spellings, call spellings, renaming, temporaries, extraction, builders,
a class split over two files, neutral noise), `metamorphic_algebra` (einsum, head splits, the attention scale,
softmax modules, gated halves, operand order, written-out norms) and `metamorphic_config` (activations and
norms chosen through dicts, `getattr`, parameters and partials; dimensions from a config object or constants); the checker's findings on the rewrite are compared with those
on the original printed back the same way (`normalise`, itself compared with the original text). Findings
match by (class, through the rewrite's renaming, family) counts. A rewrite under which findings are not
invariant names a weakness of the analysis found without a new label.

Run: `ADOPTER_NATIVE=0 ADOPTER_RESULT_CACHE=0 PYTHONPATH=server python bench/metamorphic.py --sets realworld dev2
[--rewrites NAME ...] [--json OUT] [--jobs N] [--timeout S] [--seed N] [--limit N]`
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import signal
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from metamorphic_algebra import ALGEBRA
from metamorphic_config import CONFIG
from metamorphic_rewrites import GROUPS, MAIN, REWRITES, Variant, apply

# the second round's rewrites (tensor algebra: group 9; configuration: group 10) join the registry `apply` reads
REWRITES.update(ALGEBRA)
REWRITES.update(CONFIG)
GROUPS.update({**dict.fromkeys(ALGEBRA, 9), **dict.fromkeys(CONFIG, 10)})

FAMILIES = range(4, 18)
Key = tuple[str, int]  # (class or function name of the original, family)


@dataclass(frozen=True, slots=True)
class Found:
    """One finding, reduced to what survives a rewrite: its scope, method, family, rule and first line."""

    scope: str
    method: str
    family: int
    rule: str
    line: int


@dataclass(slots=True)
class Outcome:
    """One variant of one rewrite on one file, compared with the file's baseline."""

    file: str
    rewrite: str
    variant: int
    base: int
    kept: int
    lost: list[dict] = field(default_factory=list)
    gained: list[dict] = field(default_factory=list)
    error: str | None = None


# --- running the checker -----------------------------------------------------------------------------------

_RULES = None


def _check(text: str, path: str) -> list[Found]:
    """The checker's findings of families 4–17 on `text` analysed at `path` (pure, no cache)."""
    global _RULES
    from adopter.analysis import analyse
    from adopter.engine import check, detect_environment, load_rules

    if _RULES is None:
        _RULES = ([r for r in load_rules().rules if r.family in FAMILIES], detect_environment("cpu"))
    rules, env = _RULES
    result = check(analyse(text, path), rules, env)
    methods = _method_lines(text)
    seen: set[tuple[str, int, int, int, int, int]] = set()
    out = []
    for f in result.findings:
        lines = (f.span.start_line, f.span.start_col, f.span.end_line, f.span.end_col)
        if (f.scope_name, f.family, *lines) in seen:
            continue
        seen.add((f.scope_name, f.family, *lines))
        out.append(Found(f.scope_name, methods.get(f.span.start_line + 1, ""), f.family, f.rule_id,
                         f.span.start_line + 1))
    return out


def _method_lines(text: str) -> dict[int, str]:
    """Line -> name of the innermost function holding it."""
    out: dict[int, str] = {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out
    fns = sorted((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                 key=lambda n: n.lineno)
    for fn in fns:
        for line in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1):
            out[line] = fn.name
    return out


def _check_variant(v: Variant, member: str) -> list[Found]:
    """Findings of the variant's checked files together (a multi-file variant is written to a package on disk)."""
    if len(v.files) == 1:
        return _check(v.files[MAIN], member)
    with tempfile.TemporaryDirectory(prefix="metamorphic_") as tmp:
        pkg = Path(tmp) / "pkg"
        pkg.mkdir()
        for rel, body in v.files.items():
            (pkg / rel).write_text(body, encoding="utf-8")
        return [f for rel in v.checked for f in _check(v.files[rel], str(pkg / rel))]


# --- comparing ---------------------------------------------------------------------------------------------

def compare(base: Sequence[Found], new: Sequence[Found], classes: dict[str, str] | None = None,
            methods: dict[str, str] | None = None) -> tuple[int, list[Found], list[Found]]:
    """(kept, lost, gained): findings matched by (scope through `classes`, family) counts.

    The lost are the baseline's findings of a key beyond the rewrite's count (the last by line), the gained
    the rewrite's beyond the baseline's.
    """
    classes = classes or {}
    methods = methods or {}
    mapped = [Found(_scope_back(f.scope, classes, methods), methods.get(f.method, f.method), f.family, f.rule,
                    f.line) for f in new]
    a = Counter((f.scope, f.family) for f in base)
    b = Counter((f.scope, f.family) for f in mapped)
    lost: list[Found] = []
    gained: list[Found] = []
    for key in sorted(set(a) | set(b)):
        if a[key] > b[key]:
            lost += sorted((f for f in base if (f.scope, f.family) == key), key=lambda f: f.line)[b[key]:]
        elif b[key] > a[key]:
            gained += sorted((f for f in mapped if (f.scope, f.family) == key), key=lambda f: f.line)[a[key]:]
    kept = sum(min(a[k], b[k]) for k in a)
    return kept, lost, gained


def _scope_back(scope: str, classes: dict[str, str], methods: dict[str, str]) -> str:
    """`ResNetR._make_layer_r` -> `ResNet._make_layer`: a scope's class and method parts through the rename maps."""
    head, *rest = scope.split(".")
    return ".".join([classes.get(head, head), *(methods.get(m, m) for m in rest)])


def net(o: Outcome) -> tuple[list[dict], list[dict], int]:
    """(lost, gained, moved) of an outcome once a loss and a gain of the same family pair up as *moved*.

    A site still found but credited to another scope (a shared helper credited to the first class that calls
    it, which a reordering changes; a site now in an extracted function) is moved, not lost.
    """
    lost_f = Counter(f["family"] for f in o.lost)
    gained_f = Counter(f["family"] for f in o.gained)
    moved = {fam: min(lost_f[fam], gained_f[fam]) for fam in lost_f}
    lost = [f for fam in sorted(lost_f) for f in [x for x in o.lost if x["family"] == fam][moved[fam]:]]
    gained = [f for fam in sorted(gained_f) for f in [x for x in o.gained if x["family"] == fam][moved.get(fam, 0):]]
    return lost, gained, sum(moved.values())


def _snippet(text: str, scope: str, method: str, limit: int = 24) -> str:
    """The rewritten code of `scope`'s `method` (or of the scope), at most `limit` lines."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == scope]
    for node in nodes:
        inner = [m for m in ast.walk(node) if isinstance(m, ast.FunctionDef) and m.name == method]
        seg = ast.get_source_segment(text, inner[0] if inner else node) or ""
        return "\n".join(seg.splitlines()[:limit])
    return ""


# --- one file ----------------------------------------------------------------------------------------------

class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout


def run_file(key: str, text: str, rewrites: Sequence[str], seed: int, timeout: float) -> list[Outcome]:
    """Every rewrite's outcomes on one file; [] when the original has no finding (or does not parse)."""
    member = key.partition("/")[2] or key
    signal.signal(signal.SIGALRM, _alarm)
    out: list[Outcome] = []
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        original = _check(text, member)
        if not original:
            return []
        try:
            normal = ast.unparse(ast.parse(text))
        except SyntaxError:
            return []
        base = _check(normal, member)
        for name in rewrites:
            rng = random.Random(zlib.crc32(f"{seed}:{key}:{name}".encode()))
            try:
                variants = apply(name, normal, rng) if name != "normalise" else [Variant({MAIN: normal})]
            except Exception as e:
                out.append(Outcome(key, name, 0, len(base), 0, error=f"rewrite: {type(e).__name__}: {e}"))
                continue
            against = original if name == "normalise" else base
            for i, v in enumerate(variants):
                try:
                    new = _check_variant(v, member)
                except _Timeout:
                    raise
                except Exception as e:
                    out.append(Outcome(key, name, i, len(base), 0, error=f"check: {type(e).__name__}: {e}"))
                    continue
                kept, lost, gained = compare(against, new, v.classes, v.methods)
                main = v.files[MAIN]
                out.append(Outcome(key, name, i, len(against), kept,
                                   [{**asdict(f), "snippet": _snippet(main, _renamed(f.scope, v.classes),
                                                                      _renamed(f.method, v.methods))} for f in lost],
                                   [asdict(f) for f in gained]))
    except _Timeout:
        out.append(Outcome(key, "*", 0, 0, 0, error=f"timeout after {timeout:.0f}s"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return out


def _renamed(name: str, back: dict[str, str]) -> str:
    return next((new for new, old in back.items() if old == name), name)


def _job(args: tuple[str, str, tuple[str, ...], int, float]) -> list[Outcome]:
    os.environ.setdefault("ADOPTER_NATIVE", "0")
    os.environ.setdefault("ADOPTER_RESULT_CACHE", "0")
    return run_file(*args)


# --- the corpus and the report -----------------------------------------------------------------------------

def corpus(sets: Iterable[str]) -> list[tuple[str, str]]:
    """(`set:distribution/member`, text) of every file of the named dev sets."""
    out = []
    for name in sets:
        if name == "realworld":
            from realworld_corpus import files
        elif name == "dev2":
            from dev2_corpus import files
        else:
            raise ValueError(f"unknown set {name!r}: realworld or dev2 (dev sets only)")
        out += [(f"{name}:{f.key}", f.text) for f in files()]
    return out


def table(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """Per rewrite: variants, files invariant, baseline findings, kept (moved included), lost, gained, moved, rates."""
    rows: dict[str, dict[str, float]] = {}
    for o in outcomes:
        if o.error:
            continue
        r = rows.setdefault(o.rewrite, {"variants": 0, "invariant": 0, "base": 0, "kept": 0, "lost": 0, "gained": 0,
                                        "moved": 0})
        lost, gained, moved = net(o)
        r["variants"] += 1
        r["invariant"] += not lost and not gained
        r["base"] += o.base
        r["kept"] += o.kept + moved
        r["lost"] += len(lost)
        r["gained"] += len(gained)
        r["moved"] += moved
    for r in rows.values():
        r["file_rate"] = r["invariant"] / r["variants"] if r["variants"] else 1.0
        r["kept_rate"] = r["kept"] / r["base"] if r["base"] else 1.0
    return rows


def by_family(outcomes: Sequence[Outcome]) -> dict[str, dict[int, int]]:
    """Per rewrite: findings lost per family."""
    out: dict[str, Counter[int]] = {}
    for o in outcomes:
        out.setdefault(o.rewrite, Counter()).update(f["family"] for f in net(o)[0])
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def render(outcomes: Sequence[Outcome], examples: int = 3) -> str:
    rows = table(outcomes)
    lines = [f"{'rewrite':26} {'grp':>3} {'variants':>8} {'invar.':>6} {'base':>6} {'kept':>6} {'lost':>5} "
             f"{'gained':>6} {'moved':>5} {'file%':>6} {'kept%':>6}"]
    for name, r in sorted(rows.items(), key=lambda kv: (-kv[1]["lost"], kv[0])):
        lines.append(f"{name:26} {GROUPS.get(name, 0):>3} {r['variants']:>8.0f} {r['invariant']:>6.0f} "
                     f"{r['base']:>6.0f} {r['kept']:>6.0f} {r['lost']:>5.0f} {r['gained']:>6.0f} {r['moved']:>5.0f} "
                     f"{100 * r['file_rate']:>5.1f}% {100 * r['kept_rate']:>5.1f}%")
    fams = by_family(outcomes)
    lines.append("\nlost per family: " + "; ".join(f"{k}: {v}" for k, v in sorted(fams.items()) if v))
    errors = [o for o in outcomes if o.error]
    if errors:
        lines.append(f"\n{len(errors)} errors: " + "; ".join(f"{o.file} {o.rewrite}: {o.error}" for o in errors[:10]))
    for name in sorted(rows, key=lambda n: -rows[n]["lost"]):
        losses = [(o.file, f) for o in outcomes if o.rewrite == name for f in net(o)[0]]
        if not losses:
            continue
        lines.append(f"\n== {name}: {len(losses)} lost")
        for file, f in losses[:examples]:
            lines.append(f"  {file}:{f['line']} {f['scope']}.{f['method']} family {f['family']} ({f['rule']})")
            lines += ["      " + s for s in f["snippet"].splitlines()[:12]]
    return "\n".join(lines)


def _order(files: list[tuple[str, str]], seed: int) -> list[tuple[str, str]]:
    """The realworld files first, then dev2's in a seeded order (a cut-short run is a fair sample)."""
    head = [f for f in files if f[0].startswith("realworld:")]
    tail = sorted((f for f in files if not f[0].startswith("realworld:")),
                  key=lambda f: zlib.crc32(f"{seed}:{f[0]}".encode()))
    return head + tail


def _read_lines(path: Path) -> list[Outcome]:
    return [Outcome(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _merged(runs: Sequence[list[Outcome]]) -> list[Outcome]:
    """Outcomes of several runs: a later run that read a file replaces the earlier runs' outcomes of that file
    under every rewrite it ran (also where the rewrite no longer applies there)."""
    out: list[Outcome] = []
    for run in runs:
        files = {o.file for o in run}
        rewrites = {o.rewrite for o in run}
        out = [o for o in out if not (o.file in files and o.rewrite in rewrites)] + list(run)
    return out


def _write_json(out: str | None, outcomes: Sequence[Outcome]) -> None:
    if out:
        Path(out).write_text(json.dumps({"table": table(outcomes), "by_family": by_family(outcomes),
                                         "outcomes": [asdict(o) for o in outcomes]}, indent=1), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["realworld", "dev2"])
    parser.add_argument("--rewrites", nargs="+", default=list(REWRITES), choices=list(REWRITES))
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per file, all rewrites together")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--limit", type=int, default=0, help="only the first N files of each run (0: all)")
    parser.add_argument("--examples", type=int, default=3)
    parser.add_argument("--jsonl", metavar="OUT", help="append each file's outcomes as it finishes (a partial run reads)")
    parser.add_argument("--report", metavar="JSONL", nargs="+",
                        help="render the table from --jsonl files instead of running (a later file's (file, rewrite) wins)")
    parser.add_argument("--resume", action="store_true", help="skip the files the --jsonl file already holds")
    parser.add_argument("--files-from", metavar="JSONL", help="only the files this --jsonl file holds")
    args = parser.parse_args(argv)
    if args.report:
        outcomes = _merged([_read_lines(Path(p)) for p in args.report])
        print(render(outcomes, args.examples))
        _write_json(args.json, outcomes)
        return 0
    os.environ.setdefault("ADOPTER_NATIVE", "0")
    os.environ.setdefault("ADOPTER_RESULT_CACHE", "0")
    files = _order(corpus(args.sets), args.seed)
    if args.limit:
        files = files[:args.limit]
    if args.files_from:
        keep = {o.file for o in _read_lines(Path(args.files_from))}
        files = [f for f in files if f[0] in keep]
    if args.resume and args.jsonl and Path(args.jsonl).exists():
        done = {o.file for o in _read_lines(Path(args.jsonl))}
        files = [f for f in files if f[0] not in done]
    jobs = [(key, text, tuple(args.rewrites), args.seed, args.timeout) for key, text in files]
    start = time.monotonic()
    outcomes: list[Outcome] = []
    sink = open(args.jsonl, "a", encoding="utf-8") if args.jsonl else None
    try:
        with ProcessPoolExecutor(max(1, args.jobs)) as pool:
            for result in pool.map(_job, jobs, chunksize=1):
                outcomes += result
                if sink is not None:
                    sink.writelines(json.dumps(asdict(o)) + "\n" for o in result)
                    sink.flush()
    finally:
        if sink is not None:
            sink.close()
    print(render(outcomes, args.examples))
    checked = len({o.file for o in outcomes})
    print(f"\n{checked} files with findings of {len(files)}; {time.monotonic() - start:.0f}s")
    _write_json(args.json, outcomes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
