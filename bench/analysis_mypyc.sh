#!/usr/bin/env bash
# Builds a mypyc-compiled copy of the static analysis (adopter.analysis, adopter.positions and the
# frozen value types adopter.dsl.types) OUTSIDE the checkout, for measuring what native compilation
# buys. Never compiles in place: a stale .so next to a .py would shadow every later edit of the .py.
#
# Usage: bench/analysis_mypyc.sh [DIR]          (default DIR: /tmp/adopter-mypyc)
# Then:  PYTHONPATH=DIR/server ADOPTER_CORPUS_DIR=$PWD/.cache/corpus \
#          .venv/bin/python bench/analysis_speed.py --repeat 3
#        PYTHONPATH=DIR/server ADOPTER_CORPUS_DIR=$PWD/.cache/corpus \
#          .venv/bin/python bench/analysis_snapshot.py --check SNAPSHOT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-/tmp/adopter-mypyc}"
rm -rf "$out"
mkdir -p "$out"
# The working tree as it is (tracked files of these folders), plus the data folders adopter reads.
(cd "$root" && tar -cf - server/adopter dsl-grammar rules) | tar -xf - -C "$out"
find "$out" -name '__pycache__' -prune -exec rm -rf {} +
cd "$out/server"
"$root/.venv/bin/mypyc" adopter/analysis/*.py adopter/positions.py adopter/dsl/types.py >"$out/mypyc.log" 2>&1 || {
    tail -20 "$out/mypyc.log" >&2
    exit 1
}
echo "compiled into $out/server ($(find adopter -name '*.so' | wc -l) extension modules); log: $out/mypyc.log"
