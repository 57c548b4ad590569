"""The verify worker in-process: a wrong rewrite is caught, a fused parameter's gradient is compared split."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from adopter.commands.verify import exit_code  # noqa: E402
from adopter.verify import worker  # noqa: E402
from adopter.verify.cases import changed_classes, fix_cases, site_classes  # noqa: E402
from adopter.verify.compare import compare  # noqa: E402

MODEL = '''import torch
from torch import nn


class Act(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.proj(x))
'''


def _job(tmp_path: Path, new_source: str) -> dict[str, object]:
    path = tmp_path / "act_model.py"
    path.write_text(MODEL, encoding="utf-8")
    return {"path": str(path), "source": MODEL, "out": str(tmp_path / "out.json"), "device": "cpu", "dtype": "fp32", "seed": 0,
            "repeats": 0, "factory": None, "inputs": None,
            "cases": [{"rule_id": "x01", "line": 11, "scope": "Act", "new_source": new_source, "classes": ["Act"]}]}


def test_a_rewrite_that_computes_something_else_is_not_equivalent(tmp_path: Path) -> None:
    wrong = MODEL.replace("torch.relu(", "torch.nn.functional.gelu(")
    result = worker.run(_job(tmp_path, wrong))
    (row,) = result["rows"]
    assert row["checkpoint_loads"] is True and row["equivalent"] is False and row["max_abs"] > 1e-3
    assert exit_code(result["rows"]) == 1
    sys.modules.pop("act_model", None)


def test_a_rewrite_outside_any_module_class_is_not_run_rather_than_not_equivalent(tmp_path: Path) -> None:
    """An optimizer's construction in a training function changes no nn.Module class: verify compares
    nothing, so the row says it was not run (exit 2), never that the fix is not equivalent (exit 1)."""
    script = MODEL + "\n\ndef make_optimizer(model):\n    return torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
    job = _job(tmp_path, script.replace("lr=1e-3)", "lr=1e-3, fused=True)"))
    job["source"] = script
    Path(str(job["path"])).write_text(script, encoding="utf-8")
    job["cases"] = [{**job["cases"][0], "scope": "make_optimizer", "classes": []}]  # type: ignore[index]
    (row,) = worker.run(job)["rows"]
    assert "not_built" in row and "equivalent" not in row and "optimizer" in row["not_built"]
    assert exit_code([row]) == 2
    sys.modules.pop("act_model", None)


def test_a_rewrite_whose_checkpoint_does_not_load_is_not_equivalent(tmp_path: Path) -> None:
    renamed = MODEL.replace("self.proj", "self.projection")
    (row,) = worker.run(_job(tmp_path, renamed))["rows"]
    assert row["checkpoint_loads"] is False and row["equivalent"] is False and "strict=True" in row["error"]
    sys.modules.pop("act_model", None)


def test_the_same_text_is_equivalent(tmp_path: Path) -> None:
    (row,) = worker.run(_job(tmp_path, MODEL))["rows"]
    assert row["equivalent"] is True and row["max_abs"] == 0.0
    sys.modules.pop("act_model", None)


def test_exit_codes() -> None:
    assert exit_code([]) == 0
    assert exit_code([{"equivalent": True}]) == 0
    assert exit_code([{"equivalent": True}, {"not_built": "x"}]) == 2
    assert exit_code([{"equivalent": False}, {"not_built": "x"}]) == 1


def test_fused_parameters_are_compared_through_the_state_dict_hooks() -> None:
    class Separate(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.a(x) * self.b(x)

    class Fused(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ab = torch.nn.Linear(4, 8)
            self._register_state_dict_hook(Fused._split)

        @staticmethod
        def _split(module: torch.nn.Module, state: dict[str, torch.Tensor], prefix: str, _: object) -> None:
            w, b = state.pop(prefix + "ab.weight"), state.pop(prefix + "ab.bias")
            state[prefix + "a.weight"], state[prefix + "b.weight"] = w[:4], w[4:]
            state[prefix + "a.bias"], state[prefix + "b.bias"] = b[:4], b[4:]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b = self.ab(x).chunk(2, dim=-1)
            return a * b

    torch.manual_seed(0)
    sep, fused = Separate(), Fused()
    with torch.no_grad():
        fused.ab.weight.copy_(torch.cat([sep.a.weight, sep.b.weight]))
        fused.ab.bias.copy_(torch.cat([sep.a.bias, sep.b.bias]))
    result = compare(sep, fused, ((torch.randn(2, 4),), {}), seed=0, dtype=torch.float32)
    assert result.equivalent, result.detail
    with torch.no_grad():
        fused.ab.weight[5, 0] += 0.5
    assert not compare(sep, fused, ((torch.randn(2, 4),), {}), seed=0, dtype=torch.float32).equivalent


def test_changed_classes_are_those_whose_text_differs() -> None:
    new = MODEL.replace("torch.relu(", "torch.sigmoid(") + "\n\nclass Added:\n    pass\n"
    assert changed_classes(MODEL, new) == ("Act",)
    assert changed_classes(MODEL, MODEL) == ()


def test_a_class_calling_a_rewritten_helper_function_is_run() -> None:
    # transformers' BLOOM: the tanh-GELU formula is in `bloom_gelu_forward`, which BloomGelu calls.
    old = "def helper(x):\n    return x * 2\n\n\n" + MODEL.replace("torch.relu(self.proj(x))", "helper(self.proj(x))")
    new = old.replace("return x * 2", "return x + x")
    assert changed_classes(old, new) == ("Act",)


# tab-transformer-pytorch 0.6.1 / local-attention 1.11.2: a GEGLU item of a Sequential, fixed in its own
# class (no layer: it cannot be built alone), built by a class or by a factory function a class calls.
ITEMS = """import torch.nn.functional as F
from torch import nn


