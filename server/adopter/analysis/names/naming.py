"""What a qualified callee name denotes: a module constructor, a tensor function, or plain Python."""

from __future__ import annotations

from adopter.analysis.names.symbols import BUILTIN_NAMES

# torch functions that compute Python values or metadata, not tensors (calls of them with opaque
# arguments are opaque too: `torch.finfo(dtype).min` is a constant, not an op).
_TORCH_METADATA = frozenset(
    {
        "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.is_floating_point", "torch.device",
        "torch.dtype", "torch.Size", "torch.get_default_dtype", "torch.is_autocast_enabled",
        "torch.is_grad_enabled", "torch.is_inference_mode_enabled", "torch.numel",
        "torch.get_autocast_gpu_dtype", "torch.get_autocast_dtype", "torch.no_grad", "torch.enable_grad",
        "torch.compiler.is_compiling", "torch.jit.is_tracing", "torch.jit.is_scripting",
    }
)
_TORCH_METADATA_PREFIXES = ("torch.cuda.", "torch.backends.", "torch.jit.", "torch._C.", "torch.fx.",
                            "torch.compiler.", "torch.distributed.", "torch.version", "torch.onnx.")

# Methods of `torch.nn.Module` that return the module itself (torch/nn/modules/module.py: `to`, `cuda`, `cpu`,
# `type`, `float`, `double`, `half`, `bfloat16`, `to_empty`, `requires_grad_`, `train`, `eval`, `share_memory`,
# `apply` return `self`, most through `Module._apply`, which ends in `return self`).
MODULE_SELF_METHODS = frozenset({"to", "cuda", "cpu", "type", "float", "double", "half", "bfloat16", "to_empty",
                                 "requires_grad_", "train", "eval", "share_memory", "apply"})
CONTAINERS = frozenset(
    {
        "torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList",
        "torch.nn.ParameterDict",
    }
)


def is_torch_name(qualified: str) -> bool:
    return qualified == "torch" or qualified.startswith("torch.")


def is_opaque_function(qualified: str) -> bool:
    """A function whose call with only opaque arguments is itself opaque (`math.sqrt(d)`, `len(x)`)."""
    if qualified.rsplit(".", 1)[-1][:1].isupper():  # instantiating a class (a model, a loss) is an op
        return qualified in _TORCH_METADATA or qualified in BUILTIN_NAMES
    if not is_torch_name(qualified):
        return True
    return qualified in _TORCH_METADATA or qualified.startswith(_TORCH_METADATA_PREFIXES)


def is_constructor(qualified: str, same_file_class: bool) -> bool:
    """Whether `qualified(...)` in `__init__` builds a module-like object (rather than a plain value)."""
    if same_file_class:
        return True
    root = qualified.split(".")[0]
    last = qualified.rsplit(".", 1)[-1]
    if root == "math" or (root == qualified and root in BUILTIN_NAMES):
        return False
    if is_torch_name(qualified) and not qualified.startswith("torch.nn."):
        return last[:1].isupper() and qualified not in _TORCH_METADATA
    if qualified.startswith("torch.nn.functional.") or qualified.startswith("torch.nn.init."):
        return False
    return True
