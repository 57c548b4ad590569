"""Small same-file helpers inlined into module-level functions, and the stack/unbind axis spellings."""

from __future__ import annotations

from adopter.dsl.types import Expr, Kwarg

from .helpers import module, ops

CODE = '''
def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def long_helper(x):
    if x.dim() == 4:
        x = x.flatten(2)
    return x.relu()


def apply_rotary_pos_emb(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, long_helper(k)
'''


def test_a_small_helper_is_inlined_into_a_module_level_function() -> None:
    (caller,) = [fn for fn in module(CODE).functions if fn.name == "apply_rotary_pos_emb"]
    found = ops(caller.body)
    assert [op.target for op in found if op.via == ("rotate_half",)] == ["chunk", "neg", "tuple", "torch.cat"]
    # A helper with control flow (or longer than a few statements) stays one call.
    assert [op.target for op in found if op.target == "long_helper"] == ["long_helper"]


def test_stack_and_unbind_take_their_axis_by_keyword() -> None:
    (fn,) = module('''
    def pairs(x):
        a, b = x.unbind(-1)
        return torch.stack((b, a), -1)
    ''').functions
    found = {op.target: op for op in ops(fn.body)}
    assert found["unbind"].kwargs == (Kwarg("dim", Expr("-1")),)
    assert found["torch.stack"].kwargs == (Kwarg("dim", Expr("-1")),)


def test_a_helper_a_fix_wrote_is_not_inlined() -> None:
    # `gated_activation` (the f14 fix's helper) stands for the fused kernel: a forward calling it keeps one
    # call, so no rule finds the pattern again in the code the fix wrote; a user's helper is inlined.
    mod = module('''
    def gated_activation(gate_up, act):
        """`act(gate) * up` from one fused gate+up projection (adopter: gated-activation)."""
        gate, up = gate_up.chunk(2, dim=-1)
        return act(gate) * up


    def users_gate(gate_up):
        """Split and gate."""
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up


    class MLP(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.gate_up = nn.Linear(d, 2 * d)

        def forward(self, x):
            return gated_activation(self.gate_up(x), F.silu), users_gate(self.gate_up(x))
    ''')
    (mlp,) = mod.architectures
    assert mlp.forward is not None
    found = ops(mlp.forward.body)
    assert [op.target for op in found if op.target == "gated_activation"] == ["gated_activation"]
    assert not [op for op in found if op.via == ("gated_activation",)]
    assert [op.target for op in found if op.via == ("users_gate",)] == ["chunk", "torch.nn.functional.silu", "*"]
