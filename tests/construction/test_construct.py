"""Building classes without being told how (adopter.construction): defaults, sizes from parameter names,
config classes, inputs from the first layer, factories, and the answer when a class cannot be built."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from adopter.construction import Built, NotBuilt, construct, first_layer, forward_inputs  # noqa: E402

pytestmark = pytest.mark.torch
HERE = sys.modules[__name__]


class Defaults(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class Heads(nn.Module):
    def __init__(self, dim, num_heads, depth, dropout):
        super().__init__()
        assert dim % num_heads == 0, "dim must divide into heads"
        self.blocks = nn.ModuleList(nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
                                    for _ in range(depth))
        self.dim, self.heads, self.depth, self.p = dim, num_heads, depth, dropout

    def forward(self, x, mask):
        for b in self.blocks:
            x = b(x, x, x, attn_mask=mask)[0]
        return x


class TwelveHeads(nn.Module):
    def __init__(self, embed_dim, heads=12):
        super().__init__()
        if embed_dim % heads:
            raise ValueError("embed_dim must be divisible by heads")
        self.proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return self.proj(x)


class TinyConfig:
    def __init__(self, vocab_size=50, hidden_size=24, num_hidden_layers=6):
        self.vocab_size, self.hidden_size, self.num_hidden_layers = vocab_size, hidden_size, num_hidden_layers


class ConfigDriven(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(nn.Linear(config.hidden_size, config.hidden_size)
                                    for _ in range(config.num_hidden_layers))

    def forward(self, input_ids, attention_mask=None):
        h = self.embed(input_ids)
        for layer in self.layers:
            h = layer(h)
        return h


class BaseConfig:
    """Stands for transformers' PretrainedConfig: a base class without the model's fields."""


class WideConfig(BaseConfig):
    def __init__(self, vocab_size=40, hidden_size=16, num_hidden_layers=3):
        self.vocab_size, self.hidden_size, self.num_hidden_layers = vocab_size, hidden_size, num_hidden_layers


class AnnotatedWithTheBase(nn.Module):
    """DistilBertForMaskedLM's shape: `config: PretrainedConfig`, the model's config class declared on it."""
    config_class = WideConfig

    def __init__(self, config: BaseConfig):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)

    def forward(self, input_ids):
        return self.embed(input_ids)


class AnnotatedWithTheBaseUndeclared(AnnotatedWithTheBase):
    config_class = None


class HandWrittenNorm(nn.Module):
    """T5LayerNorm's shape (transformers 4.35): a weight vector and arithmetic, no layer to read."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * hidden_states * torch.rsqrt(variance + self.variance_epsilon)


