"""salvage skips the chunks it found whole before: a keystroke walks the statements of its own chunk, and
the masked text, syntax errors and blanked lines are exactly those of masking afresh (decorators that
reach into the next chunk, column-0 lines that join the block above, real transformers files)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adopter.analysis.parse import salvage
from adopter.analysis.parse.salvage import ParseMemo, mask_broken
from adopter.analysis.parse.source import is_broken, new_parser
from adopter.corpus import modeling_files

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))

# Decorators above column-0 `def`/`class` lines (a statement that spans two chunks), a class broken by a
# column-0 line, module-level code between the chunks.
DECORATED = b'''"""A module."""
import functools

import torch
from torch import nn

X = 1


@functools.lru_cache(maxsize=None)
def table(n):
    return [i * i for i in range(n)]


@torch.no_grad()
@functools.wraps(table)
def init(module):
    for p in module.parameters():
        p.zero_()


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        y = self.fc(x)
        if y.dim() > 2:
            y = y.flatten(1)
        return torch.relu(y)


@dataclass
class Config:
    width: int = 4
    depth: int = 2


Y = table(3)


class Head(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.proj = nn.Linear(d, n)

    def forward(self, x):
        return self.proj(x).softmax(-1)
'''

BREAKS = [b"(", b")", b"[", b".", b":", b"x", b"0", b" ", b'"', b"'''", b"@", b"@deco\n", b"def ", b"\\", b"\n",
          b"\nz", b"\n@w\n", b"\nclass K(", b"\ndef f(", b"\n    y =", b"#"]


def _edit(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    kind = rng.random()
    if kind < 0.5:
        return data[:at] + rng.choice(BREAKS) + data[at:]
    if kind < 0.7:  # at a line start
        s = data.rfind(b"\n", 0, at) + 1
        return data[:s] + rng.choice(BREAKS) + data[s:]
    if kind < 0.85:  # a character or a few deleted
        return data[:at] + data[at + rng.randint(1, 6):]
    s, e = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)  # a line deleted
    return data[:s] + data[e + 1:] if e >= 0 else data[:s]


def _states(original: bytes, seed: str, steps: int) -> list[bytes]:
    rng = random.Random(seed)
    data, out = original, []
    for _ in range(steps):
        data = _edit(data, rng)
        out.append(data)
        if rng.random() < 0.4:  # back to the clean text: the next edit breaks it somewhere else
            data = original
    return out


@pytest.mark.parametrize("name", ["decorated", *(p.name for p in EXAMPLES)])
def test_skipping_the_chunks_found_whole_equals_masking_afresh(name: str) -> None:
    original = DECORATED if name == "decorated" else (EXAMPLES[0].parent / name).read_bytes()
    memo = ParseMemo()
    skipped = 0
    for step, data in enumerate(_states(original, name, 150)):
        warm = mask_broken(data, "m.py", memo)
        cold = mask_broken(data, "m.py")
        assert warm == cold, f"step {step}: {data!r}"
        skipped = max(skipped, len(memo._chunks))
    assert skipped > 0


def test_skipping_equals_masking_afresh_on_transformers_files() -> None:
    files = {f.name: f for f in modeling_files()}
    for name in ("modeling_bert.py", "modeling_t5.py"):
        if name not in files:
            pytest.skip("transformers corpus not unpacked")
        original = files[name].text.encode()
        memo = ParseMemo()
        for step, data in enumerate(_states(original, name, 40)):
            assert mask_broken(data, "m.py", memo) == mask_broken(data, "m.py"), f"{name} step {step}"


@pytest.mark.pure_python
def test_a_keystroke_walks_only_its_own_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the memo of broken keystrokes before, a letter typed in `Head.forward` keys one top-level
    statement (the class it is in), not every statement of the file (the old walk keyed them all)."""
    parser = new_parser()
    memo = ParseMemo()
    for warm_up in (b"self.fc(x) y", b"self.proj(x) (.softmax"):  # broken in Block, then in Head
        first = DECORATED.replace(b"self.fc(x)", warm_up) if b"fc" in warm_up else DECORATED.replace(
            b"self.proj(x).softmax", warm_up)
        assert is_broken(parser.parse(first))
        mask_broken(first, "m.py", memo)
    keyed: list[int] = []
    real = salvage._Masker._top_key

    def counting(self: salvage._Masker, s: int, e: int) -> salvage._TopKey:
        keyed.append(s)
        return real(self, s, e)

    monkeypatch.setattr(salvage._Masker, "_top_key", counting)
    second = DECORATED.replace(b"self.proj(x).softmax", b"self.proj(x) z.softmax")  # broken in Head
    assert is_broken(parser.parse(second))
    warm = mask_broken(second, "m.py", memo)
    head = second[: second.index(b"class Head")].count(b"\n")
    assert keyed == [head]
    assert warm == mask_broken(second, "m.py")
