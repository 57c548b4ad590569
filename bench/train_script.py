"""The benchmark's training script: synthetic batches, the model's own loss, AdamW; `adopter fix` rewrites it too."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch


def synthetic_batches(make_batch: Callable[..., dict[str, Any]], steps: int, *, batch_size: int, seq_len: int,
                      seed: int = 0, device: str = "cpu") -> Iterator[dict[str, Any]]:
    """`steps` batches from `make_batch(torch, generator, batch_size, seq_len)`, the same for every seed."""
    for step in range(steps):
        gen = torch.Generator().manual_seed(seed * 100_003 + step)
        batch = make_batch(torch, gen, batch_size, seq_len)
        yield {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def make_optimizer(model: torch.nn.Module, lr: float = 1e-4, weight_decay: float = 0.01) -> torch.optim.Optimizer:
    """AdamW over every trainable parameter, as a fine-tuning script would build it."""
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=weight_decay)


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: dict[str, Any], *,
               autocast_dtype: torch.dtype | None = None, scaler: Any = None, max_grad_norm: float = 1.0) -> float:
    """One optimisation step on `batch`; returns the loss (a host sync, so timing the call times the step)."""
    device = next(model.parameters()).device.type
    amp = (torch.autocast(device_type=device, dtype=autocast_dtype) if autocast_dtype is not None
           else contextlib.nullcontext())
    optimizer.zero_grad(set_to_none=True)
    with amp:
        loss = model(**batch).loss
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
    return float(loss.detach().float().item())
