"""The model zoo: common training workloads built from code (no downloads, no transformers import).

Each builder returns `(model, inputs, loss_fn)` on the meta device. Configurations follow the
published models (hidden sizes, depths, heads, vocabularies); details that do not change the
operator mix much (T5's relative position bias, BERT's pooler) are left out and said so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

Built = tuple[nn.Module, tuple[Any, ...], Callable[[Any], torch.Tensor]]


@dataclass(frozen=True, slots=True)
class TransformerConfig:
    """Hyper-parameters of a transformer stack."""

    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int
    kv_heads: int | None = None
    act: str = "gelu"  # gelu | relu | swiglu
    norm: str = "layernorm"  # layernorm | rmsnorm
    causal: bool = False
    bias: bool = True


class RMSNorm(nn.Module):
    """Root-mean-square layer norm (T5, Llama)."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _norm(cfg: TransformerConfig) -> nn.Module:
    return RMSNorm(cfg.hidden) if cfg.norm == "rmsnorm" else nn.LayerNorm(cfg.hidden)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    """Multi-head (or grouped-query) attention written as explicit matmuls and softmax."""

    def __init__(self, cfg: TransformerConfig, cross: bool = False, rope: bool = False) -> None:
        super().__init__()
        self.heads = cfg.heads
        self.kv_heads = cfg.kv_heads or cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.causal = cfg.causal and not cross
        self.rope = rope
        kv = self.kv_heads * self.head_dim
        self.query = nn.Linear(cfg.hidden, cfg.hidden, bias=cfg.bias)
        self.key = nn.Linear(cfg.hidden, kv, bias=cfg.bias)
        self.value = nn.Linear(cfg.hidden, kv, bias=cfg.bias)
        self.out = nn.Linear(cfg.hidden, cfg.hidden, bias=cfg.bias)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        b, s, _ = x.shape
        src = x if memory is None else memory
        q = self.query(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.key(src).view(b, src.shape[1], self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.value(src).view(b, src.shape[1], self.kv_heads, self.head_dim).transpose(1, 2)
        if self.rope:
            pos = torch.arange(s, device=x.device, dtype=torch.float32)
            inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2, device=x.device) / self.head_dim))
            ang = torch.outer(pos, inv)
            cos, sin = torch.cat((ang, ang), -1).cos().to(q.dtype), torch.cat((ang, ang), -1).sin().to(q.dtype)
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if self.causal:
            mask = torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        probs = self.dropout(scores.softmax(-1))
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, -1)
        out: torch.Tensor = self.out(ctx)  # Module.__call__ is typed Any
        return out


