"""Cross-file reach: imported constructors resolved with jedi and read in their own files (never run).

Each case is a small package in tmp_path: `pkg/parts.py` (and `pkg/config.py`) define what
`pkg/model.py` imports; the table says what `self.act` of the model's `__init__` becomes.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.printer import format_architecture
from adopter.dsl.types import Ctor, ModuleFile
from adopter.engine import check, detect_environment, load_rules

REGISTRY = '''
import torch.nn as nn

class Factory:
    def __init__(self):
        self.items = {}
    def add(self, name, cls):
        self.items[name.upper()] = cls
    def __getitem__(self, name):
        return self.items[name.upper()]

Act = Factory()
Act.add("gelu", nn.GELU)
Act.add("relu", nn.modules.ReLU)

def get_act(name):
    act_name, args = split(name)
    return Act[act_name](**args)
'''

CASED = '''
from torch import nn

_ACTS = {"GELU": nn.GELU, "RELU": nn.ReLU, "SWISH": nn.SiLU}


def get_act_layer(name):
    return _ACTS[name.upper()]()
'''

TABLE = '''
import torch.nn as nn

class GELUActivation(nn.Module):
    def __init__(self, use_python=False):
        super().__init__()
        self.act = self._python if use_python else nn.functional.gelu
    def forward(self, input):
        return self.act(input)

ACT2CLS = {"gelu": GELUActivation, "relu": nn.ReLU, "tanh": nn.Tanh}

class Instantiator(dict):
    def __getitem__(self, key):
        return super().__getitem__(key)()

ACT2FN = Instantiator(ACT2CLS)


def get_activation(name):
    if name in ACT2FN:
        return ACT2FN[name]
    raise KeyError(name)
'''

CONFIG = '''
class ModelConfig:
    def __init__(self, hidden_act="gelu", pooler_act="tanh", feed_forward_proj="relu", summary_act=None,
                 head_act="gelu", **kwargs):
        self.summary_act = summary_act
        self.head_act = head_act
        self.hidden_act = hidden_act
        self.pooler_act = pooler_act
        self.feed_forward_proj = feed_forward_proj
        act_info = self.feed_forward_proj.split("-")
        self.dense_act_fn = act_info[-1]
        if feed_forward_proj == "gated-gelu":
            self.dense_act_fn = "gelu_new"
        if kwargs.get("odd"):
            self.odd_act = "gelu"
'''

CASES = {
    # A subclass of a torch layer that keeps its forward computes that layer.
    "layer alias": ('''
import torch.nn as nn
class LayerNorm2d(nn.LayerNorm):
    pass
''', "LayerNorm2d(16)", "torch.nn.LayerNorm", "LayerNorm2d (pkg/parts.py:3)"),
    # ... one that overrides forward does not.
    "alias with its own forward": ('''
import torch.nn as nn
class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
''', "LayerNorm2d(16)", None, None),
    # One elementwise function of the input, with casts around it.
    "fp32 activation": ('''
import torch
import torch.nn.functional as F
from torch import nn
class FP32SiLU(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return F.silu(inputs.float(), inplace=False).to(inputs.dtype)
''', "FP32SiLU()", "torch.nn.SiLU", "FP32SiLU (pkg/parts.py:5)"),
    "tanh gelu": ('''
import torch
from torch import nn
class TanhGELU(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")
''', "TanhGELU()", "torch.nn.GELU", None),
    # Anything more than one function of the input is not a layer.
    "scaled activation": ('''
import torch.nn.functional as F
from torch import nn
class ScaledSiLU(nn.Module):
    def forward(self, x):
        return F.silu(x) * 2
''', "ScaledSiLU()", None, None),
    # A factory whose name argument has a literal default.
    "factory, literal": (REGISTRY, 'get_act("GELU")', "torch.nn.GELU", "get_act('GELU') (pkg/parts.py:16)"),
    "factory, parameter default": (REGISTRY, "get_act(act)", "torch.nn.ReLU", None),
    "factory, no default": (REGISTRY, "get_act(other)", None, None),
    # A factory that changes the key's case before it reads a plain dict (monai-like `get_act_layer`).
    "factory, upper-cased key": (CASED, 'get_act_layer("gelu")', "torch.nn.GELU", "get_act_layer('GELU')"),
    "factory, upper-cased default": (CASED, "get_act_layer(act)", "torch.nn.ReLU", None),
    "factory, key not cased": (CASED.replace("name.upper()", "name"), 'get_act_layer("gelu")', None, None),
    # Lookup tables chosen by the config class the parameter is annotated with.
    "config default tanh": (TABLE, "ACT2FN[config.pooler_act]", "torch.nn.Tanh",
                            "ACT2FN['tanh'] (pkg/parts.py:17), default of `pooler_act` in ModelConfig"),
    "config default derived": (TABLE, "ACT2FN[config.dense_act_fn]", "torch.nn.ReLU", None),
    "config default gelu stays a table lookup": (TABLE, "ACT2FN[config.hidden_act]", None, None),
    "config field not evident": (TABLE, "ACT2FN[config.odd_act]", None, None),
    "literal key": (TABLE, 'ACT2FN["relu"]', "torch.nn.ReLU", None),
}

MODEL = '''
import torch.nn as nn
from pkg.config import ModelConfig
from .parts import {names}


class Block(nn.Module):
    def __init__(self, config: ModelConfig, act="relu"):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = {ctor}

    def forward(self, x):
        return self.act(self.fc(x))
'''


def _project(tmp_path: Path, parts: str, ctor: str) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "parts.py").write_text(textwrap.dedent(parts), encoding="utf-8")
    (pkg / "config.py").write_text(CONFIG, encoding="utf-8")
    name = ctor.split("(")[0].split("[")[0]
    model = pkg / "model.py"
    model.write_text(MODEL.format(names=name, ctor=ctor), encoding="utf-8")
    return model


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _act(mf: ModuleFile) -> Ctor:
    arch = next(a for a in mf.architectures if a.name == "Block")
    assert arch.init is not None
    value = next(b.value for b in arch.init.bindings if b.attr == "act")
    assert isinstance(value, Ctor)
    return value


@pytest.mark.parametrize("case", list(CASES))
def test_imported_constructor(tmp_path: Path, case: str) -> None:
    parts, ctor, expected, origin = CASES[case]
    model = _project(tmp_path, parts, ctor)
    reach = _reach(tmp_path)
    found = _act(analyse(model.read_text(encoding="utf-8"), str(model), reach=reach))
    if expected is None:
        assert found.origin is None
        assert found.callee != "" and not found.callee.startswith("torch.nn.")
    else:
        assert found.callee == expected
        assert found.origin is not None
        if origin is not None:
            assert found.origin.startswith(origin)


def test_the_architecture_says_where_a_part_came_from(tmp_path: Path) -> None:
    parts, ctor, _, _ = CASES["fp32 activation"]
    model = _project(tmp_path, parts, ctor)
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=_reach(tmp_path))
    text = format_architecture(next(a for a in mf.architectures if a.name == "Block"))
    line = next(t for t in text.splitlines() if t.strip().startswith("act = "))
    assert line.strip().startswith("act = torch.nn.SiLU() @11:9-")
    assert line.endswith("  # from FP32SiLU (pkg/parts.py:5)")


def test_without_reach_nothing_changes(tmp_path: Path) -> None:
    parts, ctor, _, _ = CASES["fp32 activation"]
    model = _project(tmp_path, parts, ctor)
    found = _act(analyse(model.read_text(encoding="utf-8"), str(model), resolver=ModuleResolver([])))
    assert found.callee.endswith("FP32SiLU") and found.origin is None


def test_an_edit_of_the_imported_file_is_seen_after_changed(tmp_path: Path) -> None:
    parts, ctor, _, _ = CASES["fp32 activation"]
    model = _project(tmp_path, parts, ctor)
    reach = _reach(tmp_path)
    text = model.read_text(encoding="utf-8")
    assert _act(analyse(text, str(model), reach=reach)).callee == "torch.nn.SiLU"
    looked_up = reach.resolved
    assert _act(analyse(text, str(model), reach=reach)).callee == "torch.nn.SiLU"
    assert reach.resolved == looked_up  # cached: jedi is not asked again
    parts_file = tmp_path / "pkg" / "parts.py"
    parts_file.write_text(parts_file.read_text(encoding="utf-8").replace("F.silu(", "F.gelu("), encoding="utf-8")
    assert _act(analyse(text, str(model), reach=reach)).callee == "torch.nn.SiLU"  # not told yet
    assert reach.changed([str(parts_file)])
    assert _act(analyse(text, str(model), reach=reach)).callee == "torch.nn.GELU"
    assert not reach.changed([str(tmp_path / "pkg" / "unrelated.py")])


def test_deferred_resolution_queues_instead_of_looking_up(tmp_path: Path) -> None:
    """The language server's mode: a keystroke never waits for jedi; the queue is resolved elsewhere."""
    parts, ctor, _, _ = CASES["fp32 activation"]
    model = _project(tmp_path, parts, ctor)
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), deferred=True, root=str(tmp_path))
    text = model.read_text(encoding="utf-8")
    assert _act(analyse(text, str(model), reach=reach)).origin is None
    assert reach.has_pending() and reach.resolved == 0
    assert reach.resolve_pending() >= 1
    assert _act(analyse(text, str(model), reach=reach)).callee == "torch.nn.SiLU"


