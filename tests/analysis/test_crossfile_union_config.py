"""Cross-file reach: a config parameter annotated as a union of config classes (transformers CLAP:
`config: ClapAudioConfig | ClapTextConfig`, both defaulting `hidden_act="relu"`). The annotation was dropped as
not a plain name, `ACT2FN[config.hidden_act]` stayed a lookup that may be GELU, and CLAP's Linear -> ReLU was
reported as Linear -> GELU (prec5, dev oracle family 6). Every member's default is read; it is used only when
all members have one and they agree."""

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

class Instantiator(dict):
    def __getitem__(self, key):
        return super().__getitem__(key)()

ACT2FN = Instantiator(ACT2CLS)
'''

CONFIG = '''
class AudioConfig:
    def __init__(self, hidden_act="{audio}", **kwargs):
        self.hidden_act = hidden_act

class TextConfig:
    def __init__(self, hidden_act="{text}", **kwargs):
        self.hidden_act = hidden_act
'''

MODEL = '''
from typing import Optional, Union

import torch.nn as nn
from pkg.config import AudioConfig, TextConfig
from .activations import ACT2FN


class Projection(nn.Module):
    def __init__(self, config: {annotation}):
        super().__init__()
        self.linear1 = nn.Linear(8, 8)
        self.activation = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.activation(self.linear1(x))
'''

CASES = {
    # CLAP's own form (transformers 4.35 / 5.0 `ClapProjectionLayer`): both members say ReLU.
    "pipe, both relu": ("AudioConfig | TextConfig", "relu", "relu", "torch.nn.ReLU"),
    "Union, both relu": ("Union[AudioConfig, TextConfig]", "relu", "relu", "torch.nn.ReLU"),
    "Optional member": ("Optional[AudioConfig]", "silu", "gelu", "torch.nn.SiLU"),
    "pipe None": ("AudioConfig | None", "relu", "gelu", "torch.nn.ReLU"),
    # The members disagree: unknown, as before (a lookup that may be GELU).
    "pipe, disagree": ("AudioConfig | TextConfig", "relu", "gelu", None),
    # Both GELU: the GELU the table holds.
    "pipe, both gelu": ("AudioConfig | TextConfig", "gelu", "gelu", "torch.nn.GELU"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_union_annotated_config_gives_the_members_common_default(tmp_path: Path, case: str) -> None:
    annotation, audio, text, expected = CASES[case]
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    files = {"__init__": "", "activations": ACTIVATIONS, "config": CONFIG.format(audio=audio, text=text),
             "model": MODEL.format(annotation=annotation)}
    for name, body in files.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    model = pkg / "model.py"
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    arch = next(a for a in mf.architectures if a.name == "Projection")
    assert arch.init is not None
    act = next(b.value for b in arch.init.bindings if b.attr == "activation")
    assert isinstance(act, Ctor)
    if expected is None:
        assert act.origin is None and not act.callee.startswith("torch.nn.")
    else:
        assert act.callee == expected
        assert act.origin is not None and "default of `hidden_act`" in act.origin
    found = [f.rule_id for f in check(mf, [r for r in load_rules().rules if r.family == 6],
                                      detect_environment("cpu")).findings]
    assert ("f06-linear-gelu" in found) is (expected in (None, "torch.nn.GELU"))
