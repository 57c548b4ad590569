"""`seed_memo`: salvage's memo filled, from a text that parses, with the verdicts of the statements at every depth
(what `DocumentAnalysis.prepare` does when a document is opened). A keystroke that then breaks a statement parses
alone only the statements that hold it; masking with the seeded memo is masking afresh (a pure cache)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.parse import salvage as salvage_module
from adopter.analysis.parse.salvage import ParseMemo, mask_broken, seed_memo

from .test_incremental import _replace
from .test_salvage_memo import _edited

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


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
@pytest.mark.parametrize(("old", "new"), [
    # a statement in a loop's body, in a forward
    ("hidden_states = layer_module(hidden_states, attention_mask)",
     "hidden_states = layer_module(hidden_states, attention_mask"),
    # a statement in an `if` body, the line after a comment
    ("attention_mask = (1.0 - attention_mask", "attention_mask = (1.0 - attention_mask)"),
    # the first statement of a forward
    ("hidden_states = self.embeddings(input_ids)", "hidden_states = self.embeddings(input_ids)."),
])
def test_a_keystroke_after_prepare_parses_only_the_statements_that_hold_it(
        monkeypatch: pytest.MonkeyPatch, old: str, new: str) -> None:
    text = (EXAMPLES / "bert_encoder.py").read_text(encoding="utf-8")
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    doc.prepare()
    parsed = _parsed_alone(monkeypatch)
    broken = _replace(doc, old, new)
    result = doc.result()
    alone = list(parsed)  # (before the fresh analysis below, which parses everything alone)
    assert result.problems and result == analyse(broken, "m.py")
    # The broken statement and the statements around it (its method, the `if` or loop it is in) are parsed: each
    # holds the edit. Their siblings, unchanged, were seeded (on fc11bfb: every statement of the forward).
    assert alone
    assert all(new.encode() in p for p in alone), [p for p in alone if new.encode() not in p]


@pytest.mark.parametrize("name", ["bert_encoder.py", "gpt_decoder.py", "llama_block.py", "train_gpt.py"])
def test_masking_with_a_seeded_memo_equals_masking_afresh(name: str) -> None:
    original = (EXAMPLES / name).read_text(encoding="utf-8")
    rng = random.Random(f"seed {name}")
    memo = ParseMemo()
    seed_memo(original.encode(), "m.py", memo)
    seeded = len(memo._verdicts)
    prepared = ParseMemo()
    mask_broken(original.encode(), "m.py", prepared)  # what `prepare` kept before: the outer levels only
    assert seeded > len(prepared._verdicts)
    text = original
    for step in range(80):
        text = _edited(text, rng)
        data = text.encode()
        assert mask_broken(data, "m.py", memo) == mask_broken(data, "m.py"), f"step {step}"
        if rng.random() < 0.5:  # back to the text seeded, as a deleted keystroke or an undo
            text = original


def test_seeding_masks_nothing_of_a_text_that_parses() -> None:
    """The walk that seeds goes where a keystroke's would, but blanks nothing in a clean text: every verdict it
    keeps says the statement parses (and the memo's segments and top-level statements are those `prepare` kept)."""
    text = (EXAMPLES / "gpt_decoder.py").read_text(encoding="utf-8").encode()
    memo = ParseMemo()
    seed_memo(text, "m.py", memo)
    assert memo._verdicts and all(memo._verdicts.values())
    prepared = ParseMemo()
    mask_broken(text, "m.py", prepared)
    assert memo._tops == prepared._tops and memo._chunks == prepared._chunks
    assert set(prepared._verdicts) <= set(memo._verdicts)
