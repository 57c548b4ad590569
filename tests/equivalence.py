"""The equivalence harness every test folder uses: run an original and a rewritten module, compare them.

`compare_modules` is the equivalence contract of RULES.md for one pair of modules:
- the original's `state_dict` loads into the rewritten module with `strict=True` (and, with `round_trip`,
  the rewritten's back into the original, `strict=True`);
- in every requested training mode (`modes`), both run on the same inputs (`torch.manual_seed(0)` before
  `inputs()`); train mode with dropout on is deterministic only with `run_seed` (the seed set again before
  each side runs, so both draw the same masks), and
  - outputs (every floating tensor of the result, in order) agree at `rtol` / `atol`
    (`torch.testing.assert_close`: also same shape and dtype);
  - input and parameter gradients agree at `grad_rtol` (default `rtol`) / `grad_atol` (default `10 * atol`),
    every parameter's (zeros where no gradient flowed);
    a fused parameter's gradient is compared with the gradients of the parameters it replaced, through
    the rewritten module's own `state_dict` split (`same_parameters`: no fusing allowed, a gradient flows to
    the same named parameters on both sides, at least one);
  - buffers (running statistics: every buffer of the original the rewritten module saves or has) agree after
    the run at `buffer_rtol` / `buffer_atol` (default `torch.allclose`'s 1e-5 / 1e-8).
`trained_statistics` gives a module's BatchNorms the statistics a trained model would have (fresh ones, mean 0
and variance 1, would hide a fold that drops them).
The loss weights every output element with a fixed random weight (seed 1234): a plain sum would hide errors
in softmax gradients (rows sum to one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch


def compare_modules(
    original: torch.nn.Module,
    rewritten: torch.nn.Module,
    inputs: Callable[[], Sequence[Any]],
    *,
    kwargs: dict[str, Any] | None = None,
    modes: Sequence[bool] = (False, True),
    atol: float = 1e-5,
    rtol: float = 1e-4,
    grad_atol: float | None = None,
    grad_rtol: float | None = None,
    buffer_atol: float = 1e-8,
    buffer_rtol: float = 1e-5,
    round_trip: bool = False,
    run_seed: int | None = None,
    same_parameters: bool = False,
) -> None:
    """Strict checkpoint loading, then equal outputs, gradients and buffers in each training mode."""
    rewritten.load_state_dict(original.state_dict(), strict=True)
    if round_trip:
        original.load_state_dict(rewritten.state_dict(), strict=True)
    g_atol = atol * 10 if grad_atol is None else grad_atol
    g_rtol = rtol if grad_rtol is None else grad_rtol
    for training in modes:
        original.train(training)
        rewritten.train(training)
        torch.manual_seed(0)
        args = list(inputs())
        a_out, a_in, a_grads, a_flowed = _run(original, args, kwargs or {}, run_seed)
        b_out, b_in, b_grads, b_flowed = _run(rewritten, args, kwargs or {}, run_seed)
        assert len(a_out) == len(b_out) and len(a_out) > 0
        for x, y in zip(a_out, b_out):
            torch.testing.assert_close(y, x, atol=atol, rtol=rtol)
        for x, y in zip(a_in, b_in):
            if x is not None or y is not None:
                assert x is not None and y is not None
                torch.testing.assert_close(y, x, atol=g_atol, rtol=g_rtol)
        if same_parameters:
            assert a_flowed == b_flowed and a_flowed, (sorted(a_flowed), sorted(b_flowed))
        _compare_grads(a_grads, b_grads, rewritten, g_atol, g_rtol)
        _compare_buffers(original, rewritten, buffer_atol, buffer_rtol)


def trained_statistics(module: torch.nn.Module, *, weight: tuple[float, float] = (0.5, 1.5)) -> None:
    """Random running statistics and affine parameters for every BatchNorm in `module` (itself included):
    mean U(-1, 1), variance U(0.5, 2), weight U(`weight`), bias U(-1, 1), drawn in that order."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                assert m.running_mean is not None and m.running_var is not None
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
                if m.weight is not None:
                    m.weight.uniform_(*weight)
                    m.bias.uniform_(-1, 1)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif hasattr(value, "to_tuple"):  # transformers ModelOutput
        yield from _tensors(value.to_tuple())


def _run(
    module: torch.nn.Module, inputs: Sequence[Any], kwargs: dict[str, Any], seed: int | None = None
) -> tuple[list[torch.Tensor], list[torch.Tensor | None], dict[str, torch.Tensor], set[str]]:
    """Outputs, input gradients, every parameter's gradient (zeros where none flowed) and the names of the
    parameters a gradient flowed to."""
    module.zero_grad(set_to_none=True)
    if seed is not None:
        torch.manual_seed(seed)
    args = [
        x.detach().clone().requires_grad_(x.is_floating_point()) if isinstance(x, torch.Tensor) else x
        for x in inputs
    ]
    outputs = [t for t in _tensors(module(*args, **kwargs)) if t.is_floating_point()]
    generator = torch.Generator().manual_seed(1234)
    loss = sum((t * torch.randn(t.shape, generator=generator)).sum() for t in outputs if t.requires_grad)
    if isinstance(loss, torch.Tensor):
        loss.backward()
    input_grads = [a.grad if isinstance(a, torch.Tensor) else None for a in args]
    params = dict(module.named_parameters())
    grads = {n: torch.zeros_like(p) if p.grad is None else p.grad for n, p in params.items()}
    return [t.detach() for t in outputs], input_grads, grads, {n for n, p in params.items() if p.grad is not None}


def _compare_grads(
    a: dict[str, torch.Tensor],
    b: dict[str, torch.Tensor],
    rewritten: torch.nn.Module,
    atol: float,
    rtol: float,
) -> None:
    """Parameter gradients; a fused parameter's gradient is compared with the concatenation of the
    gradients of the parameters it replaced (through the module's own `state_dict` split)."""
    if a.keys() == b.keys():
        for name in a:
            torch.testing.assert_close(b[name], a[name], atol=atol, rtol=rtol)
        return
    # Fused parameters: map the rewritten module's gradients to the original names by running its
    # state-dict hooks on a dict of gradients instead of weights.
    split = _gradients_as_state_dict(rewritten)
    assert set(a) <= set(split), sorted(set(a) - set(split))
    for name in a:
        torch.testing.assert_close(split[name], a[name], atol=atol, rtol=rtol)


def _gradients_as_state_dict(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    saved = {n: p.data for n, p in module.named_parameters()}
    try:
        for _, p in module.named_parameters():
            p.data = p.grad if p.grad is not None else torch.zeros_like(p)
        return {k: v.clone() for k, v in module.state_dict().items()}
    finally:
        for n, p in module.named_parameters():
            p.data = saved[n]


def _compare_buffers(original: torch.nn.Module, rewritten: torch.nn.Module, atol: float, rtol: float) -> None:
    """The original's buffers (running statistics, batch counts, cached tables) against the rewritten
    module's `state_dict` entries of the same names (its hooks map fused buffers back), or, for a buffer
    not saved, its buffer of the same name."""
    saved = rewritten.state_dict()
    own = dict(rewritten.named_buffers())
    for name, buffer in original.named_buffers():
        other = saved.get(name, own.get(name))
        if other is not None:
            torch.testing.assert_close(other, buffer, atol=atol, rtol=rtol, msg=lambda m, n=name: f"{n}: {m}")
