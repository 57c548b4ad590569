"""Where an edit's time goes: an in-process replay of `bench/lsp_latency.py`'s one-character edits.

The same edits as the LSP bench (same generator, same seed), applied as the server applies them
(`lsp.sync.byte_edit` -> `OpenText.apply`) and analysed and matched as the server does
(`lsp.pipeline.analyse_python`, the server's deferred cross-file reach, the bundled rules). Each edit is
timed in CPU time (`time.thread_time`, one thread) and split into phases by wrapping the functions of the
edit path: tree-sitter re-parse of the edited text, `salvage`'s masking, the re-parse of the masked
text, the rest of the analysis, matching. Prints p50/p95/max per file, the phases of the slowest 10 %,
and the broken/clean split. No LSP transport, no diagnostics conversion: those are the same for every
edit and are in `bench/lsp_latency.py`'s figures.

    PYTHONPATH=server .venv/bin/python bench/edit_profile.py [--files modeling_bert.py ...] [--edits 200]
        [--seed 0] [--rounds 1] [--json OUT] [--cprofile OUT.prof] [--no-phases]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adopter.analysis import analyser as analyser_module
from adopter.analysis import incremental
from adopter.analysis.analyser import deferred_reach
from adopter.analysis.parse import salvage as salvage_module
from adopter.corpus import modeling_files
from adopter.lsp.pipeline import analyse_python, load_rule_context
from adopter.lsp.server import freeze_long_lived
from adopter.lsp.settings import Settings
from adopter.lsp.sync import LineStarts, byte_edit
from adopter.session import OpenText, UnitMatcher
from lsp_latency import one_line_edits, percentile

PHASES = ("reparse", "mask", "masked parse", "symbols", "fingerprints", "units", "analysis", "match")
_spent: dict[str, float] = defaultdict(float)
_stack: list[str] = []


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its CPU time charged to `name` (nested phases are subtracted from the outer one)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        _stack.append(name)
        try:
            return fn(*args, **kwargs)
        finally:
            _stack.pop()
            spent = time.thread_time() - started
            _spent[name] += spent
            if _stack:
                _spent[_stack[-1]] -= spent

    return wrapper


def instrument() -> None:
    incremental.DocumentAnalysis._set_text = _timed("reparse", incremental.DocumentAnalysis._set_text)  # type: ignore[method-assign]
    incremental.DocumentAnalysis._parse_analysed = _timed(  # type: ignore[method-assign]
        "masked parse", incremental.DocumentAnalysis._parse_analysed)
    # The incremental document masks a broken text itself and hands the result to the run (`salvaged`): its own
    # name for `salvage` is the one called on the edit path; the analyser's is called by one-off analyses only.
    masking = _timed("mask", salvage_module.salvage)
    analyser_module.salvage = masking  # type: ignore[attr-defined]
    incremental.salvage = masking  # type: ignore[attr-defined]
    analyser_module.Analyser.run = _timed("analysis", analyser_module.Analyser.run)  # type: ignore[method-assign]
    UnitMatcher.match = _timed("match", UnitMatcher.match)  # type: ignore[method-assign]
    # Inside the analysis: the per-run tables, the cache checks, the units analysed afresh.
    analyser_module.ModuleSymbols.__init__ = _timed("symbols", analyser_module.ModuleSymbols.__init__)  # type: ignore[method-assign]
    analyser_module.ClassTable.__init__ = _timed("symbols", analyser_module.ClassTable.__init__)  # type: ignore[method-assign]
    analyser_module.ModuleSymbols.fingerprint = _timed(  # type: ignore[method-assign]
        "fingerprints", analyser_module.ModuleSymbols.fingerprint)
    for name in ("_class", "_function", "_method"):
        setattr(analyser_module.Analyser, name, _timed("units", getattr(analyser_module.Analyser, name)))


def replay(name: str, text: str, edits: list[tuple[int, int, str, int]], folder: Path,
           profiler: cProfile.Profile | None) -> list[dict[str, Any]]:
    configured = load_rule_context(Settings(debounce_ms=0), folder, reach=deferred_reach())
    freeze_long_lived()  # as the server does once rules are loaded: a full collection does not walk them
    path = str(folder / name)
    document = OpenText(text, path, reach=deferred_reach())
    analyse_python(document, 1, configured)
    gc.collect(1)  # as the server does after opening a document (`lsp.documents.Analyses.compute`)
    document.prepare()  # as the server does once a document is opened (`lsp.documents.Analyses.compute`)
    lines = LineStarts(text)
    rows = []
    for version, (line, column, inserted, deleted) in enumerate(edits, start=2):
        _spent.clear()
        started = time.thread_time()
        if profiler is not None:
            profiler.enable()
        new_text, e = byte_edit(document.text, (line, column), (line, column + deleted), inserted, lines)
        document.apply(e.start_byte, e.old_end_byte, e.new_end_byte, e.start_point, e.old_end_point,
                       e.new_end_point, new_text)
        snapshot = analyse_python(document, version, configured)
        if profiler is not None:
            profiler.disable()
        total = (time.thread_time() - started) * 1000
        module_file = snapshot.module_file
        rows.append({
            "version": version, "edit": [line, column, inserted, deleted], "ms": total,
            "broken": any(p.code == "syntax-error" for p in (module_file.problems if module_file else ())),
            "phases": {k: _spent.get(k, 0.0) * 1000 for k in PHASES},
            "reanalysed": list(document._analysis.reanalysed) if document._analysis is not None else [],
        })
    return rows


def summary(name: str, rows: list[dict[str, Any]]) -> str:
    ms = [r["ms"] for r in rows]
    slow = sorted(rows, key=lambda r: r["ms"])[-max(1, len(rows) // 10):]
    broken = [r["ms"] for r in rows if r["broken"]]
    clean = [r["ms"] for r in rows if not r["broken"]]
    inserts = [r["ms"] for r in rows if r["edit"][2] and not r["edit"][3]]  # a character typed
    out = [f"{name}: {len(rows)} edits, CPU ms p50 {statistics.median(ms):.2f} p95 {percentile(ms, 0.95):.2f} "
           f"max {max(ms):.2f}; inserts {len(inserts)} (p50 {statistics.median(inserts) if inserts else 0:.2f} "
           f"p95 {percentile(inserts, 0.95) if inserts else 0:.2f}); "
           f"broken {len(broken)} (p50 {statistics.median(broken) if broken else 0:.2f}), "
           f"clean {len(clean)} (p50 {statistics.median(clean) if clean else 0:.2f})"]
    if not any(any(r["phases"].values()) for r in rows):
        return "\n".join(out)  # --no-phases
    phase_total = {k: sum(r["phases"][k] for r in slow) for k in PHASES}
    whole = sum(r["ms"] for r in slow)
    other = whole - sum(phase_total.values())
    out.append(f"  slowest 10 % ({len(slow)} edits, {whole:.1f} ms): "
               + ", ".join(f"{k} {v / whole * 100:.0f} %" for k, v in phase_total.items())
               + f", other {other / whole * 100:.0f} %; broken {sum(r['broken'] for r in slow)} of {len(slow)}")
    for r in slow[::-1][:8]:
        out.append(f"    {r['ms']:6.2f} ms broken={r['broken']!s:5} edit={r['edit']} "
                   + " ".join(f"{k}={v:.1f}" for k, v in r["phases"].items())
                   + f" units={len(r['reanalysed'])} {r['reanalysed'][:4]}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="+", default=["modeling_bert.py", "modeling_t5.py"])
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1, help="replays per file (figures over all)")
    parser.add_argument("--json", type=Path, help="write every edit's row here")
    parser.add_argument("--cprofile", type=Path, help="write a cProfile of the edits (all files) here")
    parser.add_argument("--no-phases", action="store_true",
                        help="time whole edits only: the phase wrappers cost ~1 us per wrapped call, which "
                             "favours a build that calls the wrapped functions less (use for A/B)")
    args = parser.parse_args()
    if not args.no_phases:
        instrument()
    files = modeling_files()
    corpus = {f.name: f for f in files}
    profiler = cProfile.Profile() if args.cprofile else None
    tmp = tempfile.TemporaryDirectory(prefix="adopter-edit-profile-")
    folder = Path(tmp.name)  # every modeling file beside the edited one, as `bench/lsp_latency.py` has them
    for f in files:
        (folder / f.name).write_text(f.text, encoding="utf-8")
    out: dict[str, list[dict[str, Any]]] = {}
    for name in args.files:
        text = corpus[name].text
        edits = one_line_edits(text, args.edits, random.Random(args.seed))
        rows: list[dict[str, Any]] = []
        for _ in range(args.rounds):
            rows += replay(name, text, edits, folder, profiler)
        out[name] = rows
        print(summary(name, rows), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out))
    if profiler is not None and args.cprofile:
        profiler.dump_stats(str(args.cprofile))
    tmp.cleanup()


if __name__ == "__main__":
    main()
