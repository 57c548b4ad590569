"""Family 7 forms whose conv -> BN pair is built away from the forward that runs it (issue 20, mech27).

- A Sequential subclass whose own forward runs its children in turn but skips one class
  (`for module in self: if not isinstance(module, nn.MaxPool2d): x = module(x)`, controlnet-aux 0.0.10
  `mlsd/models/mbv2_mlsd_tiny.py` `ConvBNReLU`): the chain of the children that run
  (`chains.sequential_classes.skip_instances`), placed at the loop's statement, no automatic fix.
- `nn.Sequential(*layers)` of a list with an addition under an `if` (the same file's `InvertedResidual`):
  the pair is reported at the lines its items are written (`scope.bindings.InitAnalysis._written_once`).
- A public method nothing in the class calls (pyannote-audio 3.x `wespeaker/resnet.py`
  `ResNet.forward_frames`, called by another class as `self.resnet.forward_frames(fbank)`): read as a
  forward (`idioms.entry_methods`), its site named `Class.method`.

Each has near forms that must stay silent."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n\n"

SKIPPING = '''
class ConvBNReLU(nn.Sequential):
    def __init__(self, c_in, c_out, stride=1):
        self.stride = stride
        super().__init__(
            nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU6(inplace=True),
        )
        self.max_pool = nn.MaxPool2d(kernel_size=stride, stride=stride)

    def forward(self, x):
        if self.stride == 2:
            x = F.pad(x, (0, 1, 0, 1), "constant", 0)
        for module in self:
            if not isinstance(module, nn.MaxPool2d):
                x = module(x)
        return x
'''

LISTED = '''
class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, expand_ratio):
        super().__init__()
        hidden = inp * expand_ratio
        layers = []
        if expand_ratio != 1:
            layers.append(nn.Conv2d(inp, hidden, 1, bias=False))
        layers.extend([
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
            nn.BatchNorm2d(oup),
        ])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return self.conv(x)
'''

ENTRY = '''
class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.head = nn.Linear(c, 4)

    def forward_frames(self, fbank):
        fbank = fbank.unsqueeze(1)
        return F.relu(self.bn1(self.conv1(fbank)))

    def forward(self, fbank):
        return self.head(fbank.mean(-1))
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def conv_bn(code: str) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == 7]


def test_a_forward_that_skips_one_class_runs_the_others_in_turn() -> None:
    [found] = conv_bn(SKIPPING)
    assert found.scope_name == "ConvBNReLU"
    assert found.span.start_line == line(SKIPPING, "x = module(x)")
    assert {line(SKIPPING, "nn.Conv2d(c_in"), line(SKIPPING, "nn.BatchNorm2d(c_out)")} <= {
        s.start_line for s in found.init_spans}
    assert not found.fixable and "own forward" in (found.no_fix_reason or "")


@pytest.mark.parametrize(("old", "new"), [
    # The skipped class is the norm: the conv runs straight into the activation.
    ("isinstance(module, nn.MaxPool2d)", "isinstance(module, nn.BatchNorm2d)"),
    # Every module is an instance of nn.Module: nothing runs.
    ("isinstance(module, nn.MaxPool2d)", "isinstance(module, nn.Module)"),
    # A class other torch.nn classes derive from: the class test is not read.
    ("isinstance(module, nn.MaxPool2d)", "isinstance(module, nn.Hardtanh)"),
    # An `else` that does something else with the skipped children.
    ("                x = module(x)\n", "                x = module(x)\n            else:\n                x = x * 2\n"),
    # Not the loop's module that is tested.
    ("isinstance(module, nn.MaxPool2d)", "isinstance(x, nn.MaxPool2d)"),
    # Without `not`: only the skipped class runs.
    ("if not isinstance(", "if isinstance("),
])
def test_a_forward_that_skips_otherwise_is_not_read(old: str, new: str) -> None:
    assert not conv_bn(SKIPPING.replace(old, new))


def test_a_child_of_a_same_file_class_between_conv_and_norm_cuts_the_chain() -> None:
    # `Pool` may derive from the skipped class (then it is skipped) or not: what runs after the conv is not known.
    code = "class Pool(nn.MaxPool2d):\n    pass\n\n" + SKIPPING.replace(
        "            nn.BatchNorm2d(c_out),\n", "            Pool(2),\n            nn.BatchNorm2d(c_out),\n")
    assert not conv_bn(code)


def test_a_list_with_an_addition_under_a_test_reports_the_items_lines() -> None:
    [found] = conv_bn(LISTED)
    lines = {s.start_line for s in found.init_spans}
    assert {line(LISTED, "nn.Conv2d(hidden, oup"), line(LISTED, "nn.BatchNorm2d(oup)")} <= lines
    assert found.fixable


def test_a_list_whose_order_is_lost_keeps_its_statement_only() -> None:
    code = LISTED.replace("        self.conv = nn.Sequential(*layers)\n",
                          "        layers.insert(0, nn.Identity())\n        self.conv = nn.Sequential(*layers)\n")
    for found in conv_bn(code):
        assert line(code, "nn.Conv2d(hidden, oup") not in {s.start_line for s in found.init_spans}


def test_a_public_method_nothing_calls_is_read_as_a_forward() -> None:
    [found] = conv_bn(ENTRY)
    assert found.scope_name == "Stem.forward_frames"
    assert found.span.start_line == line(ENTRY, "return F.relu(self.bn1(")
    assert found.fixable


@pytest.mark.parametrize(("old", "new"), [
    # A ReLU between the conv and the norm: no pair.
    ("F.relu(self.bn1(self.conv1(fbank)))", "self.bn1(F.relu(self.conv1(fbank)))"),
    # Private: a helper of the class, read where it is called (nowhere here).
    ("def forward_frames(", "def _frames("),
    # Decorated (a property, a static method, a hook): not an entry point read as a forward. A gradient-mode
    # or TorchScript marker changes nothing it computes: read (tests/analysis/test_entry_methods_decorated.py).
    ("    def forward_frames(", "    @registered_hook\n    def forward_frames("),
    ("    def forward_frames(", "    @torch.no_grad()\n    @registered_hook\n    def forward_frames("),
])
def test_other_methods_are_not_entry_points(old: str, new: str) -> None:
    assert not conv_bn(ENTRY.replace(old, new))


def test_a_method_forward_calls_is_one_site_in_forward() -> None:
    code = ENTRY.replace("return self.head(fbank.mean(-1))", "return self.head(self.forward_frames(fbank).mean((-2, -1)))")
    [found] = conv_bn(code)
    assert found.scope_name == "Stem"


INDEXED = '''
class Indexed(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(c, c, 3, bias=False), nn.BatchNorm2d(c), nn.ReLU())

    def forward(self, x):
        x = self.features[0](x)
        x = self.features[1](x)
        return self.features[2](x)
'''


def test_items_of_a_literal_sequential_called_by_index_are_a_pair() -> None:
    [found] = conv_bn(INDEXED)
    assert found.span.start_line == line(INDEXED, "x = self.features[0](x)")
    assert found.fixable


@pytest.mark.parametrize(("old", "new"), [
    # Called out of order: BN, then the conv.
    ("x = self.features[0](x)\n        x = self.features[1](x)", "x = self.features[1](x)\n        x = self.features[0](x)"),
    # An index not read as a position.
    ("x = self.features[0](x)\n        x = self.features[1](x)", "x = self.features[-3](x)\n        x = self.features[-2](x)"),
    # Another item between them: the conv runs into the ReLU.
    ("x = self.features[1](x)\n        return self.features[2](x)",
     "x = self.features[2](x)\n        return self.features[1](x)"),
    # Bound on two paths: which Sequential runs is not one.
    ("        self.features = nn.Sequential(",
     "        if c > 8:\n            self.features = nn.Sequential(nn.Identity(), nn.Identity(), nn.Identity())\n"
     "        else:\n            self.features = nn.Sequential("),
])
def test_items_called_otherwise_are_not_a_pair(old: str, new: str) -> None:
    code = INDEXED.replace(old, new)
    assert code != INDEXED
    assert not conv_bn(code)
