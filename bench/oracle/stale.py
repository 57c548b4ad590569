"""Results traced from files that have changed since: found, set aside, and run again.

The oracle's distributions share one environment, so installing one can upgrade another that was traced
earlier (a later distribution's requirement pulled a newer `transformers`). The traced lines then name
lines of a file that no longer holds that code, and scoring `adopter check` on today's file against them
counts false misses and wrong findings. Each finished distribution therefore records the SHA-256 of every
file its results name (`_done.json`'s `digests`); a result whose files no longer have those digests is
stale. Results written before digests were recorded are judged by time: a named file changed after the
distribution's `_done.json` was written.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

STALE = ".stale"  # set-aside results, under the results folder (never read by the report)


def digest(path: str | Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def named_files(classes: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every file a distribution's class results name: sites (and their lines elsewhere) and exercised lines."""
    files: set[str] = set()
    for c in classes:
        files.update(c.get("executed") or {})
        for s in c.get("sites") or ():
            files.add(s["file"])
            files.update(s.get("elsewhere") or {})
    return files


def digests(files: Iterable[str]) -> dict[str, str]:
    return {f: d for f in sorted(files) if (d := digest(f)) is not None}


def changed(meta: Mapping[str, Any], done_mtime: float, classes: Iterable[Mapping[str, Any]]) -> list[str]:
    """The files named by `classes` that changed since the distribution was traced (sorted)."""
    recorded = meta.get("digests")
    out = []
    for f in sorted(named_files(classes)):
        path = Path(f)
        if isinstance(recorded, dict) and f in recorded:
            if digest(path) != recorded[f]:
                out.append(f)
        else:
            try:
                if path.stat().st_mtime > done_mtime:
                    out.append(f)
            except OSError:
                out.append(f)
    return out


def load_classes(folder: Path, meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The class records in `folder`; given its `_done.json`, only those of the run it describes (`current`)."""
    records = [json.loads(f.read_text(encoding="utf-8")) for f in sorted(folder.glob("*.json"))
               if not f.name.startswith("_")]
    return records if meta is None else [r for r in records if current(r, meta)]


def current(record: dict[str, Any], meta: dict[str, Any]) -> bool:
    """Whether a class record belongs to the run its folder's `_done.json` (or `_meta.json`) describes.

    Every class a run attempts is written (or brought up) with the run's pass, and `_done.json` with the same pass.
    A record of an earlier pass is a leftover: a class no later run attempted (the module list or its shuffle
    changed, the class cap moved, a module stopped importing). Leftovers are kept on disk but never scored.
    """
    return int(record.get("pass") or 1) >= int(meta.get("pass") or 1)


def finished(results: Path) -> list[tuple[Path, Path]]:
    """Each finished distribution's results folder and its `_done.json` (set-aside results left out)."""
    if not results.is_dir():
        return []
    return [(p, p / "_done.json") for p in sorted(results.iterdir())
            if p.is_dir() and not p.name.startswith(".") and (p / "_done.json").exists()]


def stale_folders(results: Path) -> dict[str, list[str]]:
    """Finished distributions whose results name a changed file: name -> the changed files."""
    out: dict[str, list[str]] = {}
    for folder, done in finished(results):
        meta = json.loads(done.read_text(encoding="utf-8"))
        files = changed(meta, done.stat().st_mtime, load_classes(folder, meta))
        if files:
            out[folder.name] = files
    return out


def set_aside(results: Path, names: Iterable[str]) -> list[Path]:
    """Move stale distributions' results under `results/.stale/` (kept, never scored) so a run redoes them."""
    moved = []
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for name in names:
        src = results / name
        if not src.is_dir():
            continue
        dst = results / STALE / f"{name}-{stamp}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        src.rename(dst)
        moved.append(dst)
    return moved
