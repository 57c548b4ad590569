"""Cross-file reach: `ACT2FN[config.<field>]` where the table cannot be read (a model package analysed without
`transformers` installed, the usual case of a package that only imports it) but the key is a field of the
package's own config class, in another file, with an evident default. The key is that default whatever the
table holds, so the lookup is by that literal key, as for a table read whose entry is no torch layer
(`_evident_key`): a non-GELU default (`tanh`, `relu`, `silu`) is no Linear -> GELU site. Before, an unreadable
table left the key unread and family 6 reported the lookup with its run-time check. A GELU default, a field
whose value the config's `__init__` takes from elsewhere, configs that disagree and a key that is not a config
field keep that behaviour (the lookup as written, reported)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.types import Ctor
from adopter.engine import check, detect_environment, load_rules

# The config file of the package (its own classes; `transformers` itself is nowhere to read).
CONFIG = '''
from transformers.configuration_utils import PretrainedConfig


class PoolerConfig(PretrainedConfig):
    # roformer 0.4.3, roformer/configuration_roformer.py:106-140: `hidden_act="gelu"`, `pooler_activation="tanh"`
    def __init__(self, hidden_size=8, hidden_act="gelu", pooler_activation="tanh", **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.pooler_activation = pooler_activation


class SplitConfig(PretrainedConfig):
    # chronos-forecasting 2.3.2, chronos/chronos2/config.py:64-84: the activation is the last part of
    # `feed_forward_proj` ("relu" by default), set in the body.
    def __init__(self, d_model=8, feed_forward_proj: str = "relu", **kwargs):
        self.d_model = d_model
        self.feed_forward_proj = feed_forward_proj
        act_info = self.feed_forward_proj.split("-")
        self.dense_act_fn = act_info[-1]
        super().__init__(**kwargs)


class GatedConfig(PretrainedConfig):
    # qwen-tts 0.1.1, qwen_tts/core/tokenizer_12hz/configuration_qwen3_tts_tokenizer_v2.py:84-106: `hidden_act="silu"`
    def __init__(self, hidden_size=8, hidden_act="silu", **kwargs):
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        super().__init__(**kwargs)


class SameConfig(PretrainedConfig):
    def __init__(self, hidden_size=8, hidden_act="silu", **kwargs):
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        super().__init__(**kwargs)


class TakenConfig(PretrainedConfig):
    # Refusal: the field is assigned from something that is not evident (a value popped from the kwargs).
    def __init__(self, hidden_size=8, **kwargs):
        self.hidden_size = hidden_size
        self.hidden_act = kwargs.pop("activation", None) or default_activation()
        super().__init__(**kwargs)


class OtherConfig(PretrainedConfig):
    def __init__(self, hidden_size=8, hidden_act="gelu", **kwargs):
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        super().__init__(**kwargs)
'''

HEAD = '''
import torch.nn as nn
from transformers.activations import ACT2FN
from transformers.modeling_utils import PreTrainedModel
from .config import GatedConfig, OtherConfig, PoolerConfig, SameConfig, SplitConfig, TakenConfig
'''

CASES = {
    # roformer 0.4.3, roformer/modeling_roformer.py:828-840 (`RoFormerPooler`, config not annotated; the model
    # declares `config_class = RoFormerConfig` on its pretrained base, :843-849, and builds the pooler under
    # `if add_pooling_layer:`, :967): tanh, no GELU.
    "unannotated, declared config: tanh": ('''
class Pooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACT2FN[config.pooler_activation]

    def forward(self, hidden_states):
        return self.act(self.dense(hidden_states[:, 0]))


class Pretrained(PreTrainedModel):
    config_class = PoolerConfig


class Model(Pretrained):
    def __init__(self, config, add_pooling_layer=False):
        super().__init__(config)
        if add_pooling_layer:
            self.pooler = Pooler(config)
''', "Pooler", "'tanh'"),
    # chronos-forecasting 2.3.2, chronos/chronos2/layers.py:153-166 (`MLP`, `config: Chronos2CoreConfig`):
    # relu, no GELU.
    "annotated config, default set in the body: relu": ('''
class MLP(nn.Module):
    def __init__(self, config: SplitConfig):
        super().__init__()
        self.wi = nn.Linear(config.d_model, 4 * config.d_model, bias=False)
        self.wo = nn.Linear(4 * config.d_model, config.d_model, bias=False)
        self.act = ACT2FN[config.dense_act_fn]

    def forward(self, hidden_states):
        hidden_states = self.wi(hidden_states)
        hidden_states = self.act(hidden_states)
        return self.wo(hidden_states)
''', "MLP", "'relu'"),
    # qwen-tts 0.1.1, qwen_tts/core/tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py:357-370 (a gated MLP
    # built as `DecoderMlp(config)` in a layer whose model declares its config class): silu, no GELU.
    "gated MLP, passed config: silu": ('''
class DecoderMlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.down_proj = nn.Linear(4 * config.hidden_size, config.hidden_size, bias=False)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config: GatedConfig, layer_idx):
        super().__init__()
        self.mlp = DecoderMlp(config)
''', "DecoderMlp", "'silu'"),
    # lerobot 0.4.4, lerobot/policies/wall_x/qwen_model/qwen2_5_vl_moe.py:54-65 (`Qwen2_5_VLMLP`, built at :352 by a
    # vision block and at :2285 by a decoder layer, with two config classes whose `hidden_act` defaults are both
    # "silu", configuration_qwen2_5_vl.py:13, :176): every config passed agrees, silu.
    "two configs agree: silu": ('''
class VisionMLP(nn.Module):
    def __init__(self, config, bias: bool = False):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=bias)
        self.up_proj = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=bias)
        self.down_proj = nn.Linear(4 * config.hidden_size, config.hidden_size, bias=bias)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_state):
        return self.down_proj(self.act(self.gate_proj(hidden_state)) * self.up_proj(hidden_state))


class VisionBlock(nn.Module):
    def __init__(self, config: GatedConfig):
        super().__init__()
        self.mlp = VisionMLP(config, bias=True)


class DecoderLayer(nn.Module):
    def __init__(self, config: SameConfig):
        super().__init__()
        self.mlp = VisionMLP(config)
''', "VisionMLP", "'silu'"),
    # qwen-tts 0.1.1, qwen_tts/core/models/modeling_qwen3_tts.py:808-816 (`Qwen3TTSTalkerResizeMLP`, `act: str`
    # required, passed `config.hidden_act` by the model at :1575, whose config is annotated, :1571): silu.
    "a required parameter passed a config field: silu": ('''
class ResizeMLP(nn.Module):
    def __init__(self, input_size, intermediate_size, output_size, act: str, bias=False):
        super().__init__()
        self.linear_fc1 = nn.Linear(input_size, intermediate_size, bias=bias)
        self.linear_fc2 = nn.Linear(intermediate_size, output_size, bias=bias)
        self.act = ACT2FN[act]

    def forward(self, hidden_state):
        return self.linear_fc2(self.act(self.linear_fc1(hidden_state)))


class Talker(nn.Module):
    def __init__(self, config: GatedConfig):
        super().__init__()
        self.text_projection = ResizeMLP(config.hidden_size, config.hidden_size, config.hidden_size,
                                         config.hidden_act, bias=True)
''', "ResizeMLP", "'silu'"),
    # Refusal: a GELU default stays the lookup as written (a site, with its run-time check).
    "annotated config: gelu": ('''
class Intermediate(nn.Module):
    def __init__(self, config: PoolerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        return self.act(self.dense(hidden_states))
''', "Intermediate", None),
    # Refusal: the config's `__init__` takes the field from a value that is not evident.
    "field not evident": ('''
class Intermediate(nn.Module):
    def __init__(self, config: TakenConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        return self.act(self.dense(hidden_states))
''', "Intermediate", None),
    # Refusal: two configs passed, with different defaults (silu and gelu): unknown.
    "two configs disagree": ('''
class Intermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        return self.act(self.dense(hidden_states))


class Layer(nn.Module):
    def __init__(self, config: GatedConfig):
        super().__init__()
        self.mlp = Intermediate(config)


class OtherLayer(nn.Module):
    def __init__(self, config: OtherConfig):
        super().__init__()
        self.mlp = Intermediate(config)
''', "Intermediate", None),
    # Refusal: the class of `config` is not said anywhere in the file (never built, not annotated).
    "config class unknown": ('''
class Intermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        return self.act(self.dense(hidden_states))
''', "Intermediate", None),
    # Refusal: a field the config does not have (a sub-config's, `config.vision_act`): unknown.
    "field absent": ('''
class Intermediate(nn.Module):
    def __init__(self, config: GatedConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, 4 * config.hidden_size)
        self.act = ACT2FN[config.vision_act]

    def forward(self, hidden_states):
        return self.act(self.dense(hidden_states))
''', "Intermediate", None),
}


def _package(tmp_path: Path, case: str) -> tuple[Path, str, str | None]:
    text, name, key = CASES[case]
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    for module, body in (("__init__", ""), ("config", CONFIG), ("model", HEAD + textwrap.dedent(text))):
        (pkg / f"{module}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    return pkg / "model.py", name, key


@pytest.mark.parametrize("case", list(CASES))
def test_a_config_default_names_the_key_of_a_table_not_read(tmp_path: Path, case: str) -> None:
    model, name, key = _package(tmp_path, case)
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == name)
    assert arch.init is not None
    act = next(b.value for b in arch.init.bindings if b.attr == "act")
    assert isinstance(act, Ctor) and act.callee.endswith("ACT2FN")
    if key is None:
        assert act.origin is None and act.lookup is not None and "config." in act.lookup
    else:
        assert act.lookup == key
        assert act.origin is not None and "table not read" in act.origin and "default of `" in act.origin
    found = {(f.rule_id, f.scope_name) for f in check(mf, [r for r in load_rules().rules if r.family == 6],
                                                      detect_environment("cpu")).findings}
    assert (("f06-linear-gelu", name) in found) is (key is None)


TABLE = '''
import torch.nn as nn

ACT2CLS = {"gelu": nn.GELU, "relu": nn.ReLU, "silu": nn.SiLU, "tanh": nn.Tanh}


class Instantiator(dict):
    def __getitem__(self, key):
        return super().__getitem__(key)()


ACT2FN = Instantiator(ACT2CLS)
'''


@pytest.mark.parametrize(("case", "layer"), [("two configs agree: silu", "torch.nn.SiLU"),
                                             ("two configs disagree", None)])
def test_configs_passed_agreeing_decide_a_table_read_too(tmp_path: Path, case: str, layer: str | None) -> None:
    """The union of the config classes passed is read the same where the table is read (the package's own
    `activations.py`): agreeing defaults give the table's entry, disagreeing ones the lookup as written."""
    model, name, _ = _package(tmp_path, case)
    (model.parent / "activations.py").write_text(TABLE, encoding="utf-8")
    text = model.read_text(encoding="utf-8").replace("from transformers.activations import", "from .activations import")
    model.write_text(text, encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(text, str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == name)
    assert arch.init is not None
    act = next(b.value for b in arch.init.bindings if b.attr == "act")
    assert isinstance(act, Ctor)
    if layer is None:
        assert act.origin is None and act.lookup == "config.hidden_act"
    else:
        assert act.callee == layer and act.origin is not None and "default of `hidden_act`" in act.origin
