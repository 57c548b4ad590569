# Two entry points on a fresh machine: `make demo` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup native demo test lint corpus bench clean

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

corpus: $(STAMP)
	PYTHON=$(PY) ./scripts/fetch-corpus.sh

demo: $(STAMP) native
	$(VENV)/bin/adopter demo examples

lint: $(STAMP)
	$(VENV)/bin/ruff check server tests bench
	$(VENV)/bin/mypy

test: $(STAMP) native corpus lint
	$(VENV)/bin/pytest -n 2 -q

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache build/native
