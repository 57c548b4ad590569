"""What `fix` does to every corpus file, one JSON line per file and device, to compare two commits byte for byte.

For each file of the transformers 4.35 corpus (202 modeling files) or of the real-world set
(`bench/realworld_corpus.py`), for the `cpu` and the `cuda` target: `Session.fix` of the file, with the
SHA-1 of the new text, the sites applied and every site left with its reason. Run it on two checkouts and
compare the outputs (`cmp`): a refactoring of the fix pipeline must leave them identical.

    PYTHONPATH=<checkout>/server .venv/bin/python bench/fix_results.py OUT.jsonl [--set transformers435|realworld]

Prints the CPU seconds it took (the corpus set: about 40-60 s on the shared 2-core VM, pure Python).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--set", choices=("transformers435", "realworld"), default="transformers435")
    args = parser.parse_args()
    from adopter.engine import Environment, load_rules
    from adopter.session import RuleContext, Session

    if args.set == "realworld":
        sys.path.insert(0, str(Path(__file__).parent))
        import realworld_corpus

        files = [(f.key, f.text) for f in realworld_corpus.files()]
    else:
        from adopter.corpus import modeling_files

        files = [(f.name, f.text) for f in modeling_files()]
    rules = tuple(load_rules().rules)
    start = time.process_time()
    applied = left = 0
    with args.out.open("w", encoding="utf-8") as out:
        for device in ("cpu", "cuda"):
            for name, text in files:
                session = Session(RuleContext(rules, (), Environment(device, frozenset(), "2.13.0")))
                fixed = session.fix(text, name)
                applied, left = applied + len(fixed.applied), left + len(fixed.skipped)
                out.write(json.dumps({
                    "device": device, "file": name, "new": hashlib.sha1(fixed.new_source.encode()).hexdigest(),
                    "applied": [(f.rule_id, f.scope_name, str(f.span)) for f in fixed.applied],
                    "skipped": [(f.rule_id, f.scope_name, str(f.span), why) for f, why in fixed.skipped],
                    "problems": [p.render() for p in fixed.problems]}) + "\n")
    print(f"{len(files)} files x 2 targets: {applied} sites fixed, {left} left; "
          f"{time.process_time() - start:.1f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
