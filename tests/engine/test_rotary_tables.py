"""The `rotary_tables($c, $s)` guard (`adopter.engine.rotary_tables`): cos/sin tables, not any factors."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.engine import Environment, check, load_rules

ROTARY = """
import torch


def rope(x, angles):
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def rope_cached(x, rope_cache):
    xs = x.reshape(*x.shape[:-1], -1, 2)
    return torch.stack(
        [xs[..., 0] * rope_cache[..., 0] - xs[..., 1] * rope_cache[..., 1],
         xs[..., 1] * rope_cache[..., 0] + xs[..., 0] * rope_cache[..., 1]],
        -1,
    )


def complex_mul(x, y):
    x_re, x_im = x.unbind(dim=-1)
    y_re, y_im = y.unbind(dim=-1)
    return torch.stack((x_re * y_re - x_im * y_im, x_im * y_re + x_re * y_im), dim=-1)


def complex_mul_indexed(x, y):
    return torch.stack(
        [x[..., 0] * y[..., 0] - x[..., 1] * y[..., 1], x[..., 1] * y[..., 0] + x[..., 0] * y[..., 1]], -1
    )
"""


def test_only_rotations_by_cos_sin_tables_are_rotary() -> None:
    env = Environment("cuda", frozenset({"liger_kernel"}), "2.13.0")
    findings = [f for f in check(analyse(ROTARY, "rot.py"), load_rules().rules, env).findings if f.family == 15]
    assert sorted(f.scope_name for f in findings) == ["rope", "rope_cached"]
