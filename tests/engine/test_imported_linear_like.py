"""Projection classes of another file read as `nn.Linear` (`adopter.analysis.crossfile.linear_forward`): their
forward is a linear map of the input by the class's own (out, in) weight, so a gated MLP, a Linear→GELU and
three q/k/v projections over them are sites of families 14, 6 and 9, reported without an automatic fix.

The forms, each in a small package written like the libraries write them (never imported):
- an `nn.Linear` subclass whose forward quantises the weight, `F.linear(x, weight)`, then adds the bias
  (torchao's ParetoQ `QuantizeLinear`);
- a module with its own `Parameter(torch.empty((out, in)))`, through a base of its file, and
  `F.linear(x, self.weight, self.bias)` (fairseq2's `Linear(Projection)`);
- `x @ self.weight.t() + self.bias`; `super().forward(x.float()).to(x.dtype)` of an `nn.Linear` subclass;
- a module that applies its one `nn.Linear` child to its input (mattersim's `LinearLayer`).

Refused (each beside its site twin): a LoRA branch, a tensor-parallel gather of the output, a tuple returned, a
second argument (ibert's scaling factor), a reshape of the output, a residual, the projection under a
condition, a reshaped weight, a 3-D weight, a base of another file, a class whose file is missing; a wrapper
that applies its child twice, reshapes or activates after it, applies another child, or binds a convolution or
binds its Linear under a condition.
"""

from __future__ import annotations

from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile import reads
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

ENV = Environment("cuda", frozenset(), "2.13.0")
RULES = tuple(r for r in load_rules().rules if r.family in (6, 9, 14))
FORMS = ("f14-swiglu", "f06-linear-gelu", "f09-fused-qkv")

LAYERS = '''
import torch
import torch.nn.functional as F
from torch import nn


class Quantizer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w, clip, bits):
        return torch.round(w / clip).clamp(-bits, bits) * clip


class QuantLinear(nn.Linear):
    def __init__(self, *args, w_bits=16, **kwargs):
        super().__init__(*args, **kwargs)
        self.w_bits = w_bits
        self.clip = nn.Parameter(torch.ones(self.weight.shape[0], 1))

    def forward(self, x):
        if self.w_bits >= 16:
            weight = self.weight
        elif self.w_bits >= 2:
            weight = Quantizer.apply(self.weight, self.clip, self.w_bits).to(x.dtype)
        else:
            raise NotImplementedError
        out = F.linear(x, weight)
        if self.bias is not None:
            out += self.bias.view(1, -1).expand_as(out)
        return out


class Projection(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.input_dim = input_dim
        self.output_dim = output_dim


class Linear(Projection):
    def __init__(self, input_dim, output_dim, bias=True):
        super().__init__(input_dim, output_dim)
        self.weight = nn.Parameter(torch.empty((output_dim, input_dim)))
        self.bias = nn.Parameter(torch.zeros(output_dim)) if bias else None

    def forward(self, x):
        {forward}


class Fp32Linear(nn.Linear):
    def forward(self, x):
        return super().forward(x.float()).to(x.dtype)


class LinearLayer(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True):
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim, bias=bias)

    def forward(self, x):
        {child}
'''

LINEAR_FORWARD = "return F.linear(x, self.weight, self.bias)"
CHILD_FORWARD = "return self.linear(x)"

MODEL = '''
import torch.nn.functional as F
from torch import nn

from .layers import {cls} as Proj


class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = Proj(dim, hidden, bias=False)
        self.up_proj = Proj(dim, hidden, bias=False)
        self.down_proj = Proj(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class FFN(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = Proj(dim, hidden)
        self.fc2 = Proj(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = Proj(dim, dim)
        self.k_proj = Proj(dim, dim)
        self.v_proj = Proj(dim, dim)
        self.o_proj = Proj(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q = self.q_proj(x).view(b, n, self.heads, -1).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.heads, -1).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.heads, -1).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, d))
'''


