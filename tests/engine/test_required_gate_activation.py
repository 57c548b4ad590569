"""A gated MLP's activation stored from a required `__init__` parameter is chosen elsewhere (issue 20, family
14; helper `prec7`'s precision audit of unlabelled dev code).

`act(gate(x)) * up(x)` with `self.act = activation` and no default for `activation` says nothing, in this file,
about which activation runs on the gate: the caller chooses it. dev2 labels both such layers it holds not
sites (composer `gated_linear_unit_layers.py` 48, curated-transformers `layers/feedforward.py` 101, as
held-out batch 5's selectable gate) and the checker reported both; the audit found the same form in
zetascale's standalone `GLU` (`zeta/nn/modules/glu.py`). The shapes below are those layers:

- curated-transformers 2.0 `PointwiseFeedForward`: keyword-only `activation: Module`, `use_gate: bool`, the
  gate built under `if use_gate:`, forward `self.output(self.activation(self.gate(input)) * self.intermediate(input))`.
- composer `BERTGatedFFOutput`: `act_fn: Callable`, `self.act = act_fn`, forward
  `self.act(self.gated_layer(hidden_states)) * self.non_gated_layer(hidden_states)`.

A construction in the same file that passes a torch activation still says what runs (pytorch-tabular's
gated units: `PositionWiseFeedForward(d, h, dropout, nn.SiLU(), True)`): a SiLU or GELU passed there is a
site, a ReLU is not, as for an activation parameter with a default (`passed_layers`).
"""

from __future__ import annotations

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

CURATED = '''from typing import Optional

import torch
from torch import Tensor
from torch.nn import Linear, Module


class PointwiseFeedForward(Module):
    gate: Optional[Linear]

    def __init__(self, *, activation: Module, hidden_width: int, intermediate_width: int, use_bias: bool,
                 use_gate: bool, device: Optional[torch.device] = None):
        super().__init__()
        self.intermediate = Linear(hidden_width, intermediate_width, bias=use_bias, device=device)
        if use_gate:
            self.gate = Linear(hidden_width, intermediate_width, bias=use_bias, device=device)
        else:
            self.gate = None
        self.output = Linear(intermediate_width, hidden_width, bias=use_bias, device=device)
        self.activation = activation

    def forward(self, input: Tensor) -> Tensor:
        if self.gate is None:
            return self.output(self.activation(self.intermediate(input)))
        else:
            return self.output(self.activation(self.gate(input)) * self.intermediate(input))
'''

COMPOSER = '''from typing import Callable

import torch
from torch import nn


class BERTGatedFFOutput(nn.Module):
    def __init__(self, d_embed: int, d_ff: int, dropout_rate: float, act_fn: Callable[[torch.Tensor], torch.Tensor],
                 layernorm_eps: float, gated_layer_bias: bool = False, non_gated_layer_bias: bool = False):
        super().__init__()
        self.gated_layer = nn.Linear(d_embed, d_ff, bias=gated_layer_bias)
        self.non_gated_layer = nn.Linear(d_embed, d_ff, bias=non_gated_layer_bias)
        self.wo = nn.Linear(d_ff, d_embed)
        self.dropout = nn.Dropout(dropout_rate)
        self.act = act_fn
        self.layernorm = nn.LayerNorm(d_embed, eps=layernorm_eps)

    def forward(self, hidden_states, residual_connection):
        hidden_states = self.act(self.gated_layer(hidden_states)) * self.non_gated_layer(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.wo(hidden_states)
        return self.layernorm(hidden_states + residual_connection)
'''

# a construction of the class in the same file (appended to COMPOSER); ACT is what it passes
CALLER = '''

class GatedLayer(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.output = BERTGatedFFOutput(d, 4 * d, 0.1, ACT, 1e-12)

    def forward(self, x, r):
        return self.output(x, r)
'''


def _lines(code: str, prefix: str) -> list[int]:
    session = Session(RuleContext(tuple(load_rules().rules), (), CUDA))
    return sorted(f.span.start_line + 1 for f in session.analysed(code, "m.py").findings if f.rule_id.startswith(prefix))


def _line(code: str, text: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines(), 1) if text in ln)


def test_a_required_gate_activation_is_chosen_elsewhere() -> None:
    # both failed on the base: reported as f14-swiglu
    assert _lines(CURATED, "f14-") == []
    assert _lines(COMPOSER, "f14-") == []
    # the ungated path's Linear -> activation was never a family-6 site either
    assert _lines(CURATED, "f06-") == []


def test_a_default_or_a_known_activation_still_decides() -> None:
    site = [_line(COMPOSER, "hidden_states = self.act(")]
    # a SiLU or GELU default: a site, as before
    assert _lines(COMPOSER.replace("act_fn: Callable[[torch.Tensor], torch.Tensor],",
                                   "act_fn: nn.Module = nn.SiLU(),").replace(
        "layernorm_eps: float,", "layernorm_eps: float = 1e-12,"), "f14-") == site
    assert _lines(COMPOSER.replace("self.act = act_fn", "self.act = nn.GELU()"), "f14-") == site
    # the activation written in __init__ as a ReLU: not family 14, as before
    assert _lines(COMPOSER.replace("self.act = act_fn", "self.act = nn.ReLU()"), "f14-") == []


def test_a_construction_in_the_file_says_what_the_required_activation_is() -> None:
    site = [_line(COMPOSER, "hidden_states = self.act(")]
    assert _lines(COMPOSER + CALLER.replace("ACT", "nn.SiLU()"), "f14-") == site
    assert _lines(COMPOSER + CALLER.replace("ACT", "nn.GELU()"), "f14-") == site
    assert _lines(COMPOSER + CALLER.replace("ACT", "nn.ReLU()"), "f14-") == []
    # something else (a local, a call): the file's code chooses it, in words not read here: reported as before
    # (x-transformers' `GLU(dim, inner_dim, activation)` from its FeedForward, llm-foundry's dMoE GLU)
    assert _lines(COMPOSER + CALLER.replace("ACT", "act"), "f14-") == site
    assert _lines(COMPOSER + CALLER.replace("ACT", "make_act()"), "f14-") == site
    # a SiLU from one construction and a local from another: a site
    two = CALLER.replace("ACT", "nn.SiLU()") + CALLER.replace("GatedLayer", "OtherLayer").replace("ACT", "act")
    assert _lines(COMPOSER + two, "f14-") == site
    # passed by keyword to the keyword-only parameter
    curated_caller = CURATED + '''

class Block(Module):
    def __init__(self, width: int):
        super().__init__()
        self.ffn = PointwiseFeedForward(activation=torch.nn.GELU(), hidden_width=width,
                                        intermediate_width=4 * width, use_bias=True, use_gate=True)

    def forward(self, x):
        return self.ffn(x)
'''
    assert _lines(curated_caller, "f14-") == [_line(CURATED, "return self.output(self.activation(self.gate(input))")]
