"""The table of spellings: every way to write one tensor operation, and its one canonical form.

`adopter.analysis.canonical.normalise` rewrites the ops of every analysed forward with this table, and the rule
engine rewrites rule patterns with it, so a rule written against one spelling matches them all. A new
spelling is one row here, not a new rule.

Keys and values are `(kind, target)` pairs as in `adopter.dsl.types.Op` (`"function"`, `"method"`,
`"operator"`). A method's receiver is its first argument, so `x.softmax(-1)` and `torch.softmax(x, -1)`
have the same argument list.
"""

from __future__ import annotations

from dataclasses import dataclass

# `nn.Parameter`'s spellings once qualified: an attribute bound to one holds a tensor, not a layer
PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})

Key = tuple[str, str]

# Activation functions an attribute may hold (`self.act = F.gelu`, `getattr(F, "gelu")`, a helper that
# returns one by name): a call of that attribute is a call of the function.
FUNCTION_VALUES = frozenset({
    *(f"torch.nn.functional.{name}" for name in (
        "gelu", "silu", "relu", "mish", "elu", "selu", "celu", "leaky_relu", "softplus", "hardswish",
        "hardsigmoid", "relu6", "sigmoid", "tanh", "glu")),
    "torch.sigmoid", "torch.tanh", "torch.relu",
})

# Functions a `partial(f, ...)` held by a module attribute may bind (`self.attn_fn = partial(F.softmax, dim=-1)`):
# a call of the attribute is a call of the function with those arguments.
PARTIAL_FUNCTIONS = FUNCTION_VALUES | {"torch.nn.functional.softmax", "torch.softmax"}

SOFTMAX: Key = ("function", "torch.nn.functional.softmax")
LOG_SOFTMAX: Key = ("function", "torch.nn.functional.log_softmax")
MATMUL: Key = ("function", "torch.matmul")
ONES_LIKE: Key = ("function", "torch.ones_like")
TRANSPOSE: Key = ("method", "transpose")
DROPOUT: Key = ("function", "torch.nn.functional.dropout")
GELU: Key = ("function", "torch.nn.functional.gelu")
SILU: Key = ("function", "torch.nn.functional.silu")
RELU: Key = ("function", "torch.nn.functional.relu")
SIGMOID: Key = ("function", "torch.sigmoid")
TANH: Key = ("function", "torch.tanh")
ERF: Key = ("function", "torch.erf")
RSQRT: Key = ("function", "torch.rsqrt")
SQRT: Key = ("function", "torch.sqrt")
MEAN: Key = ("method", "mean")
VAR: Key = ("method", "var")
POW: Key = ("method", "pow")
CAT: Key = ("function", "torch.cat")
CHUNK: Key = ("method", "chunk")
SPLIT: Key = ("method", "split")
MASKED_FILL: Key = ("method", "masked_fill")
CROSS_ENTROPY: Key = ("function", "torch.nn.functional.cross_entropy")
EINSUM: Key = ("function", "torch.einsum")
BADDBMM: Key = ("function", "torch.baddbmm")
NORMALIZE: Key = ("function", "torch.nn.functional.normalize")
# The transparent op: a cast, a copy, a layout change that keeps every value (`.float()`, `.to(dtype)`,
# `.type_as(x)`, `.contiguous()`, `nn.Identity()`). The matcher looks through it.
CAST: Key = ("operator", "cast")
# One alternative of a conditional expression passing its value on (`kv if cross else hidden` is a
# `choose` of `kv` on one path and of `hidden` on the other). Transparent too, but only on its path.
CHOOSE: Key = ("operator", "choose")
REARRANGE: Key = ("function", "einops.rearrange")
SEQUENTIAL = "torch.nn.Sequential"

