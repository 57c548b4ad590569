"""A one-off analysis and match (`analyse`, `Session.analysed`) keeps nothing for a later run: no unit records
the names it consulted or their fingerprints, no rule's result is kept with the questions it asked of
`__init__`; what it computes equals the remembering analysis and match, field by field."""

from __future__ import annotations

import pytest

from adopter.analysis.analyser import Analyser
from adopter.analysis.parse.source import new_parser

from .helpers import strictly_equal
from .test_forward_flow_reuse import SOURCE


def _run(remember: bool) -> tuple[Analyser, object]:
    analyser = Analyser(remember=remember)
    data = SOURCE.encode()
    return analyser, analyser.run(data, new_parser().parse(data), "m.py")


def test_a_one_off_analysis_records_no_dependencies() -> None:
    kept, remembered = _run(True)
    once, one_off = _run(False)
    assert strictly_equal(one_off, remembered)
    assert any(entry.deps for entry in kept.cache.values())  # the document's analyser checks these next run
    # (the top-level code's entry keeps its statements' positions, a key rather than a dependency)
    assert all(name == "<starts>" for entry in once.cache.values() for name, _ in entry.deps)
    assert all(not entry.bases for entry in once.cache.values())
    assert all(not flow.deps for flows in once._flows.values() for flow in flows)


@pytest.mark.pure_python
def test_a_one_off_match_keeps_no_rule_results() -> None:
    from adopter.session import UnitMatcher, load_context

    context = load_context()
    assert context.environment is not None
    _, module_file = _run(False)
    matcher, once = UnitMatcher(), UnitMatcher(remember=False)
    found = matcher.match(module_file, context)
    assert found[0]  # the attention class has sites
    assert found == once.match(module_file, context)
    assert matcher._memo is not None and matcher._memo._scopes
    assert once._memo is not None and not once._memo._scopes
