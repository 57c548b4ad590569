"""The verify worker's inferred inputs in other shapes and with position embeddings, and its check that the
comparison ran the code the fix wrote (a rewrite on a branch the inputs never take proves nothing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from adopter.verify import worker  # noqa: E402
from adopter.verify.reach import lines_run, watched_lines  # noqa: E402


def _run(tmp_path: Path, name: str, source: str, new_source: str, cls: str) -> dict[str, object]:
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    job = {"path": str(path), "source": source, "out": str(tmp_path / "out.json"), "device": "cpu", "dtype": "fp32",
           "seed": 0, "repeats": 0, "factory": None, "inputs": None,
           "cases": [{"rule_id": "x01", "line": 1, "scope": cls, "new_source": new_source, "classes": [cls]}]}
    try:
        (row,) = worker.run(job)["rows"]
    finally:
        sys.modules.pop(name, None)
    return row


BRANCHED = '''import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self, dim: int = 16, fused: bool = True):
        super().__init__()
        self.fused = fused
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        if self.fused:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
        else:
            attn = (q @ k.transpose(-2, -1)) * C ** -0.5
            return attn.softmax(-1) @ v
'''
# The fix's rewrite of the hand-written branch: the branch the default inputs take is the fused one.
BRANCH_REWRITTEN = BRANCHED.replace(
    "            attn = (q @ k.transpose(-2, -1)) * C ** -0.5\n            return attn.softmax(-1) @ v\n",
    "            return torch.nn.functional.scaled_dot_product_attention(q, k, v)\n")


def test_a_rewrite_the_inputs_never_reach_is_not_run(tmp_path: Path) -> None:
    # The class's own switch `self.fused = True` takes the other path: flipped in both, the rewrite runs.
    row = _run(tmp_path, "branched_model", BRANCHED, BRANCH_REWRITTEN, "Attn")
    assert row["switched"] == "fused=False" and row["equivalent"] is True and row["max_abs"] < 1e-5, row
    # No switch reaches it (a plain constant chooses the path): not run, with why.
    constant = BRANCHED.replace("if self.fused:", "if True:")
    row = _run(tmp_path, "branched_constant", constant, BRANCH_REWRITTEN.replace("if self.fused:", "if True:"), "Attn")
    assert "the inputs did not reach the code the fix wrote" in str(row["not_built"]), row
    # Taken (fused=False by default): the same rewrite runs and is compared. The input is a sequence of
    # features although the first layer is a Linear in a model without LayerNorm or attention module
    # (`B, N, C = x.shape` refuses the (batch, features) guess; the worker tries the other shapes).
    taken = BRANCHED.replace("fused: bool = True", "fused: bool = False")
    row = _run(tmp_path, "branched_taken", taken, BRANCH_REWRITTEN.replace("fused: bool = True", "fused: bool = False"),
               "Attn")
    assert row["equivalent"] is True and row["max_abs"] < 1e-5, row


POSITIONED = '''import torch
from torch import nn


class DecoderLayer(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, hidden_states, attention_mask=None, object_queries=None):
        if object_queries is not None:
            original = hidden_states
            hidden_states = hidden_states + object_queries
        return self.norm(self.q(hidden_states) + original)
'''


def test_an_optional_position_embedding_is_given_when_the_layer_needs_it(tmp_path: Path) -> None:
    row = _run(tmp_path, "positioned_model", POSITIONED, POSITIONED.replace("self.q(hidden_states) + original",
                                                                           "original + self.q(hidden_states)"),
               "DecoderLayer")
    assert row["equivalent"] is True, row


def test_watched_lines_are_the_written_lines_outside_constructors() -> None:
    old = "class A:\n    def __init__(self):\n        self.a = 1\n\n    def forward(self, x):\n        return x\n"
    new = old.replace("self.a = 1", "self.a = 2").replace("return x", "return x + 0")
    assert watched_lines(old, new) == {6}
    assert watched_lines(old, old.replace("self.a = 1", "self.a = 2")) == frozenset()


def test_lines_run_records_the_lines_of_one_file_only() -> None:
    code = compile("def f(x):\n    y = x + 1\n    return y\n", "<reach-test>", "exec")
    scope: dict[str, object] = {}
    exec(code, scope)
    with lines_run("<reach-test>") as ran:
        scope["f"](1)  # type: ignore[operator]
    assert {2, 3} <= ran