def test_a_file_with_nothing_to_reach_never_starts_jedi(tmp_path: Path) -> None:
    lone = tmp_path / "lone.py"
    lone.write_text(MODEL.format(names="Missing", ctor="Missing()"), encoding="utf-8")
    reach = _reach(tmp_path)
    analyse(lone.read_text(encoding="utf-8"), str(lone), reach=reach)
    assert reach.resolved == 0 and not reach.jedi.started


SUMMARY = '''
import torch.nn as nn
from pkg.config import ModelConfig
from .parts import get_activation


class Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        name = getattr(config, "{field}", None)
        self.act = get_activation(name) if name else nn.Identity()

    def forward(self, x):
        return self.act(self.fc(x))
'''


@pytest.mark.parametrize(("field", "gelu"), [("summary_act", False), ("head_act", True)])
def test_an_activation_built_only_when_the_config_sets_one(tmp_path: Path, field: str, gelu: bool) -> None:
    """`get_activation(name) if name else Identity()`, `name = getattr(config, ...)`: with the default
    None nothing is built there, so the binding is no layer; with a default "gelu" it is a candidate."""
    model = _project(tmp_path, TABLE, "get_activation(x)")
    model.write_text(SUMMARY.format(field=field), encoding="utf-8")
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=_reach(tmp_path))
    arch = next(a for a in mf.architectures if a.name == "Block")
    assert arch.init is not None
    first = next(b.value for b in arch.init.bindings if b.attr == "act")
    assert isinstance(first, Ctor) is gelu
    rules = [r for r in load_rules().rules if r.family == 6]
    found = [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]
    assert ("f06-linear-gelu" in found) is gelu


