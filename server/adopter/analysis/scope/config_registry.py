"""Layers built from an OpenMMLab config dict: mmcv's builders and its registry's names as a table.

`build_norm_layer(dict(type='BN'), c)[1]`, `build_activation_layer(act_cfg)` with `act_cfg=dict(type='GELU')`
and `build_conv_layer(None, c_in, c_out, 3)` build torch layers chosen by the dict's `type` through mmcv's
registry (`MODELS.get(type)`); the code is never imported, so the names mmcv registers are this table, each
entry with the line of mmcv 2.2.0 (`mmcv/cnn/bricks/...`) that registers it.

A `type` is read from a literal dict only: written in the call, the default of a parameter of `__init__`
that nothing there rebinds or changes in place (the class's own default, as `act_layer=nn.GELU` is read), or
`self.norm_cfg` set once, unconditionally, from such a parameter in `__init__` itself. Anything else (a dict a
caller passes, a dict with `**`, a `type` that is not a string literal) leaves the call as written.

Left out of the table on purpose: `SiLU` (activation.py:18), because a package's own registry can shadow a
name with its own class, which `MODELS.get` prefers under that package's scope (mmagic, mmdet and mmyolo each
register a `SiLU`) — none of the twelve OpenMMLab packages read for the census re-registers any other name of
this table; `Swish`, `HSigmoid`, `Clamp` (mmcv's own classes, not torch layers).
"""

from __future__ import annotations

import ast
from typing import Final

from adopter.dsl.types import Ctor, Expr, Kwarg, Value

# Where mmcv's builders are imported from (`from mmcv.cnn import build_norm_layer`, `mmcv.cnn.bricks`, or the
# brick's own module), with what each builds.
_MODULES: Final = ("mmcv.cnn", "mmcv.cnn.bricks")
_BUILDERS: Final = {
    "build_norm_layer": ("norm", "mmcv.cnn.bricks.norm"),
    "build_activation_layer": ("activation", "mmcv.cnn.bricks.activation"),
    "build_conv_layer": ("conv", "mmcv.cnn.bricks.conv"),
}

NORMS: Final = {  # mmcv/cnn/bricks/norm.py
    "BN": "torch.nn.BatchNorm2d",  # :11
    "BN1d": "torch.nn.BatchNorm1d",  # :12
    "BN2d": "torch.nn.BatchNorm2d",  # :13
    "BN3d": "torch.nn.BatchNorm3d",  # :14
    # :15 registers mmengine's `SyncBatchNorm` (mmengine/utils/dl_utils/parrots_wrapper.py:110), a subclass of
    # `torch.nn.SyncBatchNorm` that overrides `_check_input_dim` only: its forward is torch's, which the fold's
    # run-time check accepts (`type(bn).forward in (nn.BatchNorm2d.forward, nn.SyncBatchNorm.forward)`).
    "SyncBN": "torch.nn.SyncBatchNorm",
    "GN": "torch.nn.GroupNorm",  # :16
    "LN": "torch.nn.LayerNorm",  # :17
    "IN": "torch.nn.InstanceNorm2d",  # :18
    "IN1d": "torch.nn.InstanceNorm1d",  # :19
    "IN2d": "torch.nn.InstanceNorm2d",  # :20
    "IN3d": "torch.nn.InstanceNorm3d",  # :21
}

ACTIVATIONS: Final = {  # mmcv/cnn/bricks/activation.py
    # :12-15, `MODELS.register_module(module=module)` over these classes: registered by their class names.
    **{name: f"torch.nn.{name}" for name in ("ReLU", "LeakyReLU", "PReLU", "RReLU", "ReLU6", "ELU", "Sigmoid", "Tanh")},
    "GELU": "torch.nn.GELU",  # :99 (torch >= 1.4; mmcv's own GELU below)
    "HSwish": "torch.nn.Hardswish",  # mmcv/cnn/bricks/hswish.py:39 (torch >= 1.7)
}

