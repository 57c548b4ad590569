"""A same-file helper that returns an `nn.Sequential` of layer classes it aliases first, chosen by its
parameters (`proj = partial(nn.Conv2d, kernel_size=1) if channel_first else nn.Linear`, gigagan-pytorch
0.1.15 `gigagan_pytorch.py` `FeedForward`): the call's arguments and the helper's defaults decide the
alias (`scope.bindings.InitAnalysis._helper_locals`), so a Linear -> GELU in the returned Sequential is
reported where forward runs it. What the call does not decide stays as written, as before."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "from functools import partial\nimport torch\nfrom torch import nn\n\n\n"

CODE = '''
class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.g


class ChannelRMSNorm(RMSNorm):
    pass


def FeedForward(dim, mult = 4, channel_first = False):
    dim_hidden = int(dim * mult)
    norm_klass = ChannelRMSNorm if channel_first else RMSNorm
    proj = partial(nn.Conv2d, kernel_size = 1) if channel_first else nn.Linear

    return nn.Sequential(
        norm_klass(dim),
        proj(dim, dim_hidden),
        nn.GELU(),
        proj(dim_hidden, dim)
    )


class Transformer(nn.Module):
    def __init__(self, dim, depth, ff_mult = 4):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                nn.Identity(),
                FeedForward(dim = dim, mult = ff_mult)
            ]))

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x
'''


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate((HEADER + code).splitlines()) if needle in text)


def sites(code: str, family: int = 6) -> list[tuple[str, int]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    found = check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings
    return sorted((f.scope_name, f.span.start_line) for f in found if f.family == family)


def test_the_default_decides_the_alias() -> None:
    assert sites(CODE) == [("Transformer", line(CODE, "x = ff(x) + x"))]


@pytest.mark.parametrize("call", [
    "FeedForward(dim = dim, mult = ff_mult, channel_first = True)",  # a 1x1 convolution: no Linear
    "FeedForward(dim, ff_mult, True)",  # the same, by position
    "FeedForward(dim = dim, mult = ff_mult, channel_first = dim > 8)",  # not decided by the call
    "FeedForward(dim = dim, **ff_kwargs)",  # not decided by the call
])
def test_a_choice_the_call_does_not_make_for_linear_is_not_reported(call: str) -> None:
    code = CODE.replace("FeedForward(dim = dim, mult = ff_mult)", call).replace(
        "ff_mult = 4):", "ff_mult = 4, ff_kwargs = None):")
    assert sites(code) == []


def test_a_helper_that_is_not_straight_line_keeps_its_names_as_written() -> None:
    code = CODE.replace("    proj = partial(nn.Conv2d, kernel_size = 1) if channel_first else nn.Linear\n",
                        "    proj = nn.Linear\n    if channel_first:\n        proj = partial(nn.Conv2d, kernel_size = 1)\n")
    assert sites(code) == []


def test_the_base_reading_is_kept_without_aliases() -> None:
    """Items written with the layer classes themselves read as before."""
    code = CODE.replace("proj(dim, dim_hidden)", "nn.Linear(dim, dim_hidden)").replace(
        "proj(dim_hidden, dim)", "nn.Linear(dim_hidden, dim)").replace(", channel_first = True)", ")")
    assert sites(code) == [("Transformer", line(code, "x = ff(x) + x"))]
