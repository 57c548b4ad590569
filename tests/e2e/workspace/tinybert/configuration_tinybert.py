"""A transformers-style configuration: every argument has a default."""


class TinyBertConfig:
    def __init__(self, vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=256, hidden_dropout_prob=0.1, layer_norm_eps=1e-12, max_position_embeddings=128):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.layer_norm_eps = layer_norm_eps
        self.max_position_embeddings = max_position_embeddings
