"""Cross-file reach: `ACT2FN[config.<field>]` where `config` is not annotated. Its class is what the file says it
is: every in-file construction passes the constructing `__init__`'s own parameter, whose class is annotated or
declared (`config_class = ModelConfig`, Hugging Face's `PreTrainedModel` contract), and that class's default
names the activation. Read as unknown before, transformers' `LlamaMLP` (SiLU) and `T5DenseActDense` (ReLU)
were reported as Linear -> GELU (and a default naming an entry that is no torch layer, BitNet's and Persimmon's
`relu2`, is that key: not GELU); where the file does not say (no construction, an expression passed, two
classes) the key stays unknown and the lookup is reported with its run-time check, as before."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.types import Ctor
from adopter.engine import check, detect_environment, load_rules

ACTIVATIONS = '''
import torch
import torch.nn as nn

class GELUActivation(nn.Module):
    def forward(self, input):
        return nn.functional.gelu(input)

class ReLUSquaredActivation(nn.Module):
    def forward(self, input):
        relu_applied = nn.functional.relu(input)
        squared = torch.square(relu_applied)
        return squared

class PytorchGELUTanh(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(0.7978845608 * (input + 0.044715 * torch.pow(input, 3.0))))

ACT2CLS = {"gelu": GELUActivation, "relu": nn.ReLU, "silu": nn.SiLU, "relu2": ReLUSquaredActivation,
           "gelu_pytorch_tanh": PytorchGELUTanh}

class Instantiator(dict):
    def __getitem__(self, key):
        return super().__getitem__(key)()

ACT2FN = Instantiator(ACT2CLS)
'''

CONFIG = '''
class ModelConfig:
    def __init__(self, hidden_act="silu", proj_act="gelu", **kwargs):
        self.hidden_act = hidden_act
        self.proj_act = proj_act

class SquaredConfig:
    def __init__(self, hidden_act="relu2", proj_act="gelu_pytorch_tanh", **kwargs):
        self.hidden_act = hidden_act
        self.proj_act = proj_act

class OtherConfig:
    def __init__(self, hidden_act="gelu", **kwargs):
        self.hidden_act = hidden_act
'''

MLP = '''
import torch.nn as nn
from pkg.config import ModelConfig, OtherConfig, SquaredConfig
from .activations import ACT2FN


class MLP(nn.Module):
    """Built as `MLP(config)` (this text is no construction)."""

    def __init__(self, config, width=8):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = ACT2FN[config.{field}]

    def forward(self, x):
        return self.act(self.fc(x))
'''

BUILDERS = {
    # The constructing layer's parameter is annotated.
    "annotated caller": ('''
class Layer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.mlp = MLP(config)
''', "hidden_act", "torch.nn.SiLU"),
    # Two levels: the model declares its config class, its layer passes it on by keyword.
    "declared, passed on": ('''
class PreTrained(nn.Module):
    config_class = ModelConfig

class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.mlp = MLP(width=4, config=cfg)

class Model(PreTrained):
    def __init__(self, config, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([Layer(config) for _ in range(depth)])
''', "hidden_act", "torch.nn.SiLU"),
    # A GELU default is a GELU.
    "declared gelu": ('''
class Model(nn.Module):
    config_class = ModelConfig

    def __init__(self, config):
        super().__init__()
        self.mlp = MLP(config)
''', "proj_act", "torch.nn.GELU"),
    # A subclass's declaration is the subclass's: the class itself is never built here.
    "a subclass declares": ('''
class Wrapped(MLP):
    config_class = ModelConfig

    def __init__(self, config):
        super().__init__(config)
        self.extra = nn.Linear(8, 8)
''', None, None),
    # The default names an entry that is no torch layer known here (squared ReLU): the lookup by that key,
    # which is no GELU (nor a SiLU/GELU gate).
    "an entry not read": ('''
class Layer(nn.Module):
    def __init__(self, config: SquaredConfig):
        super().__init__()
        self.mlp = MLP(config)
''', "hidden_act", "key 'relu2'"),
    # ... but a key that spells a GELU keeps the lookup as written: family 6, with its run-time check.
    "a GELU entry not read": ('''
class Layer(nn.Module):
    def __init__(self, config: SquaredConfig):
        super().__init__()
        self.mlp = MLP(config)
''', "proj_act", None),
    # Two constructions of two classes: unknown.
    "two classes": ('''
class Layer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.mlp = MLP(config)

class OtherLayer(nn.Module):
    def __init__(self, config: OtherConfig):
        super().__init__()
        self.mlp = MLP(config)
''', "hidden_act", None),
    # An expression passed (a sub-config): unknown.
    "an expression": ('''
class Layer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.mlp = MLP(config.text_config)
''', "hidden_act", None),
    # Built outside an `__init__` (a function of the module): unknown.
    "a function builds it": ('''
def build(config: ModelConfig):
    return MLP(config)
''', "hidden_act", None),
    # Never built in the file: unknown.
    "never built": ('', "hidden_act", None),
}


def _model(tmp_path: Path, case: str) -> tuple[Path, str | None, str]:
    builder, field, expected = BUILDERS[case]
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    model = MLP.format(field=field or "hidden_act") + textwrap.dedent(builder)
    for name, text in (("__init__", ""), ("activations", ACTIVATIONS), ("config", CONFIG), ("model", model)):
        (pkg / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return pkg / "model.py", expected, "MLP"


@pytest.mark.parametrize("case", list(BUILDERS))
def test_an_unannotated_config_takes_the_class_the_file_passes(tmp_path: Path, case: str) -> None:
    model, expected, name = _model(tmp_path, case)
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == name)
    assert arch.init is not None
    act = next(b.value for b in arch.init.bindings if b.attr == "act")
    assert isinstance(act, Ctor)
    if expected is None:
        assert act.origin is None and act.lookup is not None
    elif expected.startswith("key "):
        assert act.lookup == expected[4:] and act.origin is not None and "default of `" in act.origin
    else:
        assert act.callee == expected
        assert act.origin is not None and "default of `" in act.origin
    found = {(f.rule_id, f.scope_name) for f in check(mf, [r for r in load_rules().rules if r.family == 6],
                                                      detect_environment("cpu")).findings}
    gelu = expected in (None, "torch.nn.GELU") or (expected or "").startswith("key 'gelu")
    assert (("f06-linear-gelu", name) in found) is gelu
