"""A method's layer-class parameter read as the class `__init__` passes on to it unchanged.

    def __init__(self, block, layers, norm_layer=nn.BatchNorm2d):          # gluoncv-torch 0.0.3 resnet.py
        self.layer1 = self._make_layer(block, 64, layers[0], norm_layer=norm_layer)
    def _make_layer(self, block, planes, blocks, stride=1, norm_layer=None):
        downsample = nn.Sequential(nn.Conv2d(...), norm_layer(planes * block.expansion))

The method's own default (`None`) never reaches its body: every `self._make_layer(...)` call of the class hands
it `__init__`'s parameter, whose default is the class (`call_arguments.self_call_arguments` decides that every
call passes that one parameter, unchanged in `__init__` and in the method). The parameter then builds what the
`__init__` parameter's default builds, as it does in `__init__` itself. Found in gluoncv-torch, pywick
(`dilated_resnet.py`, `tkcnet/resnet.py`) and super-gradients (`laddernet.py`): the PyTorch-Encoding ResNets.
"""

from __future__ import annotations

from dataclasses import replace

from tree_sitter import Node

from adopter.analysis.chains.call_arguments import rebinds, self_call_arguments
from adopter.analysis.names.signature import params
from adopter.analysis.parse.source import SourceText
from adopter.dsl.types import Param


def passed_defaults(method: Node, methods: dict[str, Node], init_defaults: dict[str, str | None],
                    src: SourceText) -> tuple[Param, ...]:
    """`method`'s parameters without a default of their own (none, or `None`) that every call of the class
    passes `__init__`'s parameter to, each with that parameter's default (`init_defaults`: name -> its text)."""
    out: list[Param] = []
    for p in params(method, src)[1:]:
        if (p.default or "None").strip() != "None" or rebinds(method, p.name, src):
            continue
        found = self_call_arguments(method, p.name, methods, src)
        if found is None or found[0] or not found[1]:
            continue
        default = init_defaults.get(found[1])
        if default is not None and default.strip() != "None":
            out.append(replace(p, default=default))
    return tuple(out)
