"""Matcher and rewrite on real Python snippets through `analyse()`: aliases, hoisting, helpers, branches."""

from __future__ import annotations

import textwrap

import pytest

from adopter.analysis import analyse
from adopter.dsl import parse_rules
from adopter.engine import Environment, check
from adopter.session import rewrite
from adopter.synth import Rewritten

CPU = Environment("cpu", frozenset(), "2.13.0")

RULES = parse_rules('''
rule t-dal {
  family 5
  title "t"
  message "dropout, add, layernorm"
  severity warning
  scope forward
  target portable {
    kernel "k"
    preferred
  }
  init {
    $drop = torch.nn.Dropout
    $norm = torch.nn.LayerNorm
  }
  forward {
    $h = $drop($x)
    $t = $h + $r
    $out = $norm($t)
  }
  where {
    single_use($h, $t)
  }
  rewrite template {
    forward ```$out = fused_dal($x, $r, $norm, $drop.p, self.training)```
  }
}

rule t-softmax {
  family 4
  title "t"
  message "softmax"
  severity info
  scope forward
  target portable {
    kernel "k"
    preferred
  }
  forward {
    $p = torch.nn.functional.softmax($x, dim=-1)
  }
  rewrite template {
    forward ```$p = torch.special.softmax($x, -1)```
  }
}
''', "inline.adl")
DAL = [r for r in RULES if r.id == "t-dal"]
SOFTMAX = [r for r in RULES if r.id == "t-softmax"]

HEAD = """\
import torch
import torch.nn as nn
from torch.nn import functional as F


"""


BODY_LINE = 11
INIT = """
self.dropout = nn.Dropout(0.1)
self.LayerNorm = nn.LayerNorm(8)
"""


def module(body: str, init: str = INIT) -> str:
    """A module class `M` with `init` as `__init__` body and `body` as its methods (from line BODY_LINE)."""
    init_lines = textwrap.indent(textwrap.dedent(init).strip(), " " * 8)
    methods = textwrap.indent(textwrap.dedent(body).strip(), " " * 4)
    return (HEAD + "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            + init_lines + "\n\n" + methods + "\n")


CASES = [
    ("nested_add_in_call", """
        def forward(self, h, r):
            h = self.dropout(h)
            return self.LayerNorm(h + r)
     """, DAL, [1]),
    ("all_nested", """
        def forward(self, h, r):
            return self.LayerNorm(r + self.dropout(h))
     """, DAL, [1]),
    ("dropout_result_reused", """
        def forward(self, h, r):
            d = self.dropout(h)
            return self.LayerNorm(d + r), d
     """, DAL, [1]),  # reported, without a fix: `d` is also returned
    ("inlined_helper", """
        def _out(self, h, r):
            h = self.dropout(h)
            return self.LayerNorm(h + r)

        def forward(self, h, r):
            return self._out(h, r) * 2
     """, DAL, [1]),
    ("both_branches_two_sites", """
        def forward(self, h, r, flag: bool):
            if flag:
                h = self.LayerNorm(self.dropout(h) + r)
            else:
                h = self.LayerNorm(self.dropout(h) + r * 2)
            return h
     """, DAL, [2, 4]),
    ("once_across_later_paths", """
        def forward(self, h, r, flag: bool):
            h = self.LayerNorm(self.dropout(h) + r)
            if flag:
                h = h * 2
            else:
                h = h + 1
            return h
     """, DAL, [1]),
    ("function_alias", """
        def forward(self, s):
            p = F.softmax(s, dim=-1)
            q = nn.functional.softmax(s, dim=-1)
            return torch.nn.functional.softmax(p + q, dim=-1)
     """, SOFTMAX, [1, 2, 3]),
    ("other_dim", """
        def forward(self, s):
            return F.softmax(s, dim=1)
     """, SOFTMAX, []),
]


@pytest.mark.parametrize(("body", "rules", "lines"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_snippet(body: str, rules: list, lines: list[int]) -> None:
    source = module(body)
    result = check(analyse(source, "snippet.py"), rules, CPU)
    assert not result.problems
    # `lines` count from the first line of `body` (the `def`), which is line 11 of the module.
    assert sorted(f.span.start_line - BODY_LINE for f in result.findings) == lines, source


def test_fix_lands_in_the_inlined_helper() -> None:
    source = module("""
        def _out(self, h, r):
            h = self.dropout(h)
            return self.LayerNorm(h + r)

        def forward(self, h, r):
            return self._out(h, r) * 2
    """)
    found = check(analyse(source, "s.py"), DAL, CPU).findings
    out = rewrite(source, found, rules=DAL, env=CPU, path="s.py")
    assert isinstance(out, Rewritten), out
    assert "    def _out(self, h, r):\n        return fused_dal(h, r, self.LayerNorm, self.dropout.p, self.training)\n" \
        in out.new_source
    assert "return self._out(h, r) * 2" in out.new_source


def test_fix_of_a_nested_call_keeps_the_rest_of_the_statement() -> None:
    source = module("""
        def forward(self, s):
            return F.softmax(s, dim=-1) * 2  # keep
    """)
    found = check(analyse(source, "s.py"), SOFTMAX, CPU).findings
    out = rewrite(source, found, rules=SOFTMAX, env=CPU, path="s.py")
    assert isinstance(out, Rewritten), out
    assert "        return torch.special.softmax(s, -1) * 2  # keep\n" in out.new_source


def test_site_in_one_branch_is_rewritten_in_that_branch_only() -> None:
    source = module("""
        def forward(self, h, r, flag: bool):
            if flag:
                h = self.dropout(h)
                h = self.LayerNorm(h + r)
            else:
                h = self.LayerNorm(h + r)
            return h
    """)
    (f,) = check(analyse(source, "s.py"), DAL, CPU).findings
    out = rewrite(source, [f], rules=DAL, env=CPU, path="s.py")
    assert isinstance(out, Rewritten), out
    assert ("        if flag:\n            h = fused_dal(h, r, self.LayerNorm, self.dropout.p, self.training)\n"
            "        else:\n            h = self.LayerNorm(h + r)\n") in out.new_source