class FeedForward(nn.Module):
    """The MLP: GELU/ReLU with two projections, or SwiGLU with three."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.act = cfg.act
        self.up = nn.Linear(cfg.hidden, cfg.ffn, bias=cfg.bias)
        if cfg.act == "swiglu":
            self.gate = nn.Linear(cfg.hidden, cfg.ffn, bias=cfg.bias)
        self.down = nn.Linear(cfg.ffn, cfg.hidden, bias=cfg.bias)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.act == "swiglu":
            h = F.silu(self.gate(x)) * self.up(x)
        elif self.act == "relu":
            h = F.relu(self.up(x))
        else:
            h = F.gelu(self.up(x))
        out: torch.Tensor = self.dropout(self.down(h))
        return out


class Block(nn.Module):
    """One transformer layer: post-norm (BERT) or pre-norm (GPT-2, T5, Llama, ViT); optional cross-attention."""

    def __init__(self, cfg: TransformerConfig, pre_norm: bool, cross: bool = False, rope: bool = False) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = Attention(cfg, rope=rope)
        self.norm1 = _norm(cfg)
        self.cross = Attention(cfg, cross=True) if cross else None
        self.norm_cross = _norm(cfg) if cross else None
        self.mlp = FeedForward(cfg)
        self.norm2 = _norm(cfg)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.dropout(self.attn(self.norm1(x)))
            if self.cross is not None and self.norm_cross is not None:
                x = x + self.dropout(self.cross(self.norm_cross(x), memory))
            mlp: torch.Tensor = self.mlp(self.norm2(x))
            return x + mlp
        x = self.norm1(x + self.dropout(self.attn(x)))
        out: torch.Tensor = self.norm2(x + self.mlp(x))
        return out


class LanguageModel(nn.Module):
    """Embeddings, a stack of blocks, a final norm and a vocabulary head (MLM or causal LM)."""

    def __init__(self, cfg: TransformerConfig, seq: int, pre_norm: bool, learned_pos: bool, rope: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.pos = nn.Embedding(seq, cfg.hidden) if learned_pos else None
        self.layers = nn.ModuleList(Block(cfg, pre_norm, rope=rope) for _ in range(cfg.layers))
        self.norm = _norm(cfg)
        self.head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        if self.pos is not None:
            x = x + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for layer in self.layers:
            x = layer(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


# BERT pre-training as NVIDIA/DeepLearningExamples @729963dd runs it (PyTorch/LanguageModeling/BERT): the
# masked-LM head (dense + GELU + LayerNorm, then the vocabulary projection) only on the masked positions
# (`modeling.py` line 590, `BertPreTrainingHeads`, on by default: `run_pretraining.py` line 302), and the
# next-sentence head on the pooled first token. Masked positions per sequence: `create_pretraining_data.py`
# line 329, min(max_predictions_per_seq, max(1, round(len(tokens) × masked_lm_prob))) with masked_lm_prob 0.15
# (its default, line 432; the BERT paper's 15 %) and max_predictions_per_seq 20 at seq 128, 80 at seq 512
# (`scripts/run_pretraining.sh` lines 177, 293); a full-length sequence is taken (the most positions).
MASKED_LM_PROB = 0.15


def masked_positions(seq: int) -> int:
    """Masked-LM positions per full-length sequence of `seq` tokens (the scripts' cap: 20 up to 128, else 80)."""
    cap = 20 if seq <= 128 else 80
    return min(cap, max(1, round(seq * MASKED_LM_PROB)))


class PretrainingLM(LanguageModel):
    """BERT pre-training step: the encoder, the MLM head on masked positions only, and the NSP head."""

    def __init__(self, cfg: TransformerConfig, seq: int) -> None:
        super().__init__(cfg, seq, False, True, False)
        self.transform = nn.Linear(cfg.hidden, cfg.hidden)
        self.transform_norm = _norm(cfg)
        self.pooler = nn.Linear(cfg.hidden, cfg.hidden)
        self.nsp = nn.Linear(cfg.hidden, 2)
        self.head.weight = self.embed.weight  # the decoder shares the word embeddings (modeling.py, BertLMPredictionHead)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))  # type: ignore[misc]
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)
        picked = x.reshape(-1, x.shape[-1]).index_select(0, labels.view(-1))
        logits = self.head(self.transform_norm(F.gelu(self.transform(picked))))
        mlm = F.cross_entropy(logits, labels.view(-1))
        nsp = self.nsp(torch.tanh(self.pooler(x[:, 0])))
        return mlm + F.cross_entropy(nsp, labels[:, 0] % 2)


class EncoderDecoder(nn.Module):
    """T5-style encoder-decoder (relative position bias left out: it is a small additive term)."""

    def __init__(self, cfg: TransformerConfig, dec_cfg: TransformerConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.encoder = nn.ModuleList(Block(cfg, True) for _ in range(cfg.layers))
        self.enc_norm = _norm(cfg)
        self.decoder = nn.ModuleList(Block(dec_cfg, True, cross=True) for _ in range(dec_cfg.layers))
        self.dec_norm = _norm(dec_cfg)
        self.head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)

    def forward(self, ids: torch.Tensor, dec_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.encoder:
            x = layer(x)
        memory = self.enc_norm(x)
        y = self.embed(dec_ids)
        for layer in self.decoder:
            y = layer(y, memory)
        logits = self.head(self.dec_norm(y))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation as NVIDIA's ConvNets scripts build it (image_classification/models/common.py,
    `SqueezeAndExcitation`): channel means, Linear(C → 16), ReLU, Linear(16 → C), sigmoid."""

    def __init__(self, channels: int, squeeze: int = 16) -> None:
        super().__init__()
        self.squeeze = nn.Linear(channels, squeeze)
        self.expand = nn.Linear(squeeze, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.sigmoid(self.expand(F.relu(self.squeeze(x.mean((2, 3))))))
        return s.unsqueeze(2).unsqueeze(3)


class Bottleneck(nn.Module):
    """ResNet bottleneck block (1x1, 3x3, 1x1 convolutions with batch norm, stride on the 3x3: v1.5); `groups`
    makes the 3x3 grouped (ResNeXt), `se` adds squeeze-and-excitation before the residual sum (SE-ResNeXt, fused
    as NVIDIA's `Bottleneck` does: addcmul(residual, out, se(out)))."""

    def __init__(self, cin: int, width: int, stride: int, expansion: int = 4, groups: int = 1,
                 se: bool = False) -> None:
        super().__init__()
        cout = width * expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else None)
        self.se = SqueezeExcite(cout) if se else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        res = x if self.down is None else self.down(x)
        if self.se is not None:
            return F.relu(torch.addcmul(res, h, self.se(h)))
        return F.relu(h + res)


