"""Shared fixtures: one graph cache per test session, so each model is traced once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def wham_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session-wide `ADOPTER_CACHE_DIR`."""
    return tmp_path_factory.mktemp("adopter-cache")


@pytest.fixture
def cache_env(wham_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the graph cache at the session cache."""
    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(wham_cache))
    yield wham_cache
