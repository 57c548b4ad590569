"""Shared fixtures: one graph cache per test session, so each model is traced once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def wham_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session-wide `ADOPTER_CACHE_DIR`, shared by pytest-xdist's workers (their base temp folders sit in
    one run folder), so a graph one worker traced is not traced again by another. Cache entries are
    written to a temporary file and renamed, so workers can share it safely."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    path = base / "adopter-cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def cache_env(wham_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the graph cache at the session cache."""
    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(wham_cache))
    yield wham_cache
