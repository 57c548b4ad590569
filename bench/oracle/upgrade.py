"""Bring an earlier pass's results up to this one without running anything where nothing can change.

A pass adds work for some classes only (pass 2: the loss variant, for a forward with a loss switch or a
labels parameter; RMSNorm patterns through `torch.norm`, for a class whose exercised lines call a vector
norm; pass 6: another attempt at every class not traced). Which classes those are can be read from the results and the source: a distribution where none is
needs no import and no trace, and its results are marked with the new pass here. The rest go to the hosts,
which redo exactly those classes (`worker._upgrade`). The reading errs toward work: a class whose `forward`
is not in its own body, or whose source cannot be read, counts as needing it.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from oracle import stale
from oracle.source import parsed
from oracle.worker import PASS, RETRY_PASS, loss_parameter, retries, trace_outdated


def _class_def(record: dict[str, Any]) -> ast.ClassDef | None:
    tree = parsed(str(record.get("file") or ""))
    name = str(record.get("class", "")).rsplit(".", 1)[-1]
    line = record.get("def_line")
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if line in (first, node.lineno):
                return node
    return None


def forward_may_take_a_loss(record: dict[str, Any]) -> bool:
    """Whether the class's forward has a loss switch off by default or a labels parameter (or may have:
    its forward is not in its own body)."""
    cls = _class_def(record)
    fwd = next((n for n in (cls.body if cls else ()) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                and n.name == "forward"), None)
    if fwd is None:
        return True
    a = fwd.args
    positional = [*a.posonlyargs, *a.args]
    defaults: dict[str, ast.expr | None] = {p.arg: None for p in positional}
    defaults.update(zip((p.arg for p in positional[len(positional) - len(a.defaults):]), a.defaults, strict=True))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)})
    # a default that is not a literal is read as one that switches nothing on (an object, not False / None)
    return any(loss_parameter(name, default.value if isinstance(default, ast.Constant) else object(),
                              default is not None)
               for name, default in defaults.items())


def needs_work(record: dict[str, Any]) -> bool:
    """Whether a host must import the class's module for it: to attempt it again (`retries`), to trace it
    again (`trace_outdated`), or to add its loss variant."""
    if record.get("pass", 1) >= PASS:
        return False
    if not record.get("traced"):
        return retries(record)
    return trace_outdated(record) or ("loss_variant" not in record and forward_may_take_a_loss(record))


def imports_failed(folder: Path, meta: dict[str, Any]) -> bool:
    """Whether a distribution of a pass before 6 had a module that did not import: pass 6 lets torchaudio
    import without its extension (`worker.torchaudio_without_extension`), and `install.py --missing` may
    have installed what others lacked, so its modules are imported again (a class of one attempted)."""
    if meta.get("pass", 1) >= RETRY_PASS:
        return False
    try:
        imports = json.loads((folder / "_imports.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(v != "ok" for v in imports.values())


def upgrade_quietly(results: Path) -> tuple[int, int]:
    """Mark with this pass every finished distribution none of whose classes needs work; (marked, left)."""
    marked = left = 0
    for folder, done in stale.finished(results):
        meta = json.loads(done.read_text(encoding="utf-8"))
        if "install" in meta or meta.get("pass", 1) >= PASS:
            continue
        # Only the last run's records are brought up: a leftover keeps its pass, so it stays a leftover.
        loaded = [(f, json.loads(f.read_text(encoding="utf-8")))
                  for f in sorted(folder.glob("*.json")) if not f.name.startswith("_")]
        paths = [f for f, r in loaded if stale.current(r, meta)]
        records = [r for f, r in loaded if stale.current(r, meta)]
        if any(needs_work(r) for r in records) or imports_failed(folder, meta):
            left += 1
            continue
        for f, r in zip(paths, records, strict=True):
            if r.get("traced") and "loss_variant" not in r:
                r["loss_variant"] = {"arguments": [], "traced": False}
            r["pass"] = PASS
            f.write_text(json.dumps(r), encoding="utf-8")
        meta["pass"] = PASS
        meta["digests"] = stale.digests(stale.named_files(records))
        done.write_text(json.dumps(meta), encoding="utf-8")
        marked += 1
    return marked, left
