"""Same-file submodules whose forward only chains their own layers, read through at their call."""

from __future__ import annotations

import pytest

from adopter.analysis.canonical.normalise import submodule_view
from adopter.dsl.types import Ctor, Op

from .helpers import HEADER, arch, reanalysed_after

SOURCE = """
class Transform(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)
        self.act = nn.GELU()

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.act(hidden_states)
        return hidden_states


class Head(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.transform = Transform(d)
        self.decoder = nn.Linear(d, vocab)

    def forward(self, hidden_states):
        '''A docstring is not a step.'''
        hidden_states = self.transform(hidden_states)
        return self.decoder(hidden_states)


class TwoInputs(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dense = nn.Linear(d, d)

    def forward(self, hidden_states, residual):
        return self.dense(hidden_states) + residual


class Model(nn.Module):
    def __init__(self, d, vocab):
        super().__init__()
        self.cls = Head(d, vocab)
        self.out = TwoInputs(d)

    def forward(self, x):
        scores = self.cls(x)
        return self.out(scores, x)
"""


def _view_ops(name: str) -> list[Op]:
    a = arch(SOURCE, name=name)
    assert a.forward is not None and a.init is not None
    view = submodule_view(a.forward, a.init.bindings)
    assert view is not None
    return [s for s in view.body if isinstance(s, Op)]


def test_the_architecture_keeps_the_call_and_the_view_reads_it_through_at_the_call() -> None:
    model = arch(SOURCE, name="Model")
    assert model.forward is not None
    assert [s.target for s in model.forward.body if isinstance(s, Op)] == ["self.cls", "self.out"]
    ops = _view_ops("Model")
    call_line = next(i for i, line in enumerate((HEADER + SOURCE).splitlines()) if "scores = self.cls(x)" in line)
    unrolled = [op for op in ops if op.via == ("self.cls",)]
    assert [op.target for op in unrolled] == ["self.cls.transform.dense", "torch.nn.functional.gelu",
                                             "self.cls.decoder"]
    assert all(op.stmt_span.start_line == call_line for op in unrolled)
    assert unrolled[-1].outputs == ("scores",)
    # A forward with two inputs is not a chain: the call stays one module op.
    assert any(op.target == "self.out" for op in ops)


def test_the_leaf_layers_are_bound_with_the_submodules_own_spans() -> None:
    model = arch(SOURCE, name="Model")
    assert model.init is not None
    derived = {b.attr: b for b in model.init.bindings if "." in b.attr}
    assert sorted(derived) == ["cls.decoder", "cls.transform.act", "cls.transform.dense"]
    decoder = derived["cls.decoder"]
    assert isinstance(decoder.value, Ctor) and decoder.value.callee == "torch.nn.Linear"
    line = next(i for i, text in enumerate((HEADER + SOURCE).splitlines()) if "self.decoder = nn.Linear" in text)
    assert decoder.span.start_line == line


@pytest.mark.parametrize("body", [
    "hidden_states = self.transform(hidden_states)\n        return self.decoder(hidden_states) * 2",
    "if self.training:\n            hidden_states = self.transform(hidden_states)\n        return self.decoder(hidden_states)",
    "return self.decoder(self.transform(hidden_states), hidden_states)",
    "return self.decoder(self.transform(hidden_states) + 1)",
])
def test_anything_else_in_the_forward_stops_the_read(body: str) -> None:
    start = SOURCE.index("        '''A docstring")
    end = SOURCE.index("        return self.decoder(hidden_states)\n") + len("        return self.decoder(hidden_states)\n")
    text = SOURCE[:start] + "        " + body + "\n" + SOURCE[end:]
    model = arch(text, name="Model")
    assert model.init is not None
    assert not any("." in b.attr for b in model.init.bindings)


def test_a_call_of_a_call_is_the_same_chain() -> None:
    # `return self.decoder(self.transform(h))` applies transform, then decoder, as the two statements do.
    start = SOURCE.index("        '''A docstring")
    end = SOURCE.index("        return self.decoder(hidden_states)\n") + len("        return self.decoder(hidden_states)\n")
    text = SOURCE[:start] + "        return self.decoder(self.transform(hidden_states))\n" + SOURCE[end:]
    model = arch(text, name="Model")
    assert model.init is not None
    assert sorted(b.attr for b in model.init.bindings if "." in b.attr) == [
        "cls.decoder", "cls.transform.act", "cls.transform.dense"]


def test_editing_the_submodule_forward_reanalyses_its_user() -> None:
    units, same = reanalysed_after(SOURCE, "        return self.decoder(hidden_states)",
                                   "return self.decoder(hidden_states) + 1")
    assert "class Model" in units and same


def test_a_user_depends_on_the_shape_of_a_submodule_forward_not_its_text() -> None:
    # TwoInputs.forward is no chain before or after this edit: Model is not analysed again.
    units, same = reanalysed_after(SOURCE, "        return self.dense(hidden_states) + residual",
                                   "return self.dense(hidden_states) - residual")
    assert "class Model" not in units and "class TwoInputs" in units and same
