"""Shared checks of the attention-family tests: fix a source, exec both versions, compare them.

`compare_modules` is the equivalence contract of RULES.md for one pair of modules: the original's
`state_dict` loads into the rewritten module with `strict=True`, and outputs, input gradients and
parameter gradients agree within the stated tolerances, in every requested mode (train mode runs
with dropout probability 0, so both sides are deterministic). The loss weights every output element
with a fixed random weight: a plain sum would hide errors in softmax gradients (rows sum to one).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from adopter.analysis import analyse
from adopter.dsl import parse_rules
from adopter.dsl.types import Rule
from adopter.engine import Environment, find
from adopter.engine.types import Finding
from adopter.session import rewrite
from adopter.synth import RewriteFailed, Rewritten

REPO = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO / "bench"))  # bench/tf435.py: where transformers 4.35.0 is, and whether it loads
from tf435 import TF435, unusable_reason  # noqa: E402

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")
# f02 (T5 SDPA) is offered on CUDA only (slower in CPU training): its tests synthesize the rewrite for a
# CUDA environment and still check equivalence on CPU tensors.
CUDA = Environment(device="cuda", packages=frozenset(), torch_version="2.13.0")


def rules_of(*stems: str) -> tuple[Rule, ...]:
    """The rules of `rules/<stem>.adl` files."""
    out: list[Rule] = []
    for stem in stems:
        path = REPO / "rules" / f"{stem}.adl"
        out.extend(parse_rules(path.read_text(encoding="utf-8"), str(path)))
    return tuple(out)


def findings_of(
    source: str, rules: Sequence[Rule], path: str = "case.py", *, env: Environment = CPU
) -> tuple[Finding, ...]:
    return find(analyse(source, path), rules, env)


def fix(
    source: str, rules: Sequence[Rule], path: str = "case.py", *, env: Environment = CPU
) -> Rewritten | RewriteFailed:
    """Rewrite every finding of `rules` in `source` (the targets `env` offers; CPU by default)."""
    return rewrite(source, findings_of(source, rules, path, env=env), rules=rules, env=env, path=path)


def fixed(
    source: str, rules: Sequence[Rule], applied: int, path: str = "case.py", *, env: Environment = CPU
) -> str:
    """The rewritten source; asserts that exactly `applied` findings were fixed, then that a second
    fix changes nothing and no fixable finding of the rules is left (re-analysis is clean)."""
    result = fix(source, rules, path, env=env)
    assert isinstance(result, Rewritten), result
    assert len(result.applied) == applied, (
        [f.rule_id for f in result.applied],
        [s.reason for s in result.skipped],
    )
    left = [f for f in findings_of(result.new_source, rules, path, env=env) if f.fixable]
    assert left == [], [(f.rule_id, f.scope_name, f.span.start_line + 1) for f in left]
    again = fix(result.new_source, rules, path, env=env)
    assert not (isinstance(again, Rewritten) and again.applied), "a second fix changed the file"
    return result.new_source


def skip_reasons(
    source: str, rules: Sequence[Rule], path: str = "case.py", *, env: Environment = CPU
) -> list[str]:
    """The reasons the findings of `rules` in `source` were not fixed (none may be fixed)."""
    result = fix(source, rules, path, env=env)
    applied = result.applied if isinstance(result, Rewritten) else ()
    assert not applied, [f.rule_id for f in applied]
    return [s.reason for s in result.skipped]


def load(source: str, name: str) -> dict[str, Any]:
    """Exec `source` as a fresh module (the tool never runs user code; the tests do). The module is
    registered in `sys.modules` because dataclasses look their module up there."""
    module = types.ModuleType(f"attention_case_{name}")
    sys.modules[module.__name__] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module.__dict__


@contextmanager
def transformers_on_path() -> Iterator[None]:
    """Make transformers 4.35.0 from `.cache/tf435` importable (skips when it is not installed, or not for
    this Python)."""
    import pytest

    if (reason := unusable_reason()) is not None:
        pytest.skip(reason)
    sys.path.insert(0, str(TF435))
    try:
        yield
    finally:
        sys.path.remove(str(TF435))


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif hasattr(value, "to_tuple"):  # transformers ModelOutput
        yield from _tensors(value.to_tuple())


def _run(
    module: torch.nn.Module, inputs: Sequence[Any], kwargs: dict[str, Any]
) -> tuple[list[torch.Tensor], list[torch.Tensor | None], dict[str, torch.Tensor]]:
    module.zero_grad(set_to_none=True)
    args = [
        x.detach().clone().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x
        for x in inputs
    ]
    outputs = [t for t in _tensors(module(*args, **kwargs)) if t.is_floating_point()]
    generator = torch.Generator().manual_seed(1234)
    loss = sum((t * torch.randn(t.shape, generator=generator)).sum() for t in outputs if t.requires_grad)
    if isinstance(loss, torch.Tensor):
        loss.backward()
    input_grads = [a.grad if isinstance(a, torch.Tensor) else None for a in args]
    grads = {n: p.grad for n, p in module.named_parameters() if p.grad is not None}
    return [t.detach() for t in outputs], input_grads, grads


def compare_modules(
    original: torch.nn.Module,
    rewritten: torch.nn.Module,
    inputs: Callable[[], Sequence[Any]],
    *,
    kwargs: dict[str, Any] | None = None,
    modes: Sequence[bool] = (False, True),
    atol: float = 1e-5,
    rtol: float = 1e-4,
) -> None:
    """Strict checkpoint loading, then equal outputs and gradients in each training mode."""
    rewritten.load_state_dict(original.state_dict(), strict=True)
    for training in modes:
        original.train(training)
        rewritten.train(training)
        torch.manual_seed(0)
        args = list(inputs())
        a_out, a_in, a_grads = _run(original, args, kwargs or {})
        b_out, b_in, b_grads = _run(rewritten, args, kwargs or {})
        assert len(a_out) == len(b_out) and len(a_out) > 0
        for x, y in zip(a_out, b_out):
            torch.testing.assert_close(y, x, atol=atol, rtol=rtol)
        for x, y in zip(a_in, b_in):
            if x is not None or y is not None:
                assert x is not None and y is not None
                torch.testing.assert_close(y, x, atol=atol * 10, rtol=rtol)
        _compare_grads(a_grads, b_grads, rewritten, atol * 10, rtol)


def _compare_grads(
    a: dict[str, torch.Tensor],
    b: dict[str, torch.Tensor],
    rewritten: torch.nn.Module,
    atol: float,
    rtol: float,
) -> None:
    """Parameter gradients; a fused parameter's gradient is compared with the concatenation of the
    gradients of the parameters it replaced (through the module's own `state_dict` split)."""
    if a.keys() == b.keys():
        for name in a:
            torch.testing.assert_close(b[name], a[name], atol=atol, rtol=rtol)
        return
    # Fused parameters: map the rewritten module's gradients to the original names by running its
    # state-dict hooks on a dict of gradients instead of weights.
    split = _gradients_as_state_dict(rewritten)
    assert set(a) <= set(split), sorted(set(a) - set(split))
    for name in a:
        torch.testing.assert_close(split[name], a[name], atol=atol, rtol=rtol)


def _gradients_as_state_dict(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    saved = {n: p.data for n, p in module.named_parameters()}
    try:
        for _, p in module.named_parameters():
            p.data = p.grad if p.grad is not None else torch.zeros_like(p)
        return {k: v.clone() for k, v in module.state_dict().items()}
    finally:
        for n, p in module.named_parameters():
            p.data = saved[n]
