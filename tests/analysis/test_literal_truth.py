"""One reading of a literal's truth for parameter defaults and branch tests (scope/bindings and chains/default_branches
shared two copies that disagreed on string texts)."""

from __future__ import annotations

import pytest

from adopter.analysis.scope.literal_truth import literal_truth


@pytest.mark.parametrize("text, truth", [
    ("True", True), ("False", False), ("None", False), ("0", False), ("0.0", False), ("-1", True), ("4", True),
    ("''", False), ('""', False), ("'gelu'", True), ('"bn"', True),
])
def test_a_literal_has_the_truth_python_gives_it(text: str, truth: bool) -> None:
    assert literal_truth(text) is truth


@pytest.mark.parametrize("text", [None, "x", "f(1)", "'' or ''", "'a' + 'b'", "'it\\'s'", "[]"])
def test_anything_but_one_plain_literal_is_undecided(text: str | None) -> None:
    assert literal_truth(text) is None
