"""Layers appended to a list in a loop, then run as `nn.Sequential(*layers)` (`adopter.analysis.chains.lists`)."""

from __future__ import annotations

import textwrap

from adopter.dsl.types import Ctor
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, Session

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


BRANCHES = """
class VGG(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.features = self._make_layers(cfg)

    def forward(self, x):
        return self.features(x)

    def _make_layers(self, cfg):
        layers = []
        in_channels = 3
        for x in cfg:
            if x == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(in_channels, x, kernel_size=3, padding=1), nn.BatchNorm2d(x), nn.ReLU(True)]
                in_channels = x
        return nn.Sequential(*layers)


def make_stages(widths, pools):
    layers = []
    c_in = 3
    for w, pool in zip(widths, pools):
        if pool:
            layers.append(nn.MaxPool2d(2))
        elif w > 256:
            layers.append(nn.Conv2d(c_in, w, 1, bias=False))
            layers.append(nn.BatchNorm2d(w))
        c_in = w
    return nn.Sequential(*layers)


def alternate(chans):
    layers = []
    for i, c in enumerate(chans):
        if i % 2:
            layers.append(nn.Conv2d(c, c, 3, padding=1))
        else:
            layers.append(nn.BatchNorm2d(c))
    return nn.Sequential(*layers)


def maybe_down(chans, strides):
    layers = []
    for c, s in zip(chans, strides):
        if s > 1:
            layers.append(nn.Conv2d(c, c, 3, stride=s, padding=1))
        layers.append(nn.BatchNorm2d(c))
    return nn.Sequential(*layers)


def preact(chans, pools):
    layers = []
    for c, pool in zip(chans, pools):
        if pool:
            layers.append(nn.AvgPool2d(2))
        else:
            layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1)]
    return nn.Sequential(*layers)


def skip_pools(cfg):
    layers = []
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2))
            continue
        layers += [nn.Conv2d(3, v, 3, padding=1), nn.BatchNorm2d(v)]
    return nn.Sequential(*layers)


def ends_early(cfg):
    layers = []
    for v in cfg:
        if v < 0:
            layers.append(nn.Conv2d(3, -v, 1))
            continue
        layers.append(nn.BatchNorm2d(v))
    return nn.Sequential(*layers)


def off_by_default(cfg, batch_norm=False):
    layers = []
    for v in cfg:
        conv = nn.Conv2d(3, v, 3, padding=1)
        if batch_norm:
            layers += [conv, nn.BatchNorm2d(v), nn.ReLU(True)]
        else:
            layers += [conv, nn.ReLU(True)]
    return nn.Sequential(*layers)
"""


def test_an_if_the_defaults_leave_open_in_the_loop_body_is_read_on_each_path() -> None:
    # the VGG builders (super-gradients `VGG._make_layers`, mmagic `VGG16._make_layer`): `if v == "M":` is decided
    # by the configuration, not by a default, so the loop body runs one branch or the other and each path's
    # additions follow each other: conv -> BN in the `else`, in an `elif`, and a conv added under a test followed by
    # the BatchNorm after it (`maybe_down`, on its stride-2 path) are sites, at the conv's constructor line, reported
    # without a fix like every loop chain. Not sites: the conv and the BatchNorm in two branches (`alternate`: one
    # iteration runs one of them; iterations are not chained), BN -> ReLU -> conv (`preact`), a conv whose branch
    # ends the iteration (`ends_early`: `continue` before the BatchNorm; `skip_pools`' pool branch likewise leaves
    # its path, the pair after it is a site), and a branch the default leaves out (`off_by_default`,
    # `batch_norm=False`: the default's path is read, as before)
    text = HEADER + BRANCHES
    session = Session(RuleContext(tuple(r for r in load_rules().rules if r.family == 7), (), CPU))
    analysed = session.analysed(text, "vgg.py")
    sites = sorted((f.span.start_line, session.planned(analysed, f)) for f in analysed.findings)
    assert [line for line, _ in sites] == [
        _branch_line("layers += [nn.Conv2d(in_channels"), _branch_line("layers.append(nn.Conv2d(c_in, w, 1"),
        _branch_line("layers.append(nn.Conv2d(c, c, 3, stride=s"), _branch_line("layers += [nn.Conv2d(3, v, 3")]
    # what `check` and `fix` say: detection only, like the other loop chains
    assert all(not d.fixable and "nn.Sequential" in (d.reason or "") for _, d in sites)


def test_a_batchnorm_added_under_an_open_test_after_the_layer_is_a_site_on_that_path() -> None:
    # fuxictr `MLP_Block`: `append(Linear)`, then `if batch_norm and not bn_only_once: append(BatchNorm1d)` (a test
    # of two names: not decided by the defaults), then an optional activation: Linear -> BN on the path that adds
    # it (the dev2 label, family 8); the path without it is Linear -> ReLU
    code = """
    class MLPBlock(nn.Module):
        def __init__(self, dims, batch_norm=False, bn_only_once=False):
            super().__init__()
            layers = []
            for d_in, d_out in zip(dims[:-1], dims[1:]):
                layers.append(nn.Linear(d_in, d_out))
                if batch_norm and not bn_only_once:
                    layers.append(nn.BatchNorm1d(d_out))
                layers.append(nn.ReLU())
            self.mlp = nn.Sequential(*layers)

        def forward(self, x):
            return self.mlp(x)
    """
    found = check(module(code), load_rules().rules, CPU).findings
    lines = (HEADER + textwrap.dedent(code)).splitlines()
    assert [(f.family, lines[f.span.start_line].strip()) for f in found if f.family in (7, 8)] == [
        (8, "layers.append(nn.Linear(d_in, d_out))")]


CPU = Environment("cpu", frozenset(), "2.13.0")


def _branch_line(needle: str) -> int:
    return next(i for i, line in enumerate((HEADER + BRANCHES).splitlines()) if needle in line)
