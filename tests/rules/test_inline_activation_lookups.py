"""Family 6: the activation looked up and called in one expression in `forward` (helper `mech113`).

transformers' classification and prediction heads build their activation where they use it,
`x = self.dense(x); x = ACT2FN[self.config.hidden_act](x)` or `h = get_activation("gelu")(h)`, and the packages
copying them do the same. A module built and called in one expression is that module's call, as if `__init__`
had bound it (`adopter.analysis.scope.inline_lookups`, the reading the canonical form gives an inline
`nn.Softmax(dim=-1)(x)`): f06 reads it with its `key_may_be` check, and a key written through the config
`__init__` holds (`self.config.hidden_act`, `self.config = config`) decides as the bound lookup's
`config.hidden_act` does. The fix passes the looked-up expression itself to `fused_linear_gelu`, which checks
the activation at run time: the rewrite is exec'd beside the original with transformers 4.35's `ACT2FN` and
compared on CPU (float64, seed 0, strict state-dict loading, outputs rtol 1e-6 / atol 1e-9, gradients by the
harness's contract) for GELU keys and for keys the helper does not fuse.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from attention_harness import CPU, CUDA, findings_of, fixed, rules_of

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, find

RULES = rules_of("f06-linear-gelu")

# transformers 4.35.0, models/convbert/modeling_convbert.py:955-972 (`ConvBertClassificationHead`; the same head
# in roformer 0.4.3, roformer/modeling_roformer.py:1502-1520, dev2's labelled site 1516, and in gpn,
# gpn/model.py:155-166): the config held as `self.config`, the activation looked up inline.
HEAD = '''from torch import nn

from transformers.activations import ACT2FN


class ClassificationHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(0.0)
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)
        self.config = config

    def forward(self, features):
        x = features[:, 0, :]
        x = self.dropout(x)
        x = self.dense(x)
        x = ACT2FN[self.config.hidden_act](x)
        x = self.dropout(x)
        return self.out_proj(x)
'''

# transformers 4.35.0, models/electra/modeling_electra.py:645-659 (`ElectraGeneratorPredictions`; ConvBERT's
# generator head, :853-867, is the same): a literal GELU key given to `get_activation`.
GENERATOR = '''from torch import nn

from transformers.activations import get_activation


class GeneratorPredictions(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.LayerNorm = nn.LayerNorm(config.embedding_size, eps=1e-12)
        self.dense = nn.Linear(config.hidden_size, config.embedding_size)

    def forward(self, generator_hidden_states):
        hidden_states = self.dense(generator_hidden_states)
        hidden_states = get_activation("gelu")(hidden_states)
        return self.LayerNorm(hidden_states)
'''

# transformers 4.35.0, models/electra/modeling_electra.py:628-642 (`ElectraDiscriminatorPredictions`; Funnel's,
# models/funnel/modeling_funnel.py:767-780, spells it `ACT2FN[...]`): the key through the held config, the
# activated value read by a second Linear in a chained expression.
DISCRIMINATOR = '''from torch import nn

from transformers.activations import get_activation


class DiscriminatorPredictions(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dense_prediction = nn.Linear(config.hidden_size, 1)
        self.config = config

    def forward(self, discriminator_hidden_states):
        hidden_states = self.dense(discriminator_hidden_states)
        hidden_states = get_activation(self.config.hidden_act)(hidden_states)
        return self.dense_prediction(hidden_states).squeeze(-1)
'''

# DeBERTa (the `deberta` dev package), DeBERTa/deberta/pooling.py:76-84 (`ContextPooler`): the pooled token's
# Linear, then the lookup inline, returned at once.
POOLER = '''from torch import nn

from transformers.activations import ACT2FN


class ContextPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.pooler_hidden_size, config.pooler_hidden_size)
        self.dropout = nn.Dropout(0.0)
        self.config = config

    def forward(self, hidden_states):
        context_token = hidden_states[:, 0]
        context_token = self.dropout(context_token)
        pooled_output = self.dense(context_token)
        pooled_output = ACT2FN[self.config.hidden_act](pooled_output)
        return pooled_output
'''


def _sites(source: str, env: Environment = CPU) -> list[tuple[str, int]]:
    return sorted((f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES, env=env))


@pytest.mark.parametrize(("source", "line"), [(HEAD, 17), (GENERATOR, 13), (DISCRIMINATOR, 14), (POOLER, 16)])
def test_an_inline_lookup_after_the_linear_is_the_pair(source: str, line: int) -> None:
    assert _sites(source) == [("f06-linear-gelu", line)]
    assert [f.fixable for f in findings_of(source, RULES, env=CUDA)] == [True]


def test_the_nested_call() -> None:
    # DeBERTa, DeBERTa/apps/models/ner.py:36-38 reads `cls = self.proj(cls); cls = ACT2FN['gelu'](cls)`.
    nested = GENERATOR.replace(
        '        hidden_states = self.dense(generator_hidden_states)\n'
        '        hidden_states = get_activation("gelu")(hidden_states)\n',
        '        hidden_states = get_activation("gelu")(self.dense(generator_hidden_states))\n')
    assert _sites(nested) == [("f06-linear-gelu", 13)]


@pytest.mark.parametrize(("base", "edit"), [
    # a literal key that is no GELU
    (GENERATOR, ('get_activation("gelu")', 'get_activation("relu")')),
    (HEAD, ("ACT2FN[self.config.hidden_act]", 'ACT2FN["relu"]')),
    # the lookup stored in a local and used twice: not built and called in one expression
    (GENERATOR, ('        hidden_states = get_activation("gelu")(hidden_states)\n        return self.LayerNorm(hidden_states)',
                 '        act = get_activation("gelu")\n        return self.LayerNorm(act(hidden_states)) + act(generator_hidden_states)')),
    # an op between the Linear and the activation
    (HEAD, ("x = ACT2FN[self.config.hidden_act](x)", "x = ACT2FN[self.config.hidden_act](x * 2)")),
    # the lookup called on something other than the Linear's output
    (HEAD, ("x = ACT2FN[self.config.hidden_act](x)", "x = ACT2FN[self.config.hidden_act](features[:, 1, :]) + x")),
    # the Linear's output is also read elsewhere (returned beside the activated value)
    (POOLER, ("pooled_output = ACT2FN[self.config.hidden_act](pooled_output)\n        return pooled_output",
              "activated = ACT2FN[self.config.hidden_act](pooled_output)\n        return activated, pooled_output")),
    # not a Linear: DeBERTa's `ConvLayer` (DeBERTa/deberta/bert.py:124) activates a dropout of a convolution
    (POOLER, ("nn.Linear(config.pooler_hidden_size, config.pooler_hidden_size)", "nn.Conv1d(4, 4, 3)")),
])
def test_near_forms_stay_silent(base: str, edit: tuple[str, str]) -> None:
    assert _sites(base)  # the positive form beside them
    near = base.replace(*edit)
    assert near != base
    assert _sites(near) == []


# The key decides as a bound lookup's does: a parameter held by `self.<attr>` is read as the parameter.
KEYED = '''from torch import nn

from transformers.activations import ACT2FN, get_activation


class Bound(nn.Module):
    def __init__(self, dim, act="KEY"):
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.act = ACT2FN[act]

    def forward(self, x):
        return self.act(self.dense(x))


class Inline(nn.Module):
    def __init__(self, dim, act="KEY"):
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.act_name = act

    def forward(self, x):
        return ACT2FN[self.act_name](self.dense(x))


class Factory(nn.Module):
    def __init__(self, dim, act="KEY"):
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.act_name = act

    def forward(self, x):
        return get_activation(self.act_name)(self.dense(x))
'''


@pytest.mark.parametrize(("key", "site"), [("gelu", True), ("gelu_new", True), ("relu", False), ("silu", False)])
def test_a_parameter_default_decides_bound_and_inline_alike(key: str, site: bool) -> None:
    found = {f.scope_name for f in findings_of(KEYED.replace("KEY", key), RULES)}
    assert found == ({"Bound", "Inline", "Factory"} if site else set())


def test_a_held_attribute_bound_twice_is_not_read_as_the_parameter() -> None:
    # `self.act_name` bound under a condition too: the key is not the parameter's, so not evident (reported).
    source = KEYED.replace('act="KEY"', 'act="relu", other=None').replace(
        "        self.act_name = act\n",
        "        self.act_name = act\n        if other is not None:\n            self.act_name = other\n")
    found = {f.scope_name for f in findings_of(source, RULES)}
    assert found == {"Inline", "Factory"}


# The config default of another file (`mech105`'s reading of an unread table): bound and inline, the same answer.
CONFIG = '''
from transformers.configuration_utils import PretrainedConfig


class HeadConfig(PretrainedConfig):
    def __init__(self, hidden_size=8, hidden_act="KEY", **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
'''

MODEL = '''
import torch.nn as nn
from transformers.activations import ACT2FN

from .config import HeadConfig


class BoundHead(nn.Module):
    def __init__(self, config: HeadConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.act(self.dense(x))


class InlineHead(nn.Module):
    def __init__(self, config: HeadConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.config = config

    def forward(self, x):
        x = self.dense(x)
        return ACT2FN[self.config.hidden_act](x)
'''


@pytest.mark.parametrize(("key", "site"), [("gelu", True), ("tanh", False), ("relu", False)])
def test_a_config_default_decides_bound_and_inline_alike(tmp_path: Path, key: str, site: bool) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for module, body in (("__init__", ""), ("config", CONFIG.replace("KEY", key)), ("model", MODEL)):
        (pkg / f"{module}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    model = pkg / "model.py"
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    found = {f.scope_name for f in find(mf, RULES, CPU)}
    assert found == ({"BoundHead", "InlineHead"} if site else set())


FIXES = {
    "ClassificationHead": (HEAD, "x = fused_linear_gelu(x, self.dense, ACT2FN[self.config.hidden_act])"),
    "DiscriminatorPredictions": (DISCRIMINATOR,
                                 "hidden_states = fused_linear_gelu(discriminator_hidden_states, self.dense, "
                                 "get_activation(self.config.hidden_act))"),
    "GeneratorPredictions": (GENERATOR, 'fused_linear_gelu(generator_hidden_states, self.dense, get_activation("gelu"))'),
}


class _Config:
    def __init__(self, hidden_act: str) -> None:
        self.hidden_size = 8
        self.embedding_size = 6
        self.num_labels = 3
        self.hidden_act = hidden_act


@pytest.mark.torch
@pytest.mark.parametrize("cls", sorted(FIXES))
@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_new", "relu", "silu"])
def test_the_fix_computes_what_the_original_computes(cls: str, hidden_act: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from attention_harness import load, unusable_reason

    from equivalence import compare_modules

    if (reason := unusable_reason()) is not None:
        pytest.skip(reason)
    from attention_harness import TF435

    monkeypatch.syspath_prepend(str(TF435))
    source, written = FIXES[cls]
    new = fixed(source, RULES, applied=1, env=CUDA)  # and nothing fixable left, a second fix changes nothing
    assert written in new
    old_cls = load(source, f"inline_old_{cls}")[cls]
    new_cls = load(new, f"inline_new_{cls}")[cls]
    torch.manual_seed(0)
    original = old_cls(_Config(hidden_act)).double()
    rewritten = new_cls(_Config(hidden_act)).double()
    original.load_state_dict(rewritten.state_dict(), strict=True)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 8, dtype=torch.float64),),
                    atol=1e-9, rtol=1e-6)


def test_a_key_of_forward_own_is_not_the_init_parameter_of_that_name() -> None:
    # `act` in forward is forward's parameter ("relu" by default), not `__init__`'s ("gelu"): not read.
    source = KEYED.replace("KEY", "gelu").replace(
        "    def forward(self, x):\n        return ACT2FN[self.act_name](self.dense(x))",
        '    def forward(self, x, act="relu"):\n        return ACT2FN[act](self.dense(x))')
    assert {f.scope_name for f in findings_of(KEYED.replace("KEY", "gelu"), RULES)} == {"Bound", "Inline", "Factory"}
    assert {f.scope_name for f in findings_of(source, RULES)} == {"Bound", "Factory"}
