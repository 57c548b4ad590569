"""How `adopter verify` builds TinyBertSelfOutput (the setting `adopter.verify.factories` names it): its
forward takes the attention output and the residual, which no rule can infer from the argument names."""

from types import SimpleNamespace

import torch


def self_output(cls):
    config = SimpleNamespace(hidden_size=64, layer_norm_eps=1e-12, hidden_dropout_prob=0.1)
    return cls(config), (torch.randn(2, 16, 64), torch.randn(2, 16, 64))