class TwoLengths(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Parameter(torch.ones(4)), nn.Parameter(torch.ones(6))

    def forward(self, x):
        return x


class Vision(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, images):
        return self.bn(self.conv(images))


class Opaque(nn.Module):
    def __init__(self, recipe):
        super().__init__()
        self.inner = recipe()


class Raises(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        raise RuntimeError("needs a GPU")


class UnknownInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, codebook_lookup_table):
        return self.fc(x)


def test_defaults_and_first_layer_input() -> None:
    built = construct(Defaults, HERE, device="cpu")
    assert isinstance(built, Built)
    assert built.kwargs["x"].shape == (2, 8)  # a Linear outside a sequence model takes (B, in)
    assert built.model(*built.args, **built.kwargs).shape == (2, 8)


def test_sizes_from_names_keep_divisibility_and_masks_are_none() -> None:
    built = construct(Heads, HERE)
    assert isinstance(built, Built), built
    m = built.model
    assert m.dim % m.heads == 0 and m.depth == 1 and 0 < m.p < 1
    assert built.kwargs["mask"] is None
    assert set(built.guessed) >= {"dim", "num_heads", "depth", "dropout", "x", "mask"}
    assert next(m.parameters()).device.type == "meta"


def test_retries_a_wider_size_when_a_default_head_count_does_not_divide() -> None:
    built = construct(TwelveHeads, HERE)
    assert isinstance(built, Built), built
    assert built.model.proj.in_features % 12 == 0


def test_config_class_from_the_module_made_small() -> None:
    built = construct(ConfigDriven, HERE, device="cpu")
    assert isinstance(built, Built), built
    assert built.arguments["config"] == "TinyConfig"
    assert len(built.model.layers) == 1  # six layers in the defaults, one to trace
    ids = built.kwargs["input_ids"]
    assert ids.dtype == torch.long and int(ids.max()) < 50
    assert "attention_mask" not in built.kwargs  # it has a default: left to it


def test_a_base_class_annotation_gives_way_to_the_declared_or_package_subclass() -> None:
    for cls in (AnnotatedWithTheBase, AnnotatedWithTheBaseUndeclared):
        built = construct(cls, HERE, device="cpu")
        assert isinstance(built, Built), (cls.__name__, built)
        assert built.arguments["config"] == "WideConfig"
        assert built.model.embed.embedding_dim == 16


def test_a_layer_free_norm_takes_features_of_its_weights_length() -> None:
    built = construct(HandWrittenNorm, HERE, device="cpu")
    assert isinstance(built, Built), built
    assert built.kwargs["hidden_states"].shape[-1] == built.model.weight.shape[0]
    result = construct(TwoLengths, HERE)  # vectors of two lengths say nothing about the input
    assert isinstance(result, NotBuilt) and result.stage == "inputs" and result.missing == "x"


def test_conv_input_is_nchw_with_the_layers_channels() -> None:
    built = construct(Vision, HERE, device="cpu")
    assert isinstance(built, Built), built
    x = built.kwargs["images"]
    assert x.dim() == 4 and x.shape[1] == built.model.conv.in_channels
    assert isinstance(first_layer(built.model), nn.Conv2d)


def test_an_argument_nothing_can_supply_is_named() -> None:
    result = construct(Opaque, HERE)
    assert isinstance(result, NotBuilt)
    assert result.missing == "recipe" and result.stage == "arguments"
    assert "recipe" in result.render()


def test_a_constructor_that_raises_gives_notbuilt() -> None:
    result = construct(Raises, HERE)
    assert isinstance(result, NotBuilt) and result.stage == "construct" and "needs a GPU" in result.reason


def test_an_unknown_forward_argument_is_named() -> None:
    result = construct(UnknownInput, HERE)
    assert isinstance(result, NotBuilt) and result.stage == "inputs" and result.missing == "codebook_lookup_table"


def test_given_inputs_replace_the_inferred_ones() -> None:
    x = torch.randn(3, 8)
    built = construct(Defaults, HERE, device="cpu", inputs=(x,))
    assert isinstance(built, Built) and built.args == (x,) and built.kwargs == {}


def test_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tiny_factory_mod.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        def make(batch, seq):
            return nn.Linear(4, 2), (torch.randn(batch, seq, 4),)

        def bare():
            return nn.Conv1d(3, 5, 1)

        def broken():
            return 42
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    built = construct(object, factory="tiny_factory_mod:make", device="cpu", batch=3, seq=5)
    assert isinstance(built, Built) and built.args[0].shape == (3, 5, 4)
    bare = construct(object, factory="tiny_factory_mod:bare", device="cpu")
    assert isinstance(bare, Built) and next(iter(bare.kwargs.values())).shape[1] == 3
    assert isinstance(construct(object, factory="tiny_factory_mod:broken"), NotBuilt)
    missing = construct(object, factory="tiny_factory_mod:absent")
    assert isinstance(missing, NotBuilt) and missing.stage == "factory"
    assert isinstance(construct(object, factory="no-colon"), NotBuilt)


def test_forward_inputs_from_a_config_name() -> None:
    model = ConfigDriven(TinyConfig(num_hidden_layers=1))
    made = forward_inputs(model, TinyConfig())
    assert not isinstance(made, NotBuilt)
    assert made[1]["input_ids"].shape == (2, 16)


class PatchViT(nn.Module):
    def __init__(self, image_size, patch_size, dim, channels=3):
        super().__init__()
        self.p = patch_size
        self.norm = nn.LayerNorm(channels * patch_size * patch_size)
        self.proj = nn.Linear(channels * patch_size * patch_size, dim)

    def forward(self, img):
        b, c, h, w = img.shape
        x = img.reshape(b, c, h // self.p, self.p, w // self.p, self.p).permute(0, 2, 4, 3, 5, 1)
        return self.proj(self.norm(x.reshape(b, -1, self.p * self.p * c)))


def test_an_image_argument_gets_an_image_when_patches_are_cut_by_a_reshape() -> None:
    built = construct(PatchViT, HERE, device="cpu")
    assert isinstance(built, Built), built
    img = built.kwargs["img"]
    assert img.dim() == 4 and img.shape[1] == 3 and img.shape[2] == img.shape[3]
    assert built.model(**built.kwargs).dim() == 3


class Gated(nn.Module):
    def forward(self, x):
        a, gate = x.chunk(2, dim=-1)
        return a * torch.nn.functional.gelu(gate)


def test_generic_inputs_for_a_block_whose_layers_say_nothing() -> None:
    assert isinstance(construct(Gated, HERE), NotBuilt)
    built = construct(Gated, HERE, device="cpu", generic_inputs=True)
    assert isinstance(built, Built) and built.kwargs["x"].shape == (2, 16, 32)
    assert built.model(**built.kwargs).shape == (2, 16, 16)


def test_alternative_shapes_of_an_input() -> None:
    from adopter.construction import alternatives

    shapes = [tuple(a.shape) for a in alternatives(torch.randn(2, 16, 8))]
    assert (2, 8) in shapes and (2, 8, 32, 32) in shapes
    assert alternatives(torch.zeros(2, 3, dtype=torch.long)) == []


class PreNormWrapper(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs) + x


class AnyBackbone(nn.Module):
    def __init__(self, backbone: nn.Module, num_classes):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))


