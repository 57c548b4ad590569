"""Module classes defined in a function's body (`names.function_classes`): a package that keeps torch optional builds
its modules inside the function that trains them, so the classes exist only while it runs (`build.<locals>.Block`).
They are analysed like top-level classes, their names read from the function's scope (its one-way imports and
aliases, `torch = accessor()`) and then the module's; their sites are reported without a fix."""

from __future__ import annotations

import textwrap

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis
from adopter.analysis.names.symbols import ModuleSymbols
from adopter.analysis.parse.source import SourceText, new_parser
from adopter.engine import Environment, find, load_rules

CPU = Environment("cpu", frozenset(), "2.13.0")


def _names(text: str) -> list[str]:
    return [a.name for a in analyse(textwrap.dedent(text), "m.py").architectures]


def _sites(text: str) -> list[tuple[str, str, int]]:
    mf = analyse(textwrap.dedent(text), "m.py")
    return [(f.scope_name, f.rule_id, f.span.start_line + 1) for f in find(mf, load_rules().rules, CPU)]


# Shaped on foresight-ts 0.3.1 `foresight/models/torch_xformer.py`: torch is bound in the function
# (`torch = _require_torch(); nn = torch.nn; F = torch.nn.functional`, lines 161-163, `_require_torch` imported from
# `.torch_nn`), and every model class is defined after it: `_RMSNorm` in the helper `_make_rmsnorm` (260), `_SwiGLUFFN`
# (308), `_GELUFFN` (323), the attention (336); the hyper-parameters (`d`, `hidden`, `drop`) are the function's locals.
LAZY = '''\
import math

import numpy as np

from .torch_nn import _require_torch


def forecast(train, d_model=32, heads=4, ffn="gelu"):
    torch = _require_torch()
    nn = torch.nn
    F = torch.nn.functional
    d = int(d_model)
    drop = 0.1
    head_dim = d // heads

    def _make_rmsnorm(dim):
        class _RMSNorm(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones((dim,)))

            def forward(self, xb):
                denom = torch.sqrt(torch.mean(xb * xb, dim=-1, keepdim=True) + 1e-8)
                return (xb / denom) * self.scale

        return _RMSNorm()

    class _GELUFFN(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.drop = nn.Dropout(p=drop)

        def forward(self, xb):
            z = F.gelu(self.fc1(xb))
            z = self.drop(z)
            return self.fc2(z)

    if ffn == "swiglu":
        class _SwiGLUFFN(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(d, 8 * d)
                self.proj = nn.Linear(4 * d, d)

            def forward(self, xb):
                a, b = self.fc(xb).chunk(2, dim=-1)
                return self.proj(F.silu(a) * b)

    class _Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.out = nn.Linear(d, d)

        def forward(self, xb):
            q, k, v = self.qkv(xb).chunk(3, dim=-1)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim)
            w = torch.softmax(scores, dim=-1)
            return self.out(torch.matmul(w, v))

    return np.zeros(3)
'''


def test_classes_in_a_function_are_analysed_by_their_qualified_names() -> None:
    assert _names(LAZY) == ["forecast.<locals>._make_rmsnorm.<locals>._RMSNorm", "forecast.<locals>._GELUFFN",
                            "forecast.<locals>._SwiGLUFFN", "forecast.<locals>._Attention"]


def test_their_sites_read_torch_through_the_functions_bindings() -> None:
    sites = _sites(LAZY)
    assert ("forecast.<locals>._make_rmsnorm.<locals>._RMSNorm", "f12-rmsnorm-sqrt", 23) in sites
    assert ("forecast.<locals>._GELUFFN", "f06-linear-gelu", 36) in sites
    assert any(s[0] == "forecast.<locals>._SwiGLUFFN" and s[1].startswith("f14") and s[2] == 48 for s in sites)
    assert ("forecast.<locals>._Attention", "f10-manual-attention-sdpa", 59) in sites


def test_their_sites_are_reported_without_a_fix() -> None:
    mf = analyse(LAZY, "m.py")
    found = [f for f in find(mf, load_rules().rules, CPU) if "<locals>" in f.scope_name]
    assert found
    assert not any(f.fixable for f in found)
    assert all("defined inside function `forecast`" in (f.no_fix_reason or "") for f in found)


def test_the_closure_variables_are_unknown_values() -> None:
    mf = analyse(LAZY, "m.py")
    ffn = next(a for a in mf.architectures if a.name == "forecast.<locals>._GELUFFN")
    assert ffn.init is not None
    fc1 = next(b for b in ffn.init.bindings if b.attr == "fc1")
    assert "d" in repr(fc1)  # the argument as written, never a value guessed from elsewhere


