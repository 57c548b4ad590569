"""`torch.nn.modules.<sub>.<Name>` spelled as torch re-exports it, `torch.nn.<Name>`.

torch defines its layers in the submodules of `torch.nn.modules` (`normalization.py`, `activation.py`, ...) and
re-exports each under `torch.nn` (`torch/nn/__init__.py` does `from torch.nn.modules import *`, whose `__all__` is
the list below). Code that imports a layer from where it is defined (`from torch.nn.modules.normalization import
LayerNorm`, `torch.nn.modules.conv.Conv2d(...)`) builds the very class `nn.LayerNorm` names, but qualifies to
the longer name, which rules written against `torch.nn.<Name>` do not match. Qualified names are read here in
their public spelling. torch is never imported: the table is `torch.nn.modules.__all__` of torch 2.13, and
`tests/analysis/test_torch_nn_public.py` checks it against the installed torch (each name the same object under
both spellings). Private names (`torch.nn.modules.batchnorm._BatchNorm`, `torch.nn.modules.loss._Loss`) and
`torch.nn.modules.utils` helpers are not re-exported and keep their spelling.

Census (grep of the dev archives, distributions importing from or naming `torch.nn.modules.*`): dev2 32,
realworld 6; names it reaches there: `Module`, `Linear`, `Conv2d`, `BatchNorm2d`, `LayerNorm`, `GroupNorm`,
`ReLU`, `GELU`, `Dropout2d`, `PReLU`, `MultiheadAttention`, ... (the rest are private bases and helpers).
"""

from __future__ import annotations

from typing import Final

_PREFIX: Final = "torch.nn.modules."

# `torch.nn.modules.__all__` (torch 2.13): each is `torch.nn.<name>` too.
REEXPORTED: Final = frozenset({
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveLogSoftmaxWithLoss",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AlphaDropout", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Bilinear",
    "CELU", "CTCLoss", "ChannelShuffle", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
    "ConstantPad2d", "ConstantPad3d", "Container", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "CosineEmbeddingLoss", "CosineSimilarity", "CrossEntropyLoss",
    "CrossMapLRN2d", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "ELU", "Embedding", "EmbeddingBag",
    "FeatureAlphaDropout", "Flatten", "Fold", "FractionalMaxPool2d", "FractionalMaxPool3d", "GELU", "GLU",
    "GRU", "GRUCell", "GaussianNLLLoss", "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
    "HingeEmbeddingLoss", "HuberLoss", "Identity", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "KLDivLoss", "L1Loss", "LPPool1d", "LPPool2d", "LPPool3d", "LSTM", "LSTMCell", "LayerNorm",
    "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LeakyReLU", "Linear", "LinearCrossEntropyLoss",
    "LinearCrossEntropyOptions", "LocalResponseNorm", "LogSigmoid", "LogSoftmax", "MSELoss",
    "MarginRankingLoss", "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "Mish", "Module", "ModuleDict", "ModuleList", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "MultiheadAttention", "NLLLoss", "NLLLoss2d", "PReLU", "PairwiseDistance",
    "ParameterDict", "ParameterList", "PixelShuffle", "PixelUnshuffle", "PoissonNLLLoss", "RMSNorm", "RNN",
    "RNNBase", "RNNCell", "RNNCellBase", "RReLU", "ReLU", "ReLU6", "ReflectionPad1d", "ReflectionPad2d",
    "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "SELU", "Sequential", "SiLU",
    "Sigmoid", "SmoothL1Loss", "SoftMarginLoss", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink",
    "Softsign", "SyncBatchNorm", "Tanh", "Tanhshrink", "Threshold", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "Unflatten", "Unfold", "Upsample", "UpsamplingBilinear2d",
    "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"
})


def torch_nn_public(qualified: str) -> str:
    """`torch.nn.modules.normalization.LayerNorm` and `torch.nn.modules.LayerNorm` -> `torch.nn.LayerNorm` (also
    with an attribute after the class); any other name as given."""
    if not qualified.startswith(_PREFIX):
        return qualified
    parts = qualified[len(_PREFIX):].split(".")
    if parts[0] in REEXPORTED:  # `torch.nn.modules.LayerNorm`: the package re-exports it too
        return "torch.nn." + ".".join(parts)
    # `<sub>.<Name>`, `<sub>` a public module (`_functions` defines autograd functions of the same names)
    if len(parts) > 1 and parts[0].islower() and parts[0][:1] != "_" and parts[1] in REEXPORTED:
        return "torch.nn." + ".".join(parts[1:])
    return qualified
