"""Run an original module and its rewrite on the same inputs; compare outputs and every gradient."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

# Tolerances per dtype (relative, absolute). A tensor matches when its largest difference is at most
# atol + rtol * (the largest magnitude of the original's tensor): relative to the tensor's scale, not
# element by element, because a fused kernel reorders float additions (SDPA, a fused GEMM, a folded
# conv) and an element near zero in a large gradient then differs by rounding of the large ones.
# Gradients get 10x the absolute tolerance (they sum over the batch). fp32: rtol 1e-4, about 800 ulps
# of float32 (2^-23); bf16 and fp16: torch.testing's rtol for those dtypes, atol one unit of their
# precision at 1.0 (2^-7, 2^-10).
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (1.6e-2, 7.8e-3),
    torch.float16: (1e-3, 9.8e-4),
}


@dataclass(frozen=True, slots=True)
class Comparison:
    """How far the rewrite's outputs and gradients are from the original's."""

    equivalent: bool
    max_abs: float  # the largest absolute difference over outputs and gradients
    max_rel: float  # that difference over the largest magnitude of the original's tensor
    compared: int  # how many tensors were compared
    detail: str  # the worst tensor, or why they could not be compared


def tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in a (nested) output: tuples, lists, dicts, dataclass-like model outputs."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors(item)
    elif hasattr(value, "to_tuple"):  # transformers' ModelOutput
        yield from tensors(value.to_tuple())


Inputs = tuple[tuple[Any, ...], dict[str, Any]]  # positional and keyword inputs of `forward`


def call(module: torch.nn.Module, inputs: Inputs) -> Any:
    """`module(*args, **kwargs)`."""
    return module(*inputs[0], **inputs[1])


def _fresh(inputs: Any) -> Any:
    """Inputs cloned, floating tensors requiring grad, so input gradients can be compared too."""
    if isinstance(inputs, torch.Tensor):
        return inputs.detach().clone().requires_grad_(inputs.is_floating_point())
    if isinstance(inputs, dict):
        return {k: _fresh(v) for k, v in inputs.items()}
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(_fresh(v) for v in inputs)
    return inputs


def step(module: torch.nn.Module, inputs: Inputs, seed: int) -> tuple[list[torch.Tensor], list[torch.Tensor], dict[str, torch.Tensor]]:
    """Forward, then backward of a fixed random projection of every floating output: (outputs, input
    gradients, parameter gradients)."""
    module.zero_grad(set_to_none=True)
    args = (_fresh(inputs[0]), _fresh(inputs[1]))
    # The same random stream for both runs: a forward that samples (Informer's ProbSparse attention draws
    # the keys it scores with torch.randint) draws the same keys in the original and the rewrite.
    torch.manual_seed(seed)
    outputs = [t for t in tensors(call(module, args)) if t.is_floating_point()]
    generator = torch.Generator().manual_seed(seed)
    loss = None
    for t in outputs:
        if t.requires_grad:
            term = (t * torch.randn(t.shape, generator=generator).to(t.device, t.dtype)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()  # type: ignore[no-untyped-call]
    input_grads = [a.grad for a in tensors(args) if a.grad is not None]
    grads = {n: p.grad for n, p in module.named_parameters() if p.grad is not None}
    return [t.detach() for t in outputs], input_grads, grads


def gradients_as_state_dict(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's parameter gradients under the names its `state_dict` gives, through its own state-dict
    hooks: a fused parameter's gradient comes out split like its weight (a fused QKV's into q, k, v)."""
    saved = {n: p.data for n, p in module.named_parameters()}
    try:
        for _, p in module.named_parameters():
            p.data = p.grad if p.grad is not None else torch.zeros_like(p)
        return {k: v.detach().clone() for k, v in module.state_dict().items()}
    finally:
        for n, p in module.named_parameters():
            p.data = saved[n]


def compare(original: torch.nn.Module, rewritten: torch.nn.Module, inputs: Inputs, *, seed: int,
            dtype: torch.dtype) -> Comparison:
    """Outputs, input gradients and parameter gradients of both modules on the same inputs."""
    rtol, atol = TOLERANCES.get(dtype, TOLERANCES[torch.float32])
    a_out, a_in, a_grads = step(original, inputs, seed)
    b_out, b_in, b_grads = step(rewritten, inputs, seed)
    if len(a_out) != len(b_out) or not a_out:
        return Comparison(False, float("inf"), float("inf"), 0,
                          f"the original returns {len(a_out)} floating tensors, the rewrite {len(b_out)}")
    if a_grads.keys() != b_grads.keys():
        b_grads = {k: v for k, v in gradients_as_state_dict(rewritten).items() if k in a_grads}
    missing = sorted(set(a_grads) - set(b_grads))
    if missing:
        return Comparison(False, float("inf"), float("inf"), 0, f"no gradient for {', '.join(missing[:3])}")
    pairs = [(f"output {i}", x, y, atol) for i, (x, y) in enumerate(zip(a_out, b_out))]
    pairs += [(f"input gradient {i}", x, y, atol * 10) for i, (x, y) in enumerate(zip(a_in, b_in))]
    pairs += [(f"gradient of {n}", a_grads[n], b_grads[n], atol * 10) for n in a_grads]
    worst, worst_abs, worst_rel, ok = "", 0.0, 0.0, True
    for name, x, y, tol in pairs:
        if x.shape != y.shape:
            return Comparison(False, float("inf"), float("inf"), len(pairs), f"{name}: shape {tuple(y.shape)} != {tuple(x.shape)}")
        x64, y64 = x.double(), y.double()
        same_special = (torch.isnan(x64) & torch.isnan(y64)) | (torch.isinf(x64) & (x64 == y64))  # or the same inf
        diff = torch.where(same_special, torch.zeros_like(x64), (x64 - y64).abs())  # NaN elsewhere stays NaN
        x64 = torch.where(same_special, torch.zeros_like(x64), x64)
        abs_err = float(diff.max()) if diff.numel() else 0.0
        rel_err = abs_err / max(float(x64.abs().max()), 1e-30) if diff.numel() else 0.0
        scale = float(x64.abs().max()) if diff.numel() else 0.0
        ok = ok and abs_err <= tol + rtol * scale  # False for a NaN the original does not have
        if abs_err >= worst_abs:
            worst, worst_abs, worst_rel = name, abs_err, rel_err
    return Comparison(ok, worst_abs, worst_rel, len(pairs), worst)
