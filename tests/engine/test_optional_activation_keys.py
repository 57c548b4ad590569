"""A Linear into an activation looked up by a name that only an optional parameter gives is no Linear -> GELU (issue 20,
family 6; helper `prec9`'s precision census of unlabelled dev code, `engine.optional_keys`).

The census's wrong findings, written anew in the same shape: diffusers 0.31 `models/embeddings.py`
`TimestepEmbedding` and chatterbox-tts's copy of it (`s3gen/matcha/decoder.py`): `post_act_fn: Optional[str] = None`,
`if post_act_fn is None: self.post_act = None` / `else: self.post_act = get_activation(post_act_fn)`, and in
`forward` `sample = self.linear_2(sample)` then `if self.post_act is not None: sample = self.post_act(sample)`. As
built (and as the file's callers leave it) there is no activation after `linear_2`; on the other path the name is
whatever a caller passes. The labellers' definition asks for an activation whose default is GELU.
"""

from __future__ import annotations

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

EMBEDDING = '''from typing import Optional

from torch import nn

from .activations import get_activation


class TimeEmbedding(nn.Module):
    def __init__(self, in_channels: int, dim: int, act_fn: str = "silu", post_act_fn: Optional[str] = None):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, dim)
        self.act = get_activation(act_fn)
        self.linear_2 = nn.Linear(dim, dim)
        if post_act_fn is None:
            self.post_act = None
        else:
            self.post_act = get_activation(post_act_fn)

    def forward(self, sample):
        sample = self.linear_1(sample)
        if self.act is not None:
            sample = self.act(sample)
        sample = self.linear_2(sample)
        if self.post_act is not None:
            sample = self.post_act(sample)
        return sample
'''

IF_BLOCK = '''        if post_act_fn is None:
            self.post_act = None
        else:
            self.post_act = get_activation(post_act_fn)
'''


def _lines(code: str) -> list[int]:
    session = Session(RuleContext(tuple(load_rules().rules), (), CUDA))
    return sorted(f.span.start_line + 1 for f in session.analysed(code, "m.py").findings
                  if f.rule_id.startswith("f06-"))


def _line(code: str, text: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines(), 1) if text in ln)


def _with(binding: str, *, default: str = "post_act_fn: Optional[str] = None") -> str:
    code = EMBEDDING.replace(IF_BLOCK, binding).replace("post_act_fn: Optional[str] = None", default)
    assert code != EMBEDDING
    return code


def test_an_activation_named_only_by_an_optional_parameter_is_no_gelu() -> None:
    assert _lines(EMBEDDING) == []  # failed on the base: [23] (linear_2, the post_act path)
    # the same choice spelled as a conditional expression, a truth test, or a negated test
    for binding in (
        "        self.post_act = get_activation(post_act_fn) if post_act_fn is not None else None\n",
        "        self.post_act = None if post_act_fn is None else get_activation(post_act_fn)\n",
        "        if post_act_fn:\n            self.post_act = get_activation(post_act_fn)\n"
        "        else:\n            self.post_act = None\n",
        "        self.post_act = None\n        if not post_act_fn is None:\n"
        "            self.post_act = ACT2FN[post_act_fn]\n",
    ):
        code = _with(binding).replace("from .activations import get_activation",
                                      "from .activations import ACT2FN, get_activation")
        assert _lines(code) == [], binding
    # the first Linear with a GELU default beside the refused second one
    code = EMBEDDING.replace('act_fn: str = "silu"', 'act_fn: str = "gelu"')
    assert _lines(code) == [_line(code, "sample = self.linear_1(sample)")]


def _linear_2(code: str) -> list[int]:
    return [_line(code, "sample = self.linear_2(sample)")]


