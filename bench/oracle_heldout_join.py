"""Join held-out labels, the oracle's per-class results and `adopter check` findings into aggregate counts.

A labelled site is *traced* when some traced class of the run exercised its line (its file's `executed` lines);
the oracle *agrees* with it when an oracle site of its family in its file has the label's line among its lines
(the lines the report matches findings on: the anchor and its call chain). The checker *finds* a label as
`bench/detection_realworld.py` scores the held-out set (same file and family, the label's line among the
finding's lines, each finding used once), and an oracle site as `oracle/report.py` does (a finding of its family
overlaps its lines). An untraced label gets the first reason that holds (`REASONS`). Everything returned is
counts by family: nothing names a site, a file, a line or a distribution.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ORACLE_FAMILIES = frozenset(range(4, 17))  # family 17 (optimizers) is outside any forward: no oracle pattern
# Why a labelled line was not exercised, in the order they are tested.
REASONS = ("distribution not run", "file: no class attempted (cap, or none an nn.Module)", "scope: class not attempted (cap, or no nn.Module)",
           "scope: class not constructed", "scope: class not traced", "scope: traced, line in __init__",
           "scope: traced, line not run",
           "function or module level, line not run", "file: its module did not import")
DEV_ORACLE = {"constructed": 0.548, "traced": 0.341, "recall": 0.914}  # /work/notes/s18/oracle_r4.md (r4, 214 dists)


@dataclass(frozen=True, slots=True)
class Label:
    family: int
    path: str  # the installed file the run traced (`site-packages/<member>`)
    line: int
    scope: str  # `Class.method`, `Class`, `function` or `<module>` (heldout_corpus.scope_of)
    dist: str


def labels_of(labels: dict[str, dict[str, Any]], names: Iterable[str], site: Path) -> tuple[
        list[Label], dict[str, list[dict[str, Any]]]]:
    """The reviewed labels of `names` placed at their installed paths under `site`: sites, and not_sites by path."""
    sites: list[Label] = []
    not_sites: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        data = labels.get(name)
        for member, entry in (data or {}).get("files", {}).items():
            if not entry.get("reviewed"):
                continue
            path = str((site / member).resolve())
            sites.extend(Label(int(s["family"]), path, int(s["line"]), str(s.get("scope", "")), name)
                         for s in entry.get("sites", ()))
            not_sites[path] = list(entry.get("not_sites", ()))
    return sites, not_sites


def load_classes(results: Path, names: Iterable[str]) -> tuple[list[dict[str, Any]], set[str]]:
    """The class records of the finished distributions among `names`, and those distributions' names."""
    classes: list[dict[str, Any]] = []
    finished: set[str] = set()
    for name in names:
        folder = results / name
        try:
            meta = json.loads((folder / "_done.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if "install" in meta:  # it failed to install: nothing ran
            continue
        finished.add(name)
        for f in sorted(folder.glob("*.json")):
            if not f.name.startswith("_"):
                classes.append(json.loads(f.read_text(encoding="utf-8")))
    return classes, finished


def finding_lines(finding: dict[str, Any]) -> set[int]:
    """A `check --format json` finding's lines: its statements and `__init__` bindings, else its range (the
    oracle report's own reading)."""
    from oracle.report import finding_lines as lines

    return lines(finding)


def oracle_sites(classes: list[dict[str, Any]], files: set[str],
                 retired: Callable[[str], bool] = lambda _p: False) -> dict[tuple[int, str, int], set[int]]:
    """(family, file, anchor line) -> its lines, over every traced class, for the sites in `files`."""
    out: dict[tuple[int, str, int], set[int]] = {}
    for c in classes:
        if not c.get("traced"):
            continue
        for s in c.get("sites", ()):
            if s["file"] in files and s["family"] in ORACLE_FAMILIES and not retired(str(s.get("pattern", ""))):
                out.setdefault((s["family"], s["file"], s["line"]), set()).update([s["line"], *s.get("lines", ())])
    return out


def _reason(label: Label, classes_by_file: dict[str, list[dict[str, Any]]], finished: set[str],
            class_names: dict[str, set[str]], failed_files: set[str]) -> str:
    if label.dist not in finished:
        return REASONS[0]
    records = classes_by_file.get(label.path, [])
    if not records:
        return REASONS[8] if label.path in failed_files else REASONS[1]
    outer = label.scope.split(".")[0]
    if "." not in label.scope and outer not in class_names.get(label.path, set()):
        return REASONS[7]
    mine = [c for c in records if c.get("class") == outer or str(c.get("class", "")).startswith(f"{outer}.")]
    if not mine:
        return REASONS[2]
    if not any(c.get("constructed") for c in mine):
        return REASONS[3]
    if not any(c.get("traced") for c in mine):
        return REASONS[4]
    return REASONS[5] if label.scope.endswith(".__init__") else REASONS[6]


def _checker_found(labels: list[Label], findings: list[dict[str, Any]]) -> set[int]:
    """Indexes of the labels a finding covers, one finding per label (bench/detection_realworld.score)."""
    by: dict[tuple[str, int], list[set[int]]] = defaultdict(list)
    seen: set[tuple[str, int, frozenset[int]]] = set()
    for fd in findings:
        lines = frozenset(finding_lines(fd))
        key = (str(fd["path"]), int(fd.get("family") or 0), lines)
        if key not in seen:
            seen.add(key)
            by[(key[0], key[1])].append(set(lines))
    found: set[int] = set()
    used: set[tuple[str, int, int]] = set()
    for i in sorted(range(len(labels)), key=lambda k: (labels[k].path, labels[k].line)):
        lb = labels[i]
        preds = by.get((lb.path, lb.family), [])
        hit = next((j for j, p in enumerate(preds) if (lb.path, lb.family, j) not in used and lb.line in p), None)
        if hit is not None:
            used.add((lb.path, lb.family, hit))
            found.add(i)
    return found


def join(labels: list[Label], not_sites: dict[str, list[dict[str, Any]]], classes: list[dict[str, Any]],
         finished: set[str], findings: list[dict[str, Any]],
         retired: Callable[[str], bool] = lambda _p: False,
         class_names: dict[str, set[str]] | None = None,
         scope_of: Callable[[str, int], str] = lambda _f, _n: "",
         failed_files: set[str] | None = None) -> dict[str, Counter[str]]:
    """Counts by family (`"all"` too): labels traced or not and why, the oracle's agreement, the checker's hits,
    and the oracle's sites in labelled files that the labels do not list (and those they list as not_sites).
    `class_names`: the top-level classes each file defines (a scope without a dot is a class or a function);
    `scope_of(file, line)`: the scope holding a line, for the looser agreement by class (a label on an `__init__`
    line, e.g. an `nn.Sequential`, and the oracle's site at the `forward` line that runs it); `failed_files`: the
    files whose module failed to import in the run."""
    files = {lb.path for lb in labels} | set(not_sites)
    executed: dict[str, set[int]] = defaultdict(set)
    classes_by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in classes:
        if c.get("file"):
            classes_by_file[c["file"]].append(c)
        if c.get("traced"):
            for f, lines in (c.get("executed") or {}).items():
                executed[f].update(lines)
    sites = oracle_sites(classes, files, retired)
    found = _checker_found(labels, findings)
    out: dict[str, Counter[str]] = defaultdict(Counter)

    def add(family: int, key: str, n: int = 1) -> None:
        out[str(family)][key] += n
        out["all"][key] += n

    traced_classes = {(c["file"], str(c.get("class", "")).split(".")[0]) for c in classes
                      if c.get("traced") and c.get("file")}
    site_class = {k: scope_of(k[1], k[2]).split(".")[0] for k in sites}
    for i, lb in enumerate(labels):
        hit = i in found
        add(lb.family, "labelled")
        add(lb.family, "checker", hit)
        outer = lb.scope.split(".")[0]
        if lb.line in executed.get(lb.path, ()) or (lb.path, outer) in traced_classes:
            add(lb.family, "class traced")
            add(lb.family, "class traced: checker", hit)
            near = any(k[0] == lb.family and k[1] == lb.path and site_class[k] == outer for k in sites)
            add(lb.family, "class traced: oracle agrees in class", near)
            add(lb.family, "class traced: oracle agrees in class: checker", near and hit)
        if lb.family not in ORACLE_FAMILIES:
            add(lb.family, "no oracle pattern")
        if lb.line in executed.get(lb.path, ()):
            add(lb.family, "traced")
            add(lb.family, "traced: checker", hit)
            agree = [k for k, lines in sites.items() if k[0] == lb.family and k[1] == lb.path and lb.line in lines]
            if agree:
                add(lb.family, "traced: oracle agrees")
                add(lb.family, "traced: oracle agrees: checker", hit)
                add(lb.family, "traced: oracle agrees at its anchor", any(k[2] == lb.line for k in agree))
            else:
                add(lb.family, "traced: no oracle site")
                add(lb.family, "traced: no oracle site: checker", hit)
        else:
            add(lb.family, "untraced")
            add(lb.family, "untraced: checker", hit)
            add(lb.family, f"untraced: {_reason(lb, classes_by_file, finished, class_names or {}, failed_files or set())}")
    by_file_family: dict[tuple[str, int], list[set[int]]] = defaultdict(list)
    for fd in findings:
        by_file_family[(str(fd["path"]), int(fd.get("family") or 0))].append(finding_lines(fd))
    for (fam, path, _anchor), lines in sites.items():
        add(fam, "oracle sites")
        add(fam, "oracle sites: checker", any(fl & lines for fl in by_file_family.get((path, fam), ())))
        cls = site_class[(fam, path, _anchor)]
        add(fam, "oracle sites not labelled in class",
            not any(lb.family == fam and lb.path == path and lb.scope.split(".")[0] == cls for lb in labels))
        if any(lb.family == fam and lb.path == path and lb.line in lines for lb in labels):
            continue
        add(fam, "oracle sites not labelled")
        listed = any(n.get("family") == fam and n.get("line") in lines for n in not_sites.get(path, ()))
        add(fam, "oracle sites not labelled: listed as not_sites", listed)
    return out


def fractions(classes: list[dict[str, Any]], files: set[str] | None = None) -> dict[str, float | int]:
    """Classes attempted, and the shares constructed and traced (of those defined in `files` when given)."""
    chosen = [c for c in classes if files is None or c.get("file") in files]
    n = len(chosen)
    built = sum(bool(c.get("constructed")) for c in chosen)
    traced = sum(bool(c.get("traced")) for c in chosen)
    return {"classes": n, "constructed": round(built / n, 3) if n else 0.0, "traced": round(traced / n, 3) if n else 0.0}
