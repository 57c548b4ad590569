"""A small training script for the GPT example: synthetic tokens, AdamW, a few steps."""

from __future__ import annotations

import torch

from gpt_decoder import GPT


def train(steps: int = 10, batch_size: int = 4, seq_len: int = 128, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    model = GPT(vocab_size=1024, block_size=seq_len, n_layer=2, n_head=4, n_embd=128)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, 1024, (batch_size, seq_len))
        _, loss = model(idx, targets=torch.roll(idx, shifts=-1, dims=1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    for step, loss in enumerate(train()):
        print(f"step {step}: loss {loss:.4f}")
