#!/usr/bin/env bash
# Download the transformers wheels that tests and benchmarks read modeling files from (never committed).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/corpus
mkdir -p "$dest"
for v in 4.35.0; do
  if ! ls "$dest"/transformers-"$v"-*.whl >/dev/null 2>&1; then
    "${PYTHON:-python3}" -m pip download --quiet --no-deps --dest "$dest" "transformers==$v"
  fi
done
