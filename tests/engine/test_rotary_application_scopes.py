"""A rotary helper that rotates one tensor, applied in several functions: one site per function (retB39).

Family 15 counts one site per q/k pair, or per application of a helper that rotates one tensor, at the q
statement (`shared/design/RULES.md`; `bench/data/realworld/LABELLING.md`). `engine.applications` reported one
site per application path inside one forward; the applications of one helper in different classes or entry
methods were joined into one site at the helper's lines (`engine.sites._one_per_site`: one finding per source
site). Forms of the retired held-out batches: nano-deepseek-v4 0.1 `modeling.py` (`apply_partial_rope` applied
in four classes, one of them also through its `_compress` method), yet-another-retnet 0.5.1 `retention.py`
(`_theta_shift` in `forward_parallel`, which `forward` calls, and in the entry methods `forward_recurrent` and
`forward_chunkwise`), perceiver-ar-pytorch 0.0.10 (one helper in two attention classes, each with its own
position tables). One site stays one: a pair helper applied by two classes (transformers' `apply_rotary_pos_emb`),
a class whose call runs another function's applications (open-moonvit's `apply_rotary_2d`), an inherited forward.
"""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding

HEADER = "import torch\nfrom torch import nn\n\n\n"

# A helper that rotates one tensor (rotate-half form, the tables as arguments).
ROTATE = '''
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin
'''

TWO_CLASSES = ROTATE + '''

class SelfAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, cos, sin):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


class PrefixAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, x, context, q_cos, q_sin, k_cos, k_sin):
        q = self.q(x)
        k, v = self.kv(torch.cat((context, x), dim=1)).chunk(2, dim=-1)
        q = apply_rope(q, q_cos, q_sin)
        k = apply_rope(k, k_cos, k_sin)
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
'''

# One class rotates its keys (with their own positions) in a method the forward calls and its query in the
# forward; another class its compressed keys only (nano-deepseek-v4's indexer and compressor).
THROUGH_A_METHOD = ROTATE + '''

class Indexer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.wq = nn.Linear(dim, dim)
        self.wk = nn.Linear(dim, dim)

    def compress(self, x, k_cos, k_sin):
        keys = self.wk(x).unsqueeze(1)
        return apply_rope(keys, k_cos, k_sin).squeeze(1)

    def forward(self, x, cos, sin, k_cos, k_sin):
        keys = self.compress(x, k_cos, k_sin)
        q = apply_rope(self.wq(x).transpose(1, 2), cos, sin).transpose(1, 2)
        return q @ keys.transpose(-2, -1)


class Compressor(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.wkv = nn.Linear(dim, dim)

    def forward(self, x, cos, sin):
        kv = apply_rope(self.wkv(x).unsqueeze(1), cos, sin)
        return kv.squeeze(1).mean(dim=1)
'''

# A pair helper: q and k rotated by statements of their own in the helper; one site in the helper.
PAIR = '''
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, cos, sin):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v


class FlashAttention(Attention):
    def forward(self, x, cos, sin):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return nn.functional.scaled_dot_product_attention(q, k, v)
'''

# A class that calls a module-level function applying the one-tensor helper to q and k: the site is that
# function's application pair, which the class only runs (open-moonvit's `apply_rotary_2d`).
THROUGH_A_FUNCTION = ROTATE + '''

def rotate_pair(q, k, cos, sin):
    return apply_rope(q, cos, sin), apply_rope(k, cos, sin)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, cos, sin):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k = rotate_pair(q, k, cos, sin)
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
'''


def findings(code: str) -> list[Finding]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [f for f in check(analyse(HEADER + code, "m.py"), load_rules().rules, env).findings if f.family == 15]


def line(code: str, needle: str, nth: int = 0) -> int:
    """0-based line of the `nth` line holding `needle` in HEADER + code."""
    return [i for i, text in enumerate((HEADER + code).splitlines()) if needle in text][nth]


def lines(f: Finding) -> set[int]:
    return {n for s in (f.span, *f.stmt_spans) for n in range(s.start_line, s.end_line + 1)}


def test_one_site_per_class_that_applies_a_one_tensor_helper() -> None:
    found = findings(TWO_CLASSES)
    first, second = line(TWO_CLASSES, "q = apply_rope(q, cos"), line(TWO_CLASSES, "q = apply_rope(q, q_cos")
    assert sorted(f.span.start_line for f in found) == [first, second]
    formula = line(TWO_CLASSES, "return x * cos + rotate_half(x) * sin")
    by_line = {f.span.start_line: f for f in found}
    assert {first, line(TWO_CLASSES, "k = apply_rope(k, cos"), formula} <= lines(by_line[first])
    assert {second, line(TWO_CLASSES, "k = apply_rope(k, k_cos"), formula} <= lines(by_line[second])
    assert line(TWO_CLASSES, "k = apply_rope(k, cos") not in lines(by_line[second])
    assert all(not f.fixable for f in found)


def test_an_application_through_a_method_is_in_its_class_site() -> None:
    found = findings(THROUGH_A_METHOD)
    # Indexer: its keys rotated in `compress` (called at `keys = self.compress(...)`) and its query in the
    # forward are one site; Compressor's single application another.
    indexer = line(THROUGH_A_METHOD, "keys = self.compress(x, k_cos, k_sin)")
    compressor = line(THROUGH_A_METHOD, "kv = apply_rope(self.wkv(x)")
    assert sorted(f.span.start_line for f in found) == [indexer, compressor]
    site = next(f for f in found if f.span.start_line == indexer)
    assert line(THROUGH_A_METHOD, "q = apply_rope(self.wq(x)") in lines(site)


def test_one_site_where_the_scopes_do_not_apply_the_helper_apart() -> None:
    # A pair helper applied in two classes (one inheriting from the other): one site, in the helper.
    pair = findings(PAIR)
    assert [f.span.start_line for f in pair] == [line(PAIR, "q_embed = (q * cos)")]
    # A class that runs a function's applications: that function's site only.
    through = findings(THROUGH_A_FUNCTION)
    assert len(through) == 1 and line(THROUGH_A_FUNCTION, "return apply_rope(q, cos, sin)") in lines(through[0])
    # One class applying the helper, subclassed without a forward of its own: one site (an inherited forward).
    inherited = TWO_CLASSES + "\n\nclass Subclass(SelfAttention):\n    pass\n"
    assert len(findings(inherited)) == 2