# Shaped on torchrl (sota-implementations/gail/gail_utils.py:44, `make_gail_discriminator`): the module imports torch,
# the function defines the network over its locals (`hidden_dim = cfg.gail.hidden_dim`).
MODULE_IMPORTS = '''\
import torch
import torch.nn as nn


def make_discriminator(cfg, state_dim, action_dim):
    hidden_dim = cfg.hidden_dim

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(state_dim + action_dim, hidden_dim)
            self.fc2 = nn.Linear(hidden_dim, 1)

        def forward(self, state, action):
            x = torch.cat([state, action], dim=1)
            x = torch.nn.functional.gelu(self.fc1(x))
            return self.fc2(x)

    return Discriminator()
'''


def test_a_class_in_a_function_reads_the_modules_imports() -> None:
    assert ("make_discriminator.<locals>.Discriminator", "f06-linear-gelu", 16) in _sites(MODULE_IMPORTS)


def test_a_local_import_binds_for_the_class() -> None:
    text = '''\
def build(d):
    import torch
    from torch import nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, d)

        def forward(self, x):
            return F.gelu(self.fc1(x))

    return Block()
'''
    assert ("build.<locals>.Block", "f06-linear-gelu", 12) in _sites(text)


# -- refusals -------------------------------------------------------------------------------------------------------

def test_a_class_in_a_function_that_is_no_module_is_not_analysed() -> None:
    assert _names('''\
import torch

def build(d):
    class Config:  # no base: an object, as at top level
        def forward(self, x):
            return torch.softmax(x, dim=-1)

    class Options(dict):
        size = 3

    return Config(), Options()
''') == []


def test_a_name_bound_two_ways_in_the_function_is_unknown() -> None:
    # `nn` is torch's on one path and something else on the other: nothing is read through it.
    text = '''\
import other


def build(d, fast):
    if fast:
        import torch.nn as nn
    else:
        nn = other.layers
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, d)

        def forward(self, x):
            return F.gelu(self.fc1(x))

    return Block()
'''
    assert not [s for s in _sites(text) if s[1] == "f06-linear-gelu"]


def test_a_parameter_named_like_a_module_is_not_bound() -> None:
    text = '''\
def build(torch, d):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, d)

        def forward(self, x):
            return torch.nn.functional.gelu(self.fc1(x))

    return Block()
'''
    assert not [s for s in _sites(text) if s[1] == "f06-linear-gelu"]


def test_torch_from_a_call_with_arguments_or_of_a_local_function_is_not_torch() -> None:
    for binding in ("torch = _require_torch('cuda')", "torch = _local()"):
        text = f'''\
from .deps import _require_torch


def build(d):
    def _local():
        return None

    {binding}
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, d)

        def forward(self, x):
            return torch.nn.functional.gelu(self.fc1(x))

    return Block()
'''
        assert not [s for s in _sites(text) if s[1] == "f06-linear-gelu"], binding


def test_two_functions_binding_a_name_differently_bind_it_for_neither() -> None:
    text = '''\
import other


def first(d):
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, d)

        def forward(self, x):
            return nn.functional.gelu(self.fc1(x))

    return Block()


def second():
    nn = other.layers
    return nn
'''
    assert ("first.<locals>.Block", "f06-linear-gelu", 13) in _sites(text)  # `second` defines no class
    clash = text.replace("    nn = other.layers\n    return nn", "    nn = other.layers\n\n    class Other(nn.Module):\n"
                         "        def forward(self, x):\n            return x\n\n    return nn")
    assert not [s for s in _sites(clash) if s[1] == "f06-linear-gelu"]


# Shaped on compressai 1.2 `compressai/layers/layers.py:300` (`ResidualUnit` defined in `AttentionBlock.__init__` over
# its parameter `N`), deepchem `models/fcnet.py:109` (`PytorchImpl` in `MultitaskClassifier.__init__`, its forward
# ending in `F.softmax(logits, dim=2)`) and autogluon-timeseries' `make_weighted_average_module` (linear_stacker.py:81):
# a method of a top-level class defines the module class it builds, named `Class.method.<locals>.Name`.
IN_METHOD = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier:
    def __init__(self, n_features, n_tasks, n_classes):
        class PytorchImpl(nn.Module):
            def __init__(self):
                super().__init__()
                self.hidden = nn.Linear(n_features, 64)
                self.output_layer = nn.Linear(64, n_tasks * n_classes)

            def forward(self, x):
                y = self.output_layer(F.gelu(self.hidden(x)))
                logits = torch.reshape(y, (-1, n_tasks, n_classes))
                return F.softmax(logits, dim=-1), logits

        self.model = PytorchImpl()

    def build(self, d):
        def make():
            class Block(nn.Module):
                def forward(self, x):
                    return x

            return Block()

        return make()
