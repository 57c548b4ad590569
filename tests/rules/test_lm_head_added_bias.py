"""Family 16 with BERT's original prediction head: a bias-free vocabulary Linear whose output gets the head's own
bias parameter added (`hidden_states = self.decoder(hidden_states) + self.bias`), read through the calls of
`self.cls(...)` (`forward_shape.head_shape`, the submodule view's added parameter, the `added_bias($b)` guard),
and the vocabulary named by an embedding table's row count (`nn.Linear(emb_weights.size(1),
emb_weights.size(0))`, the weight then tied: `engine.vocabulary.embedding_rows`).

Shaped on bert4pytorch 0.1.2 `bert4pytorch/modeling.py` lines 384-401 and 705-720 (dev2 batch 14), the same head in
pytorch-pretrained-bert 0.6.2 `modeling.py` 446-462 and transformers 4.35 `luke/modeling_luke.py`,
`bridgetower/modeling_bridgetower.py`, `lxmert/modeling_lxmert.py`; tape-proteins 0.5 `modeling_utils.py` 769 adds
the bias in the loss's own forward. Rewritten at fixture size. Detection only (the rule has no automatic fix).
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

from adopter.engine.vocabulary import embedding_rows

RULES = rules_of("f16-linear-cross-entropy")

HEAD = '''
import torch
from torch import nn
from torch.nn import CrossEntropyLoss


class LMPredictionHead(nn.Module):
    def __init__(self, config, embedding_weights):
        super().__init__()
        self.transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.decoder = nn.Linear(embedding_weights.size(1), SIZE, bias=False)
        self.decoder.weight = embedding_weights
        self.bias = BIAS

    def forward(self, hidden_states):
        hidden_states = self.transform(hidden_states)
        BODY


class OnlyMLMHead(nn.Module):
    def __init__(self, config, embedding_weights):
        super().__init__()
        self.predictions = LMPredictionHead(config, embedding_weights)

    def forward(self, sequence_output):
        prediction_scores = self.predictions(sequence_output)
        return prediction_scores


class BertForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.cls = OnlyMLMHead(config, self.embeddings.weight)

    def forward(self, input_ids, masked_lm_labels=None):
        sequence_output = self.embeddings(input_ids)
        prediction_scores = self.cls(sequence_output)
        if masked_lm_labels is not None:
            loss_fct = CrossEntropyLoss(ignore_index=-1)
            return loss_fct(prediction_scores.view(-1, self.config.vocab_size), masked_lm_labels.view(-1))
        return prediction_scores
'''

ASSIGNED = '''hidden_states = self.decoder(hidden_states) + self.bias
        return hidden_states'''
RETURNED = "return self.decoder(hidden_states) + self.bias"
PARAMETER = "nn.Parameter(torch.zeros(embedding_weights.size(0)))"


def _source(body: str = ASSIGNED, size: str = "embedding_weights.size(0)", bias: str = PARAMETER) -> str:
    return HEAD.replace("BODY", body).replace("SIZE", size).replace("BIAS", bias)


def _sites(source: str) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES)]


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if line.strip() == text)


@pytest.mark.parametrize("body", [ASSIGNED, RETURNED])
@pytest.mark.parametrize("size", ["embedding_weights.size(0)", "config.vocab_size"])
def test_a_head_adding_its_bias_to_a_vocabulary_projection_is_a_site(body: str, size: str) -> None:
    source = _source(body, size)
    assert _sites(source) == [("f16-linear-cross-entropy", _line(source, "prediction_scores = self.cls(sequence_output)"))]


def test_an_activation_added_is_not_a_bias() -> None:
    # the head adds something of the forward (its input: a residual), not a parameter: not a plain head
    source = _source("return self.decoder(hidden_states) + hidden_states")
    assert _sites(source) == []


def test_an_added_layer_is_not_a_bias() -> None:
    # `self.bias` a Linear, not a parameter: adding a module is no bias (and the chain is not read)
    assert _sites(_source(bias="nn.Linear(2, 2)")) == []


def test_a_step_after_the_added_bias_ends_the_reading() -> None:
    body = '''hidden_states = self.decoder(hidden_states) + self.bias
        hidden_states = self.transform(hidden_states)
        return hidden_states'''
    assert _sites(_source(body)) == []


def test_a_class_count_is_not_a_vocabulary() -> None:
    assert _sites(_source(size="config.num_labels")) == []


@pytest.mark.parametrize(("text", "rows"), [
    ("bert_model_embedding_weights.size(0)", True), ("self.wte.weight.shape[0]", True), ("emb.size()[0]", True),
    ("self.tok_emb.weight.size(0)", True), ("embedding_weights.size(1)", False), ("x.size(0)", False),
    ("self.proj.weight.size(0)", False), ("member.size(0)", False)])
def test_embedding_rows_reads_the_row_count_of_an_embedding_table(text: str, rows: bool) -> None:
    assert embedding_rows(text) is rows
