"""Optimizers built in methods, or through a class chosen by a parameter or `getattr(torch.optim, name)`."""

from __future__ import annotations

from adopter.analysis.idioms.optimizers import mentions_optimizer
from adopter.dsl.types import Op, OpKind
from adopter.engine import Environment, check, load_rules

from .helpers import module, ops

CODE = """
from torch import optim


class LitModel(nn.Module):
    def forward(self, x):
        return x

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

    def training_step(self, batch):
        return self(batch).sum()


class Trainer:
    def __init__(self, model, lr=1e-3):
        self.optimizer = optim.Adam(model.parameters(), lr=lr)


def make_optimizer(model, optimizer_class=torch.optim.Adam, lr=1e-3):
    return optimizer_class(model.parameters(), lr=lr)


def by_name(model, name="AdamW"):
    opt_cls = getattr(torch.optim, name)
    return opt_cls(model.parameters(), lr=1e-3)


def not_an_optimizer(model, loss_class=nn.MSELoss, name="SGD"):
    opt_cls = getattr(torch.optim, name)
    return loss_class(), opt_cls(model.parameters(), lr=0.1)
"""


def _functions() -> dict[str, list[Op]]:
    return {fn.name: ops(fn.body) for fn in module(CODE).functions}


def test_methods_that_build_optimizers_are_read_like_functions() -> None:
    functions = _functions()
    assert "LitModel.configure_optimizers" in functions and "Trainer.__init__" in functions
    # Methods that do not mention an optimizer, and a module's forward (read as the forward), are not.
    assert "LitModel.training_step" not in functions and "LitModel.forward" not in functions
    assert any(op.target == "torch.optim.AdamW" for op in functions["LitModel.configure_optimizers"])
    assert any(op.target == "torch.optim.Adam" for op in functions["Trainer.__init__"])


def test_a_class_chosen_by_a_default_or_by_name_is_that_class() -> None:
    functions = _functions()
    for name, target in (("make_optimizer", "torch.optim.Adam"), ("by_name", "torch.optim.AdamW")):
        (op,) = [op for op in functions[name] if op.target == target]
        assert op.kind is OpKind.FUNCTION and op.origin is not None and op.origin.kind is OpKind.CALL
    assert not any(op.target.startswith("torch.optim.") for op in functions["not_an_optimizer"]
                   if op.target != "torch.optim.SGD")


def test_findings_and_which_are_fixable() -> None:
    env = Environment("cpu", frozenset(), "2.13.0")
    findings = {f.scope_name: f for f in check(module(CODE), load_rules().rules, env).findings if f.family == 17}
    assert set(findings) == {"LitModel.configure_optimizers", "Trainer.__init__", "make_optimizer", "by_name"}
    assert findings["LitModel.configure_optimizers"].fixable and findings["Trainer.__init__"].fixable
    for name in ("make_optimizer", "by_name"):
        reason = findings[name].no_fix_reason or ""
        assert not findings[name].fixable and "a caller may choose another class" in reason


def test_the_hint_is_a_whole_word() -> None:
    assert mentions_optimizer(b"opt = torch.optim.AdamW(p)") and mentions_optimizer(b"self.optimizer_class(p)")
    assert not mentions_optimizer(b"def optimize_layout(self): ...")
    assert not mentions_optimizer(b"loss.backward(); self.optimizer.step(); self.optimizer.zero_grad()")


KEYWORD_PARAMS = """
import torch
from torch import optim
import bnaf


def by_keyword(model, lr=1e-3):
    return torch.optim.Adam(params=model.parameters(), lr=lr)


def keyword_last(model):
    return optim.AdamW(lr=1e-3, betas=(0.9, 0.99), params=[p for p in model.parameters() if p.requires_grad])


def chosen_by_keyword(model, optimizer_class=torch.optim.AdamW):
    return optimizer_class(params=model.parameters(), lr=1e-3)


def no_parameters(lr=1e-3):
    return torch.optim.Adam(lr=lr)


def another_library(model):
    return bnaf.Adam(params=model.parameters(), lr=1e-3)
"""


def test_parameters_passed_by_keyword_are_the_first_argument() -> None:
    functions = {fn.name: ops(fn.body) for fn in module(KEYWORD_PARAMS).functions}
    for name in ("by_keyword", "keyword_last", "chosen_by_keyword"):
        (op,) = [op for op in functions[name] if op.target.startswith("torch.optim.")]
        assert len(op.args) == 1 and "params" not in {k.name for k in op.kwargs}, name
    env = Environment("cpu", frozenset(), "2.13.0")
    findings = {f.scope_name: f for f in check(module(KEYWORD_PARAMS), load_rules().rules, env).findings
                if f.family == 17}
    # Not sites: an Adam given no parameters (nothing to update: torch raises), another library's Adam.
    assert set(findings) == {"by_keyword", "keyword_last", "chosen_by_keyword"}
    assert findings["by_keyword"].fixable and findings["keyword_last"].fixable
    assert not findings["chosen_by_keyword"].fixable
