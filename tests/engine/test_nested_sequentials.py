"""A Sequential built in `__init__` and nested in a bound Sequential is one site, at its construction
(`engine.nested_chains`): CompVis latent diffusion's `FeedForward` (audioldm 0.1.1
`latent_diffusion/attention.py` 47-63, f5-tts `model/modules.py` 352-363) was reported twice, once at
`project_in = nn.Sequential(nn.Linear(...), nn.GELU())` and once at `return self.net(x)`."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules
from adopter.engine.types import Finding
from adopter.session import RuleContext, Session, UnitMatcher

# audioldm 0.1.1, latent_diffusion/attention.py 37-63 (GEGLU and FeedForward as written there)
AUDIOLDM = '''import torch.nn.functional as F
from torch import nn


def default(val, d):
    return val if val is not None else d


class GEGLU(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * F.gelu(gate)


class FeedForward(nn.Module):
    def __init__(self, dim, dim_out=None, mult=4, glu=False, dropout=0.0):
        super().__init__()
        inner_dim = int(dim * mult)
        dim_out = default(dim_out, dim)
        project_in = (
            nn.Sequential(nn.Linear(dim, inner_dim), nn.GELU())
            if not glu
            else GEGLU(dim, inner_dim)
        )

        self.net = nn.Sequential(
            project_in, nn.Dropout(dropout), nn.Linear(inner_dim, dim_out)
        )

    def forward(self, x):
        return self.net(x)
'''

# f5-tts 1.1, f5_tts/model/modules.py 352-363
F5TTS = '''from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, dim_out=None, mult=4, dropout=0.0, approximate: str = "none"):
        super().__init__()
        inner_dim = int(dim * mult)
        dim_out = dim_out if dim_out is not None else dim

        activation = nn.GELU(approximate=approximate)
        project_in = nn.Sequential(nn.Linear(dim, inner_dim), activation)
        self.ff = nn.Sequential(project_in, nn.Dropout(dropout), nn.Linear(inner_dim, dim_out))

    def forward(self, x):
        return self.ff(x)
'''

TWO = '''from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        a = nn.Sequential(nn.Linear(dim, inner), nn.GELU())
        b = nn.Sequential(nn.Linear(inner, dim), nn.GELU())
        self.net = nn.Sequential(a, nn.Dropout(0.1), b)

    def forward(self, x):
        return self.net(x)
'''

INLINE = '''from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        self.net = nn.Sequential(nn.Sequential(nn.Linear(dim, inner), nn.GELU()), nn.Linear(inner, dim))

    def forward(self, x):
        return self.net(x)
'''

DIRECT = '''from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        project_in = nn.Sequential(nn.Linear(dim, inner), nn.GELU())
        self.project_in = project_in
        self.net = nn.Sequential(project_in, nn.Linear(inner, dim))

    def forward(self, x, y):
        h = self.net(x)
        return h + self.project_in(y)
'''

# an equal chain built earlier but not nested in `self.net`: the inner Sequential written in the binding's
# own statement is the one the forward runs
OTHER = '''from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim, inner):
        super().__init__()
        spare = nn.Sequential(nn.Linear(dim, inner), nn.GELU())
        self.spares = nn.ModuleList([spare])
        self.net = nn.Sequential(nn.Sequential(nn.Linear(dim, inner), nn.GELU()), nn.Linear(inner, dim))

    def forward(self, x):
        return self.net(x)
'''

CONV = '''from torch import nn


class Stem(nn.Module):
    def __init__(self, c):
        super().__init__()
        stem = nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))
        self.net = nn.Sequential(stem, nn.ReLU())

    def forward(self, x):
        return self.net(x)
'''

CUDA = Environment("cuda", frozenset(), "2.13.0")
CPU = Environment("cpu", frozenset(), "2.13.0")


def line(code: str, needle: str) -> int:
    return next(i for i, text in enumerate(code.splitlines()) if needle in text)


def found(code: str, rule: str = "f06-linear-gelu", env: Environment = CUDA) -> list[Finding]:
    return [f for f in check(analyse(code, "m.py"), load_rules().rules, env).findings if f.rule_id == rule]


def sites(code: str, rule: str = "f06-linear-gelu") -> list[tuple[str, int, list[int]]]:
    return [(f.scope_name, f.span.start_line, sorted({s.start_line for s in f.stmt_spans})) for f in found(code, rule)]


def test_the_compvis_feed_forward_is_one_site_at_its_construction() -> None:
    inner = line(AUDIOLDM, "nn.Sequential(nn.Linear(dim, inner_dim), nn.GELU())")
    assert sites(AUDIOLDM) == [("FeedForward.__init__", inner, [inner, line(AUDIOLDM, "return self.net(x)")])]


def test_the_f5_tts_copy_is_one_site_at_its_construction() -> None:
    act, inner = line(F5TTS, "activation = nn.GELU("), line(F5TTS, "project_in = nn.Sequential(")
    assert sites(F5TTS) == [("FeedForward.__init__", act, [act, inner, line(F5TTS, "return self.ff(x)")])]


def test_an_inner_sequential_written_inline_is_one_site() -> None:
    inner = line(INLINE, "self.net = nn.Sequential(nn.Sequential(")
    assert sites(INLINE) == [("FeedForward.__init__", inner, [inner, line(INLINE, "return self.net(x)")])]


def test_two_different_inner_sequentials_stay_two_sites_at_their_constructions() -> None:
    a, b = line(TWO, "a = nn.Sequential("), line(TWO, "b = nn.Sequential(")
    assert [(scope, start) for scope, start, _ in sites(TWO)] == [("FeedForward.__init__", a), ("FeedForward.__init__", b)]
    assert line(TWO, "return self.net(x)") in sites(TWO)[0][2]


def test_the_inner_sequential_called_directly_joins_the_construction_too() -> None:
    # The nested run joins the construction, and so does the direct call of the attribute bound to the local
    # (`engine.bound_chains`, mech30: a local Sequential bound to self is its construction's site).
    inner = line(DIRECT, "project_in = nn.Sequential(")
    assert sites(DIRECT) == [
        ("FeedForward.__init__", inner,
         [inner, line(DIRECT, "h = self.net(x)"), line(DIRECT, "return h + self.project_in(y)")]),
    ]


def test_an_equal_chain_elsewhere_does_not_take_the_forwards_call() -> None:
    spare, inner = line(OTHER, "spare = nn.Sequential("), line(OTHER, "self.net = nn.Sequential(")
    assert sites(OTHER) == [("FeedForward.__init__", spare, [spare]),
                            ("FeedForward.__init__", inner, [inner, line(OTHER, "return self.net(x)")])]


def test_a_fixable_inner_sequential_is_fixed_at_its_construction() -> None:
    inner = line(CONV, "stem = nn.Sequential(")
    assert sites(CONV, "f07-conv-bn") == [("Stem.__init__", inner, [inner, line(CONV, "return self.net(x)")])]
    session = Session(RuleContext(tuple(load_rules().rules), (), CPU))
    before = session.analysed(CONV, "m.py")
    assert [f.scope_name for f in session.fixable(before) if f.rule_id == "f07-conv-bn"] == ["Stem.__init__"]
    out = session.fix(CONV, "m.py")
    assert [f.scope_name for f in out.applied if f.rule_id == "f07-conv-bn"] == ["Stem.__init__"]
    assert "stem = FoldedConvBnSequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))" in out.new_source
    after = Session(RuleContext(tuple(load_rules().rules), (), CPU))
    assert not [f for f in after.analysed(out.new_source, "m.py").findings if f.rule_id == "f07-conv-bn"]


def test_the_language_server_reports_the_same_sites() -> None:
    rules = load_rules().rules
    mf = analyse(AUDIOLDM, "m.py")
    expected = [(f.rule_id, f.scope_name, f.stmt_spans) for f in check(mf, rules, CUDA).findings]
    matcher, context = UnitMatcher(), RuleContext(tuple(rules), environment=CUDA)
    got, _ = matcher.match(mf, context)
    assert [(f.rule_id, f.scope_name, f.stmt_spans) for f in got] == expected
    assert [f.scope_name for f in got if f.rule_id == "f06-linear-gelu"] == ["FeedForward.__init__"]
