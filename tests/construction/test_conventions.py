"""Constructor arguments by conventions that generalise (channel names, factories, adapted layers, annotated
sub-modules, numbers a constructor wants as lists) and the inputs retried when the first is rejected (the
rank a forward reads, another layer's width)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from adopter.construction import Built, candidates, construct, forward_rank  # noqa: E402

pytestmark = pytest.mark.torch
HERE = sys.modules[__name__]


class YoloBlock(nn.Module):
    def __init__(self, c1, c2, chan_in, reduction):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2 // reduction, 1)
        self.other = nn.Conv2d(chan_in, c2, 1)

    def forward(self, x):
        return self.conv(x)


class Head(nn.Module):
    def __init__(self, *, dim: int, norm_factory: Callable[[int], nn.Module], score: Callable[[torch.Tensor], torch.Tensor],
                 model_kwargs):
        super().__init__()
        self.norm = norm_factory(dim)
        self.score = score
        self.fc = nn.Linear(dim, dim, **model_kwargs)

    def forward(self, x):
        return self.score(self.fc(self.norm(x)))


class Adapter(nn.Module):
    def __init__(self, base_layer, rank=4):
        super().__init__()
        self.base_layer = base_layer
        self.down = nn.Linear(base_layer.in_features, rank)
        self.up = nn.Linear(rank, base_layer.out_features)

    def forward(self, x):
        return self.base_layer(x) + self.up(self.down(x))


class Encoder(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class WithEncoder(nn.Module):
    def __init__(self, encoder: Encoder, num_classes):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.layers[0].out_features, num_classes)

    def forward(self, x):
        return self.head(self.encoder(x))


class Stages(nn.Module):
    def __init__(self, dim, depths):
        super().__init__()
        self.stages = nn.ModuleList(nn.Sequential(*(nn.Linear(dim, dim) for _ in range(d))) for d in depths)

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


def test_conventions_supply_arguments_that_had_none() -> None:
    yolo = construct(YoloBlock, HERE)
    assert isinstance(yolo, Built), yolo
    assert yolo.arguments["c1"] == yolo.arguments["c2"] == yolo.arguments["chan_in"] == "32"
    assert yolo.arguments["reduction"] == "2"
    head = construct(Head, HERE, device="cpu")
    assert isinstance(head, Built), head
    assert isinstance(head.model.norm, nn.LayerNorm)  # a norm factory makes a LayerNorm
    x = head.kwargs["x"]
    assert head.model(**head.kwargs).shape == x.shape  # a tensor function passes its input through
    adapter = construct(Adapter, HERE, device="cpu")
    assert isinstance(adapter, Built) and isinstance(adapter.model.base_layer, nn.Linear), adapter
    with_encoder = construct(WithEncoder, HERE, device="meta")
    assert isinstance(with_encoder, Built), with_encoder
    encoder = with_encoder.model.encoder
    assert isinstance(encoder, Encoder) and len(encoder.layers) == 1 and encoder.layers[0].weight.is_meta
    stages = construct(Stages, HERE, device="meta")  # `for d in depths` on a number: retried as a list
    assert isinstance(stages, Built) and len(stages.model.stages) == 4, stages


class Unpacks(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        _b, _c, _h, _w = x.shape
        return self.proj(x.flatten(2).transpose(1, 2))


class Rearranges(nn.Module):
    def forward(self, feats):
        from einops import rearrange

        return rearrange(feats, "b (h w) c -> b c h w", h=4)


class Asserts(nn.Module):
    def forward(self, x):
        assert x.dim() == 5
        return x


class OffsetFirst(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.offsets = nn.Conv1d(dim // 4, 1, 1)  # registered first, applied to a part of the queries
        self.to_q = nn.Conv1d(dim, dim, 1)

    def forward(self, x):
        q = self.to_q(x)
        return self.offsets(q[:, :8])


def test_the_rank_a_forward_reads_orders_the_retried_inputs() -> None:
    assert forward_rank(Unpacks()) == 4 and forward_rank(Rearranges()) == 3 and forward_rank(Asserts()) == 5
    assert forward_rank(nn.Linear(2, 2)) is None
    shapes = [tuple(c.shape) for c in candidates(Unpacks(), torch.randn(2, 16, 8))]
    assert shapes[0] == (2, 8, 32, 32) and (2, 16, 8) not in shapes
    assert next(tuple(c.shape) for c in candidates(Asserts(), torch.randn(2, 16, 8))) == (2, 8, 8, 32, 32)
    model = OffsetFirst()
    x = torch.randn(2, 8, 16)  # as wide as the first registered layer takes
    with pytest.raises(RuntimeError):
        model(x)
    assert any(tuple(c.shape) == (2, 32, 16) for c in candidates(model, x))
    assert model(next(c for c in candidates(model, x) if c.shape[1] == 32)).shape == (2, 1, 16)
