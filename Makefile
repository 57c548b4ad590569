# Two entry points on a fresh machine: `make demo` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup native native-strict demo test lint corpus bench clean client-test chromium vsix e2e

setup: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet -e '.[dev,wham]'
	touch $@

# The optional compiled analysis and matcher (mypyc, ~2 min the first time; a no-op while current).
native: $(STAMP)
	$(PY) scripts/build_native.py

# `make test` builds it strictly: with a complete toolchain a mypyc failure is a bug, not a fallback.
native-strict: $(STAMP)
	$(PY) scripts/build_native.py --strict

corpus: $(STAMP)
	PYTHON=$(PY) ./scripts/fetch-corpus.sh

demo: $(STAMP) native
	$(VENV)/bin/adopter demo examples

lint: $(STAMP)
	$(VENV)/bin/ruff check server tests bench
	$(VENV)/bin/mypy

# The VS Code extension: npm packages from package-lock.json (once, then while the lock is unchanged),
# Debian's chromium for the panel's browser test (installed when missing; needs root, as CI has).
NODE_STAMP := node_modules/.adopter-installed

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  { echo "install Debian's chromium (apt-get install chromium) for the panel test"; exit 1; }

client-test: $(NODE_STAMP) chromium
	npm run test:client

vsix: $(NODE_STAMP)
	npm run package

# The extension in a real VS Code (code-server + Playwright + chromium; tests/e2e/run.sh installs them
# into .cache/e2e the first time, a few minutes, then builds the platform .vsix and drives it; the .vsix
# carries build/native when it is current, so `make test` runs it after `native-strict`).
e2e: $(STAMP) corpus $(NODE_STAMP)
	bash tests/e2e/run.sh

test: $(STAMP) native-strict corpus lint client-test e2e
	$(VENV)/bin/pytest -n 2 -q

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache build/native node_modules bundled tests/client/out
