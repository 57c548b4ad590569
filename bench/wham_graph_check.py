"""The workload graph against torch's own counts, as figures (the assertions are tests/wham/test_torch_agreement.py).

Usage: python bench/wham_graph_check.py
Per zoo model at the test's reduced size: forward+backward GEMM FLOPs / FlopCounterMode's, parameter +
gradient + AdamW-state bytes / torch's allocation (bf16), saved-activation bytes / saved_tensors_hooks'.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]



def main() -> int:
    from tests.wham.test_torch_agreement import DEFAULT_SIZE, MODELS, SIZE, _measure

    from adopter.wham.graph import build_workload
    from adopter.wham.workload.trace import trace_training_step
    from adopter.wham.workload.zoo import ZOO

    print("| model | batch × seq | GEMM FLOPs / FlopCounterMode | param+grad+optimizer bytes / torch's | "
          "saved activations / autograd's |")
    print("|---|---|---|---|---|")
    for name in MODELS:
        b, s = SIZE.get(name, DEFAULT_SIZE)
        model, inputs, loss = ZOO[name][0](b, s)
        raw = trace_training_step(model, inputs, loss_fn=loss)
        mem = build_workload(raw, model=name, batch=b, seq=s).memory
        m = _measure(name, b, s)
        flops = sum(o["flops"] for o in raw["ops"] if o["kind"] == "gemm" and o["phase"] != "opt")
        state = (mem.param_bytes + mem.grad_bytes + mem.optimizer_bytes) / (
            m.param_bytes + m.grad_bytes + m.optimizer_bytes)
        print(f"| {name} | {b} × {s} | {flops / sum(m.flops.values()):.4f} | {state:.4f} | "
              f"{mem.saved_activation_bytes / m.saved_bytes:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
