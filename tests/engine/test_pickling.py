"""The rule set and its environment survive pickling, as they do when `check --ray-address` sends them to
the cluster's workers (Ray pickles them with cloudpickle, which consults copyreg like pickle).

Under the compiled build (mypyc) a frozen dataclass's default restore sets each attribute and fails
with FrozenInstanceError; this test runs under whichever build is active (`make test` runs it compiled).
"""

from __future__ import annotations

import pickle

from adopter.session import load_context


def test_the_rule_context_round_trips_through_pickle() -> None:
    context = load_context(target="cpu")
    assert context.rules, context.problems
    again = pickle.loads(pickle.dumps(context))
    assert again == context
    assert [r.id for r in again.rules] == [r.id for r in context.rules]
    assert again.rules[0].span == context.rules[0].span  # compare=False fields are carried too
    assert again.rules[0].path == context.rules[0].path

