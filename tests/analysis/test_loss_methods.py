"""Loss methods of a module read like its forward (`adopter.analysis.idioms.loss_methods`)."""

from __future__ import annotations

from adopter.engine import Environment, check, load_rules

from .helpers import module, ops

CODE = """
class CharLM(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, h):
        return self.head(h)

    def compute_loss(self, h, targets):
        logits = self(h)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    def sample(self, h):
        return self(h).argmax(-1)


class NotAModule:
    def loss(self, logits, y):
        return F.cross_entropy(logits, y)
"""


def test_a_loss_method_is_read_with_the_modules_layers() -> None:
    mf = module(CODE)
    # `sample` runs the module itself: an entry method (`entry_methods`), not a loss method
    assert sorted(a.name for a in mf.chains) == ["CharLM.compute_loss", "CharLM.sample"]
    (arch,) = [a for a in mf.chains if a.name == "CharLM.compute_loss"]
    assert arch.name == "CharLM.compute_loss" and arch.init is not None and arch.forward is not None
    targets = [op.target for op in ops(arch.forward.body)]
    # `self(h)` runs the module's forward, inlined as `self.forward`.
    assert targets[:2] == ["self.head", "flatten"] and "torch.nn.functional.cross_entropy" in targets
    assert next(op.via for op in ops(arch.forward.body)) == ("self.forward",)


def test_family_16_is_found_in_the_loss_method() -> None:
    env = Environment("cuda", frozenset({"liger_kernel"}), "2.13.0")
    findings = [f for f in check(module(CODE), load_rules().rules, env).findings if f.family == 16]
    assert [f.scope_name for f in findings] == ["CharLM.compute_loss"]
