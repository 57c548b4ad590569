"""A module class defined in a function (`build.<locals>.Block`, `names.function_classes`): its sites are reported
without a fix, so `fix` leaves the file as it was and keeps the fix contract."""

from __future__ import annotations

from pathlib import Path

from adopter.commands.arch import _split
from adopter.session import OpenText

from .test_fix_contract import assert_fix_contract, session

# The lead's probe of issue 20 (softmax attention, Linear -> GELU and Conv -> BN in a class inside `def build(d):`),
# the form of torchrl's `make_gail_discriminator` (sota-implementations/gail/gail_utils.py:44) with more families.
NESTED = '''import torch
import torch.nn as nn
import torch.nn.functional as F


def build(d):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)

        def forward(self, x, img):
            q = k = v = x
            s = torch.softmax(q @ k.transpose(-2, -1) / 8.0, dim=-1)
            y = s @ v
            y = self.fc2(F.gelu(self.fc1(y)))
            return y, self.bn(self.conv(img))

    return Block()
'''


def test_sites_in_a_function_class_are_reported_and_not_fixed() -> None:
    s = session()
    analysed = s.analysed(NESTED, "nested.py")
    assert {(f.scope_name, f.rule_id) for f in analysed.findings} >= {
        ("build.<locals>.Block", "f10-manual-attention-sdpa"), ("build.<locals>.Block", "f07-conv-bn")}
    assert not s.fixable(analysed)
    assert_fix_contract(NESTED, "nested.py")
    assert s.fix(NESTED, "nested.py").new_source == NESTED


def test_arch_selects_a_function_class_by_its_qualified_name() -> None:
    assert _split("/no/such/m.py:build.<locals>.Block") == (Path("/no/such/m.py"), "build.<locals>.Block")
    assert _split("/no/such/m.py:C.m.<locals>.f.<locals>.B") == (Path("/no/such/m.py"), "C.m.<locals>.f.<locals>.B")


def _edit(doc: OpenText, old: str, new: str) -> None:
    """One ranged change at the first `old`, as the language server hands it to the document (ASCII text)."""
    text = doc.text
    a = text.index(old)
    b = a + len(old)
    updated = text[:a] + new + text[b:]

    def point(t: str, offset: int) -> tuple[int, int]:
        return t.count("\n", 0, offset), offset - (t.rfind("\n", 0, offset) + 1)

    doc.apply(a, b, a + len(new), point(text, a), point(text, b), point(updated, a + len(new)), updated)


def test_the_server_path_updates_a_function_classs_findings_on_an_edit_inside_the_function() -> None:
    s = session()
    doc = OpenText(NESTED, "nested.py")
    rules = {f.rule_id for f in s.update(doc)[0].findings}
    assert "f06-linear-gelu" in rules
    _edit(doc, "F.gelu(self.fc1(y))", "F.relu(self.fc1(y))")
    live = [(f.rule_id, f.scope_name, f.span) for f in s.update(doc)[0].findings]
    fresh = [(f.rule_id, f.scope_name, f.span) for f in session().analysed(doc.text, "nested.py").findings]
    assert live == fresh
    assert "f06-linear-gelu" not in {r for r, _, _ in live}
    _edit(doc, "    return Block()", "    import torch.nn.functional as F\n    return Block()")  # a binding of the function
    live = [(f.rule_id, f.scope_name, f.span) for f in s.update(doc)[0].findings]
    assert live == [(f.rule_id, f.scope_name, f.span) for f in session().analysed(doc.text, "nested.py").findings]
    _edit(doc, "F.relu(self.fc1(y))", "F.gelu(self.fc1(y))")
    assert "f06-linear-gelu" in {f.rule_id for f in s.update(doc)[0].findings}