def _package(tmp_path: Path, name: str, forward: str = LINEAR_FORWARD, cls: str = "Linear",
             layers: str = LAYERS, child: str = CHILD_FORWARD) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "layers.py").write_text(layers.replace("{forward}", forward).replace("{child}", child), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL.format(cls=cls), encoding="utf-8")
    return model


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _findings(model: Path, reach: CrossFileReach) -> list[tuple[str, str, bool, str]]:
    """(rule, class, fixable, the no-fix reason) of each finding of families 6, 9 and 14."""
    session = Session(RuleContext(RULES, (), ENV), reach=reach)
    analysed = session.analysed(model.read_text(encoding="utf-8"), str(model))
    out = []
    for f in analysed.findings:
        planned = session.planned(analysed, f)
        out.append((f.rule_id, f.scope_name, planned.fixable, f.no_fix_reason or str(getattr(planned, "reason", ""))))
    return out


def _forms(found: list[tuple[str, str, bool, str]]) -> list[tuple[str, str]]:
    return sorted((rule, scope) for rule, scope, _, _ in found if rule in FORMS)


SITES = [("f06-linear-gelu", "FFN"), ("f09-fused-qkv", "Attention"), ("f14-swiglu", "MLP")]


def test_each_imported_linear_like_class_gives_the_three_families_without_a_fix(tmp_path: Path) -> None:
    forms = {
        "QuantLinear": LINEAR_FORWARD,
        "Linear": LINEAR_FORWARD,
        "Fp32Linear": LINEAR_FORWARD,
        "LinearLayer": LINEAR_FORWARD,
        "matmul": "return x @ self.weight.t() + self.bias",
        "scaled": "y = F.linear(x.float(), self.weight, self.bias)\n        return (y * self.scale).to(x.dtype)",
    }
    for i, (cls, forward) in enumerate(forms.items()):
        model = _package(tmp_path, f"pkg{i}", forward, cls if cls in ("QuantLinear", "Fp32Linear", "LinearLayer") else "Linear")
        found = _findings(model, _reach(tmp_path))
        assert _forms(found) == SITES, cls
        for rule, _, fixable, reason in found:
            if rule in FORMS:
                assert not fixable and "a class of another file whose forward is a linear map" in reason, cls
        session = Session(RuleContext(RULES, (), ENV), reach=_reach(tmp_path))
        text = model.read_text(encoding="utf-8")
        assert session.fix(text, str(model)).new_source == text, cls


def test_a_class_whose_forward_is_no_plain_linear_map_is_not_read_as_one(tmp_path: Path) -> None:
    refused = {
        "a LoRA branch": "return F.linear(x, self.weight, self.bias) + self.lora_b(self.lora_a(x))",
        "a gather of the output": "return gather_from_region(F.linear(x, self.weight, self.bias))",
        "a tuple": "return F.linear(x, self.weight, self.bias), self.weight",
        "a reshape of the output": "return F.linear(x, self.weight, self.bias).view(-1, self.output_dim)",
        "a residual": "return F.linear(x, self.weight, self.bias) + x",
        "under a condition": ("if self.training:\n            return F.linear(x, self.weight, self.bias)\n"
                              "        return x"),
        "two projections": "return F.linear(F.linear(x, self.weight), self.weight)",
        "a reshaped weight": "return F.linear(x, self.weight.view(self.output_dim, -1), self.bias)",
        "the input indexed": "return F.linear(x[..., :self.input_dim], self.weight, self.bias)",
        "another weight": "return F.linear(x, self.other, self.bias)",
        "a reduction of the input": "return F.linear(x.mean(-1, keepdim=True), self.weight, self.bias)",
    }
    for i, (why, forward) in enumerate(refused.items()):
        model = _package(tmp_path, f"no{i}", forward)
        assert _forms(_findings(model, _reach(tmp_path))) == [], why


