"""DocumentAnalysis.prepare: salvage's memo filled from a clean text when a document is opened. The first
keystroke that breaks the text then parses only the statements of the segment it is in, and gives exactly
what a fresh analysis gives; an entry whose text changed since (an edit while the text was clean) is not
reused."""

from __future__ import annotations

from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.parse import salvage as salvage_module
from adopter.analysis.parse.salvage import mask_broken

from .test_incremental import _replace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bert_encoder.py"


def _parsed_alone(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The statement texts the masking parses alone from now on (memo misses)."""
    parsed: list[bytes] = []
    original = salvage_module._Masker._parses_text

    def counting(self: salvage_module._Masker, text: bytes, indent: int) -> bool:
        if self.memo.get((text, indent)) is None:
            parsed.append(text)
        return original(self, text, indent)

    monkeypatch.setattr(salvage_module._Masker, "_parses_text", counting)
    return parsed


@pytest.mark.pure_python
def test_the_first_broken_keystroke_after_prepare_parses_only_its_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    doc.prepare()
    parsed = _parsed_alone(monkeypatch)
    broken = _replace(doc, "self.dropout = nn.Dropout(config.attention_probs_dropout_prob)",
                      "self.dropout = nn.Dropout(config.attention_probs_dropout_prob")
    result = doc.result()
    assert parsed, "the edited statements are parsed again"
    # Only statements of the edited class (its methods, their statements): no other class's was parsed alone.
    assert all(b"class " not in p and b"embeddings" not in p and b"intermediate" not in p for p in parsed), parsed
    assert len(parsed) < 15
    assert result.problems  # the syntax error is reported
    assert result == analyse(broken, "m.py")


def test_a_segment_edited_after_prepare_is_masked_from_its_new_text() -> None:
    """The memo is keyed by the texts it read: a class edited while the text was clean, then broken, is
    masked from its new text, never from what `prepare` kept of the old one."""
    text = EXAMPLE.read_text(encoding="utf-8")
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    doc.prepare()
    memo = doc._analyser.memo
    kept = len(memo._tops)
    assert kept > 0
    _replace(doc, "self.dropout = nn.Dropout(config.attention_probs_dropout_prob)", "self.dropout = nn.Identity()")
    assert doc.result() == analyse(doc.text, "m.py")
    broken = _replace(doc, "self.dropout = nn.Identity()", "self.dropout = nn.Identity(")
    data = broken.encode()
    assert doc.analysed_text == mask_broken(data, "m.py").data
    assert doc.result() == analyse(broken, "m.py")


def test_prepare_does_nothing_for_a_broken_or_released_text() -> None:
    doc = DocumentAnalysis("class A(:\n    pass\n", "m.py")
    doc.prepare()
    assert not doc._analyser.memo._tops and doc._analyser.memo.last_chunks is None
    clean = DocumentAnalysis(EXAMPLE.read_text(encoding="utf-8"), "m.py")
    clean.release()
    clean.prepare()
    assert clean.released and not clean._analyser.memo._tops


def test_release_drops_a_memo_only_prepare_filled() -> None:
    """The server releases the documents nobody edits: what `prepare` kept for them goes too, while a memo
    a broken text filled stays as it did before `prepare` existed (and the answers are the same)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    doc.prepare()
    assert doc._analyser.memo._tops
    doc.release()
    assert not doc._analyser.memo._tops
    assert doc.result() == analyse(text, "m.py")
    assert doc.tree is not None  # parsed again on demand, then prepared again
    doc.prepare()
    assert doc._analyser.memo._tops
    broken = _replace(doc, "self.dropout = nn.Dropout(config.attention_probs_dropout_prob)",
                      "self.dropout = nn.Dropout(config.attention_probs_dropout_prob")
    assert doc.result() == analyse(broken, "m.py")
    doc.release()
    assert doc._analyser.memo._tops  # the memo of a document that was broken is kept, as always
    assert doc.result() == analyse(broken, "m.py")
