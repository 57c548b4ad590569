"""Architectures the analysis extracts from real transformers files print and parse back unchanged."""

from __future__ import annotations

import pytest

from adopter.dsl import format_architecture, format_module_file, parse_architecture, parse_module_file

# Well-known models covering attention variants, convolutions, ModuleList loops and inlined helpers.
MODELS = ("bert", "gpt2", "gpt_neo", "llama", "resnet", "vit")


@pytest.mark.corpus
@pytest.mark.parametrize("model", MODELS)
def test_corpus_module_files_round_trip(model: str) -> None:
    analysis = pytest.importorskip("adopter.analysis")
    from adopter.corpus import modeling_file

    corpus_file = modeling_file(model)
    module_file = analysis.analyse(corpus_file.text, corpus_file.member)
    assert module_file.architectures
    text = format_module_file(module_file)
    assert parse_module_file(text) == module_file
    first = module_file.architectures[0]
    assert parse_architecture(format_architecture(first)) == first
