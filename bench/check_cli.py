"""CPU of the real `adopter check` over the ten transformers 4.35 files of issue 16 and examples/.

What `check` costs a user, fix decisions included (`bench/check_speed.py` times analysis and matching
per file, without them). Each run is a fresh process: `python -m adopter check --target cpu FILES
examples/`; the figure is its user + system CPU (`getrusage` of the child), so other load on a shared
machine inflates it less than wall time.

    .venv/bin/python bench/check_cli.py [--runs 5] [--no-decisions]
    .venv/bin/python bench/check_cli.py --fix-analyses   # what one `fix` run analyses, in this process

`PYTHONPATH=<a git archive of another commit>/server` in front measures that commit's `adopter` with
this checkout's interpreter (`git archive <commit> server rules dsl-grammar | tar -x -C DIR`).
`--no-decisions` runs only what `check` does before deciding fixability (rule loading, analysis,
matching), the floor the decisions add to.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MODELS = ("bert", "gpt2", "t5", "bart", "vit", "llama", "mistral", "opt", "gpt_neo", "clip")
REPO = Path(__file__).resolve().parents[1]

FLOOR = """
import sys
from argparse import Namespace
from adopter.commands._common import python_files, read_source, session_for
session, _ = session_for(Namespace(rules=[], select=[], ignore=[], target="cpu"))
n = sum(len(session.analysed(read_source(p)[0], str(p)).findings) for p, _ in python_files(sys.argv[1:]))
print(f"Found {n} sites (fixability not decided).")
"""


def child_cpu(cmd: list[str]) -> tuple[float, str]:
    """CPU seconds (user + sys) of one run of `cmd`, and the last line it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=os.environ.copy())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = out.stdout.strip().splitlines()
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, lines[-1] if lines else ""


def fix_analyses(files: list[tuple[str, str]]) -> int:
    """`Session.fix` of each file with the bundled rules for CPU: analyses run, sites fixed and left, CPU."""
    import time

    from adopter.engine import Environment, load_rules
    from adopter.session import RuleContext, Session

    rules = tuple(load_rules().rules)
    analyses = applied = left = 0
    start = time.process_time()
    for name, text in files:
        session = Session(RuleContext(rules, (), Environment("cpu", frozenset(), "2.13.0")))
        out = session.fix(text, name)
        analyses, applied, left = analyses + session.analyses, applied + len(out.applied), left + len(out.skipped)
    print(f"fix of {len(files)} files: {analyses} full analyses, {applied} sites fixed, {left} left, "
          f"{time.process_time() - start:.2f} s CPU")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-decisions", action="store_true", help="analysis and matching only (the floor)")
    parser.add_argument("--fix-analyses", action="store_true",
                        help="instead: fix each file once (Session.fix) and count the full analyses it ran")
    args = parser.parse_args()
    from adopter.corpus import modeling_file

    if args.fix_analyses:
        return fix_analyses([(f"modeling_{m}.py", modeling_file(m).text) for m in MODELS] + [
            (str(p), p.read_text(encoding="utf-8")) for p in sorted((REPO / "examples").glob("*.py"))])

    with tempfile.TemporaryDirectory(prefix="adopter-check-cli-") as tmp:
        paths = []
        for model in MODELS:
            path = Path(tmp) / f"modeling_{model}.py"
            path.write_text(modeling_file(model).text, encoding="utf-8")
            paths.append(str(path))
        paths.append(str(REPO / "examples"))
        if args.no_decisions:
            cmd = [sys.executable, "-c", FLOOR, *paths]
        else:
            cmd = [sys.executable, "-m", "adopter", "check", "--target", "cpu", *paths]
        runs = [child_cpu(cmd) for _ in range(args.runs)]
    times = [t for t, _ in runs]
    import adopter

    print(f"adopter from {Path(adopter.__file__).parent}; {runs[-1][1]}")
    print(f"CPU per run: min {min(times):.2f} s, median {statistics.median(times):.2f} s over {len(times)} runs; "
          f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
