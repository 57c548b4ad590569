"""Example inputs for a model's `forward`: the first tensor from the model's first layer, the others by
their names (config-sized token ids, masks, a context like the input, time steps)."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

from adopter.construction.names import SEQ, SPATIAL
from adopter.construction.types import NotBuilt

_LAYER_TYPES: tuple[type[nn.Module], ...] = (
    nn.Embedding, nn.EmbeddingBag, nn.Linear, nn.Bilinear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d,
    nn.ConvTranspose2d, nn.ConvTranspose3d, nn.LayerNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d,
    nn.GroupNorm, nn.RMSNorm, nn.MultiheadAttention, nn.LSTM, nn.GRU, nn.RNN, nn.TransformerEncoderLayer,
    nn.TransformerDecoderLayer,
)
# Forward parameters that carry no tensor worth making up: None is the usual "absent" for them.
_OPTIONAL = ("mask", "cache", "past", "state", "position_bias", "bias", "head_mask", "pos", "rope", "freqs",
             "labels", "return", "output", "use_", "kwargs", "layer_past", "incremental", "device")
_LIKE_INPUT = ("context", "memory", "encoder", "y", "key", "value", "kv", "cond", "residual", "skip", "h",
               "hidden", "src", "tgt", "query", "x2", "other", "z", "feat", "emb", "input", "inp")
# Named exactly so, a forward parameter is a tensor like the input: the queries, keys and values of an
# attention core (`Attend.forward(q, k, v)`), a relation or residual term, or a loss's target (regression
# and reconstruction losses take one shaped like their input). Exact names only: as a prefix, `k` or `r`
# would take in `kernel_size` or `return_attn`.
_LIKE_INPUT_EXACT = ("q", "k", "v", "r", "target", "targets", "gt", "ground_truth")
# Forward parameters that hold the block's residual: shaped like its output (BERT's `*Output(hidden_states,
# input_tensor)`: the dense layer's out_features, not the intermediate width of its input).
_RESIDUAL = ("input_tensor",)
_IMAGE = ("img", "image", "images", "imgs", "pixel_values", "pixels", "video", "videos", "frames")
_CHANNEL_NAMES = ("channels", "in_chans", "in_channels", "num_channels", "image_channels", "input_channels")
_TIME = ("t", "time", "times", "timestep", "timesteps", "sigma", "sigmas", "noise_level")


def first_layer(model: nn.Module) -> nn.Module | None:
    """The first layer (in registration order) whose type says what input the model takes."""
    for m in model.modules():
        if isinstance(m, _LAYER_TYPES):
            return m
    return None


def vector_width(model: nn.Module) -> int | None:
    """The length every parameter of a layer-free module shares when each is a vector (a hand-written norm's
    weight and bias: T5LayerNorm, LlamaRMSNorm): the features of its input's last axis."""
    params = list(model.parameters())
    if not params or any(p.dim() != 1 for p in params) or len({p.shape[0] for p in params}) != 1:
        return None
    return int(params[0].shape[0])


