"""Heads that apply layer k to input k and return the results (BERT's pre-training heads), read through an
unpacking call in the submodule view: `a, b = self.cls(x, y)` runs `cls`'s layer 0 from `x` to `a` and its
layer 1 from `y` to `b`.

Shaped on bert4pytorch 0.1.2 `bert4pytorch/modeling.py` 423-432 and 651 (the same head in transformers'
`models/bert/modeling_bert.py`, pytorch-pretrained-bert 0.6.2 and mergoo), rewritten at fixture size.
"""

from __future__ import annotations

from adopter.analysis.canonical.normalise import submodule_view
from adopter.dsl.types import Op

from .helpers import arch, reanalysed_after

SOURCE = """
class Predictions(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.transform = nn.Linear(d, d)
        self.decoder = nn.Linear(d, vocab)

    def forward(self, h):
        h = self.transform(h)
        return self.decoder(h)


class Heads(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.predictions = Predictions(d, vocab)
        self.seq_relationship = nn.Linear(d, 2)

    def forward(self, sequence_output, pooled_output):
        prediction_scores = self.predictions(sequence_output)
        seq_relationship_score = self.seq_relationship(pooled_output)
        return prediction_scores, seq_relationship_score


class Outer(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.heads = Heads(d, vocab)

    def forward(self, x, y):
        return self.heads(x, y)


class Model(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.cls = Heads(d, vocab)
        self.outer = Outer(d, vocab)

    def forward(self, x, pooled):
        scores, nsp = self.cls(x, pooled)
        return scores, nsp
"""


def _view(name: str) -> list[Op]:
    a = arch(SOURCE, name=name)
    assert a.forward is not None and a.init is not None
    view = submodule_view(a.forward, a.init.bindings)
    assert view is not None
    return [s for s in view.body if isinstance(s, Op)]


def test_an_unpacking_call_runs_layer_k_from_argument_k_to_result_k() -> None:
    ops = [op for op in _view("Model") if op.via == ("self.cls",)]
    assert [op.target for op in ops] == ["self.cls.predictions.transform", "self.cls.predictions.decoder",
                                         "self.cls.seq_relationship"]
    assert [a.name for a in ops[0].args if hasattr(a, "name")] == ["x"]
    assert ops[1].outputs == ("scores",)
    assert [a.name for a in ops[2].args if hasattr(a, "name")] == ["pooled"] and ops[2].outputs == ("nsp",)


def test_the_leaves_are_bound_in_the_order_of_the_heads_layers() -> None:
    model = arch(SOURCE, name="Model")
    assert model.init is not None
    assert [b.attr for b in model.init.bindings if b.attr.startswith("cls.")] == [
        "cls.predictions.transform", "cls.predictions.decoder", "cls.seq_relationship"]


def test_a_chain_that_runs_such_a_head_is_not_read_through() -> None:
    # Outer.forward passes two inputs on: it is no chain, and the head's layers are read only where they are
    # the analysed class's own submodule.
    model = arch(SOURCE, name="Model")
    assert model.init is not None
    assert not any(b.attr.startswith("outer.") for b in model.init.bindings)


def test_editing_the_heads_forward_reanalyses_its_user() -> None:
    units, same = reanalysed_after(SOURCE, "        return prediction_scores, seq_relationship_score",
                                   "return seq_relationship_score, prediction_scores")
    assert "class Model" in units and same
