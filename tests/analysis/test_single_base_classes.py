"""`crossfile.init_source.single_base_classes`: the classes of a file with one base, read at the lines that
start `class ` only (every keystroke that re-analyses a class reads a new text), the same as a scan of
the pattern over the whole text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from adopter.analysis.crossfile import init_source

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TEXTS = [
    b"class A(B):\n    pass\nclass C(nn.Module):\n    pass\n",
    b"import x\nclass A(\n    B\n)\n:\n    pass\nclass C(D, E):\n    pass\n",
    b"x = 1\n  class Inner(B):\n    pass\nclass A(B) :  \nclass A(C):\n",
    b"class A(B):\r\nclass C(D):\r\n\rclass E(F):\n",
    b"classy = 1\nclass A(B",
    b"",
]


def _scanned(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in init_source._SINGLE_BASE_CLASS.finditer(data):
        out.setdefault(m.group(1).decode(), m.group(2).decode())
    return out


class _LineStartsOnly:
    """The pattern, tried only with `match` at a line that starts `class `."""

    def __init__(self, pattern: re.Pattern[bytes]) -> None:
        self.pattern = pattern

    def match(self, data: bytes, at: int) -> Any:
        assert data.startswith(b"class ", at) and (at == 0 or data[at - 1 : at] == b"\n")
        return self.pattern.match(data, at)


@pytest.mark.parametrize("data", TEXTS + [f.read_bytes() for f in sorted(EXAMPLES.glob("*.py"))])
def test_classes_read_at_class_lines_are_those_a_scan_finds(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _scanned(data)
    monkeypatch.setattr(init_source, "_SINGLE_BASE_CLASS", _LineStartsOnly(init_source._SINGLE_BASE_CLASS))
    got = init_source.single_base_classes.__wrapped__(data)
    assert list(got.items()) == list(expected.items())
