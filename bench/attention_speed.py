"""Speed of the attention rewrites: eager transformers attention vs the Adopter-rewritten file.

Rewrites a copy of `modeling_<m>.py` (transformers 4.35.0, from `.cache/tf435`) with the attention
rules (families 1, 2, 3, 9, 10), builds both models from the same config with the same weights, and
times a forward pass (eval, no grad) and a training step (forward + backward, dropout 0): median CPU
time of `--repeat` runs after a warm-up, float32 on CPU.

Run: `.venv/bin/python bench/attention_speed.py [--models bert gpt2 t5 gpt_neo] [--batch 4]
[--seq 128 512] [--repeat 5] [--threads 2]`
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tf435 import TF435  # bench/tf435.py: .cache/tf435 unless ADOPTER_TF435 names another

REPO = Path(__file__).resolve().parents[1]
RULE_FILES = ("f01-*.adl", "f02-*.adl", "f03-*.adl", "f09-*.adl", "f10-*.adl")


def rewritten(model: str, workdir: Path) -> tuple[Any, Any, list[str]]:
    """(original module, rewritten module, rule ids applied)."""
    from adopter.analysis import analyse
    from adopter.corpus import modeling_file
    from adopter.dsl import parse_rules
    from adopter.engine import Environment, find
    from adopter.session import rewrite
    from adopter.synth import Rewritten

    # Synthesized as for CUDA (the portable code is the same), so that rewrites offered on CUDA only
    # (f02, after this very benchmark and the training gains measured it) are still timed on the CPU.
    env = Environment(device="cuda", packages=frozenset(), torch_version="2.13.0")
    rules = [
        r
        for pattern in RULE_FILES
        for p in sorted((REPO / "rules").glob(pattern))
        for r in parse_rules(p.read_text(encoding="utf-8"), str(p))
    ]
    source = modeling_file(model).text
    path = f"modeling_{model}.py"
    result = rewrite(source, find(analyse(source, path), rules, env), rules=rules, env=env, path=path)
    if not isinstance(result, Rewritten):
        raise SystemExit(f"{model}: nothing rewritten ({result.reason})")
    original = importlib.import_module(f"transformers.models.{model}.modeling_{model}")
    name = f"transformers.models.{model}.modeling_{model}_adopter"
    file = workdir / f"modeling_{model}_adopter.py"
    file.write_text(result.new_source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return original, module, sorted(f.rule_id for f in result.applied)


def setups(
    tf: Any, torch: Any, batch: int, seq: int
) -> dict[str, tuple[str, Any, Callable[[], dict[str, Any]]]]:
    """model -> (class name, config, inputs) at BERT-base-like width, 2 layers."""
    ids = lambda: {"input_ids": torch.randint(5, 1000, (batch, seq))}  # noqa: E731
    return {
        "bert": (
            "BertModel",
            tf.BertConfig(
                vocab_size=1000,
                num_hidden_layers=2,
                hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0,
                max_position_embeddings=1024,
            ),
            ids,
        ),
        "gpt2": (
            "GPT2Model",
            tf.GPT2Config(
                vocab_size=1000, n_layer=2, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, n_positions=1024
            ),
            ids,
        ),
        "t5": (
            "T5Model",
            tf.T5Config(vocab_size=1000, num_layers=2, num_decoder_layers=2, dropout_rate=0.0),
            lambda: {
                "input_ids": torch.randint(5, 1000, (batch, seq)),
                "decoder_input_ids": torch.randint(5, 1000, (batch, seq)),
            },
        ),
        "gpt_neo": (
            "GPTNeoModel",
            tf.GPTNeoConfig(
                vocab_size=1000,
                hidden_size=768,
                num_layers=2,
                num_heads=12,
                attention_types=[[["global", "local"], 1]],
                embed_dropout=0.0,
                attention_dropout=0.0,
                resid_dropout=0.0,
                max_position_embeddings=1024,
            ),
            ids,
        ),
    }


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median CPU time (all threads of this process) in ms: steadier than wall time on a shared
    machine, where waiting for a core would count."""
    fn()
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        runs.append(time.process_time() - start)
    return statistics.median(runs) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["bert", "gpt2", "t5", "gpt_neo"])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(TF435))
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    print(
        f"torch {torch.__version__}, {args.threads} threads, batch {args.batch}, float32 CPU time, median of {args.repeat}"
    )
    print(
        "| model | rewrites | seq | eager fwd | rewritten fwd | speed-up | eager train step | rewritten train step | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            original, new, applied = rewritten(model, Path(tmp))
            for seq in args.seq:
                cls, config, inputs = setups(transformers, torch, args.batch, seq)[model]
                torch.manual_seed(0)
                a = getattr(original, cls)(config)
                b = getattr(new, cls)(config)
                b.load_state_dict(a.state_dict(), strict=True)
                data = inputs()
                figures = []
                for m in (a, b):
                    m.eval()
                    with torch.no_grad():
                        figures.append(timed(lambda m=m, data=data: m(**data), args.repeat))
                for m in (a, b):
                    m.train()

                    def step(m: Any = m, data: dict[str, Any] = data) -> None:
                        m.zero_grad(set_to_none=True)
                        out = m(**data)[0]
                        out.float().pow(2).mean().backward()

                    figures.append(timed(step, args.repeat))
                fe, fr, te, tr = figures
                print(
                    f"| {model} | {', '.join(sorted(set(applied)))} | {seq} | {fe:.1f} ms | {fr:.1f} ms | "
                    f"{fe / fr:.2f}× | {te:.1f} ms | {tr:.1f} ms | {te / tr:.2f}× |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
