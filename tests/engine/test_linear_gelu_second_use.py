"""A Linear whose output something else also reads is no Linear -> GELU site (issue 20, family 6; fresh4's W3).

audyn 0.4.0 `models/clap.py` `MicrosoftMLPHead`, written anew in the same form: `x_1 = linear1(x)`, `x_2 =
linear2(gelu(x_1))`, `norm(x_1 + x_2)`. The fused helper hands back only GELU(x W^T + b), so fusing would lose the
pre-activation the residual reads; the recall oracle (inner nodes with one user, but families 5 and 16) and the
labellers (dev2 LABELLING: a conv output with a second use is no site) read it the same way. Before, `single_use`
only withheld the fix and the site was still reported; `only_use` refuses it, as family 7 does.
"""

from __future__ import annotations

from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

CUDA = Environment("cuda", frozenset(), "2.13.0")

HEAD = '''import torch
from torch import nn


class ProjectionHead(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, dropout: float = 0.5) -> None:
        super().__init__()
        self.linear1 = nn.Linear(in_channels, out_channels)
        self.activation = nn.GELU()
        self.linear2 = nn.Linear(out_channels, out_channels)
        self.dropout = nn.Dropout(p=dropout)
        self.norm = nn.LayerNorm(out_channels)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        x_1 = self.linear1(input)
        x_2 = self.activation(x_1)
        x_2 = self.linear2(x_2)
        x_2 = self.dropout(x_2)
        output = self.norm(x_1 + x_2)
        return output
'''


def _sites(code: str) -> list[tuple[str, int]]:
    session = Session(RuleContext(tuple(load_rules().rules), (), CUDA))
    return sorted((f.rule_id, f.span.start_line + 1) for f in session.analysed(code, "m.py").findings)


def _line(code: str, text: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines(), 1) if text in ln)


def test_a_linear_output_read_again_is_no_linear_gelu() -> None:
    found = _sites(HEAD)
    assert [s for s in found if s[0].startswith("f06-")] == []  # failed on 2bf90d0: [("f06-linear-gelu", 15)]
    # the dropout -> add -> LayerNorm beside it is left as it was
    assert ("f05-dropout-add-layernorm", _line(HEAD, "x_2 = self.dropout(x_2)")) in found


def test_the_neighbours_stay_sites() -> None:
    # the residual is the block's input: the Linear's output goes only into the GELU
    code = HEAD.replace("self.norm(x_1 + x_2)", "self.norm(input + x_2)")
    assert ("f06-linear-gelu", _line(code, "x_1 = self.linear1(input)")) in _sites(code)
    # a read of the Linear output's size alone keeps the site (`only_use`)
    code = HEAD.replace("output = self.norm(x_1 + x_2)", "output = self.norm(x_2.view(x_1.shape))")
    assert ("f06-linear-gelu", _line(code, "x_1 = self.linear1(input)")) in _sites(code)
    # the same projection written inline
    code = HEAD.replace('''        x_1 = self.linear1(input)
        x_2 = self.activation(x_1)
''', '''        x_2 = self.activation(self.linear1(input))
''').replace("x_1 + x_2", "input + x_2")
    assert ("f06-linear-gelu", _line(code, "x_2 = self.activation(self.linear1(input))")) in _sites(code)
