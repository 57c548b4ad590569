"""A small BERT-style encoder, written the way transformers modeling files are."""

import torch
from torch import nn

from .configuration_tinybert import TinyBertConfig


class TinyBertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class TinyBertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = nn.MultiheadAttention(config.hidden_size, config.num_attention_heads, batch_first=True)
        self.output = TinyBertSelfOutput(config)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.out = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, hidden_states):
        attended, _ = self.attention(hidden_states, hidden_states, hidden_states, need_weights=False)
        hidden_states = self.output(attended, hidden_states)
        return hidden_states + self.out(torch.relu(self.intermediate(hidden_states)))


class TinyBertModel(nn.Module):
    def __init__(self, config: TinyBertConfig):
        super().__init__()
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([TinyBertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, input_ids=None, attention_mask=None):
        hidden_states = self.embeddings(input_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states
