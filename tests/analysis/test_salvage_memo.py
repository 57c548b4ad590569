"""`salvage`'s memo is a pure cache: masking a broken text with the memo a document kept over its edits
gives exactly what masking it afresh gives (text, syntax errors, blanked lines)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adopter.analysis.parse.salvage import ParseMemo, mask_broken

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BREAKS = ["(", ")", "[", "]", ".", ":", "x", "0", " ", '"', "'''", "def ", "\\", "\n", "\nz", "\n    y ="]


def _edited(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    line = lines[i]
    kind = rng.random()
    if kind < 0.6:  # a character typed somewhere (most keystrokes)
        col = rng.randint(0, len(line))
        lines[i] = line[:col] + rng.choice(BREAKS) + line[col:]
    elif kind < 0.75:  # a character deleted
        col = rng.randrange(len(line)) if line else 0
        lines[i] = line[:col] + line[col + 1 :]
    elif kind < 0.85:  # a line deleted
        del lines[i]
    elif kind < 0.95:  # a line duplicated elsewhere
        lines.insert(rng.randrange(len(lines)), line)
    else:  # a block cut
        del lines[i : i + rng.randint(2, 12)]
    return "\n".join(lines)


@pytest.mark.parametrize("name", ["bert_encoder.py", "gpt_decoder.py", "llama_block.py", "train_gpt.py"])
def test_masking_with_a_kept_memo_equals_masking_afresh(name: str) -> None:
    original = (EXAMPLES / name).read_text(encoding="utf-8")
    rng = random.Random(name)
    memo = ParseMemo()
    text = original
    kept_tops = 0
    for step in range(120):
        text = _edited(text, rng)
        data = text.encode()
        warm = mask_broken(data, "m.py", memo)
        cold = mask_broken(data, "m.py")
        assert warm == cold, f"step {step}"
        kept_tops = max(kept_tops, len(memo._tops))
        if rng.random() < 0.3:  # back to a text that parses, as a deleted keystroke or an undo
            text = original
    assert kept_tops > 0  # the top-level statements were reused, not only recomputed
