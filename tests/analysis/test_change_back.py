"""DocumentAnalysis: a change back to the text before the last one (a typed character deleted, an undo) hands back
that text's result, and every later result is still the fresh analysis of its text."""

from __future__ import annotations

import random

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis

from .helpers import strictly_equal
from .test_incremental import SOURCE, _matches_fresh


def _insert(doc: DocumentAnalysis, offset: int, char: str) -> str:
    text = doc.text
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    doc.edit((line, col), (line, col), char)
    return doc.text


def _delete(doc: DocumentAnalysis, offset: int) -> str:
    text = doc.text
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    doc.edit((line, col), (line, col + 1), "")
    return doc.text


def test_a_deleted_character_gives_back_the_result_before_it() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    first = doc.result()
    at = SOURCE.index("torch.relu(x)")
    typed = _insert(doc, at, "a")
    assert doc.result() == analyse(typed, "m.py")
    assert doc.reanalysed == ("class C",)
    assert _delete(doc, at) == SOURCE
    assert doc.result() is first  # handed back, not analysed again
    assert doc.reanalysed == ()
    assert doc.analysed_text == SOURCE.encode()
    _matches_fresh(doc, SOURCE)
    again = _insert(doc, at, "a")  # redo: the typed text's result, handed back in turn
    assert doc.result() == analyse(again, "m.py")
    assert doc.reanalysed == ()


def test_a_broken_keystroke_deleted_gives_back_the_clean_result_and_the_next_one_is_fresh() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    first = doc.result()
    at = SOURCE.index("self.fc(x) + 1")
    broken = _insert(doc, at, "(")
    _matches_fresh(doc, broken)
    assert _delete(doc, at) == SOURCE
    assert doc.result() is first
    # the analyser's caches are those of the broken text's run: the next edits read from them
    other = SOURCE.index("torch.relu(x)")
    typed = _insert(doc, other, "(")
    _matches_fresh(doc, typed)
    assert _delete(doc, other) == SOURCE
    _matches_fresh(doc, SOURCE)
    typed = _insert(doc, at, "x")
    _matches_fresh(doc, typed)


def test_no_result_handed_back_after_invalidate_or_release() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    first = doc.result()
    at = SOURCE.index("torch.relu(x)")
    _insert(doc, at, "a")
    doc.result()
    doc.invalidate()
    _delete(doc, at)
    assert doc.result() is not first
    assert doc.result() == first
    _insert(doc, at, "b")
    doc.result()
    doc.release()
    _delete(doc, at)
    assert doc.result() is not first
    assert strictly_equal(doc.result(), analyse(SOURCE, "m.py"))


def test_a_text_never_analysed_is_not_handed_back() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    at = SOURCE.index("torch.relu(x)")
    _insert(doc, at, "a")  # the first text's result was never asked
    doc.result()
    _delete(doc, at)
    _matches_fresh(doc, SOURCE)
    assert "class C" in doc.reanalysed or doc.reanalysed == ()  # (from the unit cache or not: equal either way)


def test_random_keystrokes_typed_and_deleted_match_fresh_analysis() -> None:
    rng = random.Random(7)
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    for _ in range(60):
        text = doc.text
        at = rng.randrange(len(text))
        typed = _insert(doc, at, rng.choice("abx_(0 .:'\n"))
        if rng.random() < 0.8:
            _matches_fresh(doc, typed)
        if rng.random() < 0.7:
            doc.update(text)  # (the whole text: a typed line break is not one line's range)
            _matches_fresh(doc, text)
