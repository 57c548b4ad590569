"""Family 5 needs the dropout called in the code: a Dropout that ends an `nn.Sequential` the forward calls is
not a site, nor a LayerNorm that starts one (`own_call($h, $out)` in `rules/f05-dropout-add-layernorm.adl`).

gluonts' TiDE `ResBlock` writes `self.ln(self.fc(x) + self.skip(x))` with `self.fc = nn.Sequential(Linear, ReLU,
Linear, nn.Dropout(p))`; mmpose's `dstformer` adds the output of `Sequential(Linear, GELU, Linear, Dropout)` to the
residual before the next LayerNorm. The oracle (`bench/oracle/match.py: one_forward`: no `nn.Sequential` frame
between the model line and the dropout) and the dev2 labels (mmpose `dstformer.py` 139, 144: not sites) agree;
the rule's rewrite replaces a dropout call, an add and a norm call, and the code here calls the Sequential.
"""

from __future__ import annotations

from attention_harness import findings_of, rules_of

RULES = rules_of("f05-dropout-add-layernorm")

RES_BLOCK = '''
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, dim_in, dim_hidden, dim_out, dropout_rate, layer_norm):
        super().__init__()
        self.fc = nn.Sequential(
            nn.Linear(dim_in, dim_hidden),
            nn.ReLU(),
            nn.Linear(dim_hidden, dim_out),
            nn.Dropout(p=dropout_rate),
        )
        self.skip = nn.Linear(dim_in, dim_out)
        if layer_norm:
            self.ln = nn.LayerNorm(dim_out)
        self.layer_norm = layer_norm

    def forward(self, x):
        if self.layer_norm:
            return self.ln(self.fc(x) + self.skip(x))
        return self.fc(x) + self.skip(x)
'''

# The same block with the dropout called by name after the Sequential: the chain is written in the forward.
CALLED = RES_BLOCK.replace("            nn.Dropout(p=dropout_rate),\n        )",
                           "        )\n        self.drop = nn.Dropout(p=dropout_rate)").replace(
    "self.ln(self.fc(x) + self.skip(x))", "self.ln(self.drop(self.fc(x)) + self.skip(x))")


def test_a_dropout_ending_a_sequential_is_not_a_site() -> None:
    assert findings_of(RES_BLOCK, RULES) == ()


def test_the_dropout_called_by_name_is_a_site() -> None:
    assert "self.drop = nn.Dropout" in CALLED
    found = [(f.rule_id, f.span.start_line + 1) for f in findings_of(CALLED, RULES)]
    assert found == [("f05-dropout-add-layernorm", 21)]


# torchaudio's `_EmformerLayer`: the sum goes into `self.pos_ff`, a Sequential whose first item is the LayerNorm.
NORM_ITEM = '''
from torch import nn


class Layer(nn.Module):
    def __init__(self, d, ffn_dim, p):
        super().__init__()
        self.dropout = nn.Dropout(p)
        self.pos_ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, ffn_dim), nn.GELU(), nn.Linear(ffn_dim, d))

    def forward(self, out, residual):
        result = self.dropout(out) + residual
        return self.pos_ff(result) + result
'''


def test_a_layernorm_starting_a_sequential_is_not_a_site() -> None:
    assert findings_of(NORM_ITEM, RULES) == ()
