"""Family 16 through a head that applies one layer to each of its inputs and returns the results: BERT's
pre-training heads, `prediction_scores, seq_relationship_score = self.cls(sequence_output, pooled_output)`, whose
first result (the vocabulary projection of `cls.predictions`) goes into `CrossEntropyLoss` over the vocabulary
(`names.pair_shape`, `canonical.paired_calls`, the submodule view).

Shaped on bert4pytorch 0.1.2 `bert4pytorch/modeling.py` lines 423-432 (`BertPreTrainingHeads`) and 640-660
(`BertForPreTraining.forward`, dev2 batch 14, line 651); the same head and caller in pytorch-pretrained-bert 0.6.2
`pytorch_pretrained_bert/modeling.py` (head, caller 800), mergoo `mergoo/models/modeling_bert.py` (caller 1133)
and transformers (`models/bert/modeling_bert.py` 1259 and its Ernie, Nezha, MegatronBert, BigBird, FNet,
VisualBert copies). Rewritten at fixture size. Detection only (the rule has no automatic fix).
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

RULES = rules_of("f16-linear-cross-entropy")

SOURCE = '''
import torch
from torch import nn
from torch.nn import CrossEntropyLoss


class LMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = nn.Linear(config.hidden_size, config.hidden_size)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, hidden_states):
        hidden_states = self.transform(hidden_states)
        return self.decoder(hidden_states)


class PreTrainingHeads(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = LMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)

    def forward(self, sequence_output, pooled_output):
        HEAD_BODY


class BertForPreTraining(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.encoder = nn.Linear(config.hidden_size, config.hidden_size)
        self.cls = PreTrainingHeads(config)

    def forward(self, hidden, mlm_labels=None, nsp_labels=None):
        sequence_output = self.encoder(hidden)
        pooled_output = sequence_output[:, 0]
        CALL
        if mlm_labels is not None:
            loss_fct = CrossEntropyLoss(ignore_index=-1)
            LOSS
            nsp_loss = loss_fct(seq_relationship_score.view(-1, 2), nsp_labels.view(-1))
            return mlm_loss + nsp_loss
        return prediction_scores, seq_relationship_score
'''

HEAD = '''prediction_scores = self.predictions(sequence_output)
        seq_relationship_score = self.seq_relationship(pooled_output)
        return prediction_scores, seq_relationship_score'''
CALL = "prediction_scores, seq_relationship_score = self.cls(sequence_output, pooled_output)"
LOSS = "mlm_loss = loss_fct(prediction_scores.view(-1, self.config.vocab_size), mlm_labels.view(-1))"


def _source(head: str = HEAD, call: str = CALL, loss: str = LOSS) -> str:
    return SOURCE.replace("HEAD_BODY", head).replace("CALL", call).replace("LOSS", loss)


def _lines(source: str) -> list[int]:
    return [f.span.start_line + 1 for f in findings_of(source, RULES)]


def _line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("head", [
    HEAD,
    "return self.predictions(sequence_output), self.seq_relationship(pooled_output)",
    "return (self.predictions(sequence_output), self.seq_relationship(pooled_output))",
])
def test_the_vocabulary_result_of_an_unpacked_pretraining_head_feeding_cross_entropy_is_a_site(head: str) -> None:
    source = _source(head=head)
    assert _lines(source) == [_line_of(source, "= self.cls(sequence_output, pooled_output)")]


def test_only_the_vocabulary_layer_is_a_head_the_two_way_classifier_is_not() -> None:
    # The loss reads only the next-sentence scores (a 2-way Linear): nothing to report.
    source = _source(loss="mlm_loss = 0")
    assert _lines(source) == []


@pytest.mark.parametrize("head", [
    # the inputs crossed: the vocabulary layer runs on the pooled output, not on what the caller passes first
    '''prediction_scores = self.predictions(pooled_output)
        seq_relationship_score = self.seq_relationship(sequence_output)
        return prediction_scores, seq_relationship_score''',
    # the results returned in the other order
    '''prediction_scores = self.predictions(sequence_output)
        seq_relationship_score = self.seq_relationship(pooled_output)
        return seq_relationship_score, prediction_scores''',
    # something else done to a result
    '''prediction_scores = self.predictions(sequence_output)
        seq_relationship_score = self.seq_relationship(pooled_output)
        return prediction_scores * 2, seq_relationship_score''',
    # one input read by both layers
    '''prediction_scores = self.predictions(sequence_output)
        seq_relationship_score = self.seq_relationship(sequence_output)
        return prediction_scores, seq_relationship_score''',
    # the results returned as one sum, not a tuple
    '''prediction_scores = self.predictions(sequence_output)
        seq_relationship_score = self.seq_relationship(pooled_output)
        return prediction_scores + seq_relationship_score''',
])
def test_a_head_that_is_not_one_layer_per_input_and_result_is_not_read_through(head: str) -> None:
    assert _lines(_source(head=head)) == []


def test_a_call_kept_as_one_tuple_is_not_read_through() -> None:
    source = _source(call="scores = self.cls(sequence_output, pooled_output)\n"
                          "        prediction_scores, seq_relationship_score = scores[1], scores[0]")
    assert _lines(source) == []