class ResNet50(nn.Module):
    """ResNet-50 for 224x224 ImageNet classification; with other `widths`, `counts`, `expansion`, `groups`
    and `se`, the ResNet family of NVIDIA's ConvNets scripts (image_classification/models/resnet.py)."""

    def __init__(self, classes: int = 1000, widths: tuple[int, ...] = (64, 128, 256, 512),
                 counts: tuple[int, ...] = (3, 4, 6, 3), expansion: int = 4, groups: int = 1,
                 se: bool = False) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks: list[nn.Module] = []
        cin = 64
        for stage, (width, count) in enumerate(zip(widths, counts)):
            for i in range(count):
                blocks.append(Bottleneck(cin, width, 2 if stage and i == 0 else 1, expansion, groups, se))
                cin = width * expansion
        self.blocks = nn.ModuleList(blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.stem(images)
        for block in self.blocks:
            x = block(x)
        return F.cross_entropy(self.fc(x.mean((2, 3))), labels)


class ViT(nn.Module):
    """Vision transformer (ViT-B/16 by default): patch embedding, class token, pre-norm blocks."""

    def __init__(self, cfg: TransformerConfig, image: int, patch: int, classes: int = 1000) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, cfg.hidden, patch, patch)
        tokens = (image // patch) ** 2 + 1
        self.cls = nn.Parameter(torch.zeros(1, 1, cfg.hidden))
        self.pos = nn.Parameter(torch.zeros(1, tokens, cfg.hidden))
        self.layers = nn.ModuleList(Block(cfg, True) for _ in range(cfg.layers))
        self.norm = _norm(cfg)
        self.head = nn.Linear(cfg.hidden, classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), 1) + self.pos
        for layer in self.layers:
            x = layer(x)
        return F.cross_entropy(self.head(self.norm(x)[:, 0]), labels)


def _identity_loss(out: Any) -> torch.Tensor:
    return out  # type: ignore[no-any-return]


def _lm(cfg: TransformerConfig, batch: int, seq: int, pre_norm: bool, learned_pos: bool, rope: bool) -> Built:
    with torch.device("meta"):
        model = LanguageModel(cfg, seq, pre_norm, learned_pos, rope)
        ids = torch.zeros(batch, seq, dtype=torch.long)
    return model, (ids, ids.clone()), _identity_loss


def bert(size: str, batch: int, seq: int) -> Built:
    """BERT-base/large masked-LM pre-training step."""
    layers, hidden, heads = (12, 768, 12) if size == "base" else (24, 1024, 16)
    return _lm(TransformerConfig(layers, hidden, heads, 4 * hidden, 30522), batch, seq, False, True, False)


def bert_pretrain(size: str, batch: int, seq: int) -> Built:
    """BERT-base/large pre-training step as NVIDIA's scripts run it (`PretrainingLM`): `masked_positions(seq)`
    positions per sequence through the MLM head, plus the NSP head."""
    layers, hidden, heads = (12, 768, 12) if size == "base" else (24, 1024, 16)
    cfg = TransformerConfig(layers, hidden, heads, 4 * hidden, 30522)
    with torch.device("meta"):
        model = PretrainingLM(cfg, seq)
        ids = torch.zeros(batch, seq, dtype=torch.long)
        positions = torch.zeros(batch, masked_positions(seq), dtype=torch.long)
    return model, (ids, positions), _identity_loss


def gpt2(size: str, batch: int, seq: int) -> Built:
    """GPT-2 small/XL causal-LM step."""
    layers, hidden, heads = (12, 768, 12) if size == "small" else (48, 1600, 25)
    cfg = TransformerConfig(layers, hidden, heads, 4 * hidden, 50257, causal=True)
    return _lm(cfg, batch, seq, True, True, False)


