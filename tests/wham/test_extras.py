"""A missing optional dependency is an error naming `pip install 'adopter[wham]'`, never a quietly worse search."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adopter.cli import main
from adopter.wham import SearchRequest, extras, search
from adopter.wham.engine import run_strategy
from adopter.wham.evaluate import Constraints, Evaluator
from adopter.wham.extras import MissingDependency
from adopter.wham.hardware import DesignSpace
from adopter.wham.strategies import make_strategy

from .synthetic import toy_workload


def _without(monkeypatch: pytest.MonkeyPatch, *gone: str) -> None:
    real: Callable[[str], Any] = extras.find_spec

    def fake(name: str) -> Any:
        return None if name in gone else real(name)

    monkeypatch.setattr(extras, "find_spec", fake)


@pytest.mark.parametrize(("gone", "strategy", "needle"), [
    ("torch", "wham", "the accelerator search (tracing the model) needs torch"),
    ("numpy", "wham", "--strategy wham needs numpy"),
    ("optuna", "tpe", "--strategy tpe needs optuna"),
    ("scipy", "gp", "--strategy gp needs scipy"),
])
def test_search_without_a_dependency_says_what_to_install(monkeypatch: pytest.MonkeyPatch, gone: str,
                                                          strategy: str, needle: str) -> None:
    _without(monkeypatch, gone)
    report = search(SearchRequest(model="tiny-mlp", strategy=strategy))
    assert report.error is not None and needle in report.error
    assert "pip install 'adopter[wham]'" in report.error and report.best is None


def test_cli_without_the_extra_exits_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _without(monkeypatch, "torch")
    assert main(["wham", "--model", "tiny-mlp", "--quiet"]) == 2
    assert "pip install 'adopter[wham]'" in capsys.readouterr().err


def test_wham_never_runs_without_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "numpy")
    ev = Evaluator(toy_workload(), "throughput", Constraints(600.0, 400.0))
    with pytest.raises(MissingDependency, match="numpy"):
        run_strategy(make_strategy("wham"), ev, DesignSpace(), budget=10)
    with pytest.raises(MissingDependency, match="numpy"):
        ev.bounds(DesignSpace())
    assert ev.evaluations == 0
