"""Eval-mode (inference) time of the conv-BN fold on real classes, original against `adopter fix`'s rewrite.

`adopter verify` times training mode, where the fold does not apply (training keeps both modules); this
times what the fold changes: `model.eval()` forward under `torch.no_grad()`, on CPU, alternating original and
rewrite in pairs (which goes first alternates), after two warm-up calls each. Prints the median ratio
original / rewritten over the pairs with its interquartile range, and the CPU time of the whole run.

    PYTHONPATH=server python bench/conv_bn_sequential_eval.py [--pairs 15] [--threads 1]

The classes are the ones the equivalence tests copy from the real-world packages
(`tests/rules/real_sources.py`: torchvision ResNet with BasicBlock [1, 1, 1, 1], vit-pytorch MBConv).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "rules"))

from real_sources import MAX_VIT_MBCONV, TORCHVISION_RESNET  # noqa: E402

CASES = {
    "torchvision ResNet (BasicBlock [1,1,1,1]), 8x3x224x224": (
        TORCHVISION_RESNET + "\n\ndef make():\n    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)\n",
        (8, 3, 224, 224)),
    "torchvision ResNet (BasicBlock [1,1,1,1]), 8x3x64x64": (
        TORCHVISION_RESNET + "\n\ndef make():\n    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)\n",
        (8, 3, 64, 64)),
    "vit-pytorch MBConv(64, 64), 8x64x32x32": (
        MAX_VIT_MBCONV + "\n\ndef make():\n    return MBConv(64, 64, downsample=False)\n", (8, 64, 32, 32)),
}


def _fixed(source: str) -> str:
    from adopter.session import Session, load_context

    result = Session(load_context(target="cpu")).fix(source, "bench_conv_bn.py")
    if not result.applied:
        raise SystemExit("no fix applied")
    return result.new_source


def _build(source: str, name: str) -> Any:
    namespace: dict[str, Any] = {"__name__": name}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace["make"]()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    start = time.process_time()
    for label, (source, shape) in CASES.items():
        source = textwrap.dedent(source)
        torch.manual_seed(0)
        original = _build(source, "original")
        rewritten = _build(_fixed(source), "rewritten")
        rewritten.load_state_dict(original.state_dict(), strict=True)
        original.eval()
        rewritten.eval()
        x = torch.randn(*shape)
        ratios = []
        with torch.no_grad():
            for module in (original, rewritten, original, rewritten):
                module(x)
            diff = (original(x) - rewritten(x)).abs().max().item()
            for i in range(args.pairs):
                times = {}
                for module in ((original, rewritten) if i % 2 == 0 else (rewritten, original)):
                    t0 = time.perf_counter()
                    module(x)
                    times[id(module)] = time.perf_counter() - t0
                ratios.append(times[id(original)] / times[id(rewritten)])
        q = statistics.quantiles(ratios, n=4)
        print(f"{label}: eval speedup {statistics.median(ratios):.2f}x [{q[0]:.2f}-{q[2]:.2f}] over {args.pairs} "
              f"pairs, max |diff| {diff:.1e}")
    print(f"CPU time {time.process_time() - start:.1f} s, threads {args.threads}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
