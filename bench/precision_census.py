"""Every finding of every bundled rule over the `transformers` 4.35 modeling files, for reading by eye.

The labelled benchmark (`bench/detection.py`) scores 50 files; this lists the findings in all of them
(every PyTorch modeling file of the wheel), with the source line and the `__init__` lines involved, so
that wrong findings outside the labelled files can be found and a change's effect seen as a diff.
Run: `.venv/bin/python bench/precision_census.py OUT.json [--against OLD.json] [--rule PREFIX]`
(`--against` prints the findings gone and added since OLD.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def census() -> list[dict[str, Any]]:
    """One record per finding: file, family, rule, class, 1-based line, its text, init and statement lines."""
    from adopter.analysis import analyse
    from adopter.corpus import modeling_files
    from adopter.engine import check, detect_environment, load_rules

    rules = load_rules().rules
    env = detect_environment("cpu")
    out: list[dict[str, Any]] = []
    for f in modeling_files(pytorch_only=False):
        lines = f.text.splitlines()
        for fd in check(analyse(f.text, f.member), rules, env).findings:
            first = fd.span.start_line
            out.append({
                "file": f.name, "family": fd.family, "rule": fd.rule_id, "class": fd.scope_name,
                "line": first + 1, "text": lines[first].strip(),
                "init": sorted({s.start_line + 1 for s in fd.init_spans}),
                "stmts": [s.start_line + 1 for s in fd.stmt_spans],
            })
    return out


def _key(record: dict[str, Any]) -> tuple[str, str, int]:
    return (record["file"], record["rule"], record["line"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--against", type=Path, help="an earlier census: print what changed")
    parser.add_argument("--rule", default="", help="only rules whose id starts with this")
    args = parser.parse_args()
    found = [r for r in census() if r["rule"].startswith(args.rule)]
    args.out.write_text(json.dumps(found, indent=0), encoding="utf-8")
    print(f"{len(found)} findings written to {args.out}")
    if args.against is not None:
        old = {_key(r): r for r in json.loads(args.against.read_text(encoding="utf-8"))
               if r["rule"].startswith(args.rule)}
        new = {_key(r): r for r in found}
        for key in sorted(set(old) - set(new)):
            print(f"- {key[0]}:{key[2]} {key[1]} in {old[key]['class']}: {old[key]['text'][:80]}")
        for key in sorted(set(new) - set(old)):
            print(f"+ {key[0]}:{key[2]} {key[1]} in {new[key]['class']}: {new[key]['text'][:80]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
