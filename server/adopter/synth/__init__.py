"""synth layer: rewrites findings into code (each strategy's text edits, spliced and re-analysed), only when a
fix is asked for."""

from __future__ import annotations

from adopter.synth.rewrite import rewrite
from adopter.synth.types import RewriteFailed, RewriteResult, Rewritten, Skipped

__all__ = ["RewriteFailed", "RewriteResult", "Rewritten", "Skipped", "rewrite"]
