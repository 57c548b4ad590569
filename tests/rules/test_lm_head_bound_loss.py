"""Family 16 reads a local loss module by the value bound to it, not by the local's name (helper `mech120`).

`criterion = nn.CrossEntropyLoss(); loss = criterion(logits.view(-1, V), labels.view(-1))`: the call of the
local runs the module its reaching binding built (`adopter.analysis.canonical.bound_losses`), read as
`F.cross_entropy` with the constructor's arguments, whatever the local is named. The rule matched the name
`loss_fct` of Hugging Face models before: a renamed local (`loss_func`, `mlm_loss_fct`, `loss_fn`) lost the site,
and a `loss_fct` bound to another loss (`MSELoss()`) or to something unknown was reported.

Shaped on transformers 4.46.3 `models/cpmant/modeling_cpmant.py` lines 820-825 (`loss_func = CrossEntropyLoss()`
after `logits = self.lm_head(hidden_states)`), antiberty 1.0.0 `antiberty/model/AntiBERTy.py` lines 113-119
(`mlm_loss_fct = nn.CrossEntropyLoss()` under `if exists(labels):`) and transformers 4.46.3
`models/deprecated/jukebox/modeling_jukebox.py` lines 1398-1404 (`loss_fn = nn.CrossEntropyLoss()` bound before
an `if` whose two paths call it). Rewritten at fixture size. Detection only (the rule has no automatic fix).
"""

from __future__ import annotations

import pytest
from attention_harness import findings_of, rules_of

RULES = rules_of("f16-linear-cross-entropy")

HEAD = '''from torch import nn
from torch.nn import CrossEntropyLoss, MSELoss


class ForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.body = nn.Linear(config.hidden_size, config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids, labels=None):
        hidden_states = self.body(input_ids)
        logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
BODY
        return loss, logits
'''


def _sites(body: str) -> list[int]:
    source = HEAD.replace("BODY", "\n".join(f"            {line}" if line else "" for line in body.splitlines()))
    return [f.span.start_line + 1 for f in findings_of(source, RULES)]


# the head's line in HEAD: where a site is reported
SITE = 15


@pytest.mark.parametrize("local", ["loss_func", "criterion", "mlm_loss_fct", "loss_fn", "ce", "loss_fct"])
def test_a_local_bound_to_cross_entropy_is_read_whatever_its_name(local: str) -> None:
    # cpmant (`loss_func`), antiberty (`mlm_loss_fct`); `loss_fct` is the Hugging Face spelling, still a site
    body = f"""{local} = CrossEntropyLoss()
loss = {local}(logits.view(-1, logits.size(-1)), labels.view(-1))"""
    assert _sites(body) == [SITE]


@pytest.mark.parametrize("ctor", ["nn.CrossEntropyLoss(ignore_index=-100)", "CrossEntropyLoss(reduction='none')",
                                  "nn.CrossEntropyLoss(label_smoothing=0.1)"])
def test_the_constructor_arguments_are_the_functions_keywords(ctor: str) -> None:
    body = f"""criterion = {ctor}
loss = criterion(logits.view(-1, self.config.vocab_size), labels.view(-1))"""
    assert _sites(body) == [SITE]


def test_a_binding_before_a_branch_reaches_the_calls_on_each_path() -> None:
    # jukebox: `loss_fn = nn.CrossEntropyLoss()` then `if get_sep_loss:` with a call of it on each path
    body = """loss_fn = nn.CrossEntropyLoss()
if self.config.sep:
    loss = loss_fn(logits.reshape(-1, self.config.vocab_size), labels.reshape(-1)) * 0.5
else:
    loss = loss_fn(logits.view(-1, self.config.vocab_size), labels.view(-1))"""
    assert _sites(body) == [SITE]


def test_a_binding_reaches_past_an_if_whose_paths_do_not_rebind_it() -> None:
    # transformers 4.46.3 `models/nllb_moe/modeling_nllb_moe.py` lines 1702-1716 (gptsan_japanese 1229-1238 too):
    # `loss_fct = CrossEntropyLoss(ignore_index=-100)`, then `if output_router_logits:` computing router losses,
    # then the call
    body = """loss_fct = CrossEntropyLoss(ignore_index=-100)
if self.config.output_router_logits:
    aux = self.body(hidden_states)
loss = loss_fct(logits.view(-1, logits.size(-1)), labels.view(-1))"""
    assert _sites(body) == [SITE]


# ---- refusals: the nearest look-alikes that are not a site


def test_loss_fct_bound_to_another_loss_is_not_a_site() -> None:
    body = """loss_fct = MSELoss()
loss = loss_fct(logits.view(-1, self.config.vocab_size), labels.view(-1))"""
    assert _sites(body) == []


def test_loss_fct_bound_to_something_unknown_is_not_a_site() -> None:
    body = """loss_fct = self.loss_fn
loss = loss_fct(logits.view(-1, self.config.vocab_size), labels.view(-1))"""
    assert _sites(body) == []


def test_a_local_rebound_between_construction_and_call_is_not_a_site() -> None:
    body = """criterion = CrossEntropyLoss()
criterion = MSELoss()
loss = criterion(logits.view(-1, self.config.vocab_size), labels.view(-1))"""
    assert _sites(body) == []


def test_a_binding_under_one_path_of_an_if_does_not_reach_past_it() -> None:
    body = """if self.config.smooth:
    criterion = MSELoss()
else:
    criterion = CrossEntropyLoss()
loss = criterion(logits.view(-1, self.config.vocab_size), labels.view(-1))"""
    assert _sites(body) == []


def test_a_local_rebound_later_in_a_loop_body_is_not_read_at_an_earlier_call() -> None:
    body = """criterion = CrossEntropyLoss()
for _ in range(2):
    loss = criterion(logits.view(-1, self.config.vocab_size), labels.view(-1))
    criterion = MSELoss()"""
    assert _sites(body) == []


def test_a_cross_entropy_of_a_classifier_not_the_vocabulary_head_is_not_a_site() -> None:
    body = """criterion = CrossEntropyLoss()
scores = self.classifier(hidden_states)
loss = criterion(scores.view(-1, self.config.num_labels), labels.view(-1))"""
    assert _sites(body) == []


def test_a_loss_module_held_as_an_attribute_is_read_as_before() -> None:
    # `self.criterion = nn.CrossEntropyLoss()` in `__init__`, called in `forward`: read by the module's binding
    source = HEAD.replace(
        "        self.classifier = nn.Linear(config.hidden_size, config.num_labels)\n",
        "        self.criterion = nn.CrossEntropyLoss(ignore_index=0)\n").replace(
        "BODY", "            loss = self.criterion(logits.view(-1, self.config.vocab_size), labels.view(-1))")
    assert [f.span.start_line + 1 for f in findings_of(source, RULES)] == [SITE]
