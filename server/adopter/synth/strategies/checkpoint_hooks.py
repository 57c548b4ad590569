"""The state-dict hooks a fused Linear needs so checkpoints of the separate Linears keep loading.

Shared by the fused QKV (family 9) and fused gate/up (family 14) rewrites: one helper per file.
"""

from __future__ import annotations

from adopter.synth.registry import SynthContext
from adopter.synth.strategies.fusions_chain import ensure_helper

# `state_dict()` emits the separate keys (old code can load new checkpoints) and `load_state_dict`
# concatenates them in `parts` order, as `chunk` splits (strict=True loading of old checkpoints works).
CHECKPOINT_HOOKS = '''
def keep_separate_checkpoints(module, fused, parts):
    """Save and load the fused Linear `fused` as the separate Linears `parts` (adopter: separate-checkpoints)."""
    import torch

    def split(module, state_dict, prefix, local_metadata):
        for suffix in ("weight", "bias"):
            key = f"{prefix}{fused}.{suffix}"
            if key in state_dict:
                for part, piece in zip(parts, state_dict.pop(key).chunk(len(parts), dim=0)):
                    state_dict[f"{prefix}{part}.{suffix}"] = piece.clone()

    def merge(module, state_dict, prefix, *args):
        for suffix in ("weight", "bias"):
            keys = [f"{prefix}{part}.{suffix}" for part in parts]
            if all(key in state_dict for key in keys):
                state_dict[f"{prefix}{fused}.{suffix}"] = torch.cat([state_dict.pop(key) for key in keys], dim=0)

    module.register_state_dict_post_hook(split)
    module.register_load_state_dict_pre_hook(merge)
'''


# The same for a fused Linear whose parts have different widths (grouped-query attention's q, k, v):
# `sizes` are the parts' out_features, in `parts` order, as the forward's `split` splits.
SPLIT_CHECKPOINT_HOOKS = '''
def keep_split_checkpoints(module, fused, parts, sizes):
    """Save and load the fused Linear `fused` as the separate Linears `parts` of widths `sizes` (adopter: split-checkpoints)."""
    import torch

    def split(module, state_dict, prefix, local_metadata):
        for suffix in ("weight", "bias"):
            key = f"{prefix}{fused}.{suffix}"
            if key in state_dict:
                for part, piece in zip(parts, state_dict.pop(key).split(list(sizes), dim=0)):
                    state_dict[f"{prefix}{part}.{suffix}"] = piece.clone()

    def merge(module, state_dict, prefix, *args):
        for suffix in ("weight", "bias"):
            keys = [f"{prefix}{part}.{suffix}" for part in parts]
            if all(key in state_dict for key in keys):
                state_dict[f"{prefix}{fused}.{suffix}"] = torch.cat([state_dict.pop(key) for key in keys], dim=0)

    module.register_state_dict_post_hook(split)
    module.register_load_state_dict_pre_hook(merge)
'''


def ensure_split_checkpoint_hooks(ctx: SynthContext) -> str:
    """Add `keep_split_checkpoints` once per file; return the name to call."""
    return ensure_helper(ctx, "keep_split_checkpoints", "split-checkpoints", SPLIT_CHECKPOINT_HOOKS)


def ensure_checkpoint_hooks(ctx: SynthContext) -> str:
    """Add `keep_separate_checkpoints` once per file; return the name to call."""
    return ensure_helper(ctx, "keep_separate_checkpoints", "separate-checkpoints", CHECKPOINT_HOOKS)
