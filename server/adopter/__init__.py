"""Adopter: find where optimized DL kernels fit in PyTorch model code, and mine accelerator designs."""

from __future__ import annotations

__version__ = "0.1.0"
