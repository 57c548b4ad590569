"""A layer list built by several statements (an append before a loop, appends in it, one after it) holds
layers of one class when every statement adds that class: `self.fcs[i]`, `self.fcs[-1]` and iteration
(`for fc in self.fcs`, `enumerate(self.fcs[:-1])`, `zip`) run that class, whichever item it is, though their
widths differ (`engine.bindings.one_class`). The graph / tabular MLP idiom:

- sgl-dair 0.1.5 `sgl/models/simple_models.py:110-117,133-136` (`MultiLayerPerceptron`; dev2 batch 15, family
  8 at lines 134, 167, 175, the BatchNorms under `if self.__bn is True:`);
- pygod 1.1.0 `pygod/nn/nn.py:49-58,80-81` (`MLP`: `self.batch_norms[layer](self.linears[layer](h))`);
- deeprobust 0.2.11 `deeprobust/graph/defense_pyg/airgnn.py:22-31,57-61` (`AirGNN`: `for ii, lin in
  enumerate(self.lins[:-1])`, `self.bns[ii]` under `if self.with_bn:`).

The fold (`folded_linear_bn`, `folded_conv_bn`) reads the two modules at run time, so it holds for whichever
items the index reaches; the equivalence test runs the rewritten MLP against the original. Refusals: a list
that also holds another class (a `Dropout` appended after the Linears; an `Identity` appended on one path
only), a list rebound or cleared after it was filled.
"""

from __future__ import annotations

import types

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, find, load_rules

RULES = load_rules().rules
ENV = Environment("cpu", frozenset(), "2.13.0")

# sgl-dair 0.1.5 sgl/models/simple_models.py:103-141, in our words and at fixture size.
MLP = '''
import torch.nn as nn
from torch.nn.functional import relu


class MLP(nn.Module):
    def __init__(self, feat_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        self.num_layers = num_layers
        self.fcs = nn.ModuleList()
        self.fcs.append(nn.Linear(feat_dim, hidden_dim))
        for _ in range(num_layers - 2):
            self.fcs.append(nn.Linear(hidden_dim, hidden_dim))
        self.fcs.append(nn.Linear(hidden_dim, output_dim))
        self.bns = nn.ModuleList()
        for _ in range(num_layers - 1):
            self.bns.append(nn.BatchNorm1d(hidden_dim))

    def forward(self, x):
        for i in range(self.num_layers - 1):
            x = self.fcs[i](x)
            x = self.bns[i](x)
            x = relu(x)
        return self.fcs[-1](x)
'''

# pygod 1.1.0 pygod/nn/nn.py:49-58 and 80-81: the pair nested in one expression, the last layer by index.
NESTED = '''
import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, num_layers, act=torch.relu):
        super().__init__()
        self.num_layers = num_layers
        self.act = act
        self.linears = torch.nn.ModuleList()
        self.batch_norms = torch.nn.ModuleList()
        self.linears.append(nn.Linear(in_dim, hid_dim))
        for _ in range(num_layers - 2):
            self.linears.append(nn.Linear(hid_dim, hid_dim))
        self.linears.append(nn.Linear(hid_dim, out_dim))
        for _ in range(num_layers - 1):
            self.batch_norms.append(nn.BatchNorm1d(hid_dim))

    def forward(self, x):
        h = x
        for layer in range(self.num_layers - 1):
            h = self.act(self.batch_norms[layer](self.linears[layer](h)))
        return self.linears[self.num_layers - 1](h)
'''

# deeprobust 0.2.11 deeprobust/graph/defense_pyg/airgnn.py:22-31 and 57-61: the first BatchNorm appended
# before the loop beside the first Linear, all under a flag; forward iterates all Linears but the last.
ENUMERATED = '''
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Linear


class AirNet(nn.Module):
    def __init__(self, nfeat, nhid, nclass, nlayers=2, with_bn=False):
        super().__init__()
        self.lins = nn.ModuleList([])
        self.lins.append(Linear(nfeat, nhid))
        if with_bn:
            self.bns = nn.ModuleList([])
            self.bns.append(nn.BatchNorm1d(nhid))
        for i in range(nlayers - 2):
            self.lins.append(Linear(nhid, nhid))
            if with_bn:
                self.bns.append(nn.BatchNorm1d(nhid))
        self.lins.append(Linear(nhid, nclass))
        self.with_bn = with_bn

    def forward(self, x):
        for ii, lin in enumerate(self.lins[:-1]):
            x = lin(x)
            if self.with_bn:
                x = self.bns[ii](x)
            x = F.relu(x)
        return self.lins[-1](x)
'''


def _sites(source: str) -> list[tuple[str, int, bool]]:
    return [(f.rule_id, f.span.start_line, f.fixable) for f in find(analyse(source, "model.py"), RULES, ENV)]


def _line(source: str, needle: str) -> int:
    return next(i for i, text in enumerate(source.splitlines()) if needle in text)


def test_a_list_with_a_first_and_last_layer_outside_the_loop_is_read_at_its_index() -> None:
    assert _sites(MLP) == [("f08-linear-bn", _line(MLP, "x = self.fcs[i](x)"), True)]


def test_the_pair_nested_in_one_expression() -> None:
    assert _sites(NESTED) == [("f08-linear-bn", _line(NESTED, "self.batch_norms[layer](self.linears[layer](h))"), True)]


