"""A submodule bound on several paths is matched with the binding of the path its call runs on
(`engine.path_bindings`, used by the matcher): faesm's ESMC `UnifiedTransformerBlock` binds `self.ffn` to a
SwiGLU Sequential when `ffn_type == "swiglu"` and to a GELU Sequential when it is `"gelu"`, both built by
same-file helpers. The Linear -> GELU pair runs only on the GELU path; it was bound to the SwiGLU helper's
Linear (the first binding with a Linear at that position), so the helper's own site was not recognised as
the same one and the pair was reported twice (dev2 `faesm/esmc.py:315`, a false positive beside the labelled
`:235`). Now it is one site, covering the GELU helper's lines.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.path_bindings import contradicts, path_facts

CUDA = Environment("cuda", frozenset(), "2.13.0")

# faesm 0.1.1, faesm/esmc.py lines 206-238 and 241-318, reduced (attention left out).
ESMC = '''import torch
import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def forward(self, x):
        x1, x2 = x.chunk(2, dim=-1)
        return F.silu(x1) * x2


def swiglu_ln_ffn(d_model, hidden):
    return nn.Sequential(
        nn.LayerNorm(d_model),
        nn.Linear(d_model, hidden * 2, bias=False),
        SwiGLU(),
        nn.Linear(hidden, d_model, bias=False),
    )


def gelu_ln_ffn(d_model, hidden):
    return nn.Sequential(
        nn.LayerNorm(d_model),
        nn.Linear(d_model, hidden, bias=False),
        nn.GELU(),
        nn.Linear(hidden, d_model, bias=False),
    )


class Block(nn.Module):
    def __init__(self, d_model, hidden, ffn_type="swiglu"):
        super().__init__()
        if ffn_type == "swiglu":
            self.ffn = swiglu_ln_ffn(d_model, hidden)
        elif ffn_type == "gelu":
            self.ffn = gelu_ln_ffn(d_model, hidden)
        else:
            raise ValueError(ffn_type)

    def forward(self, x):
        return x + self.ffn(x)
'''


def _line(text: str) -> int:
    return ESMC.splitlines().index(text) + 1


def test_the_gelu_path_pair_is_one_site_with_the_gelu_helpers_lines() -> None:
    rules = [r for r in load_rules().rules if r.family == 6]
    found = check(analyse(ESMC, "esmc.py"), rules, CUDA).findings
    assert len(found) == 1, [(f.scope_name, f.span.start_line + 1) for f in found]
    lines = {n + 1 for s in (found[0].span, *found[0].stmt_spans, *found[0].init_spans)
             for n in range(s.start_line, s.end_line + 1)}
    assert _line("        nn.Linear(d_model, hidden, bias=False),") in lines
    assert _line("            self.ffn = gelu_ln_ffn(d_model, hidden)") in lines or found[0].scope_name == "gelu_ln_ffn"
    assert _line("            self.ffn = swiglu_ln_ffn(d_model, hidden)") not in lines


def test_a_condition_is_contradicted_only_by_a_test_taken_the_other_way() -> None:
    then = path_facts(((('ffn_type == "swiglu"', "else"), 0),))
    other = path_facts(((('ffn_type == "swiglu"', "else"), 1),))
    assert contradicts('not (ffn_type == "swiglu") and ffn_type == "gelu"', then)
    assert not contradicts('not (ffn_type == "swiglu") and ffn_type == "gelu"', other)
    assert contradicts('ffn_type == "swiglu"', other)
    assert not contradicts('ffn_type == "swiglu"', then)
    # an `or`, or a test the path does not name, contradicts nothing
    assert not contradicts('ffn_type == "swiglu" or big', other)
    assert not contradicts("use_bias", other)
    # elif: the second alternative has the first test false and its own true
    elif_path = path_facts(((("a", "b", "else"), 1),))
    assert contradicts("a", elif_path) and contradicts("not (b)", elif_path) and not contradicts("b", elif_path)
