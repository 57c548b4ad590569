"""Shared steps of the rule tests: fix a source, exec both versions (compared by `tests/equivalence.py`)."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


def equivalent_classes(source: str, new: str, cls: str, make: Any, inputs: Any) -> None:
    """Class `cls` of `source` and of its rewrite `new`, built by `make` with one seed and the state dict loaded
    strictly both ways, compute the same (`adopter.verify.compare.compare`: outputs, input and parameter
    gradients, float32 on CPU) in eval and train mode, for run seeds 0 and 1."""
    import torch

    from adopter.verify.compare import compare

    torch.manual_seed(0)
    original = make(load(source, "orig")[cls])
    rewritten = make(load(new, "new")[cls])
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.load_state_dict(rewritten.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, (inputs(), {}), seed=seed, dtype=torch.float32)
            assert result.equivalent, (train, seed, result)


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
