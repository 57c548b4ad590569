"""Family 9: three q/k/v Linears of one input fused into one Linear(in, 3 * out).

For each order the rules cover, the fixed module loads the original's state dict with
`strict=True`, emits the original's `state_dict()` keys (the fused tensors split back), accepts a
checkpoint in either form, and computes the same outputs (atol 1e-5, rtol 1e-4) and gradients
(the fused weight's gradient equals the stacked q/k/v gradients, atol 1e-4, rtol 1e-4) in eval and
train mode; a second fix changes nothing. Unsafe sites are declined with their reason.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import compare_modules, fixed, load, rules_of, skip_reasons  # noqa: E402

from adopter.analysis import analyse  # noqa: E402
from adopter.engine import Environment, find  # noqa: E402

pytestmark = pytest.mark.torch

RULES = rules_of("f09-fused-qkv")
CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")


def _example(index: int) -> str:
    rule = next(r for r in RULES if r.id == "f09-fused-qkv")
    return [ex.code for ex in rule.examples if ex.should_match][index]


# One rule, three orders of the projections and head splits (its must-match examples, in order).
NEO = _example(0)
INTERLEAVED = _example(1)
QUERY_LAST = _example(2)


class _Config:
    hidden_size = 32
    num_attention_heads = 4


CASES = [
    ("projections-then-splits", NEO, "SelfAttention", (_Config(),)),
    ("interleaved", INTERLEAVED, "SelfAttention", (32, 4)),
    ("query-last", QUERY_LAST, "SelfAttention", (32, 4)),
]


@pytest.mark.parametrize(("rule_id", "source", "cls", "args"), CASES, ids=[c[0] for c in CASES])
def test_fused_projection_is_equivalent(
    rule_id: str, source: str, cls: str, args: tuple[object, ...]
) -> None:
    new = fixed(source, RULES, applied=1)
    assert ".chunk(3, dim=-1)" in new and "keep_separate_checkpoints(self, " in new
    torch.manual_seed(0)
    original = load(source, "orig")[cls](*args)
    rewritten = load(new, "new")[cls](*args)
    assert next(n for n, _ in rewritten.named_parameters()) == "qkv.weight"
    # state_dict() of the rewritten module looks exactly like the original's (keys and shapes).
    a, b = original.state_dict(), rewritten.state_dict()
    assert list(b) == list(a) or sorted(b) == sorted(a)
    assert all(b[k].shape == a[k].shape for k in a)
    compare_modules(original, rewritten, lambda: (torch.randn(2, 5, 32),))
    # A checkpoint of the rewritten module loads back into the original, and into itself.
    original.load_state_dict(rewritten.state_dict(), strict=True)
    rewritten.load_state_dict(rewritten.state_dict(), strict=True)


def test_fused_keys_are_accepted_too() -> None:
    new = fixed(NEO, RULES, applied=1)
    module = load(new, "new")["SelfAttention"](_Config())
    fused = {"qkv.weight": torch.randn(96, 32)}
    module.load_state_dict(fused, strict=True)
    torch.testing.assert_close(module.qkv.weight, fused["qkv.weight"])


def test_prune_heads_use_is_declined() -> None:
    source = NEO.replace(
        "    def forward(self, hidden_states):",
        "    def prune(self, index):\n"
        "        self.q_proj = prune_linear_layer(self.q_proj, index)\n\n"
        "    def forward(self, hidden_states):",
    )
    reasons = skip_reasons(source, RULES)
    assert len(reasons) == 1 and "is also used on line" in reasons[0], reasons


def test_different_widths_are_no_site() -> None:
    # Outputs of different widths are not the three equal parts of one projection (issue 20): no finding.
    source = NEO.replace(
        "self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)",
        "self.v_proj = nn.Linear(config.hidden_size, 2 * config.hidden_size, bias=False)",
    )
    assert not find(analyse(source), RULES, CPU)
    assert find(analyse(NEO), RULES, CPU)


def test_different_bias_settings_are_declined() -> None:
    source = NEO.replace(
        "self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)",
        "self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=True)",
    )
    reasons = skip_reasons(source, RULES)
    assert reasons == ["the three Linears are not built with the same arguments (in, out, bias)"]


def test_projections_in_a_branch_are_declined() -> None:
    source = QUERY_LAST.replace(
        "    def forward(self, hidden_states):\n"
        "        mixed_query_layer = self.query(hidden_states)\n"
        "        key_layer = self.transpose_for_scores(self.key(hidden_states))\n"
        "        value_layer = self.transpose_for_scores(self.value(hidden_states))\n",
        "    def forward(self, hidden_states, memory=None):\n"
        "        mixed_query_layer = self.query(hidden_states)\n"
        "        if memory is not None:\n"
        "            key_layer = self.transpose_for_scores(self.key(memory))\n"
        "            value_layer = self.transpose_for_scores(self.value(memory))\n"
        "        else:\n"
        "            key_layer = self.transpose_for_scores(self.key(hidden_states))\n"
        "            value_layer = self.transpose_for_scores(self.value(hidden_states))\n",
    )
    reasons = skip_reasons(source, RULES)
    assert reasons and all("not consecutive statements of one block" in r for r in reasons), reasons
