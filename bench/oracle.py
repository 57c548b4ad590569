"""Recall oracle: score `adopter check` against the ops that actually run, over 100+ PyPI distributions.

Every `nn.Module` class of each distribution (`bench/oracle/packages.py`, minus the held-out set) is
built (`adopter.construction`), traced forward and backward on the meta device (`bench/oracle/trace.py`),
and each rule family's op pattern is found in the forward graph with inductor's pattern matcher
(`bench/oracle/patterns.py`, attention from `torch/_inductor/fx_passes/fuse_attention.py`), placed at the
source lines its ops' stack traces name. `adopter check --format json` runs on the same files; recall is
the share of oracle sites it reports at those lines, precision the share of its findings in traced,
exercised code that match ops of their family.

    python bench/oracle.py run [--jobs 2] [--class-timeout 20] [--max-classes 150] [--dist NAME ...]
                               [--ray-address ADDR] [--no-install]
    python bench/oracle.py report [--markdown docs/notes/oracle.md] [--json OUT]
    python bench/oracle.py        # run, then report

Results are cached per class in `.cache/oracle/results/<dist>/`; a rerun goes on where it stopped.
Distributions install into `.cache/oracle/venv`, which shares the project's torch (never another one).
An install can upgrade a package another distribution was traced from: each finished distribution records
the digests of the files its results name, the report leaves out results whose files changed (and lists
them), and `run` traces those again (`oracle/stale.py`). When the oracle itself changes (`worker.PASS`), a
run brings earlier results up to date, tracing again only the classes the change can touch
(`oracle/upgrade.py`): `run --no-install` after a change of the patterns. A distribution cut short by a smaller
`--max-classes` than this run's is run again, its classes kept.

`ADOPTER_ORACLE_ROOT` moves the whole oracle folder (venv, installs, results, check cache) elsewhere;
`bench/oracle_heldout.py` uses it to run the oracle over held-out distributions as a measurement that prints
aggregate counts only (why the oracle and the held-out labels disagree).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "server"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=("run", "report", "all"), default="all")
    parser.add_argument("--jobs", type=int, default=2, help="host processes (default 2)")
    parser.add_argument("--class-timeout", type=float, default=20.0, help="seconds per class (default 20)")
    parser.add_argument("--max-classes", type=int, default=150,
                        help="classes attempted per distribution (default 150; a distribution cut short by a smaller cap is run again)")
    parser.add_argument("--dist", action="append", help="only these distributions (repeatable)")
    parser.add_argument("--ray-address", help="run the hosts as tasks on this Ray cluster (the nodes must share "
                        "this checkout, .cache/oracle and its results); default: a local pool")
    parser.add_argument("--no-install", action="store_true", help="install nothing: run only the distributions the "
                        "installer's ledger holds (to rerun classes whose cached results were deleted)")
    parser.add_argument("--markdown", type=Path, help="write the report as Markdown here")
    parser.add_argument("--json", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    if args.command in ("run", "all"):
        from oracle.packages import distributions
        from oracle.run import run

        specs = [s for s in distributions() if not args.dist or s.split("==")[0] in args.dist]
        run(specs, jobs=args.jobs, class_timeout=args.class_timeout, max_classes=args.max_classes,
            ray_address=args.ray_address, installs=not args.no_install)
    if args.command in ("report", "all"):
        from oracle.report import report

        return report(args.markdown, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
