"""`bias_submodules.updated_attributes` gives what the regular expression it replaces gave (issue 22, speed38).

The scan of a forward's text for `x = self.attr(x, ...)` began with `\\b` before the target's name, so the regex
engine tried the pattern at every offset of the text (0.2 s over check_speed's 202 files); it is now searched from
its `=` and the name before is read back. The old expression is the oracle here, over texts built to hold
matches, near-matches and the characters that decide them (`\\s`, `\\w`, a digit first, non-ASCII bytes).
"""

from __future__ import annotations

import random
import re

from adopter.analysis.idioms.bias_submodules import updated_attributes

OLD = re.compile(rb"\b([A-Za-z_]\w*)\s*=\s*self\.([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*)\s*[,)]")


def _old(forward: bytes) -> set[str]:
    return {m.group(2).decode() for m in OLD.finditer(forward) if m.group(1) == m.group(3)}


TEXTS = [
    b"",
    b"x = self.cpb(x)",  # dalle2-pytorch's `sim = self.rel_pos_bias(sim)` at fixture size
    b"    def forward(self, x):\n        x = self.norm(x, mask)\n        y = self.proj(x)\n        return x\n",
    b"x=self.a(x,y)\nx\t=\n self.b( x )",  # whitespace of every kind around `=` and in the call
    b"1x = self.a(1x) _x = self.b(_x) x1 = self.c(x1)",  # a name may not start with a digit
    b"ax = self.a(x) x == self.b(x) x <= self.c(x) x += self.d(x)",  # not a plain `=` after the whole name
    b"\xc3\xa9x = self.a(x) x = self.\xc3\xa9(x) x = self.a(\xc3\xa9x)",  # non-ASCII bytes are no `\w` here
    b"x = self.a(x) = self.b(x)",  # two `=`: each match is read from its own
    b"x = self.a(y) y = self.b(y, x) z = self.c (z)",
    b"= self.a(x)",  # no name before
]


def test_update_scan_is_the_regex_form() -> None:
    rng = random.Random(38)
    pieces = [b"x", b"y", b"1", b"_", b" ", b"\n", b"\t", b"=", b"==", b"self.", b"a", b"(", b")", b",", b"\xc3\xa9",
              b"x = self.a(x", b"self.b(", b"+"]
    texts = list(TEXTS)
    texts += [b"".join(rng.choice(pieces) for _ in range(rng.randrange(30))) for _ in range(20000)]
    found = 0
    for text in texts:
        expected = _old(text)
        assert updated_attributes(text) == expected, text
        found += bool(expected)
    assert found > 500  # the texts exercise matches, not only their absence


def test_update_scan_on_examples() -> None:
    assert updated_attributes(TEXTS[1]) == {"cpb"}
    assert updated_attributes(TEXTS[2]) == {"norm"}
    assert updated_attributes(TEXTS[3]) == {"a", "b"}
    assert updated_attributes(TEXTS[4]) == {"b", "c"}
    assert updated_attributes(TEXTS[5]) == set()
    assert updated_attributes(TEXTS[9]) == set()
