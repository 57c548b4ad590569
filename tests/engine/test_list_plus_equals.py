"""A local list grown with `+=` and run as `nn.Sequential(*layers)` holds the items `+=` added, as
`.append`/`.extend` already did (`scope.bindings`, `_list_added`): the conv-stack builders' spelling

    layers = [nn.Conv2d(...)]
    layers += [nn.BatchNorm2d(...), nn.ReLU(inplace=True)]
    self.body = nn.Sequential(*layers)

was read as a Sequential of one item. Counter-examples: a list added that is not a literal, and `+=` on a
name that is not a local list, add nothing (and raise nothing)."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nfrom torch import nn\n\n\n"

PLUS_EQUALS = '''
class Stem(nn.Module):
    def __init__(self, cin, cout, norm=True):
        super().__init__()
        layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False)]
        if norm:
            layers += [nn.BatchNorm2d(cout)]
        layers += [nn.ReLU(inplace=True)]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)
'''

NOT_A_LITERAL = '''
class Stem(nn.Module):
    def __init__(self, cin, cout, tail):
        super().__init__()
        layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False)]
        layers += tail
        count = 0
        count += 1
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)
'''


def _findings(code: str) -> list[tuple[str, int, bool]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, env)
    shift = HEADER.count("\n")
    return [(f.rule_id, f.span.start_line - shift, f.fixable) for f in result.findings]


def test_items_added_with_plus_equals_are_in_the_sequential() -> None:
    found = [f for f in _findings(PLUS_EQUALS) if f[0].startswith("f07")]
    assert len(found) == 1 and found[0][2]  # one conv-BN site, fixable (the Sequential is read)


def test_a_list_that_is_not_a_literal_adds_nothing() -> None:
    assert [f for f in _findings(NOT_A_LITERAL) if f[0].startswith("f07")] == []
