"""Cross-file reach: `ACT2FN[hidden_act]` where `hidden_act` is a required `__init__` parameter that every
construction in the file passes as a config field (`config.hidden_act`). The key is then that field's default
in the constructing class's config (`crossfile.passed_fields`), read as `ACT2FN[config.hidden_act]` written in
the class is (prec10). Shaped on, rewritten at fixture size:

- transformers 5.0 `models/idefics/modeling_idefics.py:477-491` (`IdeficsMLP(hidden_size, intermediate_size,
  hidden_act)`, built at :682 with `hidden_act=config.hidden_act`), `models/deprecated/open_llama/
  modeling_open_llama.py:201`, and unimernet `models/blip2_models/modeling_llama.py:160-174` (the old
  `LlamaMLP` port, built at :361): a SiLU gate reported as Linear -> GELU;
- transformers 5.0 `models/qwen2_vl/modeling_qwen2_vl.py:314-322` (`VisionMlp(dim, hidden_dim, hidden_act)`,
  built at :428 by keyword);
- chronos-forecasting `chronos/chronos_bolt.py:141-164` (`ResidualBlock(..., act_fn_name, ...)`, built twice,
  :204 and :233, both with `act_fn_name=config.dense_act_fn`).

Where the file does not say it (two fields, a literal beside a field, a construction outside an `__init__`, a
parameter `__init__` rebinds, a nested config, no construction) the key stays unknown and the lookup is
reported with its run-time check, as before."""

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
import torch.nn as nn

class GELUActivation(nn.Module):
    def forward(self, input):
        return nn.functional.gelu(input)

ACT2CLS = {"gelu": GELUActivation, "relu": nn.ReLU, "silu": nn.SiLU}

class ClassInstantier(dict):
    def __getitem__(self, key):
        return super().__getitem__(key)()

ACT2FN = ClassInstantier(ACT2CLS)
'''

CONFIG = '''
class BlockConfig:
    def __init__(self, hidden_act="silu", head_act="gelu", dense_act_fn="relu", **kwargs):
        self.hidden_act = hidden_act
        self.head_act = head_act
        self.dense_act_fn = dense_act_fn
'''

MLP = '''
import torch.nn as nn
from pkg.config import BlockConfig
from .activations import ACT2FN


class Block(nn.Module):
    """Built as `Block(d, h, act)` (this text is no construction)."""

    def __init__(self, hidden_size, intermediate_size, hidden_act):
        super().__init__()
        {rebind}self.up = nn.Linear(hidden_size, intermediate_size)
        self.act = ACT2FN[hidden_act]

    def forward(self, x):
        return self.act(self.up(x))
'''

BUILDERS = {
    # idefics / open_llama / unimernet: by keyword, the constructing parameter annotated.
    "keyword, annotated": ('''
class Layer(nn.Module):
    def __init__(self, config: BlockConfig):
        super().__init__()
        self.mlp = Block(hidden_size=8, intermediate_size=config.hidden_size, hidden_act=config.hidden_act)
''', "torch.nn.SiLU"),
    # the old Llama port: by position, the model declaring its config class and passing it on.
    "positional, declared": ('''
class PreTrained(nn.Module):
    config_class = BlockConfig

class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.mlp = Block(8, 16, cfg.hidden_act)

class Model(PreTrained):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([Layer(config) for _ in range(2)])
''', "torch.nn.SiLU"),
    # chronos: two constructions that agree.
    "two agreeing": ('''
class Model(nn.Module):
    def __init__(self, config: BlockConfig):
        super().__init__()
        self.embed = Block(4, 8, hidden_act=config.dense_act_fn)
        self.head = Block(8, 4, hidden_act=config.dense_act_fn)
''', "torch.nn.ReLU"),
    # A GELU default is a GELU: reported as before.
    "gelu field": ('''
class Model(nn.Module):
    def __init__(self, config: BlockConfig):
        super().__init__()
        self.head = Block(8, 8, config.head_act)
''', "torch.nn.GELU"),
    # Refusals. Two fields with two defaults: unknown.
    "two fields": ('''
class Model(nn.Module):
    def __init__(self, config: BlockConfig):
        super().__init__()
        self.body = Block(8, 8, config.hidden_act)
        self.head = Block(8, 8, config.head_act)
''', None),
    # A literal beside a field: unknown (this reading takes fields only).
    "a literal beside": ('''
class Model(nn.Module):
    def __init__(self, config: BlockConfig):
        super().__init__()
        self.body = Block(8, 8, config.hidden_act)
        self.head = Block(8, 8, "relu")
''', None),
    # Built in a function of the module: unknown.
    "a function builds it": ('''
def build(config: BlockConfig):
    return Block(8, 8, config.hidden_act)
''', None),
    # A nested config (`config.text_config.hidden_act`): unknown.
    "a nested config": ('''
class Model(nn.Module):
    def __init__(self, config: BlockConfig):
        super().__init__()
        self.body = Block(8, 8, config.text_config.hidden_act)
''', None),
    # The constructing parameter's class is not said: unknown.
    "an unknown config": ('''
class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.body = Block(8, 8, config.hidden_act)
''', None),
    # Never built in the file: unknown.
    "never built": ('', None),
}


def _model(tmp_path: Path, builder: str, rebind: str = "") -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    model = MLP.replace("{rebind}", rebind) + textwrap.dedent(builder)
    for name, text in (("__init__", ""), ("activations", ACTIVATIONS), ("config", CONFIG), ("model", model)):
        (pkg / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return pkg / "model.py"


def _read(tmp_path: Path, model: Path) -> tuple[Ctor, set[tuple[str, str]]]:
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "Block")
    assert arch.init is not None
    act = next(b.value for b in arch.init.bindings if b.attr == "act")
    assert isinstance(act, Ctor)
    found = {(f.rule_id, f.scope_name) for f in check(mf, [r for r in load_rules().rules if r.family == 6],
                                                      detect_environment("cpu")).findings}
    return act, found


@pytest.mark.parametrize("case", list(BUILDERS))
def test_a_required_key_takes_the_field_every_construction_passes(tmp_path: Path, case: str) -> None:
    builder, expected = BUILDERS[case]
    act, found = _read(tmp_path, _model(tmp_path, builder))
    if expected is None:
        assert act.origin is None and act.lookup == "hidden_act"
    else:
        assert act.callee == expected
        assert act.origin is not None and "passed as `hidden_act`" in act.origin
    assert (("f06-linear-gelu", "Block") in found) is (expected in (None, "torch.nn.GELU"))


def test_a_parameter_init_rebinds_is_not_read(tmp_path: Path) -> None:
    # `hidden_act = hidden_act or "gelu"`: the key is no longer what the constructions pass.
    builder, _ = BUILDERS["keyword, annotated"]
    act, found = _read(tmp_path, _model(tmp_path, builder, rebind='hidden_act = hidden_act or "gelu"\n        '))
    assert act.origin is None
    assert ("f06-linear-gelu", "Block") in found
