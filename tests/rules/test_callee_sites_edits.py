"""The callee check over a document's successive texts, as the server runs it on each keystroke: the use table of
each top-level statement is remembered by its text (`adopter.engine.file_uses`), so a use of the helper written,
moved or taken away by an edit must change the site's fixability on that very text, and an edit elsewhere must
not. The texts are `test_callee_sites`'s (transformers 4.46.3 prophetnet's `softmax` helper) edited in place.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from attention_harness import rules_of

from adopter.engine import Environment
from adopter.session import RuleContext, Session

SOFTMAX = rules_of("f04-softmax")
LIGER = Environment(device="cuda", packages=frozenset({"liger_kernel"}), torch_version="2.13.0")

ONE_CALL = """
import torch
import torch.nn.functional as F
from torch import nn


def softmax(hidden_state, dim):
    return F.softmax(hidden_state, dim=dim)


class TwoStreams(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.main = nn.Linear(c, c)
        self.predict = nn.Linear(c, c)

    def forward(self, x):
        main_scores = self.main(x)
        predict_scores = self.predict(x)
        main_probs = softmax(main_scores, dim=-1)
        return main_probs + predict_scores
"""

STORED = ONE_CALL.replace("        self.predict = nn.Linear(c, c)\n",
                          "        self.predict = nn.Linear(c, c)\n        self.normaliser = softmax\n")
IN_A_TABLE = ONE_CALL + '\n\nNORMALISERS = {"softmax": softmax}\n'
OTHER_AXIS = ONE_CALL + "\n\ndef over_groups(x):\n    return softmax(x, -2)\n"
RENAMED = IN_A_TABLE.replace('{"softmax": softmax}', '{"softmax": softmax_}')
COMMENTED = ONE_CALL.replace("class TwoStreams", "# softmax(x, 0) is not a call\nclass TwoStreams")


@pytest.mark.parametrize(("texts", "fixable"), [
    ((ONE_CALL, STORED, ONE_CALL), [True, False, True]),
    ((ONE_CALL, IN_A_TABLE, RENAMED, IN_A_TABLE), [True, False, True, False]),
    ((ONE_CALL, OTHER_AXIS, ONE_CALL, COMMENTED), [True, False, True, True]),
], ids=["stored-in-the-class", "a-table-after-it", "a-call-at-another-axis"])
def test_each_text_of_an_edited_document_decides_the_helper_afresh(texts: tuple[str, ...],
                                                                   fixable: list[bool]) -> None:
    session = Session(RuleContext(SOFTMAX, (), LIGER))  # type: ignore[arg-type]
    decided = []
    for text in texts:
        analysed = session.analysed(text, "case.py")
        decided.append([f.fixable for f in analysed.findings])
        fresh = Session(RuleContext(SOFTMAX, (), LIGER)).analysed(text, "other.py")  # type: ignore[arg-type]
        assert [(f.fixable, f.no_fix_reason) for f in analysed.findings] == [
            (f.fixable, f.no_fix_reason) for f in fresh.findings]
    assert decided == [[f] for f in fixable], decided
