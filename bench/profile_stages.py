"""A py-spy profile of `adopter check` by stage, and its top frames (issue 22: where the CPU time goes).

Record the profile first, then aggregate it:

    py-spy record -r 100 --nonblocking -f raw -o check.spy -- \\
        .venv/bin/python -m adopter check --format json --jobs 1 --no-cache --quiet FILES... > /dev/null
    .venv/bin/python bench/profile_stages.py check.spy [--top 25]

A sample's stage is named by the first frame, from the leaf up, that belongs to one (so `ast.parse` called by
the cross-file reach counts as cross-file, and called by fix planning as fix planning). Samples without a
Python frame (py-spy could not read the stack, common on a loaded machine) are counted apart, and the
stage shares are of the others. Self frames are the leaves, line numbers dropped.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

STAGES = [
    # The line of `new_parser().parse(data)` in `Session.analysed` (the leaf when tree-sitter parses).
    ("tree-sitter parse", r"^Session\.analysed \(adopter/session.py:(31\d|339)\)"),
    ("cross-file (reach, jedi, importers)", r"adopter/analysis/crossfile/|jedi/|parso/"),
    ("names", r"adopter/analysis/names/"),
    ("scope", r"adopter/analysis/scope/"),
    ("flow", r"adopter/analysis/flow/"),
    ("canonical", r"adopter/analysis/canonical/"),
    ("chains", r"adopter/analysis/chains/"),
    ("idioms", r"adopter/analysis/idioms/"),
    ("parse helpers (source, salvage)", r"adopter/analysis/parse/"),
    ("analysis driver", r"adopter/analysis/(analyser|__init__)"),
    ("fix planning (ParsedText, strategies)", r"adopter/parsed.py|adopter/synth/|Session\.planned|Session\._plan"),
    ("matching", r"adopter/engine/|UnitMatcher|Session\._matched"),
    ("session (cache, eviction)", r"adopter/session.py"),
    ("output", r"adopter/commands/check.py"),
    ("start-up (imports, rules)", r"<module>|_find_and_load|adopter/dsl/|load_rules|adopter/commands/|adopter/cli"),
]
_PATTERNS = [(name, re.compile(pattern)) for name, pattern in STAGES]
_LINE = re.compile(r":\d+\)$")


def stage_of(frames: list[str]) -> str:
    """The stage of one stack (root first)."""
    for frame in reversed(frames):
        for name, pattern in _PATTERNS:
            if pattern.search(frame):
                return name
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", help="py-spy's raw (collapsed) output")
    parser.add_argument("--top", type=int, default=25, help="self frames to list")
    args = parser.parse_args()
    stages: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    total = empty = 0
    with open(args.profile, encoding="utf-8") as handle:
        for line in handle:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not count.isdigit():
                continue
            n = int(count)
            total += n
            if not stack.strip():
                empty += n
                continue
            frames = stack.split(";")
            stages[stage_of(frames)] += n
            leaves[_LINE.sub(")", frames[-1])] += n
    framed = total - empty
    if not framed:
        print("no samples with a Python frame")
        return
    print(f"{total} samples, {empty} ({100 * empty / total:.1f} %) without a Python frame; "
          f"shares of the {framed} others")
    print("| stage | share |\n|---|---|")
    for name, n in stages.most_common():
        print(f"| {name} | {100 * n / framed:.1f} % |")
    print(f"\n| self | frame (top {args.top}) |\n|---|---|")
    for frame, n in leaves.most_common(args.top):
        print(f"| {100 * n / framed:.1f} % | `{frame}` |")


if __name__ == "__main__":
    main()