def test_a_second_argument_a_3d_weight_or_a_base_of_another_file_is_refused(tmp_path: Path) -> None:
    layers = {
        "a second argument": LAYERS.replace("def forward(self, x):\n        {forward}",
                                            "def forward(self, x, scale=None):\n        {forward}"),
        "a 3-D weight": LAYERS.replace("torch.empty((output_dim, input_dim))", "torch.empty((output_dim, input_dim, 1))"),
        "a base of another file": LAYERS.replace("class Projection(nn.Module):", "class Projection(Sharded):").replace(
            "from torch import nn", "from torch import nn\nfrom .sharded import Sharded"),
        "its own __call__": LAYERS.replace("    def forward(self, x):\n        {forward}",
                                           "    def forward(self, x):\n        {forward}\n\n"
                                           "    def __call__(self, x):\n        return x"),
    }
    for i, (why, text) in enumerate(layers.items()):
        model = _package(tmp_path, f"other{i}", layers=text)
        assert _forms(_findings(model, _reach(tmp_path))) == [], why


def test_a_wrapper_that_does_more_than_apply_its_linear_child_is_refused(tmp_path: Path) -> None:
    refused = {
        "applied twice": "return self.linear(self.linear(x))",
        "a reshape after": "return self.linear(x).flatten(1)",
        "an activation after": "return F.relu(self.linear(x))",
        "another child": "return self.linear(self.norm(x))",
    }
    for i, (why, child) in enumerate(refused.items()):
        model = _package(tmp_path, f"wrap{i}", cls="LinearLayer", child=child)
        assert _forms(_findings(model, _reach(tmp_path))) == [], why
    bound = {
        "a convolution": LAYERS.replace("self.linear = nn.Linear(in_dim, out_dim, bias=bias)",
                                        "self.linear = nn.Conv1d(in_dim, out_dim, 1)"),
        "under a condition": LAYERS.replace("        self.linear = nn.Linear(in_dim, out_dim, bias=bias)",
                                            "        if bias:\n            self.linear = nn.Linear(in_dim, out_dim)"),
    }
    for i, (why, text) in enumerate(bound.items()):
        model = _package(tmp_path, f"wrapinit{i}", cls="LinearLayer", layers=text)
        assert _forms(_findings(model, _reach(tmp_path))) == [], why


def test_a_class_whose_file_is_missing_is_not_read(tmp_path: Path) -> None:
    model = _package(tmp_path, "gone")
    (model.parent / "layers.py").unlink()
    assert _forms(_findings(model, _reach(tmp_path))) == []


def test_the_users_analysis_depends_on_the_other_files_class(tmp_path: Path) -> None:
    model = _package(tmp_path, "dep")
    layers = model.parent / "layers.py"
    reach = _reach(tmp_path)
    with reads.recording() as read:
        analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    assert str(layers) in read
    assert _forms(_findings(model, reach)) == SITES
    # the class's forward gains a residual: once the file is known changed, the user's sites go
    layers.write_text(LAYERS.replace("{forward}", "return F.linear(x, self.weight, self.bias) + x").replace(
        "{child}", CHILD_FORWARD), encoding="utf-8")
    assert reach.changed([str(layers)])
    assert _forms(_findings(model, reach)) == []
    assert _forms(_findings(model, _reach(tmp_path))) == []


def test_a_subclass_of_another_files_linear_like_class_without_its_own_forward_is_one(tmp_path: Path) -> None:
    model = _package(tmp_path, "sub")
    (model.parent / "inits.py").write_text(
        "from torch import nn\n\nfrom .layers import Linear\n\n\n"
        "class ZeroLinear(Linear):\n"
        "    def __init__(self, input_dim, output_dim, bias=True):\n"
        "        super().__init__(input_dim, output_dim, bias)\n"
        "        nn.init.zeros_(self.weight)\n", encoding="utf-8")
    model.write_text(model.read_text(encoding="utf-8").replace(
        "from .layers import Linear as Proj", "from .inits import ZeroLinear as Proj"), encoding="utf-8")
    found = _findings(model, _reach(tmp_path))
    assert _forms(found) == SITES
    assert not any(fixable for rule, _, fixable, _ in found if rule in FORMS)