CONVS: Final = {  # mmcv/cnn/bricks/conv.py
    "Conv1d": "torch.nn.Conv1d",  # :8
    "Conv2d": "torch.nn.Conv2d",  # :9
    "Conv3d": "torch.nn.Conv3d",  # :10
    "Conv": "torch.nn.Conv2d",  # :11
}
_NO_CONFIG_CONV: Final = "torch.nn.Conv2d"  # conv.py:29-30: `cfg is None` builds `dict(type='Conv2d')`

_TABLES: Final = {"norm": NORMS, "activation": ACTIVATIONS, "conv": CONVS}
# Keys the builders take out of the dict before building (norm.py:99, :117); the rest are the layer's keywords.
_POPPED: Final = {"norm": ("type", "requires_grad"), "activation": ("type",), "conv": ("type",)}


def builder_kind(qualified: str) -> str | None:
    """"norm", "activation" or "conv" for one of mmcv's builders (qualified as imported), else None.

    An OpenMMLab package's own registry, `MODELS.build(act_cfg)` (`from mmpretrain.registry import MODELS`,
    mmengine's `Registry.build`, whose lookup falls back to the root registry mmcv's activations are in), is
    read as the activation builder: `built_layer` then takes only a name of `ACTIVATIONS`, layers built from the
    dict alone; a norm or a convolution needs its sizes in the dict, which this does not read."""
    module, _, name = qualified.rpartition(".")
    if name == "build" and (module.endswith(".registry.MODELS") or module == "mmengine.MODELS"):
        return "activation"
    found = _BUILDERS.get(name)
    if found is None or (module not in _MODULES and module != found[1]):
        return None
    return found[0]


def config_items(text: str) -> dict[str, str] | None:
    """The keys of a literal dict (`dict(type='BN', requires_grad=True)` or `{'type': 'BN'}`) and the source
    text of each value; None for anything else (a `**` splat, a key that is not a string, not a dict)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    out: dict[str, str] = {}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        for k in node.keywords:
            if k.arg is None:
                return None
            out[k.arg] = ast.unparse(k.value)
        return out
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            out[key.value] = ast.unparse(value)
        return out
    return None


def built_layer(kind: str, config: str, args: tuple[Value, ...], kwargs: tuple[Kwarg, ...],
                origin: str) -> Ctor | None:
    """The torch layer `build_<kind>_layer(config, *args, **kwargs)` builds, for the config's evident source
    text (a literal dict, or `None` for a convolution), else None (left as written)."""
    if kind == "conv" and config.strip() == "None":
        return Ctor(_NO_CONFIG_CONV, args, kwargs, origin=origin)
    items = config_items(config)
    if items is None or "type" not in items:
        return None
    try:
        name = ast.literal_eval(items["type"])
    except (ValueError, SyntaxError):
        return None
    layer = _TABLES[kind].get(name) if isinstance(name, str) else None
    if layer is None:
        return None
    extra = tuple(Kwarg(k, Expr(v)) for k, v in items.items() if k not in _POPPED[kind])
    where = f"{origin}, type={name!r}"
    if kind == "norm":
        # `build_norm_layer(cfg, num_features, postfix='')`: the postfix names the layer, it builds nothing.
        named = {k.name: k.value for k in kwargs}
        channels = args[0] if args else named.get("num_features")
        if channels is None or len(args) > 2 or set(named) - {"num_features", "postfix"}:
            return None
        if layer == "torch.nn.GroupNorm":  # norm.py:124: `norm_layer(num_channels=num_features, **cfg_)`
            return Ctor(layer, (), (*extra, Kwarg("num_channels", channels)), origin=where)
        return Ctor(layer, (channels,), extra, origin=where)
    if kind == "activation":
        return Ctor(layer, (), extra, origin=where) if not args and not kwargs else None
    return Ctor(layer, args, (*kwargs, *extra), origin=where)
