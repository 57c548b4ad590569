"""Every match through the items of one `nn.Sequential` called once is its own site, at its items' lines.

A VGG/U-Net block `nn.Sequential(Conv2d, BatchNorm2d, ReLU, Conv2d, BatchNorm2d, ReLU)` called once in
forward (`act1 = self.block1(x)`, anomalib's DRAEM encoders and decoders) ran both pairs through one call
span, so the second pair was taken for the first reached again and dropped: one finding for two sites.
The labelling convention (`bench/data/realworld/LABELLING.md`, families 6 and 7) counts one site per pair,
at its constructor lines; each finding's `init_spans` are now those lines, not the whole Sequential's.
"""

from __future__ import annotations

from pathlib import Path

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding
from adopter.session import RuleContext, Session

VGG = '''import torch
from torch import nn


class Enc(nn.Module):
    def __init__(self, c, w):
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(c, w, kernel_size=3, padding=1),
            nn.BatchNorm2d(w),
            nn.ReLU(inplace=True),
            nn.Conv2d(w, w, kernel_size=3, padding=1),
            nn.BatchNorm2d(w),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.block1(x)
'''

MLP = '''import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d, 4 * d),
            nn.GELU(),
            nn.Linear(4 * d, d),
            nn.GELU(),
        )

    def forward(self, x):
        return self.net(x)


class Head(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, d), nn.BatchNorm1d(d))

    def forward(self, x):
        return self.net(x)
'''

ENV = Environment("cpu", frozenset(), "2.13.0")


def _findings(text: str, family: int) -> list[Finding]:
    rules = [r for r in load_rules().rules if r.family == family]
    return list(check(analyse(text, "model.py"), rules, ENV).findings)


def _lines(f: Finding) -> list[int]:
    return sorted({s.start_line + 1 for s in f.init_spans})


def test_each_conv_bn_pair_of_one_sequential_is_its_own_site_at_its_items() -> None:
    found = _findings(VGG, 7)
    assert [(f.rule_id, f.span.start_line + 1) for f in found] == [("f07-conv-bn", 18), ("f07-conv-bn", 18)]
    assert [_lines(f) for f in found] == [[9, 10], [12, 13]]
    assert [[op.target for op in f.match.ops] for f in found] == [
        ["self.block1[0]", "self.block1[1]"], ["self.block1[3]", "self.block1[4]"]]
    assert all(f.fixable for f in found)


def test_linear_gelu_and_linear_bn_pairs_of_one_sequential_are_sites_each() -> None:
    gelu = _findings(MLP, 6)
    assert [(f.scope_name, f.rule_id) for f in gelu] == [("Mlp", "f06-linear-gelu")] * 2
    assert [_lines(f)[0] for f in gelu] == [9, 11]
    bn = [f for f in _findings(MLP, 8) if f.rule_id == "f08-linear-bn"]
    assert [(f.scope_name, f.span.start_line + 1) for f in bn] == [("Head", 25)] * 2
    assert len({f.init_spans for f in bn}) == 2
    assert all(len(f.init_spans) == 2 and all(s.start_line == 21 for s in f.init_spans) for f in bn)


def test_a_sequential_built_from_names_keeps_its_statement() -> None:
    """Items that are not constructor calls written in place (`nn.Sequential(conv, bn)`) have no line of
    their own there: the finding keeps the Sequential's statement."""
    text = VGG.replace("        self.block1 = nn.Sequential(\n            nn.Conv2d(c, w, kernel_size=3, padding=1),\n"
                       "            nn.BatchNorm2d(w),\n",
                       "        conv = nn.Conv2d(c, w, kernel_size=3, padding=1)\n        self.block1 = nn.Sequential(\n"
                       "            conv,\n            nn.BatchNorm2d(w),\n")
    found = _findings(text, 7)
    assert [f.init_spans[0].start_line + 1 for f in found] == [9, 9]
    assert [f.init_spans[0].end_line - f.init_spans[0].start_line for f in found] == [7, 7]


def test_the_session_decides_each_pair_for_itself() -> None:
    """Fix decisions are kept per site: two pairs on one forward line are two entries, each verified."""
    rules = [r for r in load_rules().rules if r.family == 7]
    session = Session(RuleContext(tuple(rules), (), ENV))
    analysed = session.analysed(VGG, "model.py")
    assert len(analysed.findings) == 2
    decisions = [session.decision(analysed, f) for f in analysed.findings]
    assert all(d.fixable and d.new_source and "FoldedConvBnSequential(" in d.new_source for d in decisions)
    assert len(analysed.decisions) == 2


CONV_BN_RELU = '''rule user-conv-bn-relu {
  family 7
  title "Conv2d, BatchNorm2d, relu"
  message "A Conv -> BN -> ReLU block."
  severity warning
  scope forward
  init {
    $layer = torch.nn.Conv2d
    $bn = torch.nn.BatchNorm2d
  }
  forward {
    $h = $layer($x)
    $g = $bn($h)
    $out = torch.nn.functional.relu($g)
  }
  example match ```python
  import torch
  from torch import nn


  class M(nn.Module):
      def __init__(self):
          super().__init__()
          self.conv = nn.Conv2d(3, 3, 3)
          self.bn = nn.BatchNorm2d(3)

      def forward(self, x):
          return torch.relu(self.bn(self.conv(x)))
  ```
  example nomatch ```python
  import torch
  from torch import nn


  class M(nn.Module):
      def __init__(self):
          super().__init__()
          self.conv = nn.Conv2d(3, 3, 3)

      def forward(self, x):
          return torch.relu(self.conv(x))
  ```
}
'''


def test_a_larger_match_of_the_family_hides_only_the_pair_inside_it(tmp_path: Path) -> None:
    """A family's larger match (a user's Conv -> BN -> ReLU rule on items 0-2) drops the conv-BN pair it
    covers, not the other pair of the same Sequential (items 3-4), whose ops share the same call span."""
    (tmp_path / "cbr.adl").write_text(CONV_BN_RELU, encoding="utf-8")
    ruleset = load_rules([tmp_path / "cbr.adl"])
    assert not ruleset.problems, ruleset.problems
    rules = [r for r in ruleset.rules if r.family == 7]
    text = VGG.replace("            nn.BatchNorm2d(w),\n            nn.ReLU(inplace=True),\n        )",
                       "            nn.BatchNorm2d(w),\n        )")
    found = check(analyse(text, "model.py"), rules, ENV).findings
    assert [(f.rule_id, [op.target for op in f.match.ops if op.target.startswith("self.")]) for f in found] == [
        ("f07-conv-bn", ["self.block1[3]", "self.block1[4]"]),
        ("user-conv-bn-relu", ["self.block1[0]", "self.block1[1]"]),
    ]
