"""A table or factory key that is an `__init__` parameter with a string default names that activation (issue 20,
families 6 and 14; helper `prec6`'s precision audit of unlabelled dev code).

`key_may_be` (f06-linear-gelu, the f14 chunked rules) and f14-swiglu's `gate_activation` read a literal key
(`ACT2FN["relu"]`); a key passed in as a parameter was "not evident", so a Linear into `ACT2FN[activation]` with
`activation="relu"` was reported as Linear -> GELU wherever the table itself could not be read (an import of a
package that is not there, or a table the cross-file reach does not summarise). The forms are the audit's wrong
findings, written in the same shape:

- transformers 5.0 `oneformer/modeling_oneformer.py` `OneFormerTransformerDecoderFFNLayer` (and the query
  transformer's layers): `self.activation = ACT2FN[activation]`, `activation="relu"`, then
  `self.linear2(self.dropout(self.activation(self.linear1(x))))`.
- diffusers 0.31 `models/embeddings.py` `TimestepEmbedding` (and chatterbox-tts's copy in
  `s3gen/matcha/decoder.py`): `self.act = get_activation(act_fn)`, `act_fn: str = "silu"`.

The default counts as the module's activation, as a layer class default (`act_layer=nn.GELU`) already does; a
GELU default, a required parameter, a config field and a None default stay as before.
"""

from __future__ import annotations

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

ONEFORMER = '''from torch import nn

from transformers.activations import ACT2FN


class FFNLayer(nn.Module):
    def __init__(self, d_model, dim_feedforward=2048, dropout=0.0, activation="relu"):
        super().__init__()
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.activation = ACT2FN[activation]

    def forward(self, output):
        return self.linear2(self.dropout(self.activation(self.linear1(output))))
'''

TIMESTEP = '''from typing import Optional

from torch import nn

from diffusers.models.activations import get_activation


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels: int, time_embed_dim: int, act_fn: str = "silu", out_dim: int = None):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.act = get_activation(act_fn)
        self.linear_2 = nn.Linear(time_embed_dim, out_dim or time_embed_dim)

    def forward(self, sample):
        sample = self.linear_1(sample)
        if self.act is not None:
            sample = self.act(sample)
        return self.linear_2(sample)
'''

GATED = '''from torch import nn

from transformers.activations import ACT2FN


class GatedMLP(nn.Module):
    def __init__(self, dim, hidden, activation="relu"):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.act_fn = ACT2FN[activation]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
'''


def _lines(code: str, prefix: str) -> list[int]:
    session = Session(RuleContext(tuple(load_rules().rules), (), CUDA))
    return sorted(f.span.start_line + 1 for f in session.analysed(code, "m.py").findings if f.rule_id.startswith(prefix))


def _line(code: str, text: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines(), 1) if text in ln)


def test_a_table_key_defaulting_to_a_relu_is_no_linear_gelu() -> None:
    site = [_line(ONEFORMER, "return self.linear2(")]
    rows: list[tuple[tuple[str, str] | None, list[int]]] = [
        (None, []),  # the default names a ReLU (failed on the base: reported)
        (('activation="relu"', 'activation="gelu"'), site),  # a GELU default: a site
        (('activation="relu"', 'activation="GELU"'), site),  # compared without case, as factories read it
        (('activation="relu"', 'activation="gelu_new"'), site),
        (('dropout=0.0, activation="relu"', 'activation, dropout=0.0'), site),  # required: not evident
        (('activation="relu"', "activation=None"), site),  # None: not a name
        (("ACT2FN[activation]", "ACT2FN[config.hidden_act]"), site),  # a config field: unchanged
        (("ACT2FN[activation]", 'ACT2FN["relu"]'), []),  # a literal: as before
    ]
    for edit, expected in rows:
        code = ONEFORMER if edit is None else ONEFORMER.replace(*edit)
        assert code != ONEFORMER or edit is None, edit
        assert _lines(code, "f06-linear-gelu") == expected, edit


def test_a_factory_called_with_a_silu_default_is_no_linear_gelu() -> None:
    site = [_line(TIMESTEP, "sample = self.linear_1(sample)")]
    assert _lines(TIMESTEP, "f06-linear-gelu") == []  # failed on the base: reported
    assert _lines(TIMESTEP.replace('act_fn: str = "silu"', 'act_fn: str = "gelu"'), "f06-linear-gelu") == site
    assert _lines(TIMESTEP.replace('act_fn: str = "silu"', "act_fn: str"), "f06-linear-gelu") == site


def test_a_gate_keyed_by_a_parameter_is_read_at_its_default() -> None:
    site = [_line(GATED, "return self.down_proj(")]
    assert _lines(GATED, "f14-") == []  # a ReLU gate is not family 14 (failed on the base: reported)
    assert _lines(GATED.replace('activation="relu"', 'activation="silu"'), "f14-") == site
    assert _lines(GATED.replace('activation="relu"', 'activation="gelu_pytorch_tanh"'), "f14-") == site
    assert _lines(GATED.replace('activation="relu"', "activation"), "f14-") == site  # required: as before
