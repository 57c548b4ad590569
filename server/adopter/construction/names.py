"""Small values for constructor parameters, chosen by what the parameter's name says it is.

The sizes keep the usual divisibility constraints: every width is a multiple of every head count we pick
(widths 32·k, heads 2), a head width (32 / 2 = 16) is even for rotary embeddings, and channel counts are
multiples of 32 so `GroupNorm(32, C)` (the diffusion/vision default) divides them. When a class still
rejects the first choice (a default head count of 12 against width 32), `build` retries with the next
width in `WIDTHS`: 96 and 384 are divisible by 1, 2, 3, 4, 6, 8, 12, 16 and 32.
"""

from __future__ import annotations

import re
from typing import Any

WIDTHS = (32, 96, 384)
HEADS = 2
LAYERS = 1
SEQ = 16  # tokens per example; 16 divides every power-of-two window and chunk size up to 16
VOCAB = 64
CLASSES = 10
SPATIAL = 32  # pixels per side when the class names no image size: 32 = 2^5 survives five stride-2 stages

# (pattern over the lower-cased parameter name, kind); the first match wins.
_KINDS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), k) for p, k in (
    (r"^(num_|n_|n)?(attention_)?heads?$|^num_(attention_|kv_|key_value_)?heads$|^nhead$|^heads_num$", "heads"),
    (r"^(num_|n_)?(hidden_|encoder_|decoder_)?(layers?|blocks?)$|^depths?$|^num_hidden_layers$|^n_layer$", "layers"),
    (r"(head_dim|dim_head|d_head|head_size|d_k|d_v|d_kv)$", "head_width"),
    # channel counts written `c1`, `c2` (YOLO-style blocks), `chan`, `in_channel`; a width named for what it
    # conditions (`dim_cond`, `dim_context`)
    (r"^c_?\d+$|^(in_|out_)?(chan|channel)$|^(chan|channel)_?(in|out)$|^dim_(cond|context|time|text|emb|hidden|inner)|"
     r"^(in|out)_channels_|^n_?dim_|^ndim_|sizes$", "width"),
    (r"_kwargs$|_kw$", "mapping"),
    (r"^(h|w|height|img_h|img_w)$", "spatial"),
    (r"^reduction$|^(se_)?reduction_ratio$", "mult"),
    (r"^n$", "count"),
    (r"(vocab|num_embeddings|num_tokens|n_vocab|n_tokens|num_codes|codebook_size)", "vocab"),
    (r"(num_classes|n_classes|classes|num_labels|n_labels|out_classes|num_outputs)$", "classes"),
    (r"(img_size|image_size|input_size|resolution|img_res)$", "spatial"),
    (r"(seq_len|max_len|max_seq_len|max_length|block_size|context_length|context_len|"
     r"max_position_embeddings|n_ctx|num_positions|max_positions|window_size)$", "seq"),
    (r"(patch_size|patch)$", "patch"),
    (r"^kernel(_size)?$", "kernel"),
    (r"^(stride|dilation|groups)$", "one"),
    (r"^(padding|pad)$", "one"),
    (r"(dropout|drop|_p|^p)$|drop_rate$|drop_prob$", "rate"),
    (r"(eps|epsilon)$", "eps"),
    (r"^(d_ff|dim_ff|ff_dim|ffn_dim|dim_feedforward|intermediate_size|mlp_dim|ff_inner_dim|inner_dim|"
     r"normalized_shape|shape)$", "width"),
    (r"^(act|activation|act_layer|activation_fn|act_fn|nonlinearity|activation_layer)$", "activation"),
    (r"^(norm|norm_layer|norm_fn|normalization)$", "norm"),
    (r"^(scale|gamma|alpha|beta|temperature|init_scale|layer_scale|ls_init_value)$", "unit"),
    (r"^(n|d|c|ch|dim|size|features|channels|num_features)_?(in|out)$|"
     r"^(in|out)_?(ch|chs|chan|chans|dim|dims|size|features|planes)$|^ch(in|out)$", "width"),
    (r"(mult|ratio|factor|expansion)$", "mult"),
    (r"(dim|dims|size|width|channels|chans|features|planes|d_model|n_embd|embd|embed|hidden|units|"
     r"filters|^c|^ch|^d|^in_?c|^out_?c|inplanes|dim_in|dim_out)$", "width"),
    (r"^(num_|n_)", "count"),
))


def kind_of(name: str) -> str | None:
    """What the parameter called `name` holds ("width", "heads", "layers", …), or None when unknown."""
    low = name.lower()
    for pattern, kind in _KINDS:
        if pattern.search(low):
            return kind
    return None


def value_for(kind: str, width: int) -> Any:
    """The small value for a parameter of that kind, given the width chosen for this attempt (an
    activation or norm parameter takes, attempt by attempt, a module class, a name, a function)."""
    attempt = WIDTHS.index(width) if width in WIDTHS else 0
    if kind == "activation":
        from torch import nn
        from torch.nn import functional as F

        return (nn.GELU, "gelu", F.gelu)[attempt]
    if kind == "norm":
        from torch import nn

        return (nn.LayerNorm, "layernorm", nn.LayerNorm)[attempt]
    if kind == "rate":
        return 0.1  # dropout stays in the graph (p = 0 may be elided), and a rate is always < 1
    if kind == "eps":
        return 1e-5
    if kind == "unit":
        return 1.0
    if kind == "width":
        return width
    if kind == "mapping":
        return {}  # keyword arguments passed on to a part: none, so the part keeps its defaults
    table = {"heads": HEADS, "layers": LAYERS, "head_width": width // HEADS, "vocab": VOCAB,
             "classes": CLASSES, "spatial": SPATIAL, "seq": SEQ, "patch": 4, "kernel": 3, "one": 1,
             "count": 2, "mult": 2}
    return table[kind]
