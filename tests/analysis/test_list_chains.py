"""Layers appended to a list in a loop, then run as `nn.Sequential(*layers)` (`adopter.analysis.chains.lists`)."""

from __future__ import annotations

from adopter.dsl.types import Ctor
from adopter.engine import Environment, check, load_rules

from .helpers import HEADER, module

CODE = """
class MLP(nn.Module):
    def __init__(self, dims, norm=True):
        super().__init__()
        layers = []
        for d_in, d_out in zip(dims[:-1], dims[1:]):
            layers.append(nn.Linear(d_in, d_out))
            layers.append(nn.BatchNorm1d(d_out))
            layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def conv_stack(chans):
    layers = []
    for c_in, c_out in zip(chans[:-1], chans[1:]):
        layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out)]
    return nn.Sequential(*layers)


def maybe_norm(dims, norm=False):
    layers = []
    for d_in, d_out in zip(dims[:-1], dims[1:]):
        layers.append(nn.Linear(d_in, d_out))
        if norm:
            layers.append(nn.BatchNorm1d(d_out))
    return nn.Sequential(*layers)
"""


def _line(needle: str) -> int:
    return next(i for i, line in enumerate((HEADER + CODE).splitlines()) if needle in line)


def test_items_added_in_one_loop_body_are_a_chain() -> None:
    # `MLP`'s list, bound to an attribute nothing indexes, is read as one pass of its loop where forward runs
    # it (`scope.bindings._one_pass`), so its loop chain is not reported again; `maybe_norm`: the BatchNorm
    # is conditional
    chains = {c.name: c for c in module(CODE).chains}
    assert set(chains) == {"conv_stack"}
    callees = {n: [b.value.callee for b in c.init.bindings if isinstance(b.value, Ctor)]
               for n, c in chains.items() if c.init is not None}
    assert callees == {"conv_stack": ["torch.nn.Conv2d", "torch.nn.BatchNorm2d"]}


def test_the_sites_are_the_constructors_or_the_call_that_runs_one_pass() -> None:
    env = Environment("cpu", frozenset(), "2.13.0")
    findings = [f for f in check(module(CODE), load_rules().rules, env).findings if f.family in (7, 8)]
    assert sorted((f.family, f.span.start_line) for f in findings) == [
        (7, _line("layers += [nn.Conv2d")), (8, _line("return self.net(x)"))]
    # the class's finding lists the items' lines among its `__init__` lines (where a reader marks the layers)
    linear_bn = next(f for f in findings if f.family == 8)
    assert {_line("layers.append(nn.Linear(d_in, d_out))"), _line("layers.append(nn.BatchNorm1d")} <= {
        s.start_line for s in linear_bn.init_spans}
    # conv-BN is folded in place in the Sequential the list builds; Linear-BN (family 8) is not rewritten there
    assert [(f.family, f.fixable) for f in sorted(findings, key=lambda f: f.family)] == [(7, True), (8, False)]
    assert "nn.Sequential" in (next(f for f in findings if f.family == 8).no_fix_reason or "")