def llama_1b(batch: int, seq: int) -> Built:
    """A Llama-style 1.1B decoder (TinyLlama shape: 22 layers, 2048 wide, GQA 32/4, SwiGLU 5632)."""
    cfg = TransformerConfig(22, 2048, 32, 5632, 32000, kv_heads=4, act="swiglu", norm="rmsnorm",
                            causal=True, bias=False)
    return _lm(cfg, batch, seq, True, False, True)


def t5_base(batch: int, seq: int) -> Built:
    """T5-base span-corruption step (12+12 layers, 768 wide, ReLU FFN 3072, RMS norm)."""
    cfg = TransformerConfig(12, 768, 12, 3072, 32128, act="relu", norm="rmsnorm", bias=False)
    dec = TransformerConfig(12, 768, 12, 3072, 32128, act="relu", norm="rmsnorm", bias=False, causal=True)
    with torch.device("meta"):
        model = EncoderDecoder(cfg, dec)
        ids = torch.zeros(batch, seq, dtype=torch.long)
        dec_ids = torch.zeros(batch, max(1, seq // 4), dtype=torch.long)
    return model, (ids, dec_ids, dec_ids.clone()), _identity_loss


def resnet50(batch: int, seq: int) -> Built:
    """ResNet-50 ImageNet step; `seq` is the image side (224 by default)."""
    with torch.device("meta"):
        model = ResNet50()
        images = torch.zeros(batch, 3, seq, seq)
        labels = torch.zeros(batch, dtype=torch.long)
    return model, (images, labels), _identity_loss


def resnext101(batch: int, seq: int, se: bool = False) -> Built:
    """ResNeXt-101 32x4d (or SE-ResNeXt-101 32x4d) as NVIDIA's ConvNets scripts define it
    (image_classification/models/resnet.py, `resnext101-32x4d` / `se-resnext101-32x4d`: layers 3, 4, 23, 3,
    widths 128…1024, expansion 2, cardinality 32); `seq` is the image side."""
    with torch.device("meta"):
        model = ResNet50(widths=(128, 256, 512, 1024), counts=(3, 4, 23, 3), expansion=2, groups=32, se=se)
        images = torch.zeros(batch, 3, seq, seq)
        labels = torch.zeros(batch, dtype=torch.long)
    return model, (images, labels), _identity_loss


def vit_b16(batch: int, seq: int) -> Built:
    """ViT-B/16 ImageNet step; `seq` is the image side (224 by default)."""
    cfg = TransformerConfig(12, 768, 12, 3072, 0)
    with torch.device("meta"):
        model = ViT(cfg, seq, 16)
        images = torch.zeros(batch, 3, seq, seq)
        labels = torch.zeros(batch, dtype=torch.long)
    return model, (images, labels), _identity_loss


def tiny_transformer(batch: int, seq: int) -> Built:
    """A 2-layer, 64-wide transformer for tests."""
    cfg = TransformerConfig(2, 64, 4, 256, 1000)
    return _lm(cfg, batch, seq, False, True, False)


def tiny_mlp(batch: int, seq: int) -> Built:
    """A 3-layer MLP (seq = width) for tests with a hand-computable FLOP count."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(seq, 4 * seq), nn.ReLU(), nn.Linear(4 * seq, 4 * seq), nn.ReLU(),
                              nn.Linear(4 * seq, seq))
        x = torch.zeros(batch, seq)
    return model, (x,), lambda out: out.float().pow(2).mean()


# name -> (builder(batch, seq), default batch, default seq)
ZOO: dict[str, tuple[Callable[[int, int], Built], int, int]] = {
    "bert-base": (lambda b, s: bert("base", b, s), 8, 512),
    "bert-large": (lambda b, s: bert("large", b, s), 8, 512),
    "bert-base-pretrain": (lambda b, s: bert_pretrain("base", b, s), 8, 512),
    "bert-large-pretrain": (lambda b, s: bert_pretrain("large", b, s), 8, 512),
    "gpt2": (lambda b, s: gpt2("small", b, s), 8, 1024),
    "gpt2-xl": (lambda b, s: gpt2("xl", b, s), 8, 1024),
    "t5-base": (t5_base, 8, 512),
    "resnet50": (resnet50, 32, 224),
    "resnext101-32x4d": (resnext101, 32, 224),
    "se-resnext101-32x4d": (lambda b, s: resnext101(b, s, se=True), 32, 224),
    "vit-b16": (vit_b16, 32, 224),
    "llama-1b": (llama_1b, 4, 2048),
    "tiny-transformer": (tiny_transformer, 2, 32),
    "tiny-mlp": (tiny_mlp, 16, 64),
}
