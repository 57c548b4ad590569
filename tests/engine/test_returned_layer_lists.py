"""A method returning a list of layers its class splats into `nn.Sequential(*self.method(...))` (pyiqa 0.1.16
`dbcnn_arch.py` `SCNN._make_layers`, dev2 batch 3): each returned list display is a chain, its conv -> BN
pair one site at the conv's constructor line however often the method is splatted, reported without a fix
(and saying why); a list returned for another use runs nothing in order and stays silent."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding
from adopter.session import rewrite

ENV = Environment("cpu", frozenset(), "2.13.0")

SCNN = '''import torch
from torch import nn


class SCNN(nn.Module):
    def __init__(self, use_bn=True):
        super().__init__()
        self.use_bn = use_bn
        self.features = nn.Sequential(
            *self._make_layers(3, 48, 3, 1, 1),
            *self._make_layers(48, 48, 3, 2, 1),
        )
        self.projection = nn.Sequential(*self._make_layers(48, 64, 1, 1, 0))

    def _make_layers(self, in_ch, out_ch, ksz, stride, pad):
        if self.use_bn:
            layers = [
                nn.Conv2d(in_ch, out_ch, ksz, stride, pad),
                nn.BatchNorm2d(out_ch),
                nn.ReLU(True),
            ]
        else:
            layers = [
                nn.Conv2d(in_ch, out_ch, ksz, stride, pad),
                nn.ReLU(True),
            ]
        return layers

    def forward(self, x):
        return self.projection(self.features(x))
'''


def conv_bn(code: str) -> list[Finding]:
    return [f for f in check(analyse(code, "m.py"), load_rules().rules, ENV).findings if f.family == 7]


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def test_a_returned_list_splatted_into_a_sequential_is_one_site_at_its_conv() -> None:
    found = conv_bn(SCNN)
    assert [(f.scope_name, f.span.start_line) for f in found] == [
        ("SCNN._make_layers", line(SCNN, "nn.Conv2d(in_ch"))]
    result = rewrite(SCNN, found, rules=load_rules().rules, env=ENV, path="m.py")
    reasons = [s.reason for s in getattr(result, "skipped", ())]
    assert not getattr(result, "applied", ()) and any("splat" in r for r in reasons), result


def test_a_returned_display_written_directly_is_read_too() -> None:
    code = SCNN.replace("            layers = [\n                nn.Conv2d(in_ch, out_ch, ksz, stride, pad),\n"
                        "                nn.BatchNorm2d(out_ch),",
                        "            return [\n                nn.Conv2d(in_ch, out_ch, ksz, stride, pad),\n"
                        "                nn.BatchNorm2d(out_ch),")
    assert [f.scope_name for f in conv_bn(code)] == ["SCNN._make_layers"]


def test_near_forms_stay_silent() -> None:
    assert len(conv_bn(SCNN)) == 1
    # the list goes to a ModuleList: nothing runs its items in order
    listed = SCNN.replace("nn.Sequential(\n            *self._make_layers(3, 48, 3, 1, 1),\n"
                          "            *self._make_layers(48, 48, 3, 2, 1),\n        )",
                          "nn.ModuleList(self._make_layers(3, 48, 3, 1, 1))").replace(
        "        self.projection = nn.Sequential(*self._make_layers(48, 64, 1, 1, 0))\n", "")
    assert conv_bn(listed) == []
    # the activation sits between conv and norm
    assert conv_bn(SCNN.replace("                nn.BatchNorm2d(out_ch),\n                nn.ReLU(True),",
                                "                nn.ReLU(True),\n                nn.BatchNorm2d(out_ch),")) == []
    # the returned list is also changed elsewhere: its items are not the display's alone
    changed = SCNN.replace("        return layers\n", "        layers.insert(0, nn.Identity())\n        return layers\n")
    assert conv_bn(changed) == []
