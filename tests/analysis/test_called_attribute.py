"""`passed_layers.calls_attribute(text, attr)` answers what the scan of a class's text it replaced answered:
`attr in groups_at_word_starts(_SELF_CALLS, text)` (issue 20, spdinit)."""

from __future__ import annotations

import random

from adopter.analysis.chains.passed_layers import _SELF_CALLS, calls_attribute
from adopter.analysis.parse.words import groups_at_word_starts

TEXTS = [
    "",
    "self.act(x)",
    "self.config = config\nh = self.config.hidden_size\n",  # stored, read, never called
    "myself.act(x) + _self.act(x) + 2self.act(x)",  # not at a word start
    "éself.act(x)\n(self.act (x))",
    "self.self.act(x)",
    "self.actx(x) self.ac(x)",  # another name that starts or ends alike
    "self.act\t\n(x)",
    "self.act[0](x) self.layers[0](x)",
    "self.ααα(x) self.a1(x) self._a(x)",
]
ATTRS = ["act", "ac", "actx", "config", "a1", "_a", "ααα", "self", "layers[0]", "act.b", "1a", "é", ""]


def _scanned(text: str, attr: str) -> bool:
    return attr in set(groups_at_word_starts(_SELF_CALLS, text))


def test_the_attribute_test_is_the_scan() -> None:
    rng = random.Random(20)
    pieces = ["self.", "self.act(", "self.act", "myself.act(", "(", " ", "\n", "x", "é", "self.self.", "_",
              "config", "ac", "t", "[0]", "."]
    texts = list(TEXTS) + ["".join(rng.choice(pieces) for _ in range(rng.randrange(16))) for _ in range(4000)]
    called = 0
    for text in texts:
        for attr in ATTRS:
            expected = _scanned(text, attr)
            assert calls_attribute(text, attr) == expected, (text, attr)
            called += expected
    assert called > 300  # the texts exercise calls, not only their absence


def test_a_stored_config_is_not_called() -> None:
    assert not calls_attribute(TEXTS[2], "config")
    assert calls_attribute("return self.act (h)", "act")
    assert not calls_attribute("return self.act[0](h)", "act")
