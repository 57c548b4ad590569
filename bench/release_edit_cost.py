"""What the first edit of a released document costs (the server releases the documents nobody edits).

In-process, one `DocumentAnalysis` of a modeling file: for each of `--edits` lines drawn from its classes'
`forward` and `__init__` bodies, the document is released, a comment is typed at the end of the line (the
text still parses; the class is analysed again), and the CPU time of that edit and its `result()` is taken;
the comment is then deleted and analysed again before the next release. Prints the median and p90 per kind
of line, with the `PYTHONPATH` tree's code.

    ADOPTER_NATIVE=0 PYTHONPATH=<tree>/server .venv/bin/python bench/release_edit_cost.py [--file modeling_t5.py]
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import random
import statistics
import time

from adopter.analysis.incremental import DocumentAnalysis
from adopter.corpus import modeling_files


def method_lines(text: str, name: str) -> list[int]:
    """0-based lines of the statements of every method `name` of the module's classes (single-line ones)."""
    lines = []
    for cls in ast.parse(text).body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == name:
                lines += [s.lineno - 1 for s in fn.body if s.lineno == s.end_lineno]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default="modeling_t5.py")
    parser.add_argument("--edits", type=int, default=15, help="lines per kind (default 15)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    text = next(f.text for f in modeling_files() if f.name == args.file)
    rows = text.split("\n")
    doc = DocumentAnalysis(text, f"/nonexistent/{args.file}")
    doc.result()
    rng = random.Random(args.seed)
    out: dict[str, dict[str, float]] = {}
    gc.disable()  # collections land on random edits otherwise
    for kind in ("forward", "__init__"):
        lines = method_lines(text, kind)
        costs = []
        for line in rng.sample(lines, min(args.edits, len(lines))):
            col = len(rows[line])
            doc.release()
            started = time.process_time()
            doc.edit((line, col), (line, col), "  # x")
            doc.result()
            costs.append((time.process_time() - started) * 1000)
            doc.edit((line, col), (line, col + 5), "")
            doc.result()
            gc.collect()
        costs.sort()
        out[kind] = {"edits": len(costs), "median_ms_cpu": round(statistics.median(costs), 1),
                     "p90_ms_cpu": round(costs[int(0.9 * (len(costs) - 1))], 1)}
    print(json.dumps({"file": args.file, **out}))


if __name__ == "__main__":
    main()
