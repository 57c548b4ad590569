"""Score `adopter check` against the oracle's sites, and write the figures (Markdown and JSON).

Recall: an oracle site counts as found when `check --format json` reports a finding of the same family in
the same file whose lines (its statements and `__init__` bindings) include one of the site's lines (or,
for a site whose ops run in a helper defined in another file, one of its lines there: `elsewhere`).
A site's lines are its ops' call chains (`match.chain`): where each op is written (a helper's line, when
a helper runs it) and the calls that reach it from the enclosing module's `forward`, never an outer
module's call of that module. Precision: a finding of families 4–16 in a class that traced, at lines the
trace exercised, is right when it overlaps the lines of an oracle site of its family (the same lines as
for recall), wrong when it does not; findings at lines the trace never ran (another branch, a class that
did not construct) are counted apart, not judged. Sites and exercised lines are the union over a class's
default construction and its variant with boolean parameters flipped (`worker._variant`); the report
says how many sites only a variant ran. A pair a library model builds that the model's code only runs (none of
its ops written in the site's distribution: `owned.py`) is no site: set apart, counted per family and listed,
neither in recall nor in precision (a finding there is wrong, marked `library_built`). The checker runs in the
oracle's own environment (`checker_python`), where the distributions' dependencies are installed, as a user runs
it beside their model.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracle import stale
from oracle.install import CACHE, LEDGER, VENV
from oracle.owned import library_built
from oracle.packages import domain_of
from oracle.patterns import NOT_IN_A_FORWARD_TRACE, NOT_VISIBLE_WITHOUT_LABELS, retired
from oracle.run import RESULTS

ROOT = Path(__file__).resolve().parents[2]
CHECK_CACHE = CACHE / "check"
FAMILIES = tuple(range(4, 17))
TAGS = ("einsum", "rearrange", "einops", "chunk", "split", "@", "matmul", "bmm", "softmax", "Sequential",
        "lambda", "getattr", "partial", "torch.cat", "rsqrt", "erf", "tanh", "sigmoid", "normalize")


@dataclass
class Dist:
    name: str
    version: str = ""
    install: str = "ok"
    classes: list[dict[str, Any]] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    imports: dict[str, str] = field(default_factory=dict)  # module -> "ok" or the import's error


def load(results: Path = RESULTS) -> dict[str, Dist]:
    out: dict[str, Dist] = {}
    for folder in sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")):
        # `_done.json` when the distribution's pass finished; `_meta.json` keeps an earlier pass's (its file
        # list) while a later pass with a higher class cap is under way. Neither: still running, left out.
        done = next((p for p in (folder / "_done.json", folder / "_meta.json") if p.exists()), None)
        if done is None:
            continue
        meta = json.loads(done.read_text(encoding="utf-8"))
        d = Dist(folder.name, str(meta.get("version", "")), str(meta.get("install", "ok")))
        d.files = set(meta.get("files", ()))
        try:
            d.imports = json.loads((folder / "_imports.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            d.imports = {}
        d.classes = stale.load_classes(folder, meta)  # a leftover of an earlier run is never scored
        out[d.name] = d
    return out


def finding_lines(finding: dict[str, Any]) -> set[int]:
    out: set[int] = set()
    for a, b in [*finding.get("statements", ()), *finding.get("init", ())]:
        out.update(range(int(a), int(b) + 1))
    if not out and "range" in finding:
        out.update(range(finding["range"]["start"]["line"], finding["range"]["end"]["line"] + 1))
    return out


@functools.cache
def checker_digest() -> str:
    """A digest of the checker's code and rules: cached check results are reused only for the same checker."""
    h = hashlib.sha256()
    for p in sorted([*(ROOT / "server" / "adopter").rglob("*.py"), *(ROOT / "rules").rglob("*.adl")]):
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def check(files: list[str]) -> list[dict[str, Any]]:
    """`adopter check --format json` over the files, run as this repository's CLI in a subprocess; the
    findings are cached under `.cache/oracle/check/` by the files' contents and the checker's digest (the
    installed files never change, so a report during or after a run checks each distribution once)."""
    if not files:
        return []
    h = hashlib.sha256(checker_digest().encode())
    h.update(checker_python().encode())
    for f in files:
        h.update(f.encode())
        try:
            h.update(hashlib.sha256(Path(f).read_bytes()).digest())
        except OSError:
            pass
    cached = CHECK_CACHE / f"{h.hexdigest()[:32]}.json"
    try:
        return list(json.loads(cached.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    out, complete = _check_uncached(files)
    if complete:  # a run that gave no JSON is said, and checked again next time
        CHECK_CACHE.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(out), encoding="utf-8")
    return out


def checker_python() -> str:
    """The interpreter `adopter check` runs in: the oracle's own environment, where the distributions and their
    dependencies are installed and their classes were traced (a user runs the checker in the environment that
    runs their model: the language server starts in the active interpreter, `adopter check` in the shell's), so
    the cross-file reach reads the libraries a class builds on (`torchvision.ops.Conv2dNormActivation`, timm's
    layers) as it does for that user. `$ADOPTER_ORACLE_CHECK_PYTHON` names another (`sys.executable`: the
    figure of the checker's own environment, without those libraries)."""
    chosen = os.environ.get("ADOPTER_ORACLE_CHECK_PYTHON")
    if chosen:
        return chosen
    own = VENV / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def _check_uncached(files: list[str]) -> tuple[list[dict[str, Any]], bool]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "server"))
    out: list[dict[str, Any]] = []
    complete = True
    for i in range(0, len(files), 200):
        proc = subprocess.run([checker_python(), "-m", "adopter", "check", "--format", "json", *files[i:i + 200]],
                              capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        try:
            out.extend(json.loads(proc.stdout or "[]"))
        except ValueError:
            complete = False
            print(f"oracle: check gave no JSON ({proc.returncode}): {proc.stderr[-300:]}", file=sys.stderr)
    return out, complete


def _context(path: str, line: int, cache: dict[str, Any]) -> tuple[str, str]:
    """(where the line is: forward / other method / module-level function / module level, its source)."""
    if path not in cache:
        try:
            text = Path(path).read_text(encoding="utf-8")
            cache[path] = (ast.parse(text), text.splitlines())
        except (OSError, SyntaxError, ValueError):
            cache[path] = (None, [])
    tree, lines = cache[path]
    src = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    where = "module level"
    if tree is not None:
        stack: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [])]
        best: list[ast.AST] = []
        while stack:
            node, parents = stack.pop()
            for child in ast.iter_child_nodes(node):
                end = getattr(child, "end_lineno", None)
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and \
                        child.lineno <= line <= (end or child.lineno):
                    best = [*parents, child]
                    stack.append((child, best))
                elif isinstance(child, (ast.stmt, ast.expr)) and getattr(child, "lineno", 0) <= line <= (end or 0):
                    stack.append((child, parents))
        funcs = [n for n in best if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if funcs:
            fn = funcs[-1]
            in_class = any(isinstance(n, ast.ClassDef) for n in best[: best.index(fn)])
            where = ("forward" if fn.name == "forward" else "other method") if in_class else "module-level function"
        elif any(isinstance(n, ast.Lambda) for n in best):
            where = "lambda"
    return where, src


def _statement_at(finding: dict[str, Any], line: int) -> set[int]:
    """The lines of the finding's statement that holds `line` (a call written over several lines runs as one)."""
    for a, b in finding.get("statements", ()):
        if int(a) <= line <= int(b):
            return set(range(int(a), int(b) + 1))
    return {line}


def _ops_ran(finding: dict[str, Any], ran: set[int]) -> bool:
    """Whether a trace ran the op a forward-scope finding reports (and, for family 16, its cross-entropy too).

    A finding lists the forward's call lines beside a helper's ops, so "some line of it ran" judged a finding
    whose op sits on a path no trace took (a branch the guessed arguments skip, a loss computed only when labels
    are given) as wrong. A finding anchored in `__init__` (a Sequential's constructor line, which no trace runs)
    keeps that rule."""
    if "range" not in finding:
        return True
    start = int(finding["range"]["start"]["line"])
    if any(int(a) <= start <= int(b) for a, b in finding.get("init", ())):
        return True
    if not _statement_at(finding, start) & ran:
        return False
    end = int(finding["range"]["end"]["line"])
    return finding.get("family") != 16 or bool(_statement_at(finding, end) & ran)


def score(dists: dict[str, Dist]) -> dict[str, Any]:
    owner: dict[str, str] = {}
    for d in dists.values():
        for f in d.files:
            owner[f] = d.name
    # Oracle sites, one per (family, file, anchor line), from every class that traced.
    sites: dict[tuple[int, str, int], dict[str, Any]] = {}
    executed: dict[str, set[int]] = defaultdict(set)
    traced_classes: dict[str, set[str]] = defaultdict(set)
    for d in dists.values():
        for c in d.classes:
            if not c.get("traced"):
                continue
            if c.get("file"):
                traced_classes[c["file"]].add(c["class"])
            for f, lines in (c.get("executed") or {}).items():
                executed[f].update(lines)
            for s in c.get("sites", ()):
                if s["file"] not in owner or s["family"] not in FAMILIES or retired(str(s.get("pattern", ""))):
                    continue
                key = (s["family"], s["file"], s["line"])
                entry = sites.setdefault(key, {**s, "lines": set(), "elsewhere": defaultdict(set),
                                                "dist": owner[s["file"]], "variant": True, "records": [],
                                                "written": defaultdict(set)})
                entry["records"].append(s)
                for other, other_lines in (s.get("written") or {}).items():
                    entry["written"][other].update(other_lines)
                entry["variant"] = entry["variant"] and bool(s.get("variant"))  # only a variant ran it
                entry["lines"].update(s["lines"])
                entry["lines"].add(s["line"])
                for other, other_lines in (s.get("elsewhere") or {}).items():
                    entry["elsewhere"][other].update(other_lines)
    # A pair a library model builds, which the model's code only runs, is not the model's site (`owned.py`): set
    # apart, counted and listed, never scored; a site traced before its ops' places were recorded, with lines in
    # another file, is kept and counted as undecided.
    library: dict[tuple[int, str, int], dict[str, Any]] = {}
    undecided: Counter[int] = Counter()
    for key, s in list(sites.items()):
        built = library_built(s.pop("records"), s["dist"], owner)
        if built:
            library[key] = sites.pop(key)
        elif built is None:
            undecided[key[0]] += 1
    files_by_dist: dict[str, set[str]] = defaultdict(set)
    for d in dists.values():
        for c in d.classes:
            if c.get("file") and c["file"] in owner:
                files_by_dist[owner[c["file"]]].add(c["file"])
    for (_fam, f, _line), s in sites.items():
        files_by_dist[owner[f]].add(f)
        files_by_dist[owner[f]].update(other for other in s["elsewhere"] if other in owner)
    started = time.perf_counter()
    findings: list[dict[str, Any]] = []
    seen: set[tuple[str, Any, int, int]] = set()
    for name in sorted(files_by_dist):
        for fd in check(sorted(files_by_dist[name])):
            fd["path"] = os.path.realpath(fd["path"])
            # A file checked with two distributions (a site's lines `elsewhere` in another one) gives its
            # findings twice: each finding is counted once.
            start = fd.get("range", {}).get("start", {})
            key = (fd["path"], fd.get("rule"), int(start.get("line", 0)), int(start.get("column", 0)))
            if key in seen:
                continue
            seen.add(key)
            if fd.get("family") in FAMILIES:
                fd["dist"] = owner.get(fd["path"], name)
                findings.append(fd)
    check_s = time.perf_counter() - started
    by_file_family: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for fd in findings:
        by_file_family[(fd["path"], fd["family"])].append(fd)
    ast_cache: dict[str, Any] = {}
    recall: dict[int, Counter[str]] = defaultdict(Counter)
    per_dist: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[dict[str, Any]] = []
    found_keys: set[tuple[int, str, int]] = set()
    for (fam, f, line), s in sorted(sites.items()):
        hit = any(finding_lines(fd) & s["lines"] for fd in by_file_family.get((f, fam), ())) or any(
            finding_lines(fd) & other_lines for other, other_lines in s["elsewhere"].items()
            for fd in by_file_family.get((other, fam), ()))
        recall[fam]["sites"] += 1
        recall[fam]["found"] += hit
        if hit:
            found_keys.add((fam, f, line))
        per_dist[s["dist"]]["sites"] += 1
        per_dist[s["dist"]]["found"] += hit
        if not hit:
            where, src = _context(f, line, ast_cache)
            misses.append({"family": fam, "pattern": s["pattern"], "file": f, "line": line, "dist": s["dist"],
                           "where": where, "source": src, "variant": s["variant"]})
    precision: dict[int, Counter[str]] = defaultdict(Counter)
    wrong: list[dict[str, Any]] = []
    for fd in findings:
        classes = traced_classes.get(fd["path"], set())
        scope = str(fd.get("scope") or "")
        in_traced = scope in classes or scope.split(".")[0] in {c.split(".")[0] for c in classes}
        lines = finding_lines(fd)
        stmt_lines: set[int] = set()
        for a, b in fd.get("statements", ()):
            stmt_lines.update(range(int(a), int(b) + 1))
        fam = fd["family"]
        ran = executed.get(fd["path"], set())
        if not in_traced or not (stmt_lines or lines) & ran or not _ops_ran(fd, ran):
            precision[fam]["unjudged"] += 1
            continue
        right = any((s["lines"] if sfile == fd["path"] else s["elsewhere"].get(fd["path"], set())) & lines
                    for (sf, sfile, _), s in sites.items() if sf == fam)
        precision[fam]["judged"] += 1
        precision[fam]["right"] += right
        per_dist[fd["dist"]]["judged"] += 1
        per_dist[fd["dist"]]["right"] += right
        if not right:
            wrong.append({"family": fam, "rule": fd.get("rule"), "file": fd["path"], "line": fd["range"]["start"]["line"],
                          "scope": scope, "dist": fd["dist"],
                          "library_built": any(s["lines"] & lines for (sf, sfile, _), s in library.items()
                                               if sf == fam and sfile == fd["path"])})
    for s in library.values():
        per_dist[s["dist"]]["library_built"] += 1
    variant_keys = {k for k, s in sites.items() if s["variant"]}
    traced_list = [c for d in dists.values() for c in d.classes if c.get("traced")]
    variants = {
        "with_booleans": sum(1 for c in traced_list if c.get("variant")),
        "traced": sum(1 for c in traced_list if (c.get("variant") or {}).get("traced")),
        "adding_sites": sum(1 for c in traced_list if (c.get("variant") or {}).get("sites_added")),
        "sites": len(variant_keys),
        "sites_by_family": dict(Counter(k[0] for k in variant_keys)),
        "found": sum(1 for k in variant_keys if k in found_keys),
        "lines_added": sum(int((c.get("variant") or {}).get("lines_added") or 0) for c in traced_list),
        "flip": dict(Counter(str((c.get("variant") or {}).get("flip")) for c in traced_list
                             if (c.get("variant") or {}).get("traced"))),
    }
    forms: Counter[str] = Counter()
    form_dists: dict[str, set[str]] = defaultdict(set)
    example: dict[str, str] = {}
    for m in misses:
        tags = [t for t in TAGS if t in m["source"]]
        form = f"family {m['family']}: {m['pattern']} in {m['where']}" + (f" [{', '.join(tags)}]" if tags else "")
        forms[form] += 1
        form_dists[form].add(m["dist"])
        example.setdefault(form, f"{m['dist']}: {Path(m['file']).name}:{m['line']}: `{m['source'][:90]}`")
    table = {
        "distributions": len(dists),
        "installed": sum(d.install == "ok" for d in dists.values()),
        "classes": sum(len(d.classes) for d in dists.values()),
        "constructed": sum(bool(c.get("constructed")) for d in dists.values() for c in d.classes),
        "abstract": sum(c.get("reason") == "it is abstract" for d in dists.values() for c in d.classes),
        "variants": variants,
        "traced": sum(bool(c.get("traced")) for d in dists.values() for c in d.classes),
        "backward": sum(bool(c.get("backward")) for d in dists.values() for c in d.classes),
        "check_seconds": round(check_s, 1),
        "families": {fam: {"sites": recall[fam]["sites"], "found": recall[fam]["found"],
                           "judged": precision[fam]["judged"], "right": precision[fam]["right"],
                           "unjudged": precision[fam]["unjudged"],
                           "library_built": sum(1 for k in library if k[0] == fam),
                           "undecided": undecided[fam]} for fam in FAMILIES},
        "library_built": [{"family": fam, "pattern": s.get("pattern"), "file": f, "line": line, "dist": s["dist"],
                           "written": {w: sorted(v) for w, v in sorted(s["written"].items())}}
                          for (fam, f, line), s in sorted(library.items())],
        "dists": {d.name: {"version": d.version, "install": d.install, "domain": domain_of(d.name),
                           "classes": len(d.classes),
                           "constructed": sum(bool(c.get("constructed")) for c in d.classes),
                           "traced": sum(bool(c.get("traced")) for c in d.classes),
                           "how": _install_how(d.name), "import_error": _import_error(d), **per_dist[d.name]}
                  for d in dists.values()},
        "forms": [{"form": f, "misses": n, "packages": len(form_dists[f]), "example": example[f]}
                  for f, n in forms.most_common()],
        "wrong": wrong,
        "misses": misses,
        "failures": Counter(str(c.get("stage")) for d in dists.values() for c in d.classes if not c.get("traced")),
        "reasons": Counter(_reason(c) for d in dists.values() for c in d.classes
                           if not c.get("traced")).most_common(25),
        "missing_arguments": Counter(str(c.get("missing")) for d in dists.values() for c in d.classes
                                     if c.get("missing")).most_common(15),
    }
    return table


def _install_how(name: str) -> str:
    """What the installer recorded: "with-deps", "no-deps (why)", or the failure."""
    for p in LEDGER.glob("*.json"):
        if p.stem.split("==")[0] == name:
            try:
                entry = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return ""
            return str(entry.get("how", "")) if entry.get("ok") else f"failed: {entry.get('how', '')}"
    return ""


def _import_error(d: Dist) -> str:
    """The most frequent import error of the distribution's modules, when none of its classes was attempted."""
    if d.classes or not d.imports:
        return ""
    errors = Counter(v for v in d.imports.values() if v != "ok")
    if not errors:
        return "no nn.Module class in its modules"
    text, n = errors.most_common(1)[0]
    return f"{n}/{len(d.imports)} modules: {text[:160]}"


def _reason(c: dict[str, Any]) -> str:
    """A class's failure, its variable parts (numbers, names in quotes) blanked, so like failures count together."""
    import re

    stage = str(c.get("stage"))
    reason = str(c.get("reason") or "")
    if c.get("missing"):
        return f"{stage}: missing `{c['missing']}`"
    reason = reason.split(" failed: ", 1)[-1]
    reason = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "'…'", reason)
    reason = re.sub(r"\d+", "N", reason)
    return f"{stage}: {reason[:110]}"