def _findings(tmp_path: Path, case: str) -> list[str]:
    parts, ctor, _, _ = CASES[case]
    model = _project(tmp_path, parts, ctor)
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=_reach(tmp_path))
    rules = [r for r in load_rules().rules if r.family == 6]
    return [f.rule_id for f in check(mf, rules, detect_environment("cpu")).findings]


@pytest.mark.parametrize(("case", "gelu"), [
    ("config default tanh", False),  # was reported as Linear -> GELU before the default was read
    ("config default derived", False),
    ("config default gelu stays a table lookup", True),
    ("factory, literal", True),
])
def test_a_finding_says_only_what_it_knows(tmp_path: Path, case: str, gelu: bool) -> None:
    assert ("f06-linear-gelu" in _findings(tmp_path, case)) is gelu


def test_the_finding_lands_in_the_file_that_holds_the_code(tmp_path: Path) -> None:
    parts, ctor, _, _ = CASES["factory, literal"]
    model = _project(tmp_path, parts, ctor)
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=_reach(tmp_path))
    result = check(mf, [r for r in load_rules().rules if r.family == 6], detect_environment("cpu"))
    assert [os.path.basename(mf.path or ""), result.findings[0].span.start_line + 1] == ["model.py", 14]


GATED = '''
import torch.nn as nn
from pkg.config import ModelConfig
from .parts import ACT2FN


class Dense(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = ACT2FN[config.dense_act_fn]

    def forward(self, x):
        return self.act(self.fc(x))


class GatedDense(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = ACT2FN[config.dense_act_fn]

    def forward(self, x):
        return self.act(self.fc(x))


class Layer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        if config.{test}:
            self.ff = GatedDense(config)
        else:
            self.ff = Dense(config)

    def forward(self, x):
        return self.ff(x)
'''


@pytest.mark.parametrize(("test", "gated_default_read"), [("is_gated", False), ("not_gated", True)])
def test_defaults_apply_only_to_a_class_the_default_configuration_builds(
        tmp_path: Path, test: str, gated_default_read: bool) -> None:
    """T5: the gated MLP is built only when `is_gated_act`, False by default, so the default "relu" of
    `dense_act_fn` says nothing about it; the plain MLP, built otherwise, is a ReLU."""
    model = _project(tmp_path, TABLE, "ACT2FN[x]")
    config = tmp_path / "pkg" / "config.py"
    config.write_text(CONFIG.replace("**kwargs):", "**kwargs):\n        self.is_gated = False\n"
                                     "        self.not_gated = True"), encoding="utf-8")
    model.write_text(GATED.format(test=test), encoding="utf-8")
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=_reach(tmp_path))
    acts = {a.name: next(b.value for b in a.init.bindings if b.attr == "act")
            for a in mf.architectures if a.init is not None and a.name != "Layer"}
    gated, plain = acts["GatedDense"], acts["Dense"]
    assert isinstance(gated, Ctor) and isinstance(plain, Ctor)
    assert (gated.callee == "torch.nn.ReLU") is gated_default_read
    assert (plain.callee == "torch.nn.ReLU") is (not gated_default_read)


def test_a_class_defined_once_in_a_plain_module_is_read_without_jedi(tmp_path: Path) -> None:
    """`crossfile.direct`: the answer jedi would give, read from the file; a star re-export still
    asks jedi."""
    parts, ctor, expected, origin = CASES["fp32 activation"]
    model = _project(tmp_path, parts, ctor)
    reach = _reach(tmp_path)
    found = _act(analyse(model.read_text(encoding="utf-8"), str(model), reach=reach))
    assert (found.callee, found.origin) == (expected, origin)
    assert reach.resolved >= 1 and not reach.jedi.started
    (tmp_path / "pkg" / "reexport.py").write_text("from pkg.parts import *\n", encoding="utf-8")
    model.write_text(model.read_text(encoding="utf-8").replace("from .parts", "from .reexport"), encoding="utf-8")
    again = _reach(tmp_path)
    found = _act(analyse(model.read_text(encoding="utf-8"), str(model), reach=again))
    assert (found.callee, found.origin) == (expected, origin) and again.jedi.started
