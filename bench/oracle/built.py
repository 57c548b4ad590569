"""Where the torch layers that computed a traced op were constructed in the model's code.

A conv and a BatchNorm held in an `nn.Sequential` (or an `nn.Sequential` subclass with no `forward` of its
own) run inside torch's container: their ops' innermost model frame is the line that calls the container
(`x = self.features(x)`), often in another class than the one that chose the layers. The user's code that
makes the pair is where the layers are constructed (`nn.Sequential(nn.Conv2d(...), nn.BatchNorm2d(...))`,
`self.add_module("bn", nn.BatchNorm2d(c))`), and that is where a fix edits. So each module records the model
line that constructed it (`record_construction`: the innermost frame of model code outside the module's own
`__init__` chain), and while a step is traced each node made inside a torch layer is stamped with that
layer's construction line (`stamp_nodes`: `node.meta["built_at"]`), which `match` adds to the site's lines.
Ops written in the model's own modules keep their own lines only.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from oracle.trace import real

_BUILT: weakref.WeakKeyDictionary[nn.Module, tuple[str, int]] = weakref.WeakKeyDictionary()
_RUNNING: list[nn.Module] = []


def record_construction(is_model_file: Callable[[str], bool]) -> Callable[[], None]:
    """From now on, in this process, remember the model line that constructs each module; returns what
    stops it (the oracle's worker records for the whole of its process)."""
    original = nn.Module.__init__
    if getattr(original, "_records_construction", False):
        return lambda: None

    def init(self: nn.Module, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_locals.get("self") is not self:
                path = real(frame.f_code.co_filename)
                if is_model_file(path):
                    _BUILT[self] = (path, frame.f_lineno)
                    return
            frame = frame.f_back

    init._records_construction = True  # type: ignore[attr-defined]
    nn.Module.__init__ = init  # type: ignore[method-assign]

    def stop() -> None:
        nn.Module.__init__ = original  # type: ignore[method-assign]
    return stop


def built_at(module: nn.Module) -> tuple[str, int] | None:
    return _BUILT.get(module)


@contextlib.contextmanager
def stamp_nodes() -> Iterator[None]:
    """While tracing, stamp each node made inside a torch layer (`torch.nn`'s own classes) with the line
    that constructed that layer."""
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    def enter(module: nn.Module, args: Any) -> None:
        _RUNNING.append(module)

    def leave(module: nn.Module, args: Any, out: Any) -> None:
        if _RUNNING and _RUNNING[-1] is module:
            _RUNNING.pop()

    original = torch.fx.Graph.create_node

    def create_node(self: torch.fx.Graph, *args: Any, **kwargs: Any) -> torch.fx.Node:
        node = original(self, *args, **kwargs)
        if _RUNNING and type(_RUNNING[-1]).__module__.startswith("torch.nn."):
            line = _BUILT.get(_RUNNING[-1])
            if line is not None:
                node.meta["built_at"] = line
        return node

    pre = register_module_forward_pre_hook(enter)
    post = register_module_forward_hook(leave, always_call=True)
    torch.fx.Graph.create_node = create_node  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.fx.Graph.create_node = original  # type: ignore[method-assign]
        pre.remove()
        post.remove()
        _RUNNING.clear()
