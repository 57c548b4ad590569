"""Does `check`'s fix decision agree with the verified one? Over the 202 modeling files of transformers 4.35
(or the real-world set of `bench/realworld_corpus.py`).

`check` calls a site fixable when its strategy plans edits that splice into whole statements
(`Session.planned`, no analysis of the rewrite); `fix` and the quick fix apply and verify
(`Session.decision`). For every finding the engine calls fixable, for the CPU and the CUDA target, this
compares the two and lists where they differ, with the verification's reason.

    .venv/bin/python bench/fix_decisions.py [--files N] [--set transformers435|realworld]
"""

from __future__ import annotations

import argparse
import collections
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=0, help="only the first N files (default: all)")
    parser.add_argument("--set", choices=("transformers435", "realworld"), default="transformers435")
    args = parser.parse_args()
    from adopter.engine import Environment, load_rules
    from adopter.session import RuleContext, Session

    rules = tuple(load_rules().rules)
    if args.set == "realworld":
        import realworld_corpus

        files: list[tuple[str, str]] = [(f.key, f.text) for f in realworld_corpus.files()]
    else:
        from adopter.corpus import modeling_files

        files = [(f.name, f.text) for f in modeling_files()]
    files = files[: args.files or None]
    tally: collections.Counter[tuple[bool, bool]] = collections.Counter()
    differ: list[str] = []
    start = time.perf_counter()
    for device in ("cpu", "cuda"):
        env = Environment(device, frozenset(), "2.13.0")
        for name, text in files:
            session = Session(RuleContext(rules, (), env))
            analysed = session.analysed(text, name)
            for finding in analysed.findings:
                if not finding.fixable:
                    continue
                planned = session.planned(analysed, finding).fixable
                verified = session.decision(analysed, finding)
                tally[(planned, verified.fixable)] += 1
                if planned != verified.fixable:
                    differ.append(f"{device} {name}:{finding.span.start_line + 1} {finding.rule_id}: "
                                  f"planned {planned}, verified {verified.fixable} ({verified.reason})")
    total = sum(tally.values())
    print(f"{len(files)} files x 2 targets, {total} sites the engine calls fixable, {time.perf_counter() - start:.0f} s")
    print(f"both fixable {tally[(True, True)]}, both not {tally[(False, False)]}, "
          f"planned only {tally[(True, False)]}, verified only {tally[(False, True)]}")
    for line in differ:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