def must_holds(t: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for issue 20 item 1's must-holds."""
    fams = t["families"]
    sites = sum(v["sites"] for v in fams.values())
    found = sum(v["found"] for v in fams.values())
    judged = sum(v["judged"] for v in fams.values())
    right = sum(v["right"] for v in fams.values())
    with_classes = sum(1 for d in t["dists"].values() if d["classes"])
    big = {f: v for f, v in fams.items() if v["sites"] >= 20}
    low = {f: v for f, v in big.items() if v["found"] < 0.8 * v["sites"]}
    return [
        ("≥ 100 distributions with classes attempted", f"{with_classes} (of {t['distributions']} run, "
         f"{t['installed']} installed)", with_classes >= 100),
        ("≥ 2,000 classes attempted", str(t["classes"]), t["classes"] >= 2000),
        ("constructed fraction reported (aim ≥ half)", f"{_pct(t['constructed'], t['classes'])} "
         f"({t['constructed']}); traced {_pct(t['traced'], t['classes'])}", t["constructed"] * 2 >= t["classes"]),
        ("static recall ≥ 90 % overall", f"{_pct(found, sites)} ({found} / {sites})", sites > 0 and found >= 0.9 * sites),
        ("≥ 80 % in every family with ≥ 20 oracle sites",
         ", ".join(f"family {f}: {_pct(v['found'], v['sites'])} ({v['sites']})" for f, v in big.items()) or "no such family",
         not low),
        ("static precision ≥ 97 %", f"{_pct(right, judged)} ({right} / {judged} judged)", judged > 0 and right >= 0.97 * judged),
    ]


def _variants_line(v: dict[str, Any]) -> str:
    """What the boolean-flipped variants added (`worker._variant`)."""
    if not v:
        return "- variants: none in these results"
    fams = ", ".join(f"{f}: {n}" for f, n in sorted(v.get("sites_by_family", {}).items()))
    return (f"- variants with boolean parameters flipped: {v['with_booleans']} traced classes have such parameters, "
            f"{v['traced']} variants traced ({', '.join(f'{k}: {n}' for k, n in sorted(v.get('flip', {}).items()))}), "
            f"{v['adding_sites']} classes gained sites; sites only a variant ran: {v['sites']} ({fams or 'none'}), "
            f"found by `adopter check`: {v['found']}; exercised lines added: {v['lines_added']}")


def _library_line(fams: dict[Any, dict[str, Any]]) -> str:
    """The sites set apart as a library model's (`owned.py`) and those an earlier pass cannot decide."""
    built = {f: int(v.get("library_built", 0)) for f, v in fams.items() if v.get("library_built")}
    undecided = sum(int(v.get("undecided", 0)) for v in fams.values())
    return (f"- pairs a library model builds that the model's code only runs, set apart (not sites, not scored): "
            f"{sum(built.values())} ({', '.join(f'family {f}: {n}' for f, n in built.items()) or 'none'}); "
            f"undecided (traced before the places of their ops were recorded, lines in another file; kept): "
            f"{undecided}")


def _stale_line(changed: dict[str, list[str]]) -> str:
    if not changed:
        return "- stale results (a file they name changed since it was traced): none"
    return (f"- stale results, left out (a file they name changed since it was traced; `run` redoes them): "
            f"{len(changed)}: {', '.join(sorted(changed))}")


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "—"


def markdown(t: dict[str, Any]) -> str:
    fams = t["families"]
    sites = sum(v["sites"] for v in fams.values())
    found = sum(v["found"] for v in fams.values())
    judged = sum(v["judged"] for v in fams.values())
    right = sum(v["right"] for v in fams.values())
    out = ["| must-hold | measured | met |", "|---|---|---|"]
    out += [f"| {a} | {b} | {'yes' if ok else '**no**'} |" for a, b, ok in must_holds(t)]
    out += [
        "",
        f"- distributions: {t['distributions']} ({t['installed']} installed), classes attempted: {t['classes']}",
        _stale_line(t.get("stale") or {}),
        f"- constructed: {t['constructed']} ({_pct(t['constructed'], t['classes'])}); traced forward: {t['traced']} "
        f"({_pct(t['traced'], t['classes'])}), with a backward: {t['backward']}",
        f"- abstract classes (not model classes one can build; not applicable): {t.get('abstract', 0)}; constructed "
        f"of the rest: {_pct(t['constructed'], t['classes'] - t.get('abstract', 0))}",
        _variants_line(t.get("variants") or {}),
        f"- oracle sites (families 4–16): {sites}; found by `adopter check`: {found} — **static recall "
        f"{_pct(found, sites)}**",
        f"- findings judged (traced class, exercised lines): {judged}; matching ops: {right} — **static precision "
        f"{_pct(right, judged)}**; findings at lines no trace ran, not judged: "
        f"{sum(v['unjudged'] for v in fams.values())}",
        _library_line(fams),
        "",
        "| family | oracle sites | found | recall | findings judged | right | precision | not judged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fam, v in fams.items():
        out.append(f"| {fam} | {v['sites']} | {v['found']} | {_pct(v['found'], v['sites'])} | {v['judged']} | "
                   f"{v['right']} | {_pct(v['right'], v['judged'])} | {v['unjudged']} |")
    out += ["", "Not visible in a forward trace:", ""]
    for fam, why in {**NOT_VISIBLE_WITHOUT_LABELS, **NOT_IN_A_FORWARD_TRACE}.items():
        out.append(f"- family {fam}: {why}")
    out += ["", "### Census of the missed forms, by family", "",
            "Each form: the oracle's pattern, where the site's line is, and the spellings on that line; counted "
            "over every miss (misses) and the distributions they are in (packages).", ""]
    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in t["forms"]:
        by_family[f["form"].split(":")[0]].append(f)
    for fam in sorted(by_family, key=lambda k: int(k.split()[1])):
        rows = by_family[fam]
        out += [f"**{fam}** ({sum(r['misses'] for r in rows)} misses, "
                f"{len(rows)} forms)", "",
                "| form | misses | packages | example |", "|---|---|---|---|"]
        for f in rows:
            cell = f["example"].replace("|", "\\|")
            out.append(f"| {f['form'].split(': ', 1)[1]} | {f['misses']} | {f['packages']} | {cell} |")
        out.append("")
    if t.get("library_built"):
        out += ["### Pairs a library model builds, set apart (`owned.py`)", "",
                "| family | distribution | site (the line that runs it) | written in |", "|---|---|---|---|"]
        for s in t["library_built"]:
            written = "; ".join(f"{Path(w).name}:{','.join(map(str, v))}" for w, v in s["written"].items())
            out.append(f"| {s['family']} | {s['dist']} | {Path(s['file']).name}:{s['line']} | {written} |")
        out.append("")
    out += ["### Why classes were not traced", ""]
    out += [f"- {stage}: {n}" for stage, n in sorted(t["failures"].items(), key=lambda kv: -kv[1])]
    out += ["", "Most frequent reasons (numbers and quoted names blanked):", ""]
    out += [f"- {n} × {r}" for r, n in t.get("reasons", [])]
    out += ["", "Constructor arguments most often missing: " +
            ", ".join(f"`{a}` ({n})" for a, n in t["missing_arguments"]), "",
            "### Per distribution", "",
            "| distribution | version | domain | classes | constructed | traced | oracle sites | recall | judged | precision "
            "| install / why no class |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, d in sorted(t["dists"].items(), key=lambda kv: kv[0].lower()):
        inst = "" if d["install"] == "ok" else " (install failed)"
        why = d["install"] if d["install"] != "ok" else (d.get("import_error") or d.get("how", ""))
        why = why.replace("|", "\\|")[:170]
        out.append(f"| {name}{inst} | {d['version']} | {d['domain']} | {d['classes']} | {_pct(d['constructed'], d['classes'])} | "
                   f"{_pct(d['traced'], d['classes'])} | {d.get('sites', 0)} | {_pct(d.get('found', 0), d.get('sites', 0))} | "
                   f"{d.get('judged', 0)} | {_pct(d.get('right', 0), d.get('judged', 0))} | {why} |")
    return "\n".join(out) + "\n"


def report(markdown_out: Path | None = None, json_out: Path | None = None, *, markdown: Path | None = None) -> int:
    target = markdown_out or markdown
    changed = stale.stale_folders(RESULTS)
    t = score({name: d for name, d in load().items() if name not in changed})
    t["stale"] = {name: files[:3] for name, files in changed.items()}
    text = _render(t)
    print(text)
    if target:
        target.write_text(text, encoding="utf-8")
    if json_out:
        json_out.write_text(json.dumps(t, indent=1, default=sorted), encoding="utf-8")
    ledger = [json.loads(p.read_text(encoding="utf-8")) for p in LEDGER.glob("*.json")]
    print(f"installs: {sum(bool(v.get('ok')) for v in ledger)} of {len(ledger)} ok", file=sys.stderr)
    return 0


def _render(t: dict[str, Any]) -> str:
    return markdown(t)
