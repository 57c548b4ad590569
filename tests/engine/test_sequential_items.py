"""A stateless same-file module built as an `nn.Sequential` item runs its forward's ops where the Sequential
runs it (`idioms.submodules.item_forwards`, spliced by the canonical pass): `nn.Sequential(nn.Linear(d,
2 * h), GEGLU(), ...)` is the gated MLP of family 14, in `__init__` and in a factory function alike.
Fixtures are reduced from the packages named on each; the counter-examples must not be found."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\nfrom torch.nn import Module\n\n\n"

# tab-transformer-pytorch 0.6.1, tab_transformer_pytorch/tab_transformer_pytorch.py (GEGLU, FeedForward)
IN_INIT = '''
class GEGLU(Module):
    def forward(self, x):
        x, gates = x.chunk(2, dim = -1)
        return x * F.gelu(gates)

class FeedForward(Module):
    def __init__(self, dim, mult = 4, dropout = 0.):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, dim * mult * 2),
            GEGLU(),
            nn.Dropout(dropout),
            nn.Linear(dim * mult, dim)
        )

    def forward(self, x, **kwargs):
        return self.net(x)
'''

# local-attention 1.11.2, local_attention/transformer.py (GEGLU, the FeedForward factory function)
IN_FACTORY = '''
class GEGLU(Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return x * F.gelu(gate)

def FeedForward(dim, mult = 4, dropout = 0.):
    inner_dim = int(dim * mult * 2 / 3)

    return nn.Sequential(
        nn.LayerNorm(dim),
        nn.Linear(dim, inner_dim * 2, bias = False),
        GEGLU(),
        nn.Dropout(dropout),
        nn.Linear(inner_dim, dim, bias = False)
    )
'''

# Counter-examples: a ReLU gate (neither SwiGLU nor GEGLU), an item with state of its own that is no gate (its
# forward reads its parameter as a value, and is read through since mech39: a gate with state is a site, see
# tests/rules/test_gated_items_with_state.py), a gated item after a convolution (no Linear projection).
NOT_SITES = '''
class ReGLU(Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return x * F.relu(gate)

class Scaled(Module):
    def __init__(self, dim):
        super().__init__()
        self.mult_bias = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return gate * x * self.mult_bias

class GEGLU(Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim = -1)
        return x * F.gelu(gate)

class Blocks(Module):
    def __init__(self, dim):
        super().__init__()
        self.relu_glu = nn.Sequential(nn.Linear(dim, dim * 2), ReGLU(), nn.Linear(dim, dim))
        self.scaled = nn.Sequential(nn.Linear(dim, dim * 2), Scaled(dim), nn.Linear(dim, dim))
        self.conv = nn.Sequential(nn.Conv2d(dim, dim * 2, 1), GEGLU(), nn.Conv2d(dim, dim, 1))

    def forward(self, x, y, z):
        return self.relu_glu(x) + self.scaled(y) + self.conv(z)
'''


def _findings(code: str) -> list[tuple[str, int, bool]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, env)
    shift = HEADER.count("\n")
    return [(f.rule_id, f.span.start_line - shift, f.fixable) for f in result.findings]


def _line(code: str, what: str) -> int:
    return next(i for i, ln in enumerate(code.splitlines()) if what in ln)


def test_a_gated_activation_item_in_an_init_sequential_is_a_gated_mlp() -> None:
    found = [f for f in _findings(IN_INIT) if f[0].startswith("f14")]
    assert [(r, line) for r, line, _ in found] == [("f14-gated-chunked", _line(IN_INIT, "return self.net(x)"))]
    assert found[0][2]  # fixed in the item class's forward (tests/rules/test_gated_items.py)


def test_a_gated_activation_item_in_a_factory_sequential_is_a_gated_mlp() -> None:
    found = [(r, line) for r, line, _ in _findings(IN_FACTORY) if r.startswith("f14")]
    assert found == [("f14-gated-chunked", _line(IN_FACTORY, "nn.Linear(dim, inner_dim * 2"))]


def test_the_spliced_ops_keep_the_item_class_lines() -> None:
    result = check(analyse(HEADER + IN_INIT, "m.py"), load_rules().rules, Environment("cpu", frozenset(), "2.13.0"))
    finding = next(f for f in result.findings if f.rule_id == "f14-gated-chunked")
    lines = {s.start_line - HEADER.count("\n") for s in finding.stmt_spans}
    assert {_line(IN_INIT, "x, gates = x.chunk"), _line(IN_INIT, "return x * F.gelu(gates)")} <= lines


def test_relu_gates_items_with_state_and_convolutions_are_not_gated_mlps() -> None:
    assert not [r for r, _, _ in _findings(NOT_SITES) if r.startswith("f14") or r.startswith("f06")]


# facexlib 0.3.0, facexlib/matting/mobilenetv2.py: InvertedResidual calls one Sequential in both branches
TWO_CALLS = '''
class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expansion):
        super().__init__()
        hidden_dim = round(inp * expansion)
        self.use_res_connect = stride == 1 and inp == oup
        self.conv = nn.Sequential(
            nn.Conv2d(hidden_dim, hidden_dim, 3, stride, 1, groups=hidden_dim, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU6(inplace=True),
        )

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)
'''

# Counter-example: two Sequentials, one per branch, are two sites, each with its own call only.
TWO_CONTAINERS = '''
class Branches(nn.Module):
    def __init__(self, d, wide):
        super().__init__()
        self.wide = wide
        self.a = nn.Sequential(nn.Conv2d(d, d, 3, bias=False), nn.BatchNorm2d(d))
        self.b = nn.Sequential(nn.Conv2d(d, d, 1, bias=False), nn.BatchNorm2d(d))

    def forward(self, x):
        if self.wide:
            return self.a(x)
        else:
            return self.b(x)
'''


def _statements(code: str, rule: str) -> list[set[int]]:
    result = check(analyse(HEADER + code, "m.py"), load_rules().rules, Environment("cpu", frozenset(), "2.13.0"))
    shift = HEADER.count("\n")
    return [{s.start_line - shift for s in f.stmt_spans} for f in result.findings if f.rule_id == rule]


def test_one_container_called_in_two_branches_is_one_site_with_both_calls() -> None:
    assert _statements(TWO_CALLS, "f07-conv-bn") == [
        {_line(TWO_CALLS, "return x + self.conv(x)"), _line(TWO_CALLS, "return self.conv(x)")}]
    assert next(f for f in _findings(TWO_CALLS) if f[0] == "f07-conv-bn")[2]  # still fixable (in the Sequential)


def test_two_containers_in_two_branches_stay_two_sites() -> None:
    assert sorted(map(sorted, _statements(TWO_CONTAINERS, "f07-conv-bn"))) == [
        [_line(TWO_CONTAINERS, "return self.a(x)")], [_line(TWO_CONTAINERS, "return self.b(x)")]]
