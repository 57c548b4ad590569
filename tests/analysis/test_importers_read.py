"""`crossfile.importers.imported_elsewhere` reads every file of the package into one buffer: what an earlier,
longer file left past a file's end must never count, and the size limit still skips a large file."""

from __future__ import annotations

from pathlib import Path

import pytest

from adopter.analysis.crossfile import importers


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "rope.py").write_text("def helper(x):\n    return x\n", encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path / "rope.py"


def test_a_word_at_the_end_of_a_shorter_file_is_a_word(tmp_path: Path) -> None:
    # a.py, read first, leaves `XYZ` in the buffer right past the end of b.py's `helper`.
    own = _package(tmp_path, {"a.py": "from rope import helperXYZ\n", "b.py": "from rope import helper"})
    assert importers.imported_elsewhere(str(own), ["helper"]) == frozenset({"helper"})


def test_a_longer_identifier_is_not_the_word(tmp_path: Path) -> None:
    own = _package(tmp_path, {"a.py": "from rope import helper_two\n", "b.py": "import rope\nhelperXYZ = 1\n"})
    assert importers.imported_elsewhere(str(own), ["helper"]) == frozenset()


def test_what_an_earlier_file_held_past_a_later_ones_end_does_not_count(tmp_path: Path) -> None:
    own = _package(tmp_path, {"a.py": "import os\n" + "#" * 40 + "\nfrom rope import helper\n", "b.py": "import os\n"})
    (tmp_path / "a.py").unlink()  # the folder changed: a fresh listing, b.py alone
    assert importers.imported_elsewhere(str(own), ["helper"]) == frozenset()
    own = _package(tmp_path, {"a.py": "import os\n" + "#" * 40 + "\nfrom rope import helper\n", "c.py": "x = 1\n"})
    assert importers.imported_elsewhere(str(own), ["helper"]) == frozenset({"helper"})
    # c.py is read after a.py: the buffer still holds a.py's import past c.py's end, and a fresh question
    # (another name list, not the cached answer) over b.py and c.py alone must not see it.
    (tmp_path / "a.py").unlink()
    assert importers.imported_elsewhere(str(own), ["helper", "other"]) == frozenset()


def test_a_file_over_the_limit_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = _package(tmp_path, {"a.py": "from rope import helper\n" + "#" * 100 + "\n"})
    assert importers.imported_elsewhere(str(own), ["helper"]) == frozenset({"helper"})
    monkeypatch.setattr(importers, "MAX_BYTES", 64)
    assert importers.imported_elsewhere(str(own), ["helper", "x"]) == frozenset()
    (tmp_path / "a.py").write_text("from rope import helper\n", encoding="utf-8")  # within the limit again
    assert importers.imported_elsewhere(str(own), ["helper", "y"]) == frozenset({"helper"})


def test_is_word_reads_only_the_given_size() -> None:
    data = bytearray(b"use helper" + b"XYZ")
    assert importers._is_word(data, b"helper", 10)
    assert not importers._is_word(data, b"helper")
    assert not importers._is_word(data, b"helper", 9)  # cut inside the word: not there
