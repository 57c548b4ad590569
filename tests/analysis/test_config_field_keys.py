"""A key read from a same-file config class's field default (`scope.config_fields`): open-moonvit's
`self.act = _get_activation(config.hidden_act)` with `config: MoonViTConfig`, a `@dataclass` of the file whose
`hidden_act: str = "gelu_pytorch_tanh"`, and `_get_activation` an `if name == "<lit>": return nn.<Layer>(...)`
ladder of the file. The key is the default, as a parameter's literal default is; every refusal leaves the call as
written."""

from __future__ import annotations

import pytest

from adopter.dsl.types import Ctor

from .helpers import bindings

LADDER = '''
def _get_activation(name):
    if name == "gelu_pytorch_tanh":
        return nn.GELU(approximate="tanh")
    if name == "gelu":
        return nn.GELU()
    elif name == "relu":
        return nn.ReLU()
    raise ValueError(name)
'''

DATACLASS = '''from dataclasses import dataclass


@dataclass
class MoonViTConfig:
    hidden_size: int = 64
    hidden_act: str = "gelu_pytorch_tanh"
'''

MLP = '''

class MoonViTMLP(nn.Module):
    def __init__(self, config: MoonViTConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, 4 * config.hidden_size)
{extra}        self.act = _get_activation(config.hidden_act)
        self.fc2 = nn.Linear(4 * config.hidden_size, config.hidden_size)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
'''


def _act(config: str, *, ladder: str = LADDER, extra: str = "", annotation: str = "MoonViTConfig") -> str:
    code = config + ladder + MLP.format(extra=extra).replace("config: MoonViTConfig", f"config: {annotation}")
    act = next(b for b in bindings(code, "MoonViTMLP") if b.attr == "act")
    value = act.value
    if isinstance(value, Ctor):
        kwargs = ", ".join(f"{k.name}={k.value.text}" for k in value.kwargs)  # type: ignore[union-attr]
        return f"{value.callee}({kwargs})"
    return value.text


def test_dataclass_field_default_chooses_the_ladder_arm() -> None:
    assert _act(DATACLASS) == 'torch.nn.GELU(approximate="tanh")'
    # `Optional[...]` / `X | None`: the config class is the one named (as cross-file reach reads it)
    assert _act(DATACLASS, annotation="MoonViTConfig | None") == 'torch.nn.GELU(approximate="tanh")'
    assert _act(DATACLASS.replace('"gelu_pytorch_tanh"', '"relu"')) == "torch.nn.ReLU()"


def test_config_class_with_its_own_init_and_a_table_factory() -> None:
    own_init = '''
class MoonViTConfig:
    def __init__(self, hidden_size=64, hidden_act="gelu", **kwargs):
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
'''
    assert _act(own_init) == "torch.nn.GELU()"
    table = '''
_ACTS = {"gelu": nn.GELU, "relu": nn.ReLU}


def _get_activation(name):
    return _ACTS[name]()
'''
    assert _act(DATACLASS.replace('"gelu_pytorch_tanh"', '"gelu"'), ladder=table) == "torch.nn.GELU()"
    assert _act(DATACLASS, ladder=table) == "_get_activation()"  # a key the table does not hold


@pytest.mark.parametrize(("config", "ladder", "extra", "annotation"), [
    # the field is set in `__init__` before the call
    (DATACLASS, LADDER, '        config.hidden_act = "relu"\n', "MoonViTConfig"),
    # a union of two configs, or a class this file does not define
    (DATACLASS + "\n\nclass OtherConfig:\n    hidden_act = 'relu'\n", LADDER, "", "MoonViTConfig | OtherConfig"),
    (DATACLASS, LADDER, "", "OtherConfig"),
    # a class with a base and no `__init__` of its own: the base's `__init__` may set the field
    ('class MoonViTConfig(BaseConfig):\n    hidden_act = "gelu"\n', LADDER, "", "MoonViTConfig"),
    # a default that is no string
    (DATACLASS.replace('"gelu_pytorch_tanh"', "None"), LADDER, "", "MoonViTConfig"),
    # a ladder whose test is not on a literal
    (DATACLASS, LADDER.replace('name == "gelu_pytorch_tanh"', "name == TANH_NAME"), "", "MoonViTConfig"),
    # a ladder whose arm returns no torch layer
    (DATACLASS, LADDER.replace('nn.GELU(approximate="tanh")', "MyGELU()"), "", "MoonViTConfig"),
])
def test_refusals_leave_the_call_as_written(config: str, ladder: str, extra: str, annotation: str) -> None:
    assert _act(config, ladder=ladder, extra=extra, annotation=annotation) == "_get_activation()"


ONLY_GELU = '''
def _act(name: str):
    """Resolve an activation by config name (only 'gelu' is used by the presets)."""
    if name == "gelu":
        return nn.GELU()
    raise NotImplementedError(f"hidden_act={name!r} not supported")
'''


def _unannotated(ladder: str) -> str:
    code = ladder + MLP.format(extra="").replace("config: MoonViTConfig", "config").replace(
        "_get_activation(", "_act(")
    value = next(b for b in bindings(code, "MoonViTMLP") if b.attr == "act").value
    return value.callee if isinstance(value, Ctor) else value.text


def test_a_ladder_whose_only_return_is_a_layer_is_that_layer_whatever_the_key() -> None:
    # attr-eomt's `_act(config.hidden_act)`: the key is not evident, but a call that returns builds a GELU
    assert _unannotated(ONLY_GELU) == "torch.nn.GELU"


@pytest.mark.parametrize("ladder", [
    ONLY_GELU.replace('    raise NotImplementedError(f"hidden_act={name!r} not supported")\n', ""),  # falls through
    ONLY_GELU.replace("    raise NotImplementedError", '    if name == "relu":\n        return nn.ReLU()\n'
                      "    raise NotImplementedError"),  # two layers
    ONLY_GELU.replace("nn.GELU()", "MyGELU()"),  # no torch layer
])
def test_a_ladder_with_another_way_out_is_not_read_without_a_key(ladder: str) -> None:
    assert _unannotated(ladder) == "_act"
