"""bench/forms.py: the forms files carry their site marks, and the scorer reads them."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import forms  # noqa: E402


def test_marks_are_read_with_their_family_and_line() -> None:
    text = "x = 1\ny = conv(x)  # site: 7\nz = 2  # site: 16 (the head call)\n# `# site: N` in prose\n"
    assert forms.labels(text) == [(7, 2), (16, 3)]


def test_every_forms_file_parses_and_marks_sites_of_the_scored_families() -> None:
    files = sorted(forms.FORMS.glob("*.py"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        ast.parse(text)
        marks = forms.labels(text)
        assert marks and all(family in forms.FAMILIES for family, _ in marks), path.name
