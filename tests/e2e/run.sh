#!/usr/bin/env bash
# The end-to-end test in a real VS Code (code-server): installs what it needs (tests/e2e/setup.sh),
# builds the platform .vsix, then drives the workbench with Playwright (tests/e2e/vscode.test.ts).
set -euo pipefail
cd "$(dirname "$0")/../.."
eval "$(bash tests/e2e/setup.sh)"
export NODE CODE_SERVER CHROMIUM
export PYTHON="$PWD/.venv/bin/python"
export CORPUS_WHEEL="$PWD/.cache/corpus/transformers-4.35.0-py3-none-any.whl"
TARGET=$("$PYTHON" -c 'import sys; sys.path.insert(0, "scripts"); import bundle_python; print(bundle_python.host_target())')
export VSIX="$PWD/adopter-$TARGET-0.1.0.vsix"
if [ "${ADOPTER_E2E_REUSE_VSIX:-0}" != 1 ] || [ ! -f "$VSIX" ]; then
  # The package script's `python3` is the project's venv (it has pip, which bundles the Python packages).
  PATH="$PWD/.venv/bin:$PATH" npm run --silent package >/dev/null 2>&1 \
    || PATH="$PWD/.venv/bin:$PATH" npm run package  # quiet unless it fails
fi
node esbuild.config.mjs --e2e
node --test --test-concurrency=1 "$@" tests/e2e/out/
