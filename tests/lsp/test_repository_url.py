"""The rule docs' base URL: the installed distribution's `Project-URL`, read from its METADATA file without
`importlib.metadata` (which the first diagnostics would otherwise wait for)."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from adopter.lsp import wire


@pytest.fixture(autouse=True)
def fresh_cache() -> object:
    wire.repository_url.cache_clear()
    yield
    wire.repository_url.cache_clear()


def _dist(folder: Path, name: str, headers: str) -> None:
    info = folder / name
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: adopter\n{headers}\nA description.\nProject-URL: Repository, https://not.a/header\n")


def test_project_url_from_the_first_dist_info(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path / "a", "adopter-0.2.0.dist-info",
          "Project-URL: Documentation, https://docs.example.org\nProject-URL: Repository, https://example.org/fork/\n")
    _dist(tmp_path / "b", "adopter-0.1.0.dist-info", "Project-URL: Repository, https://example.org/second\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path / "a"), str(tmp_path / "b")])

    def no_scan(name: str) -> object:
        raise AssertionError("importlib.metadata was asked")

    monkeypatch.setattr(importlib.metadata, "metadata", no_scan)
    assert wire.repository_url() == "https://example.org/fork"
    assert wire.rule_docs_href("f10-sdpa").startswith("https://example.org/fork/blob/main/docs/rules.md#")


def test_fallback_without_a_repository_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path, "adopter-0.1.0.dist-info", "Project-URL: Documentation, https://docs.example.org\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert wire.repository_url() == wire.REPOSITORY_URL


def test_fallback_when_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert wire.repository_url() == wire.REPOSITORY_URL
