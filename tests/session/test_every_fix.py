"""Every offered fix, applied alone and as `fix` of the whole file, on a sample of the corpus
(bench/fix_corpus.py runs all 202 files): it compiles, removes its site and adds no finding, is not
offered again on the code it wrote, and `fix` reaches a fixed point."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import fix_corpus  # noqa: E402


def test_examples() -> None:
    tally = fix_corpus.Tally()
    for path in sorted((REPO / "examples").glob("*.py")):
        fix_corpus.check_file(str(path), path.read_text(encoding="utf-8"), tally)
    assert tally.failures == []
    assert tally.fixable == tally.fixes_ok > 0


@pytest.mark.corpus
@pytest.mark.slow
def test_a_seeded_sample_of_the_corpus() -> None:
    from adopter.corpus import modeling_files

    files = [f for f in modeling_files() if len(f.text) < 60_000]
    sample = random.Random(16).sample(files, 8)
    tally = fix_corpus.Tally()
    for f in sample:
        fix_corpus.check_file(f.name, f.text, tally)
    assert tally.failures == []
    assert tally.fixable > 0 and tally.fixable == tally.fixes_ok
