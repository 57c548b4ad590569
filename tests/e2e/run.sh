#!/usr/bin/env bash
# The end-to-end test in a real VS Code (code-server): installs what it needs (tests/e2e/setup.sh),
# builds the platform and the universal .vsix, then drives the workbench with Playwright: the platform one
# (tests/e2e/vscode.test.ts), then the universal one with a Python that lacks the compiled packages
# (tests/e2e/universal.test.ts: the Install prompt, a private environment from PyPI, diagnostics).
set -euo pipefail
cd "$(dirname "$0")/../.."
eval "$(bash tests/e2e/setup.sh)"
export NODE CODE_SERVER CHROMIUM
export PYTHON="$PWD/.venv/bin/python"
export CORPUS_WHEEL="$PWD/.cache/corpus/transformers-4.35.0-py3-none-any.whl"
TARGET=$("$PYTHON" -c 'import sys; sys.path.insert(0, "scripts"); import bundle_python; print(bundle_python.host_target())')
export VSIX="$PWD/adopter-$TARGET-0.1.0.vsix"        # vscode.test.ts: this machine's platform .vsix
export VSIX_UNIVERSAL="$PWD/adopter-0.1.0.vsix"      # universal.test.ts: no compiled packages
# The package scripts' `python3` is the project's venv (it has pip, which bundles the Python packages).
for script in package package:universal; do
  out=$VSIX; [ "$script" = package ] || out=$VSIX_UNIVERSAL
  if [ "${ADOPTER_E2E_REUSE_VSIX:-0}" != 1 ] || [ ! -f "$out" ]; then
    PATH="$PWD/.venv/bin:$PATH" npm run --silent "$script" >/dev/null 2>&1 \
      || PATH="$PWD/.venv/bin:$PATH" npm run "$script"  # quiet unless it fails
  fi
done
node esbuild.config.mjs --e2e
node --test --test-concurrency=1 "$@" tests/e2e/out/
