"""A gated-MLP Sequential built on one path only (`self.ff = nn.Sequential(...) if parallel_ff else None`): one
site, at the Linear item that starts it, as for the same Sequential bound unconditionally.

Shaped on the parallel feed-forward of lucidrains' CoCa / MaMMUT cross-attention blocks (`nn.Sequential(Linear(dim,
2 * inner), SwiGLU(), Linear(inner, dim)) if parallel_ff else None`, called as `out + self.ff(x)` under `if
exists(self.ff)`), written here at fixture size. Before: the binding's items had no spans (`InitAnalysis.
_literal_item_spans` asked every alternative to be a Sequential, and the `None` one is not), so the forward
finding named the whole conditional statement as its `__init__` binding and the Sequential's own reading in
`__init__` (which names the Linear item) was reported as a second finding of the same site. The `None`
alternative now gets no item spans and the Sequential one its items' spans. Equivalence of the (unchanged) fix:
outputs and gradients, float64, CPU, seed 0, rtol 1e-6 / atol 1e-9, both values of the flag.
"""

from __future__ import annotations

import types

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, find, load_rules
from adopter.session import rewrite
from adopter.synth import Rewritten

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")
RULES = [r for r in load_rules().rules if r.family == 14]

BLOCK = '''import torch
from torch import nn
import torch.nn.functional as F


class SwiGLU(nn.Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return F.silu(gate) * x


class CrossBlock(nn.Module):
    def __init__(self, dim, mult=4, parallel_ff=True):
        super().__init__()
        inner = mult * dim
        self.to_out = nn.Linear(dim, dim, bias=False)
        self.ff = nn.Sequential(
            nn.Linear(dim, inner * 2, bias=False),
            SwiGLU(),
            nn.Linear(inner, dim, bias=False)
        ) if parallel_ff else None

    def forward(self, x):
        out = self.to_out(x)
        if self.ff is not None:
            out = out + self.ff(x)
        return out
'''

FIRST_ITEM = BLOCK.splitlines().index("            nn.Linear(dim, inner * 2, bias=False),") + 1  # 1-based


def _sites(source: str) -> list[tuple[tuple[int, ...], bool]]:
    """(the 1-based first lines of each finding's `__init__` spans, fixable) of every family-14 finding."""
    found = check(analyse(source, "case.py"), RULES, CPU).findings
    return [(tuple(s.start_line + 1 for s in f.init_spans), f.fixable) for f in found]


def test_one_site_at_the_first_linear_item() -> None:
    assert _sites(BLOCK) == [((FIRST_ITEM,), True)]


def test_none_first_reads_the_same() -> None:
    flipped = BLOCK.replace(") if parallel_ff else None", ")").replace(
        "self.ff = nn.Sequential(", "self.ff = None if not parallel_ff else nn.Sequential(")
    assert flipped != BLOCK
    assert _sites(flipped) == [((FIRST_ITEM,), True)]


def test_parenthesised_conditional() -> None:
    wrapped = BLOCK.replace("self.ff = nn.Sequential(", "self.ff = (nn.Sequential(").replace(
        ") if parallel_ff else None", ") if parallel_ff else None)")
    assert wrapped != BLOCK
    assert _sites(wrapped) == [((FIRST_ITEM,), True)]


def test_unconditional_binding_unchanged() -> None:
    plain = BLOCK.replace(") if parallel_ff else None", ")")
    assert _sites(plain) == [((FIRST_ITEM,), True)]


def test_refusal_plain_gelu_mlp_on_one_path() -> None:
    """No gate: a Linear -> GELU -> Linear Sequential bound on one path is not family 14."""
    plain_mlp = BLOCK.replace("nn.Linear(dim, inner * 2, bias=False)", "nn.Linear(dim, inner, bias=False)").replace(
        "SwiGLU(),", "nn.GELU(),")
    assert plain_mlp != BLOCK
    assert _sites(plain_mlp) == []


def _build(source: str) -> types.ModuleType:
    module = types.ModuleType("m")
    exec(compile(source, "m.py", "exec"), module.__dict__)  # the test's own model code
    return module


@pytest.mark.torch
@pytest.mark.parametrize("parallel_ff", [True, False])
def test_the_fix_computes_what_the_original_computes(parallel_ff: bool) -> None:
    torch = pytest.importorskip("torch")
    from equivalence import compare_modules
    result = rewrite(BLOCK, find(analyse(BLOCK, "case.py"), RULES, CPU), rules=RULES, env=CPU, path="case.py")
    assert isinstance(result, Rewritten) and len(result.applied) == 1
    torch.manual_seed(0)
    original = _build(BLOCK).CrossBlock(8, parallel_ff=parallel_ff).double()
    torch.manual_seed(0)
    rewritten = _build(result.new_source).CrossBlock(8, parallel_ff=parallel_ff).double()
    compare_modules(original, rewritten, lambda: (torch.randn(3, 5, 8, dtype=torch.float64),), modes=(True,),
                    atol=1e-9, rtol=1e-6, grad_atol=1e-9, round_trip=True)