# spelling -> canonical op
CANONICAL: dict[Key, Key] = {
    ("function", "torch.softmax"): SOFTMAX,
    ("method", "softmax"): SOFTMAX,
    ("function", "torch.nn.functional.softmax"): SOFTMAX,
    ("function", "torch.log_softmax"): LOG_SOFTMAX,
    ("method", "log_softmax"): LOG_SOFTMAX,
    ("operator", "@"): MATMUL,
    ("method", "matmul"): MATMUL,
    ("function", "torch.bmm"): MATMUL,
    ("method", "bmm"): MATMUL,
    ("function", "torch.transpose"): TRANSPOSE,
    ("function", "torch.swapaxes"): TRANSPOSE,
    ("method", "swapaxes"): TRANSPOSE,
    ("function", "torch.dropout"): DROPOUT,
    ("function", "torch.nn.functional.silu"): SILU,
    ("function", "torch.relu"): RELU,
    ("method", "relu"): RELU,
    ("function", "torch.nn.functional.sigmoid"): SIGMOID,
    ("method", "sigmoid"): SIGMOID,
    ("function", "torch.nn.functional.tanh"): TANH,
    ("method", "tanh"): TANH,
    ("method", "erf"): ERF,
    ("function", "torch.special.erf"): ERF,
    ("method", "rsqrt"): RSQRT,
    ("method", "sqrt"): SQRT,
    ("function", "torch.mean"): MEAN,
    ("function", "torch.var"): VAR,
    ("function", "torch.pow"): POW,
    ("operator", "**"): POW,
    ("function", "torch.concat"): CAT,
    ("function", "torch.concatenate"): CAT,
    ("function", "torch.chunk"): CHUNK,
    ("function", "torch.split"): SPLIT,
    ("function", "torch.masked_fill"): MASKED_FILL,
    ("function", "torch.mul"): ("operator", "*"),
    ("method", "mul"): ("operator", "*"),
    ("function", "torch.add"): ("operator", "+"),
    ("method", "add"): ("operator", "+"),
    ("function", "torch.div"): ("operator", "/"),
    ("method", "div"): ("operator", "/"),
    ("function", "torch.neg"): ("operator", "neg"),
    ("method", "neg"): ("operator", "neg"),
}

# Functions a local may hold by name (`ce = F.cross_entropy`, `softmax = torch.softmax`; `flow.statements`): a
# call of the local is a call of the function. Those the activation and partial tables name, and every function
# this table reads, under any of its spellings.
LOCAL_FUNCTIONS = PARTIAL_FUNCTIONS | frozenset(
    key[1] for pair in CANONICAL.items() for key in pair if key[0] == "function") | frozenset(
    key[1] for key in (LOG_SOFTMAX, MATMUL, DROPOUT, ERF, RSQRT, SQRT, CAT, CROSS_ENTROPY, EINSUM, BADDBMM,
                       NORMALIZE) if key[0] == "function")

# `x.square()` and `torch.square(x)`: the canonical form writes them `x.pow(2)`, as it does `x * x`.
SQUARES = frozenset({("method", "square"), ("function", "torch.square")})

# Keywords torch's argument parser accepts for others, as numpy spells them (`torch.mean(x, axis=-1,
# keepdims=True)` is `torch.mean(x, dim=-1, keepdim=True)`): read as the parameter they stand for.
KEYWORD_ALIASES = {"axis": "dim", "keepdims": "keepdim"}

# Keywords given their default value, which say nothing (`x.norm(p=2, dim=-1)` is `x.norm(dim=-1)`: torch.norm
# computes a vector norm for any number `p`, and 2 is what its default "fro" computes over the axes it reduces);
# dropped so a rule's `no_kwarg($n, p)` reads both alike (`F.normalize(x, p=2)` too: its default `p` is 2.0).
# Not `torch.linalg.norm`, whose `ord=2` over two axes
# is the spectral norm.
DEFAULT_KEYWORDS: dict[Key, tuple[str, frozenset[str]]] = {
    ("method", "norm"): ("p", frozenset({"2", "2.0"})),
    ("function", "torch.norm"): ("p", frozenset({"2", "2.0"})),
    ("function", "torch.linalg.vector_norm"): ("ord", frozenset({"2", "2.0"})),
    ("function", "torch.nn.functional.normalize"): ("p", frozenset({"2", "2.0"})),
}

# Methods that keep the value they are called on (casts, copies, memory layout).
TRANSPARENT_METHODS = frozenset({"contiguous", "float", "half", "bfloat16", "double", "to", "type_as", "type",
                                 "clone"})


ADAM: Key = ("function", "torch.optim.Adam")
ADAMW: Key = ("function", "torch.optim.AdamW")
_ADAM_PARAMS = ("params", "lr", "betas", "eps", "weight_decay", "amsgrad")


