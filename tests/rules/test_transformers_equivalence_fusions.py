"""Real models: fusion fixes applied to copies of transformers 4.35.0 modeling files compute the same.

For ResNet (conv-BN folding, family 7) and Mistral (RMSNorm, family 12; gated MLP, family 14): apply
every fix of the fusion rules to a copy of `modeling_<m>.py`, import the original (from `.cache/tf435`)
and the rewritten copy (as a sibling module of the original, so its relative imports resolve), build
both models from a small config, load the original's weights into the rewritten model with
`strict=True`, and compare outputs and gradients (inputs and parameters, float32 on CPU).
Only the fusion rules' fixes are applied here; the attention families have their own test.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from adopter.analysis import analyse  # noqa: E402
from adopter.corpus import modeling_file  # noqa: E402
from adopter.dsl import parse_rules  # noqa: E402
from adopter.dsl.types import Rule  # noqa: E402
from adopter.engine import Environment, find  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.corpus, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO / "bench"))  # bench/tf435.py: where transformers 4.35.0 is, and whether it loads
from tf435 import TF435, unusable_reason  # noqa: E402

CPU = Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")
FUSION_FAMILIES = {5, 6, 7, 8, 11, 12, 13, 14, 15, 16, 17}


def fusion_rules() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for path in sorted((REPO / "rules").glob("f*.adl")):
        for rule in parse_rules(path.read_text(encoding="utf-8"), str(path)):
            if rule.family in FUSION_FAMILIES:
                rules.append(rule)
    return tuple(rules)


@pytest.fixture(scope="module")
def transformers_path() -> Any:
    if (reason := unusable_reason()) is not None:
        pytest.skip(reason)
    sys.path.insert(0, str(TF435))
    yield
    sys.path.remove(str(TF435))


def rewritten_module(model: str, tmp_path: Path) -> tuple[ModuleType, ModuleType, dict[str, int]]:
    """(original module, rewritten module, fixes applied per rule id) for `modeling_<model>.py`."""
    source = modeling_file(model).text
    rules = fusion_rules()
    findings = find(analyse(source, f"modeling_{model}.py"), rules, CPU)
    result = rewrite(source, findings, rules=rules, env=CPU, path=f"modeling_{model}.py")
    assert isinstance(result, Rewritten), result
    applied: dict[str, int] = {}
    for f in result.applied:
        applied[f.rule_id] = applied.get(f.rule_id, 0) + 1
    original = importlib.import_module(f"transformers.models.{model}.modeling_{model}")
    path = tmp_path / f"modeling_{model}_adopter.py"
    path.write_text(result.new_source, encoding="utf-8")
    name = f"transformers.models.{model}.modeling_{model}_adopter"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    # Fixing the rewritten file again finds nothing left to fix.
    again = find(analyse(result.new_source, f"modeling_{model}.py"), rules, CPU)
    assert not [f for f in again if f.fixable and f.rule_id in applied], [f.rule_id for f in again]
    return original, module, applied


def _randomise_statistics(model: Any) -> None:
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if name.endswith("running_mean"):
                buf.copy_(torch.randn(buf.shape, generator=gen) * 0.3)
            elif name.endswith("running_var"):
                buf.copy_(torch.rand(buf.shape, generator=gen) + 0.5)


def compare(old_cls: Any, new_cls: Any, config: Any, args: tuple[Any, ...], kwargs: dict[str, Any], training: bool,
            atol: float, rtol: float) -> None:
    """The harness's contract in one mode at the given tolerances (gradients and buffers as strict as outputs;
    the state dict loads both ways: checkpoints saved by the rewritten model load into the original code)."""
    torch.manual_seed(0)
    old = old_cls(config)
    _randomise_statistics(old)
    new = new_cls(config)
    compare_modules(old, new, lambda: args, kwargs=kwargs, modes=(training,), atol=atol, rtol=rtol, grad_atol=atol,
                    buffer_atol=atol, buffer_rtol=rtol, run_seed=1, round_trip=True)


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_resnet(transformers_path: Any, tmp_path: Path, training: bool) -> None:
    original, rewritten, applied = rewritten_module("resnet", tmp_path)
    # ResNetConvLayer and ResNetShortCut: conv -> BatchNorm2d.
    assert applied.get("f07-conv-bn") == 2, applied
    from transformers import ResNetConfig

    for layer_type in ("basic", "bottleneck"):
        config = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 2], layer_type=layer_type,
                              num_labels=5)
        pixels = torch.randn(2, 3, 32, 32)
        compare(original.ResNetForImageClassification, rewritten.ResNetForImageClassification, config,
                (pixels,), {}, training, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_mistral(transformers_path: Any, tmp_path: Path, training: bool) -> None:
    original, rewritten, applied = rewritten_module("mistral", tmp_path)
    assert applied.get("f12-rmsnorm") == 1, applied  # MistralRMSNorm
    assert applied.get("f14-swiglu") == 1, applied  # MistralMLP
    from transformers import MistralConfig

    config = MistralConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                           attention_dropout=0.0)
    ids = torch.randint(0, 64, (2, 12))
    compare(original.MistralForCausalLM, rewritten.MistralForCausalLM, config,
            (ids,), {"labels": ids}, training, atol=1e-5, rtol=1e-4)
