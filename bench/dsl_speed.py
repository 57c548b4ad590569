"""Benchmark of the DSL: parser start-up, rule-file parsing, and printing/parsing real architectures.

Usage: .venv/bin/python bench/dsl_speed.py [--files N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

WARM = "from adopter.dsl.grammar import parser; parser()"
COLD = (
    "import lark; from adopter.resources import grammar_dir; "
    "lark.Lark((grammar_dir() / 'adopter.lark').read_text(), parser='lalr', propagate_positions=True, "
    "maybe_placeholders=True)"
)


def startup_seconds(*, cache: bool) -> float:
    """Time to build the DSL parser in a fresh process: from Lark's table cache, or from scratch."""
    code = f"import time; t = time.perf_counter(); {WARM if cache else COLD}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=0, help="corpus files to use (0: all 202)")
    args = parser.parse_args()

    from adopter.analysis import analyse
    from adopter.corpus import modeling_files
    from adopter.dsl import format_module_file, parse_module_file, parse_rules

    cold = [startup_seconds(cache=False) for _ in range(3)]
    warm = [startup_seconds(cache=True) for _ in range(3)]
    print(f"parser start-up: cold build median {statistics.median(cold) * 1000:.0f} ms, "
          f"from Lark's cache median {statistics.median(warm) * 1000:.0f} ms")

    rule_texts = [path.read_text() for path in sorted(Path("rules").glob("*.adl"))]
    chars = sum(map(len, rule_texts))
    start = time.perf_counter()
    rules = [rule for text in rule_texts for rule in parse_rules(text)]
    took = time.perf_counter() - start
    print(f"rules/*.adl: {len(rule_texts)} files, {len(rules)} rules, {chars} chars parsed and checked "
          f"in {took * 1000:.0f} ms ({chars / took / 1000:.0f} kB/s)")

    files = modeling_files()
    if args.files:
        files = files[: args.files]
    fmt: list[float] = []
    parse: list[float] = []
    size = 0
    archs = 0
    for corpus_file in files:
        module_file = analyse(corpus_file.text, corpus_file.member)
        archs += len(module_file.architectures)
        t0 = time.perf_counter()
        text = format_module_file(module_file)
        t1 = time.perf_counter()
        if parse_module_file(text) != module_file:
            print(f"ROUND TRIP MISMATCH: {corpus_file.name}")
            return 1
        t2 = time.perf_counter()
        fmt.append(t1 - t0)
        parse.append(t2 - t1)
        size += len(text)
    per_arch_ms = sum(fmt) / max(archs, 1) * 1000
    print(f"corpus: {len(files)} files, {archs} architectures, {size / 1e6:.1f} MB of DSL text, all round-trip")
    print(f"  format_module_file: median {statistics.median(fmt) * 1000:.1f} ms/file, "
          f"max {max(fmt) * 1000:.0f} ms, {per_arch_ms:.2f} ms/architecture")
    print(f"  parse_module_file:  median {statistics.median(parse) * 1000:.0f} ms/file, "
          f"max {max(parse) * 1000:.0f} ms, {size / sum(parse) / 1000:.0f} kB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