@dataclass(frozen=True, slots=True)
class Signature:
    """How a canonical op's arguments are normalised.

    `params` names the parameters in order (the receiver first for methods); the first `positional`
    stay positional, the rest become keyword arguments. `dims` are parameters holding an axis: a
    non-negative axis becomes negative when the rank of the first argument is known.
    `symmetric` says the two `dims` may be swapped (`transpose(a, b)` is `transpose(b, a)`).
    """

    params: tuple[str, ...]
    positional: int
    dims: tuple[str, ...] = ()
    symmetric: bool = False


SIGNATURES: dict[Key, Signature] = {
    SOFTMAX: Signature(("input", "dim", "_stacklevel", "dtype"), 1, ("dim",)),
    LOG_SOFTMAX: Signature(("input", "dim", "_stacklevel", "dtype"), 1, ("dim",)),
    MATMUL: Signature(("input", "other"), 2),
    TRANSPOSE: Signature(("input", "dim0", "dim1"), 3, ("dim0", "dim1"), symmetric=True),
    DROPOUT: Signature(("input", "p", "training", "inplace"), 1),
    ("function", "torch.nn.functional.dropout"): Signature(("input", "p", "training", "inplace"), 1),
    GELU: Signature(("input", "approximate"), 1),
    MEAN: Signature(("input", "dim", "keepdim", "dtype"), 2, ("dim",)),
    VAR: Signature(("input", "dim", "unbiased", "keepdim"), 2, ("dim",)),
    POW: Signature(("input", "exponent"), 2),
    CAT: Signature(("tensors", "dim"), 1, ("dim",)),
    CHUNK: Signature(("input", "chunks", "dim"), 2, ("dim",)),
    SPLIT: Signature(("tensor", "split_size_or_sections", "dim"), 2, ("dim",)),
    ("function", "torch.stack"): Signature(("tensors", "dim"), 1, ("dim",)),
    ("method", "unbind"): Signature(("input", "dim"), 1, ("dim",)),
    MASKED_FILL: Signature(("input", "mask", "value"), 3),
    NORMALIZE: Signature(("input", "p", "dim", "eps", "out"), 1, ("dim",)),
    REARRANGE: Signature(("tensor", "pattern"), 2),
    # transformers' PreTrainedModel.loss_function(logits, labels, vocab_size, ...), inherited, never bound
    ("module", "self.loss_function"): Signature(("logits", "labels", "vocab_size"), 0),
    # The parameters an optimizer updates are its first argument however passed: `Adam(params=model.parameters(),
    # lr=...)` (anomalib's configure_optimizers, lerobot's learner, xuance's learners) is `Adam(model.parameters(),
    # lr=...)`. The parameters torch lets come by position, in its order (torch 2.x `torch/optim/adam.py`).
    ADAM: Signature(_ADAM_PARAMS, 1),
    ADAMW: Signature(_ADAM_PARAMS, 1),
}


@dataclass(frozen=True, slots=True)
class ModuleSpelling:
    """A stateless module bound in `__init__` that computes a function: its call is that function.

    `kwargs` maps the constructor's parameters (in order) to the function's keyword arguments.
    """

    op: Key
    ctor_params: tuple[str, ...] = ()


MODULES: dict[str, ModuleSpelling] = {
    "torch.nn.Softmax": ModuleSpelling(SOFTMAX, ("dim",)),
    "torch.nn.LogSoftmax": ModuleSpelling(LOG_SOFTMAX, ("dim",)),
    "torch.nn.GELU": ModuleSpelling(GELU, ("approximate",)),
    "torch.nn.SiLU": ModuleSpelling(SILU),
    "torch.nn.ReLU": ModuleSpelling(RELU),
    "torch.nn.Sigmoid": ModuleSpelling(SIGMOID),
    "torch.nn.Tanh": ModuleSpelling(TANH),
    "torch.nn.Identity": ModuleSpelling(CAST),
    "einops.layers.torch.Rearrange": ModuleSpelling(REARRANGE, ("pattern",)),
    "torch.nn.CrossEntropyLoss": ModuleSpelling(
        CROSS_ENTROPY, ("weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing")),
}

# Constructor arguments that do not change what a module computes (and so may be dropped).
IGNORED_CTOR_PARAMS = frozenset({"inplace"})
