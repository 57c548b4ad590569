"""Memory of the two recompute-in-backward fixes on a stack of blocks: chunked gated MLPs (f14-gated-chunked,
`fused_gated_activation`) and quick-GELU (f13-quick-gelu, `quick_gelu`).

Each fix keeps one tensor less per block for backward (`act(gate)`, half the projection; `sigmoid(1.702 x)`,
as large as `x`); a single block's peak is set by its own backward, so the gain shows on a stack. For each
form the script writes a model of `--depth` residual blocks (Linear -> the form -> Linear), rewrites it with
`adopter fix` (the session `fix` uses), and measures, for the original and the rewritten model, one training
step (forward, backward of the sum): the bytes autograd saves (`saved_tensors_hooks`, each storage once) and
the peak of live tensors (`adopter.verify.measure.peak_memory`: the profiler's CPU memory timeline). It also
checks that the outputs and every gradient are identical.

    PYTHONPATH=server .venv/bin/python bench/saved_memory.py [--depth 8] [--tokens 1024] [--dim 256]
"""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import torch

from adopter.session import Session, load_context
from adopter.verify.measure import peak_memory

HEAD = """
import torch
import torch.nn.functional as F
from torch import nn
"""

# The blocks: `{act}` is the form's activation; each is a shape a real-world set's class has.
FORMS = {
    # diffusers SwiGLU: nn.SiLU() bound in __init__ (the stock path: the product made in place)
    "swiglu-module": """
class Act(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.proj = nn.Linear(dim, hidden * 2)
        self.activation = nn.SiLU()

    def forward(self, hidden_states):
        hidden_states = self.proj(hidden_states)
        hidden_states, gate = hidden_states.chunk(2, dim=-1)
        return hidden_states * self.activation(gate)
""",
    # diffusers GEGLU: the activation a method with its own branch (the generic path: autograd in backward)
    "geglu-method": """
class Act(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.proj = nn.Linear(dim, hidden * 2)

    def gelu(self, gate):
        if gate.device.type != "mps":
            return F.gelu(gate)
        return F.gelu(gate.to(dtype=torch.float32)).to(dtype=gate.dtype)

    def forward(self, hidden_states):
        hidden_states = self.proj(hidden_states)
        hidden_states, gate = hidden_states.chunk(2, dim=-1)
        return hidden_states * self.gelu(gate)
""",
    # diffusers ApproximateGELU
    "quick-gelu": """
class Act(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.proj = nn.Linear(dim, hidden)

    def forward(self, x):
        x = self.proj(x)
        return x * torch.sigmoid(1.702 * x)
""",
}

STACK = """
class Block(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.act = Act(dim, hidden)
        self.out = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.out(self.act(x))


class Stack(nn.Module):
    def __init__(self, depth, dim, hidden):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, hidden) for _ in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
"""


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def _saved(model: torch.nn.Module, x: torch.Tensor) -> int:
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x).sum().backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=256)
    args = ap.parse_args()
    session = Session(load_context(target="cpu"))
    hidden = 4 * args.dim
    print(f"depth {args.depth}, input (2, {args.tokens}, {args.dim}), hidden {hidden}, float32, CPU")
    print(f"{'form':14} {'saved MiB':>20} {'peak MiB':>20}  identical")
    for form, act in FORMS.items():
        source = HEAD + act + STACK
        fixed = session.fix(source, f"{form}.py")
        if not fixed.applied:
            print(f"{form:14} not fixed: {[reason for _, reason in fixed.skipped]}")
            continue
        old, new = _load(source, f"old_{form}"), _load(fixed.new_source, f"new_{form}")
        torch.manual_seed(0)
        a = old.Stack(args.depth, args.dim, hidden)
        b = new.Stack(args.depth, args.dim, hidden)
        b.load_state_dict(a.state_dict(), strict=True)
        x = torch.randn(2, args.tokens, args.dim, requires_grad=True)
        outs = []
        for model in (a, b):
            xi = x.detach().clone().requires_grad_()
            y = model(xi)
            y.sum().backward()
            outs.append([y.detach(), xi.grad, *(p.grad for p in model.parameters())])
            model.zero_grad(set_to_none=True)
        same = all(torch.equal(p, q) for p, q in zip(*outs))
        saved = [_saved(m, x.detach().clone().requires_grad_()) / 2**20 for m in (a, b)]
        peaks = [peak_memory(m, ((x.detach().clone().requires_grad_(),), {}), torch.device("cpu")) for m in (a, b)]
        peak_text = (f"{peaks[0] / 2**20:.1f} -> {peaks[1] / 2**20:.1f}" if None not in peaks else "n/a")
        print(f"{form:14} {saved[0]:9.1f} -> {saved[1]:6.1f} {peak_text:>20}  {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
