"""Activation memory of one training forward, original vs rewritten model, with dropout on and off.

What the model rewrites could save in memory is what the forward keeps for backward: it grows with depth ×
batch, while weights, gradients and AdamW state do not. This counts the bytes of the distinct tensor storages
autograd saves during one forward (`torch.autograd.graph.saved_tensors_hooks`), weights and inputs excluded,
for each model's benchmark configuration (`bench/gains/models.py`, 1 layer per stack unless --layers).

Run: `.venv/bin/python bench/gains/activations.py [--models bert-large,gpt2] [--layers 1] [--batch 1]`
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from gains.models import SPECS, ModelSpec, spec  # noqa: E402


def saved_bytes(torch: Any, model: Any, batch: dict[str, Any]) -> int:
    """Bytes of the distinct storages autograd saves for backward in one forward, parameters excluded."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    inputs = {v.untyped_storage().data_ptr() for v in batch.values() if isinstance(v, torch.Tensor)}
    storages: dict[int, int] = {}

    def pack(t: Any) -> Any:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params and ptr not in inputs:
            storages[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(**batch).loss
    del loss
    return sum(storages.values())


def measure(s: ModelSpec, workdir: Path, layers: int, batch_size: int, seed: int = 0) -> dict[str, Any]:
    """Saved activation bytes per variant ('original', 'model') and dropout setting ('on', 'off')."""
    import torch

    from gains.loading import build_models, load_variants, use_transformers
    from gains.prepare import prepare_model

    prepared = prepare_model(s.package, workdir, "cpu")
    if prepared.error:
        return {"error": prepared.error}
    code = load_variants(s, str(prepared.copy) if prepared.changed else None, str(BENCH / "train_script.py"), None)
    tf = use_transformers()
    out: dict[str, Any] = {"rules_fixed": prepared.rules_fixed()}
    batch = next(code["original"].script.synthetic_batches(s.make_batch, 1, batch_size=max(batch_size, s.min_batch),
                                                           seq_len=s.seq_len, seed=seed))
    for dropout in (True, False):
        models = build_models(s, code, s.make_config(tf, layers, dropout), seed, ("original", "model"), "cpu")
        for v, m in models.items():
            torch.manual_seed(seed)
            out[f"{v}_dropout_{'on' if dropout else 'off'}"] = saved_bytes(torch, m, batch)
        del models
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(s.key for s in SPECS), help="comma-separated model keys")
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from gains.prepare import freeze_adopter

    rows: dict[str, Any] = {}
    print("| model | rules fixed | activations saved, dropout on: original → rewritten | dropout off: original → "
          "rewritten |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="adopter-activations-") as tmp:
        freeze_adopter(Path(tmp))
        for key in (k.strip() for k in args.models.split(",") if k.strip()):
            s = spec(key)
            r = rows[key] = measure(s, Path(tmp), args.layers, args.batch)
            if "error" in r:
                print(f"| {s.title} | not rewritten: {r['error']} | | |")
                continue
            fixed = ", ".join(f"{k} ×{n}" for k, n in r["rules_fixed"].items()) or "none"
            cells = [f"{_mib(r[f'original_dropout_{d}'])} → {_mib(r[f'model_dropout_{d}'])} "
                     f"({(r[f'model_dropout_{d}'] / r[f'original_dropout_{d}'] - 1) * 100:+.0f}%)"
                     for d in ("on", "off")]
            print(f"| {s.title} | {fixed} | {cells[0]} | {cells[1]} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"layers": args.layers, "batch": args.batch, "models": rows}, indent=1))
    return 0


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


if __name__ == "__main__":
    sys.exit(main())
