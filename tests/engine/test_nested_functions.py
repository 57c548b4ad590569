"""A function defined at the top of a module-level builder's body and handed to the module it returns
(`def forward(q, k, v): ...` in `AttentionBase`, returned as `Module([to_out], forward)`: a-unet 0.0.16
`a_unet/blocks.py`) computes what that module runs; its ops are read like a module-level function's
(`analysis.analyser._nested_functions`), so the attention and its softmax are found there. The layer chains a
nested function builds are still not read (`tests/analysis/test_chains.py`); a nested function the builder
never uses runs only the rules of function scope, as an unreferenced module-level function does."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nfrom torch import nn, einsum\nfrom einops import rearrange\n\n\n"

CODE = '''
class Module(nn.Module):
    def __init__(self, modules, forward_fn):
        super().__init__()
        self.blocks = nn.ModuleList(modules)
        self.forward_fn = forward_fn

    def forward(self, *args, **kwargs):
        return self.forward_fn(*args, **kwargs)


def AttentionBase(features, head_features, num_heads):
    scale = head_features ** -0.5
    mid_features = head_features * num_heads
    to_out = nn.Linear(in_features=mid_features, out_features=features, bias=False)

    def forward(q, k, v):
        h = num_heads
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))
        sim = einsum("... n d, ... m d -> ... n m", q, k) * scale
        attn = sim.softmax(dim=-1)
        out = einsum("... n m, ... m d -> ... n d", attn, v)
        out = rearrange(out, "b h n d -> b n (h d)")
        return to_out(out)

    return Module([to_out], forward)
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def sites(code: str) -> list[tuple[int, str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return sorted((f.family, f.scope_name, f.span.start_line) for f in found)


def test_the_nested_forward_is_read() -> None:
    assert sites(CODE) == [
        (4, "AttentionBase.forward", line(CODE, "attn = sim.softmax(dim=-1)")),
        (10, "AttentionBase.forward", line(CODE, "sim = einsum(")),
    ]


def test_a_nested_function_the_builder_never_uses_is_not_a_model_function() -> None:
    code = CODE.replace("    return Module([to_out], forward)\n", "    return Module([to_out], None)\n")
    assert sites(code) == []


def test_a_function_nested_deeper_or_in_a_method_is_not_read() -> None:
    code = CODE.replace("    def forward(q, k, v):\n", "    if True:\n      def forward(q, k, v):\n").replace(
        "\n        ", "\n          ").replace("    return Module([to_out], forward)", "      pass\n    return Module([to_out], forward)")
    assert sites(code) == []
