#!/usr/bin/env bash
# Download the transformers wheels that tests and benchmarks read modeling files from (never committed),
# and install transformers 4.35.0 into .cache/tf435 for the real-model equivalence tests.
#
# .cache/tf435 is a `pip install --target` directory, not a venv: tests put it on sys.path (after the
# project venv, so the venv's torch and numpy are used; torch is never installed there). Use it with
#   PYTHONPATH=.cache/tf435 .venv/bin/python -c 'import transformers.models.bert.modeling_bert'
# Set SKIP_TF435=1 to fetch only the corpus wheel (the detection benchmark and analysis tests need no more).
# Its compiled modules are built for $PYTHON: for another Python install another folder and name it to the
# tests and benchmarks (bench/tf435.py):
#   PYTHON=/opt/venv314/bin/python TF435_DIR=.cache/tf435-cp314 bash scripts/fetch-corpus.sh
#   ADOPTER_TF435=.cache/tf435-cp314 /opt/venv314/bin/python -m pytest tests/rules
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
dest=.cache/corpus
mkdir -p "$dest"
for v in 4.35.0; do
  if ! ls "$dest"/transformers-"$v"-*.whl >/dev/null 2>&1; then
    "$PY" -m pip download --quiet --no-deps --dest "$dest" "transformers==$v"
  fi
done

tf435=${TF435_DIR:-.cache/tf435}
if [ "${SKIP_TF435:-0}" != 1 ] && [ ! -f "$tf435"/transformers/models/bert/modeling_bert.py ]; then
  # What `import transformers.models.<m>.modeling_<m>` really needs besides torch and numpy, pinned to
  # transformers 4.35.0's own constraints; --no-deps so pip never pulls a second torch or numpy.
  "$PY" -m pip install --quiet --no-deps --target "$tf435" \
    "$dest"/transformers-4.35.0-*.whl \
    "huggingface_hub>=0.16.4,<0.18" "safetensors>=0.3.1" "regex!=2019.12.17" \
    requests urllib3 idna certifi charset_normalizer fsspec typing_extensions \
    "pyyaml>=5.1" "tqdm>=4.27" filelock "packaging>=20.0"
  # tokenizers 0.14 (the pin) has wheels up to CPython 3.12 and building it needs Rust. The modeling files
  # import without it (transformers checks for it), so a Python it has no wheel for goes on without.
  if ! "$PY" -m pip install --quiet --no-deps --only-binary=:all: --target "$tf435" "tokenizers>=0.14,<0.15"; then
    echo "fetch-corpus: no tokenizers 0.14 wheel for $("$PY" -V): $tf435 has none (the modeling files do not need it)" >&2
  fi
fi
