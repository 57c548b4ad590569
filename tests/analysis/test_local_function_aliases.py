"""A local bound to a torch function the canonical table reads (`ce = F.cross_entropy`, lucidrains' CoCa-pytorch
and MaMMUT-pytorch; `softmax = torch.softmax`, TTS): a call of the local is a call of the function
(`flow.statements`, `canonical.spellings.LOCAL_FUNCTIONS`). The value reaching the call decides: a local rebound
before it, or holding the function on one path of an `if` only, is not the function there."""

from __future__ import annotations

import pytest

from .helpers import forward_lines

HEAD = '''
class Head(nn.Module):
    def __init__(self, dim, num_tokens):
        super().__init__()
        self.to_logits = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_tokens, bias=False))
        self.loss_fn = nn.MSELoss()

    def forward(self, x, labels, flag=False):
        logits = self.to_logits(x)
{body}
'''


def _calls(body: str) -> list[str]:
    """The ops of the forward after the logits (the calls the body makes)."""
    code = HEAD.format(body="\n".join("        " + ln for ln in body.strip("\n").splitlines()))
    return [ln for ln in forward_lines(code) if "to_logits" not in ln]


@pytest.mark.parametrize(("alias", "arguments", "op"), [
    ("F.cross_entropy", "logits, labels", "function torch.nn.functional.cross_entropy(logits, labels)"),
    ("torch.nn.functional.cross_entropy", "logits, labels",
     "function torch.nn.functional.cross_entropy(logits, labels)"),
    ("torch.matmul", "logits, labels", "function torch.matmul(logits, labels)"),
    ("F.log_softmax", "logits, dim=-1", "function torch.nn.functional.log_softmax(logits, dim=-1)"),
    # read before: the partial functions' table (the canonical form spells it `F.softmax`)
    ("torch.softmax", "logits, dim=-1", "function torch.nn.functional.softmax(logits, dim=-1)"),
])
def test_a_local_holding_a_table_function_is_that_function_at_its_calls(alias: str, arguments: str, op: str) -> None:
    assert _calls(f"fn = {alias}\nloss = fn({arguments})\nreturn loss") == [f"loss = {op}"]


def test_coca_shorthand_called_three_times() -> None:
    calls = _calls('''
ce = F.cross_entropy
caption_loss = ce(logits, labels, ignore_index=0)
contrastive = (ce(logits, labels) + ce(logits.t(), labels)) * 0.5
return caption_loss + contrastive
''')
    assert sum("function torch.nn.functional.cross_entropy(" in c for c in calls) == 3
    assert not [c for c in calls if " call ce(" in c]


@pytest.mark.parametrize("body", [
    # rebound before the call: the later value is what the call runs
    "ce = F.cross_entropy\nce = self.loss_fn\nreturn ce(logits, labels)",
    # the function on one path of an `if` only
    "if flag:\n    ce = F.cross_entropy\nelse:\n    ce = self.loss_fn\nreturn ce(logits, labels)",
    # a torch function the table does not read: left as the local's call
    "ce = F.mse_loss\nreturn ce(logits, labels)",
    # a module of the user's own named like torch's
    "import mylib.functional as G\nce = G.cross_entropy\nreturn ce(logits, labels)",
])
def test_a_local_that_does_not_hold_a_table_function_at_the_call_stays_a_call(body: str) -> None:
    assert not [c for c in _calls(body) if "function torch.nn.functional.cross_entropy(" in c]
