"""Real models: the attention families' fixes applied to transformers 4.35.0 modeling files.

For BERT, GPT-2, T5, RoBERTa, DistilBERT, ALBERT and GPT-Neo: find every site of the attention
rules (families 1, 2, 3, 4, 9, 10) in a copy of `modeling_<m>.py`, rewrite all of them with
`adopter.synth.rewrite`, import the original (from `.cache/tf435`) and the rewritten copy (as a
sibling module of the original, so its relative imports resolve), build both models from the same
small config (2 layers, real head counts, dropout 0), load the original's weights into the
rewritten model with `strict=True`, and compare outputs (atol 1e-5, rtol 1e-4) and parameter
gradients (atol 1e-4, rtol 1e-4) in eval and train mode. The fixes each model gets, and the reasons
for the sites that are declined, are part of the expectation: a model whose sites are all declined
must say why for each. f02 (T5) is offered on CUDA only, so T5 is rewritten for a CUDA environment
(the comparison still runs on CPU tensors) and checked to be reported without a fix on CPU.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from attention_harness import CPU, CUDA, REPO, transformers_on_path  # noqa: E402

from adopter.analysis import analyse  # noqa: E402
from adopter.corpus import modeling_file  # noqa: E402
from adopter.dsl import parse_rules  # noqa: E402
from adopter.dsl.types import Rule  # noqa: E402
from adopter.engine import Environment, find  # noqa: E402
from adopter.session import rewrite  # noqa: E402
from adopter.synth import Rewritten  # noqa: E402
from equivalence import compare_modules  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.corpus, pytest.mark.slow]

ATTENTION_FAMILIES = {1, 2, 3, 4, 9, 10}


ATTENTION_FILES = ("f01-*.adl", "f02-*.adl", "f03-*.adl", "f04-*.adl", "f09-*.adl", "f10-*.adl")


def attention_rules() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    # Only the attention families' files: the other rule files are not this test's subject.
    for path in sorted(p for pattern in ATTENTION_FILES for p in (REPO / "rules").glob(pattern)):
        rules.extend(
            r
            for r in parse_rules(path.read_text(encoding="utf-8"), str(path))
            if r.family in ATTENTION_FAMILIES
        )
    return tuple(rules)


@pytest.fixture(scope="module")
def tf() -> Iterator[Any]:
    with transformers_on_path():
        import transformers

        yield transformers


def rewritten_module(
    model: str, tmp_path: Path, env: Environment = CPU
) -> tuple[ModuleType, ModuleType, dict[str, int], list[str]]:
    """(original module, rewritten module, fixes applied per rule id, reasons of declined sites), with
    the targets `env` offers."""
    source = modeling_file(model).text
    rules = attention_rules()
    path = f"modeling_{model}.py"
    findings = find(analyse(source, path), rules, env)
    result = rewrite(source, findings, rules=rules, env=env, path=path)
    applied: dict[str, int] = {}
    reasons = [s.reason for s in result.skipped]
    new_source = source
    if isinstance(result, Rewritten):
        new_source = result.new_source
        for f in result.applied:
            applied[f.rule_id] = applied.get(f.rule_id, 0) + 1
        again = find(analyse(new_source, path), rules, env)
        left = [f for f in again if f.fixable and f.rule_id in applied]
        second = rewrite(new_source, left, rules=rules, env=env, path=path) if left else None
        assert not (isinstance(second, Rewritten) and second.applied), "a second fix changed the file"
    original = importlib.import_module(f"transformers.models.{model}.modeling_{model}")
    file = tmp_path / f"modeling_{model}_adopter.py"
    file.write_text(new_source, encoding="utf-8")
    name = f"transformers.models.{model}.modeling_{model}_adopter"
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return original, module, applied, reasons


def _ids(batch: int = 2, length: int = 7) -> torch.Tensor:
    return torch.randint(3, 100, (batch, length), generator=torch.Generator().manual_seed(7))


def _padding(batch: int = 2, length: int = 7) -> torch.Tensor:
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[-1, length - 2 :] = 0
    return mask


def _check(
    tf: Any,
    tmp_path: Path,
    model: str,
    cls: str,
    config: Any,
    kwargs: Callable[[], dict[str, Any]],
    env: Environment = CPU,
) -> tuple[dict[str, int], list[str]]:
    original_mod, new_mod, applied, reasons = rewritten_module(model, tmp_path, env)
    torch.manual_seed(0)
    original = getattr(original_mod, cls)(config)
    rewritten = getattr(new_mod, cls)(config)
    compare_modules(original, rewritten, lambda: (), kwargs=kwargs(), atol=1e-5, rtol=1e-4)
    return applied, reasons


def _plain() -> dict[str, Any]:
    return {"input_ids": _ids(), "attention_mask": _padding()}


# (model, config class, config arguments, model class, inputs, environment): one row per model.
CASES: list[tuple[str, str, dict[str, Any], str, Callable[[], dict[str, Any]], Environment]] = [
    ("bert", "BertConfig", {"vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                            "intermediate_size": 128, "hidden_dropout_prob": 0.0,
                            "attention_probs_dropout_prob": 0.0}, "BertModel", _plain, CPU),
    ("gpt2", "GPT2Config", {"vocab_size": 100, "n_embd": 64, "n_layer": 2, "n_head": 4, "resid_pdrop": 0.0,
                            "embd_pdrop": 0.0, "attn_pdrop": 0.0, "add_cross_attention": True}, "GPT2Model",
     lambda: {**_plain(), "encoder_hidden_states": torch.randn(2, 5, 64)}, CPU),
    ("t5", "T5Config", {"vocab_size": 100, "d_model": 64, "d_kv": 16, "d_ff": 128, "num_layers": 2, "num_heads": 4,
                        "dropout_rate": 0.0, "relative_attention_num_buckets": 8}, "T5Model",
     lambda: {**_plain(), "decoder_input_ids": _ids(2, 5)}, CUDA),
    ("roberta", "RobertaConfig", {"vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "intermediate_size": 128, "hidden_dropout_prob": 0.0,
                                  "attention_probs_dropout_prob": 0.0, "max_position_embeddings": 40},
     "RobertaModel", _plain, CPU),
    ("distilbert", "DistilBertConfig", {"vocab_size": 100, "dim": 64, "n_layers": 2, "n_heads": 4,
                                        "hidden_dim": 128, "dropout": 0.0, "attention_dropout": 0.0},
     "DistilBertModel", _plain, CPU),
    ("albert", "AlbertConfig", {"vocab_size": 100, "embedding_size": 32, "hidden_size": 64, "num_hidden_layers": 2,
                                "num_attention_heads": 4, "intermediate_size": 128, "hidden_dropout_prob": 0.0,
                                "attention_probs_dropout_prob": 0.0}, "AlbertModel", _plain, CPU),
    ("gpt_neo", "GPTNeoConfig", {"vocab_size": 100, "hidden_size": 64, "num_layers": 2, "num_heads": 4,
                                 "attention_types": [[["global", "local"], 1]], "window_size": 4,
                                 "embed_dropout": 0.0, "attention_dropout": 0.0, "resid_dropout": 0.0,
                                 "max_position_embeddings": 32}, "GPTNeoModel", _plain, CPU),
]


@pytest.mark.parametrize(("model", "config_cls", "config_args", "cls", "inputs", "env"), CASES,
                         ids=[c[0] for c in CASES])
def test_rewritten_model_computes_the_same(
    tf: Any, tmp_path: Path, model: str, config_cls: str, config_args: dict[str, Any], cls: str,
    inputs: Callable[[], dict[str, Any]], env: Environment,
) -> None:
    """Outputs and gradients of the rewritten model equal the original's (atol 1e-5, rtol 1e-4), and
    the fixes applied and declined are the ones recorded in EXPECTED."""
    config = getattr(tf, config_cls)(**config_args)
    applied, reasons = _check(tf, tmp_path, model, cls, config, inputs, env=env)
    _record(model, applied, reasons)


def test_t5_on_cpu_reports_f02_without_a_fix() -> None:
    source = modeling_file("t5").text
    findings = find(analyse(source, "modeling_t5.py"), attention_rules(), CPU)
    f02 = [f for f in findings if f.rule_id == "f02-t5-attention"]
    assert sorted(f.scope_name for f in f02) == ["T5LayerCrossAttention", "T5LayerSelfAttention"]
    for f in f02:
        assert not f.fixable and f.no_fix_reason is not None and "device cuda" in f.no_fix_reason


def _record(model: str, applied: dict[str, int], reasons: list[str]) -> None:
    expected = EXPECTED[model]
    assert applied == expected["applied"], (applied, reasons)
    for needle in expected["declined"]:
        assert any(needle in r for r in reasons), (needle, reasons)


# What each model gets, found by running the rules on 4.35.0 and checked by reading the code:
# - BERT: the BertSelfAttention submodule (f01); q/k/v are projected on both sides of the
#   cross-attention / cache `if`, so family 9 is declined; the chain (f10) runs SDPA unless
#   `output_attentions`, a head mask or relative positions ask for the hand-written path, kept for them.
# - GPT-2: GPT2Block's self- and cross-attention (f03, two sites).
# - T5: T5LayerSelfAttention and T5LayerCrossAttention (f02, rewritten for CUDA: it is CUDA-only); k and
#   v are projected by the same statement of the inlined `project` helper, so family 9 is declined.
# - RoBERTa: RobertaSelfAttention is BERT's code under another name (no family 1); family 9 declined
#   as for BERT; the attention chain (family 10) as for BERT.
# - DistilBERT: q/k/v project three different arguments (no family 9); the chain (family 10) is
#   reported without a fix because of the head mask, and the softmax (family 4) is information only.
# - ALBERT: family 9 matches, declined because `prune_heads` re-creates the q/k/v Linears; family
#   10 as for RoBERTa.
# - GPT-Neo: family 9 fused (q_proj/k_proj/v_proj, bias-free); its `_attn` upcasts before the
#   softmax and returns the weights, so no family 10 site.
EXPECTED: dict[str, dict[str, Any]] = {
    "bert": {
        "applied": {"f01-bert-self-attention": 1, "f10-manual-attention-sdpa": 1},
        "declined": ["the three projections are not consecutive statements of one block"],
    },
    "gpt2": {"applied": {"f03-gpt2-attention": 2}, "declined": []},
    "t5": {"applied": {"f02-t5-attention": 2}, "declined": ["two projections share one statement"]},
    "roberta": {
        "applied": {"f10-manual-attention-sdpa": 1},
        "declined": ["the three projections are not consecutive statements of one block"],
    },
    "distilbert": {"applied": {}, "declined": []},
    "albert": {"applied": {}, "declined": ["`self.query` is also used on line"]},
    "gpt_neo": {"applied": {"f09-fused-qkv": 1}, "declined": []},
}
