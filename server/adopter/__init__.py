"""Adopter: find where optimized DL kernels fit in PyTorch model code, and mine accelerator designs."""

from __future__ import annotations

from adopter import _native

__version__ = "0.1.0"

# The compiled analysis and matcher, when `scripts/build_native.py` built them for these sources.
_native.install()
