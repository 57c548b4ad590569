"""The whole transformers 4.35.0 corpus: every modeling file analyses, and hand-checked goldens hold.

Goldens live in tests/golden/arch/<model>.adl, printed by the DSL printer and reviewed by eye against
the source. `ADOPTER_UPDATE_GOLDEN=1` rewrites them from the current analysis (then review the diff).
The comparison is on values (the golden is parsed back), so printer cosmetics do not break it.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.corpus import modeling_file, modeling_files, wheel_path
from adopter.dsl import format_module_file, parse_module_file
from adopter.dsl.types import ModuleFile

from .corpus_support import wheel_resolver

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(wheel_path() is None, reason="transformers wheel not cached (scripts/fetch-corpus.sh)"),
]

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden" / "arch"

GOLDEN = {
    "bert": ["BertSelfAttention", "BertSelfOutput", "BertAttention", "BertIntermediate", "BertOutput", "BertLayer",
             "BertEncoder"],
    "gpt2": ["GPT2Attention", "GPT2MLP", "GPT2Block"],
    "t5": ["T5LayerNorm", "T5DenseActDense", "T5LayerFF", "T5Attention", "T5Block"],
    "resnet": ["ResNetConvLayer", "ResNetShortCut", "ResNetBottleNeckLayer", "ResNetStage"],
    "gpt_neo": ["GPTNeoSelfAttention", "GPTNeoMLP", "GPTNeoBlock"],
    "llama": ["LlamaRMSNorm", "LlamaMLP", "LlamaAttention", "LlamaDecoderLayer", "LlamaModel"],
}


def test_every_modeling_file_analyses_cleanly() -> None:
    files = modeling_files()
    assert len(files) == 202
    resolver = wheel_resolver()
    with_forward = 0
    failures: list[str] = []
    for f in files:
        mf = analyse(f.text, f.member, resolver=resolver)
        failures += [f"{f.name}: {p.render()}" for p in mf.problems if p.code == "internal-error"]
        if any(a.forward is not None and a.forward.body for a in mf.architectures):
            with_forward += 1
    assert failures == []
    assert with_forward >= 0.95 * len(files), f"only {with_forward} files with a non-empty forward"


def test_pretrained_bases_resolve_through_the_wheel() -> None:
    f = modeling_file("bert")
    mf = analyse(f.text, f.member, resolver=wheel_resolver())
    by_name = {a.name: a for a in mf.architectures}
    assert by_name["BertPreTrainedModel"].bases == ("transformers.modeling_utils.PreTrainedModel",)
    assert "BertForMaskedLM" in by_name
    layer = by_name["BertLayer"]
    assert layer.forward is not None
    # relative imports qualified against the package path
    intermediate = by_name["BertIntermediate"]
    assert intermediate.init is not None
    assert any("transformers.activations.ACT2FN" in repr(b.value) for b in intermediate.init.bindings)
    # the feed-forward callback of apply_chunking_to_forward is inlined into BertLayer.forward
    assert any(getattr(s, "via", ()) == ("self.feed_forward_chunk",) for s in layer.forward.body)


def _selected(model: str) -> ModuleFile:
    f = modeling_file(model)
    mf = analyse(f.text, f.member, resolver=wheel_resolver())
    by_name = {a.name: a for a in mf.architectures}
    missing = [n for n in GOLDEN[model] if n not in by_name]
    assert not missing, f"classes not found in {f.name}: {missing}"
    return ModuleFile(None, tuple(by_name[n] for n in GOLDEN[model]))


@pytest.mark.parametrize("model", sorted(GOLDEN))
def test_golden_architectures(model: str) -> None:
    current = _selected(model)
    path = GOLDEN_DIR / f"{model}.adl"
    text = format_module_file(current)
    if os.environ.get("ADOPTER_UPDATE_GOLDEN") == "1" or not path.exists():
        if os.environ.get("ADOPTER_UPDATE_GOLDEN") != "1":
            pytest.fail(f"{path} missing; run with ADOPTER_UPDATE_GOLDEN=1 and review it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    expected = parse_module_file(path.read_text())
    if expected.architectures != current.architectures:
        diff = "\n".join(
            difflib.unified_diff(
                format_module_file(expected).splitlines(), text.splitlines(), "golden", "now", lineterm="", n=2
            )
        )
        pytest.fail(f"{model}: architecture differs from {path.name}:\n{diff}")
