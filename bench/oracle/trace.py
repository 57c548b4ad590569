"""Trace one training step of a built model (forward, then backward) with torch's own capture, and cut
out the forward graph that the family patterns are matched on.

Why `make_fx` on the meta device (and not `torch.export` or dynamo): `make_fx` records the aten ops the
code actually dispatches, following Python control flow and any helper function or library the forward
calls (einops, `functools`-wrapped helpers), with each node's Python stack (`record_stack_traces`) for the
source line; it needs no graph-break handling and no guards, and traces a class in well under a second.
`torch.export` refuses much real model code (data-dependent branches, non-tensor outputs, unsupported
Python), and dynamo would compile and guard each class for nothing we need. On the meta device no weights
are allocated and no arithmetic runs, so a model with default (full) sizes costs no more than a small one;
code that needs real values (`.item()`, `nonzero`, data-dependent shapes) fails and is reported as such.
No decomposition table is passed, so fused library ops (`native_layer_norm`, `gelu`, `_softmax`, SDPA's
math path with `_safe_softmax`) stay single nodes and never look like hand-written formulas.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._pytree import tree_flatten

# `torch.compile`-decorated model code runs eagerly while the oracle traces it (make_fx cannot trace a
# dynamo-optimised function); the ops are the same.
torch._dynamo.config.disable = True

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')


@contextlib.contextmanager
def every_frame() -> Iterator[None]:
    """Keep every Python frame from the model's first `forward` inward on each node's stack trace.

    `make_fx` keeps only frames of functions named `forward` (`_record_forward_stack_traces_only`), so an
    op written in a helper (`self._norm(x)`, a module-level `attention(q, k, v)`, `_forward_impl`) was
    placed at the forward line that called it, never at the helper's line where it is written. Its
    tracer's other filter keeps the frames from the first `forward` on; this selects it for the trace."""
    from torch.fx.experimental.proxy_tensor import PythonKeyTracer
    from torch.fx.proxy import TracerBase

    def keep_all(self: Any, summary: Any) -> Any:
        self._record_forward_stack_traces_only = False
        return TracerBase._filter_traceback_frames(self, summary)

    saved = PythonKeyTracer.__dict__.get("_filter_traceback_frames")
    PythonKeyTracer._filter_traceback_frames = keep_all  # type: ignore[method-assign]
    try:
        yield
    finally:
        if saved is None:
            del PythonKeyTracer._filter_traceback_frames
        else:
            PythonKeyTracer._filter_traceback_frames = saved  # type: ignore[method-assign]


@dataclass(frozen=True, slots=True)
class Traced:
    forward: torch.fx.GraphModule  # the forward part of the joint graph, noop views removed
    joint_nodes: int
    backward: bool  # whether a backward was traced (a forward with no differentiable output has none)
    more: tuple[torch.fx.GraphModule, ...] = ()  # the other forward graphs, when dynamo split the forward

    @property
    def graphs(self) -> tuple[torch.fx.GraphModule, ...]:
        return (self.forward, *self.more)


@functools.cache
def real(path: str) -> str:
    """The file's real path (the environment may be reached through a symlink)."""
    return os.path.realpath(path)


def frames(node: torch.fx.Node) -> list[tuple[str, int]]:
    """(real file path, line) of each Python frame that made the node, outermost first."""
    return [(f, ln) for f, ln, _ in named_frames(node)]


def named_frames(node: torch.fx.Node) -> list[tuple[str, int, str]]:
    """(real file path, line, function name) of each Python frame that made the node, outermost first."""
    text = node.meta.get("stack_trace") or ""
    return [(real(m["file"]), int(m["line"]), m["fn"]) for m in _FRAME.finditer(text)]


def _dropouts_on(model: nn.Module) -> None:
    """Training mode with every dropout module at p = 0.1, so dropout is in the graph as users run it
    (p = 0 makes the op disappear, and many classes default to 0)."""
    model.train()
    for m in model.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd) and m.p == 0:
            m.p = 0.1