def input_for_layer(layer: nn.Module | None, model: nn.Module, *, batch: int = 2, seq: int = SEQ,
                    spatial: int = SPATIAL, depth: int = 16, device: Any = None) -> torch.Tensor | None:
    """A tensor `layer` accepts as the model's input: token ids for an Embedding, `(B, T, in_features)`
    for a Linear in a sequence model (one with an Embedding, attention or LayerNorm) else `(B, in)`,
    `(B, C, …)` for convolutions and batch norms; None for a layer type with no rule."""
    kw: dict[str, Any] = {"device": device}
    sequence_model = any(isinstance(m, (nn.Embedding, nn.MultiheadAttention, nn.LayerNorm)) for m in model.modules())
    if isinstance(layer, (nn.Embedding, nn.EmbeddingBag)):
        return torch.randint(0, layer.num_embeddings, (batch, seq), **kw)
    if isinstance(layer, (nn.Linear, nn.Bilinear)):
        width = layer.in_features if isinstance(layer, nn.Linear) else layer.in1_features
        return torch.randn((batch, seq, width) if sequence_model else (batch, width), **kw)
    if isinstance(layer, nn.LayerNorm):
        return torch.randn((batch, seq, *layer.normalized_shape), **kw)
    if isinstance(layer, nn.RMSNorm):
        return torch.randn((batch, seq, *(layer.normalized_shape or (32,))), **kw)
    if isinstance(layer, nn.MultiheadAttention):
        shape = (batch, seq, layer.embed_dim) if layer.batch_first else (seq, batch, layer.embed_dim)
        return torch.randn(shape, **kw)
    if isinstance(layer, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        d = layer.self_attn.embed_dim
        return torch.randn((batch, seq, d) if layer.self_attn.batch_first else (seq, batch, d), **kw)
    if isinstance(layer, (nn.LSTM, nn.GRU, nn.RNN)):
        shape = (batch, seq, layer.input_size) if layer.batch_first else (seq, batch, layer.input_size)
        return torch.randn(shape, **kw)
    if isinstance(layer, (nn.Conv1d, nn.ConvTranspose1d)):
        return torch.randn((batch, layer.in_channels, seq), **kw)
    if isinstance(layer, (nn.Conv2d, nn.ConvTranspose2d)):
        return torch.randn((batch, layer.in_channels, spatial, spatial), **kw)
    if isinstance(layer, (nn.Conv3d, nn.ConvTranspose3d)):
        return torch.randn((batch, layer.in_channels, depth, spatial, spatial), **kw)
    if isinstance(layer, nn.BatchNorm1d):
        return torch.randn((batch, layer.num_features), **kw)
    if isinstance(layer, nn.BatchNorm2d):
        return torch.randn((batch, layer.num_features, spatial, spatial), **kw)
    if isinstance(layer, nn.BatchNorm3d):
        return torch.randn((batch, layer.num_features, depth, spatial, spatial), **kw)
    if isinstance(layer, nn.GroupNorm):
        return torch.randn((batch, layer.num_channels, spatial, spatial), **kw)
    return None


def image_input(model: nn.Module, layer: nn.Module | None, kwargs: dict[str, Any], *, batch: int,
                spatial: int, device: Any) -> torch.Tensor | None:
    """`(B, C, H, W)` for a forward argument named like an image when the first layer is not a convolution
    (patches cut by a reshape first, as ViTs do): C from the constructor's channel argument, else 3."""
    if isinstance(layer, (nn.Conv2d, nn.Conv3d, nn.BatchNorm2d, nn.GroupNorm)):
        return None
    channels = next((v for k in _CHANNEL_NAMES for v in (kwargs.get(k), getattr(model, k, None))
                     if isinstance(v, int) and not isinstance(v, bool) and v > 0), 3)
    return torch.randn((batch, channels, spatial, spatial), device=device)


def _cfg(config: Any, *names: str) -> int | None:
    for n in names:
        v = getattr(config, n, None) if config is not None else None
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
        if isinstance(v, (tuple, list)) and v and isinstance(v[0], int):
            return int(v[0])
    return None


def residual_like(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A tensor shaped like `x` but as wide as the model's last Linear's output (the residual a block adds
    to its output), or like `x` when it has none or `x` is not a floating (batch, ..., features) tensor."""
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears or not x.is_floating_point() or x.dim() < 2:
        return torch.randn_like(x) if x.is_floating_point() else x
    return torch.randn((*x.shape[:-1], linears[-1].out_features), device=x.device, dtype=x.dtype)


# Optional forward parameters (default None) that add a position embedding to the input they go with:
# DETR-style layers compute part of their attention only when one is given (`hidden_states + object_queries`).
_POSITION_LIKE = ("object_queries", "query_pos", "pos", "pos_embed", "pos_emb", "query_position_embeddings",
                  "spatial_position_embeddings", "position_embeddings", "query_pos_embed", "pos_embeds")


def position_like(model: nn.Module, kwargs: dict[str, Any], x: torch.Tensor) -> dict[str, torch.Tensor]:
    """For each optional parameter of `model.forward` not in `kwargs` whose name says it holds a position
    embedding added to the input (`_POSITION_LIKE`, default None): a random tensor shaped like `x`."""
    try:
        params = inspect.signature(model.forward).parameters.items()
    except (TypeError, ValueError):
        return {}
    if not x.is_floating_point():
        return {}
    return {name: torch.randn_like(x) for name, p in params
            if name not in kwargs and p.default is None and name.lower() in _POSITION_LIKE}


def _named(config: Any, batch: int, seq: int, device: Any) -> dict[str, torch.Tensor]:
    """Inputs `transformers`-style forwards name, sized from the config."""
    vocab = _cfg(config, "vocab_size") or 64
    image = _cfg(config, "image_size") or 224
    channels = _cfg(config, "num_channels") or 3
    ids = torch.randint(0, vocab, (batch, seq), device=device)
    named = {"input_ids": ids, "decoder_input_ids": ids,
             "pixel_values": torch.randn((batch, channels, image, image), device=device)}
    hidden = _cfg(config, "hidden_size", "d_model", "n_embd", "dim")
    if hidden:
        named["hidden_states"] = named["inputs_embeds"] = torch.randn((batch, seq, hidden), device=device)
    return named


def alternatives(x: torch.Tensor, *, seq: int = SEQ, spatial: int = SPATIAL) -> list[torch.Tensor]:
    """Other shapes the same input may have to take when the first guess fails: a feature vector as a
    sequence of them and back, an image as a sequence of pixels, a sequence as channels-first."""
    kw: dict[str, Any] = {"device": x.device, "dtype": x.dtype}
    if x.is_floating_point():
        make = torch.randn
    else:
        return []
    b = x.shape[0]
    if x.dim() == 2:
        return [make((b, seq, x.shape[1]), **kw), make((b, x.shape[1], spatial, spatial), **kw)]
    if x.dim() == 3:
        return [make((b, x.shape[2]), **kw), make((b, x.shape[2], spatial, spatial), **kw),
                make((b, x.shape[2], x.shape[1]), **kw)]
    if x.dim() == 4:
        return [make((b, x.shape[2] * x.shape[3], x.shape[1]), **kw)]
    return []


def forward_inputs(model: nn.Module, config: Any = None, *, batch: int = 2, seq: int = SEQ,
                   spatial: int = SPATIAL, device: Any = None, fill_optional: bool = True,
                   arguments: dict[str, Any] | None = None, generic_width: int | None = None) -> tuple[tuple[Any, ...], dict[str, Any], tuple[str, ...]] | NotBuilt:
    """(positional args, keyword args, guessed names) for `model.forward`, or `NotBuilt` naming the
    required parameter no rule could make. Parameters with defaults are left to them; a required one
    named like a mask or cache gets None when `fill_optional`. `generic_width` makes the first input
    `(B, T, generic_width)` when no layer says what it is (a parameter-free block such as a GEGLU)."""
    name_of = type(model).__name__
    try:
        params = list(inspect.signature(model.forward).parameters.items())
    except (TypeError, ValueError) as exc:
        return NotBuilt(name_of, "inputs", f"forward's signature cannot be read ({exc})")
    seq = min(seq, _cfg(config, "max_position_embeddings", "n_positions") or seq)
    named = _named(config, batch, seq, device)
    first = input_for_layer(first_layer(model), model, batch=batch, seq=seq, spatial=spatial, device=device)
    chosen: dict[str, Any] = {}
    guessed: list[str] = []
    primary = next((n for n, _ in params if n in ("input_ids", "pixel_values", "hidden_states", "inputs_embeds")
                    and n in named), None)
    made: torch.Tensor | None = named[primary] if primary is not None else None
    for name, param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        low = name.lower()
        value: Any
        if name == primary:
            value = made
        elif param.default is not param.empty:
            if made is None and first is not None and param.kind != param.KEYWORD_ONLY and not chosen:
                value = made = first  # forward(self, x=None): the first input is still the model's input
            else:
                continue
        elif name in named:
            value = named[name]
        elif made is None and low in _IMAGE and (image := image_input(
                model, first_layer(model), arguments or {}, batch=batch, spatial=spatial, device=device)) is not None:
            value = made = image
        elif made is None:
            if first is None and (width := vector_width(model)) is not None:
                value = made = torch.randn((batch, seq, width), device=device)
            elif first is None and generic_width:  # no layer says: a sequence of `generic_width` features
                value = made = torch.randn((batch, seq, generic_width), device=device)
            elif first is None:
                return NotBuilt(name_of, "inputs", "its first layer does not say what input it takes; "
                                "give the inputs (module:fn)", name)
            else:
                value = made = first
        elif low in _TIME:
            value = torch.rand((batch,), device=device)
        elif fill_optional and any(k in low for k in _OPTIONAL):
            value = None
        elif low in _RESIDUAL and isinstance(made, torch.Tensor):
            value = residual_like(model, made)
        elif low in _LIKE_INPUT_EXACT or any(low == k or low.startswith(k) for k in _LIKE_INPUT):
            value = made
        else:
            return NotBuilt(name_of, "inputs", "no rule says what this forward argument holds; give the inputs "
                            "(module:fn)", name)
        chosen[name] = value
        guessed.append(name)
    kinds = {n: p.kind for n, p in params}
    args = tuple(v for n, v in chosen.items() if kinds[n] == inspect.Parameter.POSITIONAL_ONLY)
    kwargs = {n: v for n, v in chosen.items() if kinds[n] != inspect.Parameter.POSITIONAL_ONLY}
    return args, kwargs, tuple(guessed)
