"""Where sites inside helpers are reported (issue 20, mech35).

- Family 15: a same-file helper that rotates one tensor, applied on several paths of a forward (mmpose 1.3.2
  `models/utils/rtmcc_block.py`: `rope(x, dim)` applied to `base` (q and k stacked) on the self-attention path,
  to q then k on the cross-attention path, and to the learned vectors of the relative bias in a method the
  forward calls): one site per path, reported at its first application (`engine.applications`). A helper
  applied on one path only keeps its site in the helper, with the calls among its statements.
- Family 6: a `Sequential(Linear, GELU, ...)` run at two calls of one forward (mmpose `dstformer.py`
  `AttentionBlock`: `mlp_s` on the `'st'` and the `'ts'` path) is one site, as a container of layers only was.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\n\n\n"

ROPE = '''
def rope(x, dim):
    half = x.shape[-1] // 2
    freq = torch.arange(half, device=x.device) / float(half)
    pos = torch.arange(x.shape[dim], device=x.device)[:, None] * (10000 ** -freq)[None, :]
    sin, cos = torch.sin(pos), torch.cos(pos)
    x1, x2 = torch.chunk(x, 2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
'''

APPLIED = ROPE + '''

class Block(nn.Module):
    def __init__(self, d, cross):
        super().__init__()
        self.cross = cross
        self.uv = nn.Linear(d, 2 * d)
        self.k_fc = nn.Linear(d, d)
        self.a = nn.Parameter(torch.rand(1, d))
        self.b = nn.Parameter(torch.rand(1, d))

    def bias(self, n):
        a = rope(self.a.repeat(n, 1), dim=0)
        b = rope(self.b.repeat(n, 1), dim=0)
        return torch.bmm(a, b.permute(0, 2, 1))

    def forward(self, x, k):
        if self.cross:
            q = self.uv(x)
            k = self.k_fc(k)
            q = rope(q, 1)
            k = rope(k, 1)
            t = self.bias(x.shape[1])
        else:
            base = self.uv(x).unflatten(-1, (2, -1))
            base = rope(base, dim=1)
            q, k = torch.unbind(base, dim=2)
            t = 0
        return torch.bmm(q, k.transpose(1, 2)) + t
'''

# The same helper applied once, to q and k in consecutive statements: one site, in the helper.
ONCE = ROPE + '''

class Attention(nn.Module):
    def forward(self, q, k):
        q = rope(q, 1)
        k = rope(k, 1)
        return q @ k.transpose(-2, -1)
'''

# Two applications apart (another statement between them), on one path: still one q/k pair, one site.
APART = ROPE + '''

class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, q, k):
        q = rope(q, 1)
        k = self.proj(k)
        k = rope(k, 1)
        return q @ k.transpose(-2, -1)
'''

MLP = '''
class AttentionBlock(nn.Module):
    def __init__(self, dim, mode):
        super().__init__()
        self.mode = mode
        self.norm_s = nn.LayerNorm(dim)
        self.norm_t = nn.LayerNorm(dim)
        self.mlp_s = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(),
            nn.Linear(4 * dim, dim))
        self.mlp_t = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(),
            nn.Linear(4 * dim, dim))

    def forward(self, x):
        if self.mode == "st":
            x = x + self.mlp_s(self.norm_s(x))
            x = x + self.mlp_t(self.norm_t(x))
        else:
            x = x + self.mlp_t(self.norm_t(x))
            x = x + self.mlp_s(self.norm_s(x))
        return x
'''


def findings(code: str, family: int) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == family]


def line(code: str, needle: str, nth: int = 0) -> int:
    """0-based line of the `nth` line holding `needle` in HEADER + code."""
    return [i for i, text in enumerate((HEADER + code).splitlines()) if needle in text][nth]


def statements(f: Finding) -> set[int]:
    return {s.start_line for s in f.stmt_spans}


def test_a_helper_applied_at_several_places_is_one_site_per_application() -> None:
    found = findings(APPLIED, 15)
    at = sorted(f.span.start_line for f in found)
    assert at == sorted([line(APPLIED, "a = rope("), line(APPLIED, "q = rope("), line(APPLIED, "base = rope(")])
    by_line = {f.span.start_line: f for f in found}
    formula = line(APPLIED, "return torch.cat([x1 * cos")
    # The q/k pair in consecutive statements is one site with both calls; each site covers the formula.
    assert {line(APPLIED, "q = rope("), line(APPLIED, "k = rope(")} <= statements(by_line[line(APPLIED, "q = rope(")])
    assert {line(APPLIED, "a = rope("), line(APPLIED, "b = rope(")} <= statements(by_line[line(APPLIED, "a = rope(")])
    assert all(formula in statements(f) and not f.fixable for f in found)
    # Near forms in the same test (each holds on the base too): applications on one path stay one site.
    _applications_on_one_path_are_one_site_in_the_helper()


def _applications_on_one_path_are_one_site_in_the_helper() -> None:
    # q rotated before an `if` whose two paths each rotate k: one pair on either path, one site in the helper.
    paths = APART.replace("        k = self.proj(k)\n        k = rope(k, 1)\n",
                          "        if self.training:\n            k = rope(k, 1)\n        else:\n"
                          "            k = rope(self.proj(k), 1)\n")
    found = findings(paths, 15)
    assert [f.span.start_line for f in found] == [line(paths, "x1, x2 = torch.chunk")]
    assert {line(paths, "q = rope("), line(paths, "k = rope(k, 1)"), line(paths, "k = rope(self.proj(k), 1)")} \
        <= statements(found[0])
    # q and k rotated apart on one path, or in consecutive statements: one site, in the helper.
    apart = findings(APART, 15)
    assert len(apart) == 1 and apart[0].span.start_line == line(APART, "x1, x2 = torch.chunk")
    assert {line(APART, "q = rope("), line(APART, "k = rope(")} <= statements(apart[0])
    once = findings(ONCE, 15)
    assert len(once) == 1
    assert once[0].span.start_line == line(ONCE, "x1, x2 = torch.chunk")
    assert {line(ONCE, "q = rope("), line(ONCE, "k = rope(")} <= statements(once[0])
    # Near form: the same helper with a difference twice (no rotation), applied at several places: silent.
    assert findings(APPLIED.replace("x2 * cos + x1 * sin", "x2 * cos - x1 * sin"), 15) == []


def test_a_sequential_run_at_two_calls_is_one_site() -> None:
    found = findings(MLP, 6)
    assert len(found) == 2
    by_init = {f.init_spans[0].start_line: f for f in found}
    s, t = line(MLP, "nn.Linear(dim, 4 * dim), nn.GELU()", 0), line(MLP, "nn.Linear(dim, 4 * dim), nn.GELU()", 1)
    assert set(by_init) == {s, t}
    calls_s = {line(MLP, "x = x + self.mlp_s(", 0), line(MLP, "x = x + self.mlp_s(", 1)}
    assert calls_s <= statements(by_init[s])