def test_the_neighbours_stay_sites() -> None:
    # a GELU default on the same path: the default builds it
    code = EMBEDDING.replace("post_act_fn: Optional[str] = None", 'post_act_fn: str = "gelu"')
    assert _lines(code) == _linear_2(code)
    # a None default bound on every path: the caller must name it (not evident, as before)
    code = _with("        self.post_act = get_activation(post_act_fn)\n")
    assert _lines(code) == _linear_2(code)
    # a required parameter under its own test: not evident, as before
    code = _with(IF_BLOCK, default="post_act_fn: Optional[str]")
    assert _lines(code) == _linear_2(code)
    # a switch on another parameter: the key's default does not decide it
    code = _with("        if use_post_act:\n            self.post_act = get_activation(post_act_fn)\n"
                 "        else:\n            self.post_act = None\n",
                 default="post_act_fn: Optional[str] = None, use_post_act: bool = False")
    assert _lines(code) == _linear_2(code)
    # a config field tested for None: the config decides, as before
    code = _with("        if config.post_act is None:\n            self.post_act = None\n        else:\n"
                 "            self.post_act = get_activation(config.post_act)\n",
                 default="post_act_fn: Optional[str] = None, config=None")
    assert _lines(code) == _linear_2(code)
    # an unconditional nn.GELU: unchanged
    code = _with("        self.post_act = nn.GELU()\n")
    assert _lines(code) == _linear_2(code)


# fresh4's W1 (audyn 0.4.0 `models/lextransformer.py`, the encoder and decoder layers), written anew in the same form:
# the activation parameter defaults to a function and is looked up by name only when a string is passed.
FUNCTION_DEFAULT = '''from typing import Callable, Union

import torch
import torch.nn.functional as F
from torch import nn

from .activations import get_activation


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: Union[str, Callable[[torch.Tensor], torch.Tensor]] = F.relu) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        if isinstance(activation, str):
            activation = get_activation(activation)
        self.activation = activation

    def forward(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return x
'''

LOOKUP = '''        if isinstance(activation, str):
            activation = get_activation(activation)
'''


def _ff(code: str) -> list[int]:
    return [_line(code, "x = self.linear2(self.dropout(self.activation(self.linear1(x))))")]


def test_a_function_default_looked_up_only_for_a_string_is_that_function() -> None:
    assert _lines(FUNCTION_DEFAULT) == []  # failed on 2bf90d0: [22]
    # the same test spelled `callable`, negated, or as a conditional expression; another non-GELU function
    for lookup in (
        "        if not callable(activation):\n            activation = get_activation(activation)\n",
        "        activation = get_activation(activation) if isinstance(activation, str) else activation\n",
    ):
        code = FUNCTION_DEFAULT.replace(LOOKUP, lookup)
        assert code != FUNCTION_DEFAULT
        assert _lines(code) == [], lookup
    assert _lines(FUNCTION_DEFAULT.replace("= F.relu)", "= torch.tanh)")) == []


def test_function_defaults_that_may_be_gelu_stay_sites() -> None:
    # a GELU default: the attribute holds F.gelu (fresh4's bsroformer layer, a right finding)
    code = FUNCTION_DEFAULT.replace("= F.relu)", "= F.gelu)")
    assert _lines(code) == _ff(code)
    # a string default: the lookup is taken, and the name decides (as before)
    code = FUNCTION_DEFAULT.replace("= F.relu)", '= "gelu")')
    assert _lines(code) == _ff(code)
    # a bare name default (a module constant may hold a string): not evident, as before
    code = FUNCTION_DEFAULT.replace("= F.relu)", "= DEFAULT_ACTIVATION)")
    assert _lines(code) == _ff(code)
    # a lookup on every path: whatever the caller names, as before
    code = FUNCTION_DEFAULT.replace(LOOKUP, "        activation = get_activation(activation)\n")
    assert _lines(code) == _ff(code)
    # a test that does not decide the type (`hasattr`): not evident, as before
    code = FUNCTION_DEFAULT.replace("if isinstance(activation, str):", 'if hasattr(activation, "lower"):')
    assert _lines(code) == _ff(code)