class GEGLU(nn.Module):
    def forward(self, x):
        x, gate = x.chunk(2, dim=-1)
        return x * F.gelu(gate)


class FeedForward(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 4 * dim), GEGLU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return self.net(x)


def feed_forward(dim):
    return nn.Sequential(nn.Linear(dim, 4 * dim), GEGLU(), nn.Linear(2 * dim, dim))


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.ff = feed_forward(dim)

    def forward(self, x):
        return self.ff(x)
"""


def test_a_fix_landing_in_an_item_class_also_runs_the_sites_classes() -> None:
    from adopter.engine import detect_environment, load_rules
    from adopter.session import RuleContext, Session

    assert site_classes(ITEMS, "FeedForward") == ("FeedForward",)
    assert site_classes(ITEMS, "feed_forward") == ("Block",)
    assert site_classes(ITEMS, "nowhere") == ()
    session = Session(RuleContext(tuple(load_rules().rules), (), detect_environment("cpu")))
    cases, _ = fix_cases(session, ITEMS, "items.py")
    assert sorted(c.classes for c in cases) == [("GEGLU", "Block"), ("GEGLU", "FeedForward")]


def test_weights_left_uninitialised_are_drawn_again() -> None:
    # transformers' CpmAntLayerNorm: `nn.Parameter(torch.empty(...))`, initialised by the PreTrainedModel.
    layer = torch.nn.Linear(4, 4)
    with torch.no_grad():
        layer.weight[0, 0] = float("inf")
        layer.bias[1] = 3e38
    kept = layer.weight[1].clone()
    assert worker.finite_weights(layer, seed=0) == 2
    assert bool(torch.isfinite(layer.weight).all()) and float(layer.bias.abs().max()) <= 1.0
    assert worker.finite_weights(torch.nn.Linear(4, 4), seed=0) == 0
    assert not torch.equal(layer.weight[1], kept)  # the whole tensor, drawn from the seed


def test_the_same_infinity_matches() -> None:
    class Inf(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(3, 3)

        def forward(self, x):
            return self.proj(x), torch.full((2,), float("inf"))

    m = Inf()
    assert compare(m, m, ((torch.randn(2, 3),), {}), seed=0, dtype=torch.float32).equivalent


def test_the_rewrite_is_read_from_its_own_text_and_a_registry_twice_is_tolerated(tmp_path: Path) -> None:
    # transformers' DeBERTa: a @torch.jit.script function read back by inspect.getsource (the rewrite moves
    # it to other lines); torchvision: `@register_model` refuses a second `resnet18` in one process.
    (tmp_path / "reg_api.py").write_text(
        "REGISTRY = {}\n\n\ndef register(fn):\n    if fn.__name__ in REGISTRY:\n"
        "        raise ValueError('already registered')\n    REGISTRY[fn.__name__] = fn\n    return fn\n",
        encoding="utf-8")
    text = "from reg_api import register\n" + MODEL + (
        "\n\n@torch.jit.script\ndef scripted(x: torch.Tensor) -> torch.Tensor:\n"
        "    return x * 2\n\n\n@register\ndef act():\n    return Act()\n")
    path = tmp_path / "reg_model.py"
    path.write_text(text, encoding="utf-8")
    original = worker.original_module(path, text)
    moved = text.replace("        return torch.relu(self.proj(x))",
                         "        y = self.proj(x)\n        return torch.relu(y)")
    rewritten = worker.rewritten_module(original, moved, 0, ("Act",))
    assert rewritten.Act is not original.Act and rewritten.act is original.act
    assert float(rewritten.scripted(torch.ones(1))) == 2.0
    with pytest.raises(ValueError):
        worker.rewritten_module(original, moved, 1, ("Missing",))
    sys.modules.pop("reg_api", None)


def test_a_forward_that_samples_draws_the_same_in_both_runs() -> None:
    # transformers' Informer: ProbSparse attention scores a torch.randint sample of the keys.
    class Sampling(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x):
            keep = torch.randint(0, 8, (4,))
            return self.proj(x)[..., keep]

    m = Sampling()
    assert compare(m, m, ((torch.randn(2, 8),), {}), seed=0, dtype=torch.float32).equivalent


def test_a_class_with_state_outside_its_state_dict_is_not_judged(tmp_path: Path) -> None:
    # transformers' Reformer LSHSelfAttention: built again and loaded with its own state dict it computes
    # differently, so a difference from the rewrite would say nothing about the rewrite.
    drawn = MODEL.replace("        self.proj = nn.Linear(dim, dim)\n",
                          "        self.proj = nn.Linear(dim, dim)\n        self.scale = float(torch.rand(()))\n").replace(
        "return torch.relu(self.proj(x))", "return torch.relu(self.proj(x)) * self.scale")
    job = _job(tmp_path, drawn)
    job["source"] = drawn
    (row,) = worker.run(job)["rows"]
    assert "does not reproduce from its state dict" in row["not_built"]
    sys.modules.pop("act_model", None)