def test_a_wrapped_callable_is_given_a_passthrough_module() -> None:
    """`fn` (a wrapper's callable) and a parameter annotated `nn.Module` get a module that returns its first
    input: the wrapper's own layers build and run; other unnamed parameters still say what is missing."""
    built = construct(PreNormWrapper, HERE, device="meta")
    assert isinstance(built, Built), built
    assert "fn" in built.guessed and type(built.model.fn).__name__ == "Passthrough"
    out = built.model(*built.args, **built.kwargs)
    first = [*built.args, *built.kwargs.values()][0]
    assert out.shape == first.shape and out.shape[-1] == built.model.norm.normalized_shape[0]
    head = construct(AnyBackbone, HERE, device="meta")
    assert isinstance(head, Built), head
    assert head.model.backbone(torch.ones(2, 3)).shape == (2, 3)


class DropPathRates(nn.Module):
    def __init__(self, dim=32, depth=3, drop_path_rate=0.1):
        super().__init__()
        rates = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]  # a value out of a tensor
        self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in rates)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def test_a_constructor_reading_tensor_values_builds_for_the_meta_device() -> None:
    built = construct(DropPathRates, HERE, device="meta")
    assert isinstance(built, Built), built
    assert all(p.device.type == "meta" for p in built.model.parameters())
    assert len(built.model.blocks) == 1  # depth made small, as for any class


def test_a_residual_input_tensor_is_as_wide_as_the_output() -> None:
    # transformers' BertOutput(hidden_states, input_tensor): dense intermediate -> hidden, then
    # LayerNorm(dropout(h) + input_tensor): the residual has the output's width, not the input's.
    class Output(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dense = nn.Linear(64, 16)
            self.norm = nn.LayerNorm(16)

        def forward(self, x, input_tensor):
            return self.norm(self.dense(x) + input_tensor)

    made = forward_inputs(Output())
    assert not isinstance(made, NotBuilt)
    _, kwargs, _ = made
    assert kwargs["x"].shape[-1] == 64 and kwargs["input_tensor"].shape[-1] == 16
    Output()(**kwargs)  # it runs


def test_attention_cores_and_losses_get_inputs_like_the_first() -> None:
    # `Attend.forward(q, k, v)` and a loss's `forward(pred, target)`: tensors like the input, by exact name
    # only (a forward parameter `kernel_size` or `return_attn` is not one).
    class Attend(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Linear(16, 16)

        def forward(self, q, k, v):
            return torch.softmax(self.scale(q) @ k.transpose(-1, -2), dim=-1) @ v

    class Loss(nn.Module):
        def forward(self, pred, target):
            return ((pred - target) ** 2).mean()

    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x, kernel_size):
            return self.fc(x)

    made = forward_inputs(Attend())
    assert not isinstance(made, NotBuilt)
    _, kwargs, _ = made
    assert kwargs["k"].shape == kwargs["v"].shape == kwargs["q"].shape
    Attend()(**kwargs)
    made = forward_inputs(Loss(), generic_width=16)
    assert not isinstance(made, NotBuilt) and made[1]["target"].shape == made[1]["pred"].shape
    odd = forward_inputs(Odd())
    assert isinstance(odd, NotBuilt) and odd.missing == "kernel_size"
