"""The nine benchmark models: where their code lives, a real-width config, a task head and synthetic batches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A config factory takes (layers, dropout_on) and returns the transformers config object; a batch factory
# takes (torch, generator, batch_size, seq_len) and returns the keyword arguments of one training step.
ConfigFactory = Callable[[Any, int, bool], Any]
BatchFactory = Callable[[Any, Any, int, int], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One benchmark model: its transformers package, task class, real sizes and how to feed it."""

    key: str
    title: str
    package: str  # transformers.models.<package>
    task_class: str  # class in modeling_<package>.py trained with the script
    real_layers: str  # the full model's depth, for the report
    seq_len: int  # the real sequence length used (512 where the model allows)
    make_config: ConfigFactory
    make_batch: BatchFactory
    layers_note: Callable[[int], str]  # how `layers` maps onto this model, for the report
    min_batch: int = 1  # GroupViT's projection heads use BatchNorm1d, which cannot train on one sample

    @property
    def module(self) -> str:
        return f"transformers.models.{self.package}.modeling_{self.package}"

    @property
    def config_module(self) -> str:
        return f"transformers.models.{self.package}.configuration_{self.package}"


def _tokens(torch: Any, gen: Any, batch: int, seq: int, vocab: int, low: int = 3) -> Any:
    # Ids start above the special tokens so no synthetic token is read as padding.
    return torch.randint(low, vocab, (batch, seq), generator=gen)


def _classify(vocab: int, labels: int = 2) -> BatchFactory:
    def make(torch: Any, gen: Any, batch: int, seq: int) -> dict[str, Any]:
        return {"input_ids": _tokens(torch, gen, batch, seq, vocab),
                "attention_mask": torch.ones(batch, seq, dtype=torch.long),
                "labels": torch.randint(0, labels, (batch,), generator=gen)}
    return make


def _decoder_classify(vocab: int) -> BatchFactory:
    # GPT-style classifiers pool the last non-pad token; without padding the mask is left out so the
    # attention takes its plain causal path, as in pretraining.
    def make(torch: Any, gen: Any, batch: int, seq: int) -> dict[str, Any]:
        return {"input_ids": _tokens(torch, gen, batch, seq, vocab),
                "labels": torch.randint(0, 2, (batch,), generator=gen)}
    return make