'''


def test_a_class_in_a_method_is_analysed_by_its_qualified_name() -> None:
    # A class in a function nested in a method is read too (`Class.method.<locals>.inner.<locals>.Name`).
    assert _names(IN_METHOD) == ["Classifier.__init__.<locals>.PytorchImpl", "Classifier.build.<locals>.make.<locals>.Block"]
    sites = _sites(IN_METHOD)
    assert ("Classifier.__init__.<locals>.PytorchImpl", "f06-linear-gelu", 15) in sites
    assert ("Classifier.__init__.<locals>.PytorchImpl", "f04-softmax", 17) in sites


def test_a_class_in_a_nested_class_method_is_not_read() -> None:
    # Only the methods of a top-level class are read: an inner class's methods are another form, found in no package.
    assert _names('''\
import torch.nn as nn


class Outer:
    class Inner:
        def build(self):
            class Block(nn.Module):
                def forward(self, x):
                    return x

            return Block()
''') == []


def _aliases(text: str) -> dict[str, str]:
    data = text.encode()
    return ModuleSymbols(SourceText(data, new_parser().parse(data), None), None).aliases


def test_which_local_bindings_become_the_files() -> None:
    text = '''\
import torch
import numpy as np


def build(d):
    import torch.nn as nn
    max = torch.max
    np = torch
    F = torch.nn.functional

    class Block(nn.Module):
        def forward(self, x):
            return F.gelu(max(x, dim=-1).values)

    return Block()


def plain():
    import torch.nn.init as init
    return init
'''
    # `max` shadows a builtin other code of the file calls; `np` is the module's; `plain` defines no class.
    assert _aliases(text) == {"nn": "torch.nn", "F": "torch.nn.functional"}


# -- incremental analysis -------------------------------------------------------------------------------------------

def test_editing_inside_the_function_updates_the_nested_classs_findings() -> None:
    doc = DocumentAnalysis(MODULE_IMPORTS, "m.py")
    first = doc.result()
    assert first == analyse(MODULE_IMPORTS, "m.py")
    assert [a.name for a in first.architectures] == ["make_discriminator.<locals>.Discriminator"]
    old = "torch.nn.functional.gelu(self.fc1(x))"
    i = MODULE_IMPORTS.index(old)
    line = MODULE_IMPORTS[:i].count("\n")
    col = i - (MODULE_IMPORTS.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col + len(old)), "torch.sigmoid(self.fc1(x))")
    edited = doc.text
    assert doc.result() == analyse(edited, "m.py")
    assert "class make_discriminator.<locals>.Discriminator" in doc.reanalysed
    assert not [s for s in _sites(edited) if s[1] == "f06-linear-gelu"]
    # an edit of the function's own statements (the binding the class reads), then back
    j = edited.index("    hidden_dim = cfg.hidden_dim")
    row = edited[:j].count("\n")
    doc.edit((row, 0), (row, 0), "    import torch.nn as nn\n")
    assert doc.result() == analyse(doc.text, "m.py")
    doc.edit((row, 0), (row + 1, 0), "")
    doc.edit((line, col), (line, col + len("torch.sigmoid(self.fc1(x))")), old)
    assert doc.text == MODULE_IMPORTS
    assert doc.result() == first


def test_editing_a_method_updates_its_local_classs_findings() -> None:
    doc = DocumentAnalysis(IN_METHOD, "m.py")
    first = doc.result()
    old = "F.gelu(self.hidden(x))"
    i = IN_METHOD.index(old)
    line = IN_METHOD[:i].count("\n")
    col = i - (IN_METHOD.rfind("\n", 0, i) + 1)
    doc.edit((line, col), (line, col + len(old)), "F.relu(self.hidden(x))")
    assert doc.result() == analyse(doc.text, "m.py")
    assert "class Classifier.__init__.<locals>.PytorchImpl" in doc.reanalysed
    assert not [s for s in _sites(doc.text) if s[1] == "f06-linear-gelu"]
    doc.edit((line, col), (line, col + len("F.relu(self.hidden(x))")), old)
    assert doc.result() == first
