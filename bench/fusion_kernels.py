"""Speed of each fusion rewrite against the code it replaces (CPU, float32, one thread).

Run: `.venv/bin/python bench/fusion_kernels.py [--repeat N]`. Prints one line per family: the
original's and the rewrite's median time per call and the speed-up. The rewritten side runs the
very helper code the strategies insert (taken from their templates).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from adopter.synth.strategies import fusions_act, fusions_bn, fusions_gate, fusions_norm


def _helper(template: str, name: str) -> Any:
    code = template.replace("{F}", "torch.nn.functional").replace("{torch}", "torch")
    code = code.replace("{FOLD}", fusions_bn._FOLD_SCALE_SHIFT.strip("\n"))
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(code, name, "exec"), namespace)
    return namespace[name]


def _time(fn: Callable[[], Any], repeat: int) -> float:
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cases() -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    torch.manual_seed(0)
    x = torch.randn(16, 128, 768)
    r = torch.randn(16, 128, 768)
    eps = 1e-5

    def ln_formula() -> Any:
        mean = x.mean(-1, keepdim=True)
        variance = (x - mean).pow(2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(variance + eps)

    def rms_formula() -> Any:
        variance = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(variance + eps)

    def gelu_erf() -> Any:
        return x * 0.5 * (1.0 + torch.erf(x / 1.4142135623730951))

    def gelu_tanh() -> Any:
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))

    norm, drop = torch.nn.LayerNorm(768), torch.nn.Dropout(0.1)
    dal = _helper(fusions_norm._DROPOUT_ADD_LAYER_NORM, "fused_dropout_add_layer_norm")

    lin, act = torch.nn.Linear(768, 3072), torch.nn.GELU()
    x2 = torch.randn(8, 128, 768)
    lg = _helper(fusions_act._LINEAR_GELU, "fused_linear_gelu")

    conv, bn = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).eval(), torch.nn.BatchNorm2d(64).eval()
    img = torch.randn(8, 64, 56, 56)
    cb = _helper(fusions_bn._CONV_BN, "folded_conv_bn")

    lin2, bn1 = torch.nn.Linear(1024, 1024).eval(), torch.nn.BatchNorm1d(1024).eval()
    feats = torch.randn(256, 1024)
    lb = _helper(fusions_bn._LINEAR_BN, "folded_linear_bn")

    gate, up = (torch.nn.Linear(512, 1536, bias=False) for _ in range(2))
    silu = torch.nn.SiLU()
    gate_up = torch.nn.Linear(512, 3072, bias=False)
    ga = _helper(fusions_gate._GATED, "gated_activation")
    x3 = torch.randn(8, 128, 512)

    def adam_pair() -> tuple[Callable[[], Any], Callable[[], Any]]:
        def make(**kw: Any) -> Callable[[], Any]:
            params = [torch.nn.Parameter(torch.randn(1024, 1024)) for _ in range(8)]
            for p in params:
                p.grad = torch.randn_like(p)
            opt = torch.optim.AdamW(params, lr=1e-3, **kw)
            return opt.step
        return make(), make(fused=True)

    adam_default, adam_fused = adam_pair()
    return [
            ("5 dropout-add-LayerNorm (train)", lambda: norm(drop(x) + r), lambda: dal(x, r, norm, 0.1, True)),
            ("6 Linear+GELU", lambda: act(lin(x2)), lambda: lg(x2, lin, act)),
            ("7 Conv2d+BatchNorm2d (eval)", lambda: bn(conv(img)), lambda: cb(img, conv, bn)),
            ("8 Linear+BatchNorm1d (eval)", lambda: bn1(lin2(feats)), lambda: lb(feats, lin2, bn1)),
            ("11 LayerNorm formula", ln_formula, lambda: F.layer_norm(x, x.shape[-1:], eps=eps)),
            ("12 RMSNorm formula", rms_formula, lambda: F.rms_norm(x, x.shape[-1:], eps=eps)),
            ("13 GELU erf formula", gelu_erf, lambda: F.gelu(x)),
            ("13 GELU tanh formula", gelu_tanh, lambda: F.gelu(x, approximate="tanh")),
            ("14 gated MLP gate+up", lambda: silu(gate(x3)) * up(x3), lambda: ga(gate_up(x3), silu)),
            ("17 AdamW step (8x1M params)", adam_default, adam_fused),
        ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.repeat}")
    print(f"{'family':34} {'original ms':>12} {'rewrite ms':>11} {'speed-up':>9}")
    with torch.no_grad():
        for label, original, rewritten in cases():
            a, b = _time(original, args.repeat), _time(rewritten, args.repeat)
            print(f"{label:34} {a * 1e3:12.2f} {b * 1e3:11.2f} {a / b:8.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
