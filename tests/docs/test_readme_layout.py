"""The README says what is true of the tree: its layout table names paths that exist, the server row
names exactly the server package's sub-packages, and every runtime dependency pyproject declares is
imported by the server (no declared dependency goes unused)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server" / "adopter"


def layout_rows() -> list[tuple[str, str]]:
    """The (path cell, description cell) rows of the README's `## Layout` table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            rows.append((cells[0], cells[1]))
    return rows


def test_the_layout_table_has_rows() -> None:
    assert len(layout_rows()) >= 5


def test_every_path_in_the_layout_table_exists() -> None:
    missing = [p for cell, _ in layout_rows() for p in re.findall(r"`([^`]+)`", cell) if not (ROOT / p).exists()]
    assert missing == []


def test_the_server_row_names_exactly_the_sub_packages() -> None:
    row = next(desc for cell, desc in layout_rows() if "`server/adopter/`" in cell)
    named = set(re.findall(r"`([a-z_]+)/`", row))
    packages = {p.name for p in SERVER.iterdir() if (p / "__init__.py").is_file()}
    assert named == packages
    modules = set(re.findall(r"`([a-z_]+\.py)`", row))
    assert {m for m in modules if not (SERVER / m).is_file()} == set()


def test_every_rule_file_the_rules_row_implies_exists() -> None:
    assert any(cell == "`rules/`" for cell, _ in layout_rows())
    assert sorted((ROOT / "rules").glob("*.adl"))


def imported_roots() -> set[str]:
    roots: set[str] = set()
    for path in SERVER.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                roots.add(node.module.split(".")[0])
    return roots


def test_every_runtime_dependency_is_imported_by_the_server() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0] for d in project["dependencies"]]
    unused = [n for n in names if n.lower().replace("-", "_") not in imported_roots()]
    assert unused == []
