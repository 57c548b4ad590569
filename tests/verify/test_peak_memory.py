"""verify's peak memory counts the step's own gradients, also when an earlier step left gradients behind
(the timing loop does): measured on an H200, a rewritten module read 0 bytes because the earlier step's
gradients, freed as the next step starts, sat in the base."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from adopter.verify.measure import peak_memory, train_step  # noqa: E402

pytestmark = pytest.mark.torch


def test_peak_counts_the_gradients_after_an_earlier_step() -> None:
    torch.manual_seed(0)
    module = torch.nn.Linear(512, 512)  # 1 MiB of weight gradient, activations of a few KiB
    inputs = ((torch.randn(2, 512),), {})
    grad_bytes = sum(p.numel() * p.element_size() for p in module.parameters())
    train_step(module, inputs)  # gradients left behind, as after verify's timing pairs
    assert module.weight.grad is not None
    peak = peak_memory(module, inputs, torch.device("cpu"))
    if peak is None:
        pytest.skip("this torch's profiler gives no memory timeline")
    assert peak >= grad_bytes


def test_cuda_base_is_read_with_the_earlier_gradients_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA's counters, stood in for by the bytes of gradients the module holds (this machine has no GPU):
    the base must be read after the earlier step's gradients are dropped, or they hide the step's own."""
    module = torch.nn.Linear(64, 64)
    inputs = ((torch.randn(2, 64),), {})
    held = lambda *_: sum(p.grad.numel() * p.grad.element_size() for p in module.parameters()  # noqa: E731
                          if p.grad is not None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *_: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *_: None)
    monkeypatch.setattr(torch.cuda, "memory_allocated", held)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", held)
    train_step(module, inputs)
    grad_bytes = held()
    assert grad_bytes > 0
    assert peak_memory(module, inputs, torch.device("cuda")) == grad_bytes
