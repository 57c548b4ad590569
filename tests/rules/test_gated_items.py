"""A gated activation written as a stateless `nn.Sequential` item (family 14, `f14-gated-chunked`): the fix
rewrites the item class's forward (`x, gate = x.chunk(2, dim=-1); return x * F.gelu(gate)` becomes
`fused_gated_activation(x, F.gelu)`), leaving the Sequential's children as built.

The helper computes `x * act(gate)` for any input (no gradient, an odd last axis: as written), so every use
of the class computes what it did. Each rewrite is exec'd next to the original and compared through
`adopter.verify.compare.compare` (outputs, input gradients and every parameter's gradient; float32
tolerance of `compare.TOLERANCES`: rtol 1e-4, atol 1e-5 on outputs and 1e-4 on gradients), in eval and train
mode, two seeds, CPU. Fixtures are reduced from the packages named on each."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import fixed, load, rules_of, skip_reasons  # noqa: E402

from adopter.verify.compare import compare  # noqa: E402

RULES = rules_of("f14-swiglu")
HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nfrom torch.nn import Module\n\n\n"

# tab-transformer-pytorch 0.6.1, tab_transformer_pytorch/tab_transformer_pytorch.py (GEGLU, FeedForward)
IN_INIT = HEADER + '''
class GEGLU(Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim = -1)
        return x * F.gelu(gates)

class FeedForward(Module):
    def __init__(self, dim, mult = 4, dropout = 0.):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, dim * mult * 2),
            GEGLU(),
            nn.Dropout(dropout),
            nn.Linear(dim * mult, dim)
        )

    def forward(self, x, **kwargs):
        return self.net(x)
'''

# local-attention 1.11.2, local_attention/transformer.py (GEGLU, the FeedForward factory function)
IN_FACTORY = HEADER + '''
class GEGLU(Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return x * F.gelu(gate)

def FeedForward(dim, mult = 4, dropout = 0.):
    inner_dim = int(dim * mult * 2 / 3)

    return nn.Sequential(
        nn.LayerNorm(dim),
        nn.Linear(dim, inner_dim * 2, bias = False),
        GEGLU(),
        nn.Dropout(dropout),
        nn.Linear(inner_dim, dim, bias = False)
    )
'''

# The same class as a Sequential item, as a bound activation and after a convolution (not a site: no Linear
# before it), SiLU gate first: one edit of the class, and every use computes what it did.
SHARED = HEADER + '''
class SwiGLU(Module):
    def forward(self, x):
        gate, x = x.chunk(2, dim=-1)
        return F.silu(gate) * x

class Blocks(Module):
    def __init__(self, dim):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(dim, dim * 4), SwiGLU(), nn.Linear(dim * 2, dim))
        self.proj = nn.Linear(dim, dim * 2)
        self.act = SwiGLU()
        self.conv = nn.Sequential(nn.Conv2d(dim, dim, 1), SwiGLU())

    def forward(self, x):
        y = self.ff(x) + self.act(self.proj(x))
        return y, self.conv(y.transpose(1, 2).unsqueeze(2))
'''

# Counter-examples: a half read again after the product (without the split it would be unbound), a `.split`
# (halves of any sizes); two Sequentials run in one statement, each with its own reason.
REFUSED = HEADER + '''
class GEGLUKeep(Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        y = x * F.gelu(gate)
        return y + gate.mean()

class SplitGLU(Module):
    def forward(self, x):
        x, gate = x.split(x.shape[-1] // 2, dim=-1)
        return x * F.silu(gate)

class Blocks(Module):
    def __init__(self, dim):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(dim, dim * 2), GEGLUKeep(), nn.Linear(dim, dim))
        self.b = nn.Sequential(nn.Linear(dim, dim * 2), SplitGLU(), nn.Linear(dim, dim))

    def forward(self, x):
        return self.a(x) + self.b(x)
'''


def _equivalent(source: str, new: str, make, inputs) -> None:
    """Build both with the same weights, load each state dict into the other strictly, compare."""
    torch.manual_seed(0)
    original, rewritten = make(load(source, "orig")), make(load(new, "new"))
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, (inputs(), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


def test_an_init_sequential_item_is_rewritten_in_its_class_and_equivalent() -> None:
    new = fixed(IN_INIT, RULES, 1)
    assert "return fused_gated_activation(x, F.gelu)" in new and "x.chunk(2, dim = -1)" not in new
    assert "GEGLU(),\n            nn.Dropout(dropout)," in new  # the Sequential's children as built
    _equivalent(IN_INIT, new, lambda ns: ns["FeedForward"](8), lambda: (torch.randn(3, 5, 8),))


def test_a_factory_sequential_item_is_rewritten_in_its_class_and_equivalent() -> None:
    new = fixed(IN_FACTORY, RULES, 1)
    assert "return fused_gated_activation(x, F.gelu)" in new
    _equivalent(IN_FACTORY, new, lambda ns: ns["FeedForward"](12, mult=2), lambda: (torch.randn(2, 7, 12),))


def test_one_edit_of_a_shared_item_class_keeps_every_use_equivalent() -> None:
    new = fixed(SHARED, RULES, 2)
    assert new.count("fused_gated_activation(x, F.silu, gate=0)") == 1
    _equivalent(SHARED, new, lambda ns: ns["Blocks"](8), lambda: (torch.randn(2, 6, 8),))


def test_a_half_read_again_and_a_split_item_are_refused_each_with_its_reason() -> None:
    reasons = skip_reasons(REFUSED, RULES)
    assert len(reasons) == 2, reasons
    assert any("`gate` is also read on line" in r for r in reasons), reasons
    assert any("`.split` is left as written" in r for r in reasons), reasons


def test_two_containers_in_one_statement_get_their_own_decisions() -> None:
    """`check` and the quick fix decide per site: two Sequentials run in one statement have one span, so the
    decision is keyed by the site's statements too (before, the second got the first one's reason)."""
    from adopter.engine import Environment
    from adopter.session import RuleContext, Session

    session = Session(RuleContext(RULES, (), Environment("cpu", frozenset(), "2.13.0")))
    analysed = session.analysed(REFUSED, "case.py")
    sites = [f for f in analysed.findings if f.rule_id == "f14-gated-chunked"]
    assert len(sites) == 2 and sites[0].span == sites[1].span
    for decide in (session.planned, session.decision):
        reasons = sorted(str(decide(analysed, f).reason) for f in sites)
        assert "`gate` is also read" in reasons[0] and "`.split` is left as written" in reasons[1], reasons
