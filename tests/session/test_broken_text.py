"""Broken text gets one error-tolerant reading, shared by `adopter check` and the server (issue 21.3).

The server's incremental path (`OpenText` edited as the LSP does, then `Session.update`) and `check`'s
per-file work (`commands.filework.check_file`, a fresh analysis) give the same payload for every text,
those Python rejects included: the same syntax errors at their real lines, the same findings of every
class that parses. Hypothesis drives the in-suite differential; `bench/differential_fuzz.py` runs the
≥ 10,000-edit version.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import differential_fuzz  # noqa: E402

_DIFF: differential_fuzz.Differential | None = None


def differential() -> differential_fuzz.Differential:
    global _DIFF
    if _DIFF is None:
        _DIFF = differential_fuzz.Differential()
    return _DIFF


def _bert_900() -> tuple[str, str]:
    """A 900-line file of real BERT classes (the embeddings to the pooler, `BertModel`, then the heads),
    and the same with an unmatched `]` at the end of line 839, inside `BertModel.forward`'s last call."""
    from adopter.corpus import modeling_file

    lines = modeling_file("bert").text.split("\n")
    kept = lines[:663] + lines[860:1040] + lines[663:720]  # 1-663, BertModel (861-1040), 664-720
    assert len(kept) == 900
    broken = list(kept)
    assert broken[838].strip() == "attentions=encoder_outputs.attentions,"
    broken[838] += "]"
    return "\n".join(kept) + "\n", "\n".join(broken) + "\n"


def _sites(payload: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f["rule"], f["scope"]) for f in payload["findings"])


@pytest.mark.corpus
def test_unmatched_bracket_at_line_839_of_a_900_line_bert_file(tmp_path: Path) -> None:
    """The issue's shape: the server kept the findings while `check` reported one error at line 15 and
    none. Now both report the error at line 839 and the findings of the classes before and after it."""
    pytest.importorskip("adopter.engine")
    try:
        clean, broken = _bert_900()
    except (FileNotFoundError, KeyError):
        pytest.skip("transformers 4.35.0 wheel not cached; run scripts/fetch-corpus.sh")
    diff = differential()
    path = str(tmp_path / "modeling_bert_900.py")
    expected = _sites(diff.cli_payload(clean, path))
    scopes = {scope for _, scope in expected}
    assert {"BertSelfAttention", "BertOutput"} <= scopes  # before line 839
    assert "BertPredictionHeadTransform" in scopes  # after it

    fresh = diff.cli_payload(broken, path)
    assert not fresh["parses"]
    (error,) = [text for is_error, text in fresh["problems"] if is_error]
    assert error.startswith(f"{path}:839:51: error: syntax-error:"), error
    assert "closing ']' does not match '('" in error
    assert _sites(fresh) == expected

    # The server: the file opened clean, the bracket typed, as the LSP applies it; and opened broken.
    doc = diff.open(clean, path)
    diff.server.update(doc)
    at = len(clean.split("\n")[838]) + sum(len(x) + 1 for x in clean.split("\n")[:838])
    diff.apply(doc, at, at, "]")
    assert doc.text == broken
    assert diff.server_payload(doc) == fresh
    assert diff.server_payload(diff.open(broken, path)) == fresh

    # And `adopter check` itself, on the file.
    file = tmp_path / "modeling_bert_900.py"
    file.write_text(broken)
    run = subprocess.run([sys.executable, "-m", "adopter", "check", "--format", "json", "--jobs", "1",
                          "--no-cache", "--quiet", str(file)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert f"{file}:839:51: error: syntax-error" in run.stderr
    assert sorted((f["rule"], f["scope"]) for f in json.loads(run.stdout)) == expected


@pytest.mark.parametrize("source, snippet, line", [
    # Unclosed: the opener Python names, the statements after the call kept.
    ("class A(nn.Module):\n    def forward(self, x):\n        y = torch.relu(x\n        return y\n", None, 3),
    # A letter at column 0 inside a class: the methods below it stay the class's.
    ("class A(nn.Module):\n    def __init__(self):\n        super().__init__()\nz\n    def forward(self, x):\n"
     "        return torch.softmax(x, -1)\n", None, 5),
    # An unterminated docstring: the class above and the one below a column-0 `class` line are read.
    ("class A(nn.Module):\n    def forward(self, x):\n        \"\"\"half\n        return torch.softmax(x, -1)\n\n\n"
     "class B(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, -1)\n", None, 3),
])
def test_small_broken_texts_agree_and_report_real_lines(source: str, snippet: str | None, line: int) -> None:
    del snippet
    text = "import torch\nimport torch.nn as nn\n\n\n" + source
    line += 4
    diff = differential()
    fresh = diff.cli_payload(text, "m.py")
    assert not fresh["parses"]
    errors = [t for is_error, t in fresh["problems"] if is_error]
    assert errors and errors[0].startswith(f"m.py:{line}:"), errors
    assert diff.server_payload(diff.open(text, "m.py")) == fresh


SNIPPETS = [*differential_fuzz.BREAKERS, *(s + "\n" for s in differential_fuzz.HALF_LINES), "z\n", "    ", "\t"]


@st.composite
def edits(draw: st.DrawFn, size: int) -> list[tuple[float, int, str, bool]]:
    """1-4 edits: (where, as a fraction of the text; characters deleted; text inserted; at a line start)."""
    return draw(st.lists(st.tuples(st.floats(0, 1), st.integers(0, 12), st.sampled_from(SNIPPETS), st.booleans()),
                         min_size=1, max_size=4))


def _at(text: str, where: float, line_start: bool) -> int:
    at = min(len(text), int(where * len(text)))
    return text.rfind("\n", 0, at) + 1 if line_start else at


@pytest.mark.parametrize("name", ["bert_encoder.py", "gpt_decoder.py"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_server_and_check_agree_after_random_breaking_edits(name: str, data: st.DataObject) -> None:
    """After each edit (most leave text Python rejects), the server's payload equals `check`'s."""
    diff = differential()
    original = (REPO / "examples" / name).read_text()
    doc = diff.open(original, name)
    diff.server.update(doc)
    for where, deleted, inserted, line_start in data.draw(edits(len(original)), label="edits"):
        a = _at(doc.text, where, line_start)
        b = min(len(doc.text), a + deleted)
        if "\n" in doc.text[a:b] and doc.text[b - 1 : b + 1] == "\r\n":
            b -= 1
        diff.apply(doc, a, b, inserted)
        problem = diff.compare(doc, "hypothesis")
        assert problem is None, (problem, doc.text)