def _forward_graph(joint: torch.fx.GraphModule, n_outputs: int) -> torch.fx.GraphModule:
    """The nodes the forward outputs depend on, copied into a graph of their own, so each node's users are
    its forward users only (what inductor's patterns count), not the backward's saved tensors."""
    from torch._inductor.fx_passes.post_grad import remove_noop_ops

    from oracle.patterns import normalise

    output = next(n for n in joint.graph.nodes if n.op == "output")
    flat, _ = tree_flatten(output.args[0])
    roots = [n for n in flat[:n_outputs] if isinstance(n, torch.fx.Node)]
    keep: set[torch.fx.Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in keep:
            continue
        keep.add(n)
        stack.extend(n.all_input_nodes)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in joint.graph.nodes:
        if n in keep or n.op == "placeholder":
            env[n] = graph.node_copy(n, lambda a: env[a])
    graph.output(tuple(env[r] for r in roots))
    gm = torch.fx.GraphModule(joint, graph)
    normalise(gm.graph)
    remove_noop_ops(gm.graph)
    gm.graph.eliminate_dead_code()
    return gm


def needs_real_tensors(exc: BaseException) -> bool:
    """Whether a trace on the meta device failed for want of real values or a real device, not because the
    model's code rejects its inputs: the same class may then trace on the CPU (see `trace_step`)."""
    text = f"{type(exc).__name__}: {exc}"
    return any(s in text for s in _META_ONLY)


DATA_DEPENDENT = "get value out of a tracing tensor"  # make_fx's words for `.item()`/`if t:` on a traced value
_META_ONLY = (DATA_DEPENDENT, "cannot be called on meta tensors", "Cannot copy out of meta tensor", "is not on the expected device meta",
              "with Meta tensors", "register_meta function", "meta Long tensor", "meta Float tensor",
              "torch.meta.", "on the meta device")


def distinct_inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Each forward argument its own tensor. Construction gives `key`, `value`, `k`, `v` … the input itself
    (`forward(self, q, k, v)` needs three of its shape), and one tensor passed three times is one graph
    input: three projections of it would read as projections of one input (family 9), which only the
    class's own code can make them (`key = query if key is None else key`), never its caller's choice."""
    seen: set[int] = set()

    def own(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in seen:
            return value.detach().clone().requires_grad_(value.requires_grad)
        seen.add(id(value))
        return value

    return tuple(own(a) for a in args), {k: own(v) for k, v in kwargs.items()}


def trace_step(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], device: str = "meta") -> Traced:
    """Trace forward and backward of `model(*args, **kwargs)` on the meta device; raises what the model's
    code raises (the caller records it). `device="cpu"` traces a model built on the CPU with real values
    (tensors its forward makes are made there too): for code that reads a value out of a tensor the
    model holds, calls an op with no meta kernel, or makes CPU tensors itself. The graph is the same
    aten ops, at the small sizes construction chose."""
    _dropouts_on(model)
    args, kwargs = distinct_inputs(args, kwargs)
    params = {k: p for k, p in model.named_parameters() if p.requires_grad}
    n_out = [0, 0]  # forward outputs, gradients

    def step(params: dict[str, torch.Tensor], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = torch.func.functional_call(model, params, args, kwargs, strict=False)
        flat = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        n_out[0] = len(flat)
        diff = [t for t in flat if t.requires_grad and t.is_floating_point()]
        wrt = [p for p in params.values()]
        if not diff or not wrt:
            return flat, []
        loss = sum(t.float().sum() for t in diff)
        grads = [g for g in torch.autograd.grad(loss, wrt, allow_unused=True) if g is not None]
        n_out[1] = len(grads)
        return flat, grads

    from oracle.built import stamp_nodes

    with torch.device(device), every_frame(), stamp_nodes():
        joint = make_fx(step, None, tracing_mode="real", record_stack_traces=True)(params, args, kwargs)
    return Traced(_forward_graph(joint, n_out[0]), len(joint.graph.nodes), n_out[1] > 0)


def trace_with_dynamo(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Traced:
    """Forward graphs of a model on the CPU whose forward branches on its own values (`if mask.any():`,
    `int(x.max())`), which `make_fx` cannot follow: dynamo runs the forward, breaking the graph where
    Python must see a value, and each piece it captured is traced to aten ops by `make_fx` with the
    source lines dynamo recorded (`preserve_node_meta`). No backward is traced here."""
    from torch.fx import traceback as fx_traceback

    captured: list[tuple[torch.fx.GraphModule, list[Any]]] = []

    def collect(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        captured.append((gm, list(example_inputs)))
        return gm.forward

    _dropouts_on(model)
    torch._dynamo.reset()
    with torch._dynamo.config.patch(disable=False), torch.device("cpu"):
        torch.compile(model, backend=collect, dynamic=False)(*args, **kwargs)
        graphs = []
        for gm, inputs in captured:
            with fx_traceback.preserve_node_meta():
                traced = make_fx(torch.fx.Interpreter(gm).run, None, tracing_mode="real")(*inputs)
            graphs.append(_cleaned(traced))
    torch._dynamo.reset()
    if not graphs:
        raise RuntimeError("dynamo captured no graph of this forward")
    return Traced(graphs[0], sum(len(g.graph.nodes) for g in graphs), False, tuple(graphs[1:]))


def _cleaned(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    from torch._inductor.fx_passes.post_grad import remove_noop_ops

    from oracle.patterns import normalise

    normalise(gm.graph)
    remove_noop_ops(gm.graph)
    gm.graph.eliminate_dead_code()
    return gm