def test_an_enumerated_slice_of_the_list_with_its_batchnorms_under_a_flag() -> None:
    # The BatchNorms exist only when the caller passes `with_bn=True` (default False): a site, no fix.
    assert _sites(ENUMERATED) == [("f08-linear-bn", _line(ENUMERATED, "x = lin(x)"), False)]


@pytest.mark.parametrize(("old", "new"), [
    # a local list wrapped afterwards
    ("        self.fcs = nn.ModuleList()\n", "        fcs = []\n"),
    # the last layer added by `extend` / `+=` of a literal list
    ("self.fcs.append(nn.Linear(hidden_dim, output_dim))", "self.fcs.extend([nn.Linear(hidden_dim, output_dim)])"),
    ("self.fcs.append(nn.Linear(hidden_dim, output_dim))", "self.fcs += [nn.Linear(hidden_dim, output_dim)]"),
])
def test_other_spellings_of_the_additions(old: str, new: str) -> None:
    source = MLP.replace(old, new)
    if new == "        fcs = []\n":
        source = source.replace("self.fcs.append", "fcs.append").replace(
            "        self.bns = nn.ModuleList()\n", "        self.fcs = nn.ModuleList(fcs)\n        self.bns = nn.ModuleList()\n")
    assert _sites(source) == [("f08-linear-bn", _line(source, "x = self.fcs[i](x)"), True)]


def test_iterating_two_lists_together() -> None:
    source = MLP.replace('''        for i in range(self.num_layers - 1):
            x = self.fcs[i](x)
            x = self.bns[i](x)''', '''        for fc, bn in zip(self.fcs, self.bns):
            x = fc(x)
            x = bn(x)''')
    assert _sites(source) == [("f08-linear-bn", _line(source, "x = fc(x)"), True)]


def test_a_conv_list_of_several_widths_before_batchnorms() -> None:
    source = MLP.replace("nn.Linear(feat_dim, hidden_dim)", "nn.Conv2d(feat_dim, hidden_dim, 3, padding=1)").replace(
        "nn.Linear(hidden_dim, hidden_dim)", "nn.Conv2d(hidden_dim, hidden_dim, 3, padding=1)").replace(
        "nn.Linear(hidden_dim, output_dim)", "nn.Conv2d(hidden_dim, output_dim, 1)").replace("BatchNorm1d", "BatchNorm2d")
    assert _sites(source) == [("f07-conv-bn", _line(source, "x = self.fcs[i](x)"), True)]


@pytest.mark.parametrize(("old", "new"), [
    # another class in the list: the class at `[i]` is not one
    ("self.fcs.append(nn.Linear(hidden_dim, output_dim))", "self.fcs.append(nn.Dropout(0.1))"),
    # another class added on one path only
    ("        self.fcs.append(nn.Linear(hidden_dim, output_dim))\n",
     "        if output_dim:\n            self.fcs.append(nn.Identity())\n"),
    # rebound after it was filled
    ("        self.bns = nn.ModuleList()\n",
     "        self.fcs = nn.ModuleList([nn.Identity() for _ in range(num_layers)])\n        self.bns = nn.ModuleList()\n"),
    # cleared after it was filled
    ("        self.bns = nn.ModuleList()\n", "        self.fcs.clear()\n        self.bns = nn.ModuleList()\n"),
    # an item replaced by position
    ("        self.bns = nn.ModuleList()\n", "        self.fcs[0] = nn.Identity()\n        self.bns = nn.ModuleList()\n"),
    # the norms are LayerNorms: no BatchNorm after the Linear
    ("nn.BatchNorm1d(hidden_dim)", "nn.LayerNorm(hidden_dim)"),
])
def test_lists_that_are_not_one_class_at_the_index_are_refused(old: str, new: str) -> None:
    source = MLP.replace(old, new)
    assert source != MLP
    assert _sites(source) == []


def test_a_list_cleared_and_filled_again_holds_what_came_after() -> None:
    source = MLP.replace("        self.bns = nn.ModuleList()\n", "        self.fcs.clear()\n"
                         "        self.fcs.append(nn.Linear(feat_dim, hidden_dim))\n        self.bns = nn.ModuleList()\n")
    assert _sites(source) == [("f08-linear-bn", _line(source, "x = self.fcs[i](x)"), True)]


def _module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module


def test_the_fold_of_a_list_of_several_widths_keeps_outputs_and_gradients() -> None:
    """float64, seed 0, atol 1e-9 / rtol 1e-6 on outputs and gradients, in eval and training mode; the
    widths 5 -> 7 -> 7 -> 3 make the first, hidden and last Linears differ."""
    torch = pytest.importorskip("torch")
    from adopter.session import rewrite
    from adopter.synth import Rewritten
    from equivalence import compare_modules, trained_statistics

    result = rewrite(MLP, find(analyse(MLP, "model.py"), RULES, ENV), rules=RULES, env=ENV, path="model.py")
    assert isinstance(result, Rewritten), result
    assert "folded_linear_bn(x, self.fcs[i], self.bns[i])" in result.new_source
    assert find(analyse(result.new_source, "model.py"), RULES, ENV) == ()
    torch.manual_seed(0)
    original = _module(MLP, "original").MLP(5, 7, 3, 4).double()
    fixed = _module(result.new_source, "fixed").MLP(5, 7, 3, 4).double()
    trained_statistics(original)
    x = torch.randn(16, 5, dtype=torch.float64)
    compare_modules(original, fixed, lambda: (x,), atol=1e-9, rtol=1e-6, grad_atol=1e-9, same_parameters=True)