def _t5_batch(torch: Any, gen: Any, batch: int, seq: int) -> dict[str, Any]:
    # Span-corruption-like text-to-text: 512 input tokens, a quarter as many target tokens.
    return {"input_ids": _tokens(torch, gen, batch, seq, 32100),
            "attention_mask": torch.ones(batch, seq, dtype=torch.long),
            "labels": _tokens(torch, gen, batch, max(seq // 4, 1), 32100)}


def _image_batch(torch: Any, gen: Any, batch: int, seq: int) -> dict[str, Any]:
    return {"pixel_values": torch.randn(batch, 3, seq, seq, generator=gen),
            "labels": torch.randint(0, 1000, (batch,), generator=gen)}


def _groupvit_batch(torch: Any, gen: Any, batch: int, seq: int) -> dict[str, Any]:
    return {"input_ids": _tokens(torch, gen, batch, 77, 49406),
            "attention_mask": torch.ones(batch, 77, dtype=torch.long),
            "pixel_values": torch.randn(batch, 3, seq, seq, generator=gen),
            "return_loss": True}


def _drop(on: bool, p: float) -> float:
    return p if on else 0.0


def _bert(tf: Any, layers: int, dropout: bool) -> Any:
    return tf.BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=layers, num_attention_heads=16,
                         intermediate_size=4096, max_position_embeddings=512, num_labels=2,
                         hidden_dropout_prob=_drop(dropout, 0.1), attention_probs_dropout_prob=_drop(dropout, 0.1))


def _roberta(tf: Any, layers: int, dropout: bool) -> Any:
    return tf.RobertaConfig(vocab_size=50265, hidden_size=768, num_hidden_layers=layers, num_attention_heads=12,
                            intermediate_size=3072, max_position_embeddings=514, type_vocab_size=1,
                            layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2, num_labels=2,
                            hidden_dropout_prob=_drop(dropout, 0.1),
                            attention_probs_dropout_prob=_drop(dropout, 0.1))


def _gpt2(tf: Any, layers: int, dropout: bool) -> Any:
    p = _drop(dropout, 0.1)
    return tf.GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=layers, n_head=12,
                         resid_pdrop=p, embd_pdrop=p, attn_pdrop=p, summary_first_dropout=p,
                         pad_token_id=50256, num_labels=2)


def _gpt_neo(tf: Any, layers: int, dropout: bool) -> Any:
    # The real 125M model alternates global and local (window 256) attention layers.
    types: list[Any] = [[["global", "local"], layers // 2]] if layers >= 2 else []
    if layers % 2:
        types.append([["global"], 1])
    p = _drop(dropout, 0.1)
    return tf.GPTNeoConfig(vocab_size=50257, max_position_embeddings=2048, hidden_size=768, num_layers=layers,
                           num_heads=12, attention_types=types, window_size=256, intermediate_size=None,
                           embed_dropout=_drop(dropout, 0.0), attention_dropout=p, resid_dropout=p,
                           classifier_dropout=p, pad_token_id=50256, num_labels=2)


def _distilbert(tf: Any, layers: int, dropout: bool) -> Any:
    p = _drop(dropout, 0.1)
    return tf.DistilBertConfig(vocab_size=30522, max_position_embeddings=512, n_layers=layers, n_heads=12,
                               dim=768, hidden_dim=3072, dropout=p, attention_dropout=p,
                               seq_classif_dropout=_drop(dropout, 0.2), num_labels=2)


def _t5(tf: Any, layers: int, dropout: bool) -> Any:
    return tf.T5Config(vocab_size=32128, d_model=768, d_kv=64, d_ff=3072, num_layers=layers,
                       num_decoder_layers=layers, num_heads=12, relative_attention_num_buckets=32,
                       dropout_rate=_drop(dropout, 0.1), feed_forward_proj="relu", pad_token_id=0,
                       eos_token_id=1, decoder_start_token_id=0)


def _albert(tf: Any, layers: int, dropout: bool) -> Any:
    # albert-base-v2 ships with hidden and attention dropout 0; only its classifier drops out.
    return tf.AlbertConfig(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=layers,
                           num_attention_heads=12, intermediate_size=3072, hidden_act="gelu_new",
                           max_position_embeddings=512, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, classifier_dropout_prob=_drop(dropout, 0.1),
                           num_labels=2)


def _groupvit(tf: Any, layers: int, dropout: bool) -> Any:
    # groupvit-gcc-yfcc: text 12 layers, vision stages [6, 3, 3]; dropout is 0 in the released config.
    text = {"hidden_size": 256, "intermediate_size": 1024, "num_hidden_layers": layers, "num_attention_heads": 4,
            "max_position_embeddings": 77}
    vision = {"hidden_size": 384, "intermediate_size": 1536, "depths": [layers, layers, layers],
              "num_hidden_layers": 3 * layers, "num_group_tokens": [64, 8, 0], "num_output_groups": [64, 8, 8],
              "num_attention_heads": 6, "image_size": 224, "patch_size": 16}
    return tf.GroupViTConfig(text_config=text, vision_config=vision, projection_dim=256,
                             projection_intermediate_dim=4096)


def _resnet(tf: Any, layers: int, dropout: bool) -> Any:
    # ResNet-50 has no dropout; `layers` caps each stage's depth (the real depths are 3, 4, 6, 3).
    depths = [min(d, layers) for d in (3, 4, 6, 3)]
    return tf.ResNetConfig(embedding_size=64, hidden_sizes=[256, 512, 1024, 2048], depths=depths,
                           layer_type="bottleneck", hidden_act="relu", downsample_in_first_stage=False,
                           num_labels=1000)


def _per_stack(kind: str) -> Callable[[int], str]:
    return lambda n: f"{n} {kind}"


SPECS: tuple[ModelSpec, ...] = (
    ModelSpec("bert-large", "BERT-large", "bert", "BertForSequenceClassification", "24 layers", 512,
              _bert, _classify(30522), _per_stack("of 24 layers")),
    ModelSpec("roberta-base", "RoBERTa-base", "roberta", "RobertaForSequenceClassification", "12 layers", 512,
              _roberta, _classify(50265), _per_stack("of 12 layers")),
    ModelSpec("gpt2", "GPT-2", "gpt2", "GPT2ForSequenceClassification", "12 layers", 512,
              _gpt2, _decoder_classify(50256), _per_stack("of 12 layers")),
    ModelSpec("gpt-neo-125m", "GPT-Neo-125M", "gpt_neo", "GPTNeoForSequenceClassification", "12 layers", 512,
              _gpt_neo, _decoder_classify(50256), _per_stack("of 12 layers (global/local alternating)")),
    ModelSpec("distilbert", "DistilBERT", "distilbert", "DistilBertForSequenceClassification", "6 layers", 512,
              _distilbert, _classify(30522), _per_stack("of 6 layers")),
    ModelSpec("t5-base", "T5-base", "t5", "T5ForConditionalGeneration", "12+12 layers", 512,
              _t5, _t5_batch, lambda n: f"{n}+{n} of 12+12 layers (targets 128 tokens)"),
    ModelSpec("albert-base-v2", "ALBERT-base-v2", "albert", "AlbertForSequenceClassification",
              "12 layers (shared)", 512, _albert, _classify(30000), _per_stack("of 12 layer applications")),
    ModelSpec("groupvit", "GroupViT", "groupvit", "GroupViTModel", "text 12, vision 6+3+3", 224,
              _groupvit, _groupvit_batch, lambda n: f"text {n} of 12, vision {n}+{n}+{n} of 6+3+3 (224 px, 77 tokens)",
              min_batch=2),
    ModelSpec("resnet-50", "ResNet-50", "resnet", "ResNetForImageClassification", "3+4+6+3 blocks", 224,
              _resnet, _image_batch,
              lambda n: "blocks " + "+".join(str(min(d, n)) for d in (3, 4, 6, 3)) + " of 3+4+6+3 (224 px)"),
)

BY_KEY = {s.key: s for s in SPECS}


def spec(key: str) -> ModelSpec:
    """The spec named `key`; ValueError listing the known keys otherwise."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise ValueError(f"unknown model {key!r}; known: {', '.join(BY_KEY)}") from None
