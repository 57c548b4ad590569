"""Trace one training step (forward, loss, backward, optimizer step) of an nn.Module on the meta device.

The result is a plain-data operator list (JSON-able dicts) that `adopter.wham.graph` turns into a
fused, segmented `Workload`. Every aten op becomes a record with its FLOPs, bytes, GEMM/conv dims,
data dependencies, phase (fwd/bwd/opt) and the segment (repeated layer) it belongs to.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.module_tracker import ModuleTracker

# The accelerator computes in 16-bit, whatever dtype the traced model uses.
BYTES_PER_ELEMENT = 2

_aten = torch.ops.aten
# Ops that allocate or read metadata: no work on an accelerator (the data is written by the next op).
_FREE = {
    "zeros_like", "empty_like", "ones_like", "full_like", "empty", "zeros", "ones", "full", "scalar_tensor",
    "lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "new_zeros", "new_empty", "new_ones",
    "new_full", "empty_strided", "arange", "detach", "alias", "_record_function_enter_new",
    "_record_function_exit", "set_", "resize_", "randn", "rand", "randint", "normal_", "uniform_",
    "fill_", "zero_", "clone", "copy_", "_to_copy", "contiguous", "_foreach_copy_", "_unsafe_view",
    "new_empty_strided", "expand_copy", "view_copy", "_reshape_alias",
}
# `clone`/`copy_`/`_to_copy` are layout or dtype copies: free in the 16-bit dataflow model (a real
# compiler folds them into the producer's store).

_SEGMENT_INDEX = re.compile(r"\.(\d+)(?=\.|$)")


class TraceError(Exception):
    """The model could not be traced; the message names the op or line that failed."""


def _numel(t: torch.Tensor) -> int:
    return int(t.numel())


def _storage_key(t: torch.Tensor) -> int:
    """Identity of a tensor's storage (views share it); stable while the tensor is kept alive."""
    return int(t.untyped_storage()._cdata)


def _storage_elements(t: torch.Tensor) -> int:
    """Elements the tensor's whole storage holds (what stays allocated while any view of it is kept)."""
    return int(t.untyped_storage().nbytes()) // max(1, t.element_size())


def _tensors(obj: Any) -> list[torch.Tensor]:
    flat, _ = tree_flatten(obj)
    return [x for x in flat if isinstance(x, torch.Tensor)]


def _segment_of(parents: Iterable[str]) -> str | None:
    """The repeated-layer segment of the innermost module: its path up to the first list index."""
    best: str | None = None
    for fqn in parents:
        if fqn == "Global":
            continue
        path = fqn.split(".", 1)[1] if "." in fqn else ""
        m = _SEGMENT_INDEX.search("." + path) if path else None
        if m is not None:
            seg = ("." + path)[1 : m.end()]
            if best is None or len(seg) < len(best):
                best = seg
    return best


def _top_module(parents: Iterable[str]) -> str | None:
    """The first component below the root module (e.g. `embeddings`), or None at the root."""
    names = sorted(p for p in parents if p != "Global" and "." in p)
    if not names:
        return None
    return names[0].split(".")[1]


def _gemm_dims(name: str, args: Sequence[Any], out: Any) -> list[dict[str, Any]]:
    """GEMM records (m, n, k, batch, flops) for matrix/conv ops; empty for other ops."""
    def rec(m: int, n: int, k: int, batch: int = 1, tag: str = "") -> dict[str, Any]:
        return {"m": m, "n": n, "k": k, "batch": batch, "flops": 2.0 * m * n * k * batch, "tag": tag}

    if name == "mm":
        a, b = args[0], args[1]
        return [rec(a.shape[0], b.shape[1], a.shape[1])]
    if name == "addmm":
        a, b = args[1], args[2]
        return [rec(a.shape[0], b.shape[1], a.shape[1])]
    if name == "bmm":
        a, b = args[0], args[1]
        return [rec(a.shape[1], b.shape[2], a.shape[2], a.shape[0])]
    if name == "baddbmm":
        a, b = args[1], args[2]
        return [rec(a.shape[1], b.shape[2], a.shape[2], a.shape[0])]
    if name == "convolution":
        x, w = args[0], args[1]
        groups = int(args[8])
        o = out
        spatial = math.prod(o.shape[2:])
        ksz = math.prod(w.shape[2:])
        if bool(args[6]):  # transposed conv (col2im): each input pixel's C_in → (C_out·k²) columns
            in_spatial = math.prod(x.shape[2:])
            return [rec(x.shape[0] * in_spatial, w.shape[1] * ksz, x.shape[1] // groups, groups)]
        return [rec(o.shape[0] * spatial, w.shape[0] // groups, w.shape[1] * ksz, groups)]
    if name == "convolution_backward":
        grad_out, x, w = args[0], args[1], args[2]
        groups = int(args[9])
        mask = args[10]
        ksz = math.prod(w.shape[2:])
        out_spatial = math.prod(grad_out.shape[2:])
        in_spatial = math.prod(x.shape[2:])
        recs = []
        if mask[0] and in_spatial == out_spatial:  # im2col of the output gradient: one GEMM per input pixel
            recs.append(rec(x.shape[0] * in_spatial, x.shape[1] // groups, w.shape[0] // groups * ksz,
                            groups, "dgrad"))
        elif mask[0]:
            # Strided: col2im. W^T · grad_out gives (C_in·k²) columns per *output* pixel, scattered back
            # onto the input; counting one GEMM row per input pixel would overcount by stride².
            recs.append(rec(x.shape[0] * out_spatial, x.shape[1] // groups * ksz, w.shape[0] // groups,
                            groups, "dgrad"))
        if mask[1]:
            recs.append(rec(w.shape[0] // groups, w.shape[1] * ksz, x.shape[0] * out_spatial, groups, "wgrad"))
        return recs
    return []


_SDPA = re.compile(r"_scaled_dot_product_\w*attention\w*")


def _sdpa_dims(name: str, args: Sequence[Any]) -> list[dict[str, Any]]:
    """Fused attention kernels as their GEMMs: QK^T and PV (forward), four GEMMs in backward."""
    q, k = (args[1], args[2]) if "backward" in name else (args[0], args[1])
    *batch_dims, s_q, d = q.shape
    s_k = k.shape[-2]
    batch = math.prod(batch_dims)
    pair = [
        {"m": s_q, "n": s_k, "k": d, "batch": batch, "flops": 2.0 * batch * s_q * s_k * d, "tag": "qk"},
        {"m": s_q, "n": d, "k": s_k, "batch": batch, "flops": 2.0 * batch * s_q * s_k * d, "tag": "pv"},
    ]
    return pair + pair if "backward" in name else pair


class _Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch leaves it unannotated
    """Records every aten op with its tensors' producers; views alias their base's producer."""

    def __init__(self, tracker: ModuleTracker) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch leaves it unannotated
        self.tracker = tracker
        self.ops: list[dict[str, Any]] = []
        self.producer: dict[int, int] = {}  # id(tensor) -> op index
        self.keep: list[torch.Tensor] = []  # keeps tensors alive so their ids stay unique
        self.phase = "fwd"
        self.param_ids: dict[int, int] = {}  # id(param) -> param index (for the optimizer)
        self.param_segment: dict[int, str] = {}  # param index -> segment of its first consumer
        self.opt_params: list[int] = []  # param indices in optimizer list order
        # Memory accounting (independent of autograd's own bookkeeping, which the tests compare it with):
        # storages seen before the backward, and those of them a backward op reads (saved activations).
        self.param_storages: set[int] = set()
        self.fwd_storages: dict[int, int] = {}  # storage id -> elements
        self.saved: dict[int, int] = {}  # storage id -> elements read by the backward

    def _account(self, ins: list[torch.Tensor], outs: list[torch.Tensor]) -> None:
        if self.phase == "fwd":
            for t in (*ins, *outs):
                key = _storage_key(t)
                if key not in self.param_storages and key not in self.fwd_storages:
                    self.fwd_storages[key] = _storage_elements(t)
                    self.keep.append(t)
        elif self.phase == "bwd":
            for t in ins:
                key = _storage_key(t)
                if key in self.fwd_storages:
                    self.saved[key] = self.fwd_storages[key]

    def _deps(self, tensors: list[torch.Tensor]) -> list[int]:
        seen: list[int] = []
        for t in tensors:
            p = self.producer.get(id(t))
            if p is not None and p not in seen:
                seen.append(p)
        return seen

    def _segment(self, deps: list[int]) -> str:
        seg = _segment_of(self.tracker.parents)
        if seg is not None:
            return seg
        top = _top_module(self.tracker.parents)
        if top is not None:
            return top
        # Functional code between layers (residual adds, activations called as functions) belongs to
        # the layer whose data it reads: a saved forward activation first (backward), else the newest.
        if deps:
            if self.phase == "bwd":
                fwd = [d for d in deps if self.ops[d]["phase"] == "fwd"]
                if fwd:
                    return str(self.ops[max(fwd)]["segment"])
            return str(self.ops[max(deps)]["segment"])
        return "(root)"

    def _record(self, **rec: Any) -> int:
        self.ops.append(rec)
        return len(self.ops) - 1

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        ins = _tensors((args, kwargs))
        outs = _tensors(out)
        if self.phase == "fwd" and self.tracker.is_bw:
            self.phase = "bwd"
        self._account(ins, outs)
        if func.is_view or name in _FREE or (not outs and not name.startswith("_foreach_")):
            # Aliases and copies carry the producer of their (first) input.
            if ins:
                pi = self.param_ids.get(id(ins[0]))
                if pi is not None and self.phase == "fwd":
                    for t in outs:
                        self.param_ids[id(t)] = pi
                        self.keep.append(t)
                src = self.producer.get(id(ins[0]))
                if src is not None:
                    for t in outs:
                        self.producer[id(t)] = src
                        self.keep.append(t)
            return out
        if name.startswith("_foreach_"):
            self._record_foreach(name, args, outs)
            return out
        deps = self._deps(ins)
        if self.phase == "fwd":
            for t in ins:
                pi = self.param_ids.get(id(t))
                if pi is not None and pi not in self.param_segment:
                    self.param_segment[pi] = ""  # filled once the op's segment is known
        seg = self._segment(deps)
        if self.phase == "fwd":
            for t in ins:
                pi = self.param_ids.get(id(t))
                if pi is not None and self.param_segment.get(pi) == "":
                    self.param_segment[pi] = seg
        gemms = _sdpa_dims(name, args) if _SDPA.fullmatch(name) else _gemm_dims(name, args, out)
        in_elems = sum(_numel(t) for t in ins)
        out_elems = sum(_numel(t) for t in outs)
        # Each tensor input as [producer op or -1, elements, parameter index or -1, 1 if floating point]: what a
        # precision rewrite needs (adopter.wham.cuda_step), since the records count every byte at 16 bits.
        inputs = [[self.producer.get(id(t), -1), _numel(t), self.param_ids.get(id(t), -1),
                   int(t.is_floating_point())] for t in ins]
        if gemms:
            idx = -1
            share = 1.0 / len(gemms)
            for g in gemms:
                idx = self._record(
                    name=name + (f":{g['tag']}" if g["tag"] else ""), kind="gemm", phase=self.phase,
                    segment=seg, deps=deps, m=g["m"], n=g["n"], k=g["k"], batch=g["batch"],
                    flops=g["flops"], elements=int(out_elems * share), rows=0,
                    bytes_in=BYTES_PER_ELEMENT * in_elems * share,
                    bytes_out=BYTES_PER_ELEMENT * out_elems * share, inputs=inputs,
                )
        else:
            rows = 0
            if name in ("_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data"):
                rows = _numel(ins[0]) // max(1, ins[0].shape[-1]) if ins[0].dim() else 1
            idx = self._record(
                name=name, kind="vector", phase=self.phase, segment=seg, deps=deps,
                elements=max(in_elems and max(_numel(t) for t in ins), out_elems), rows=rows,
                flops=float(max(out_elems, 1)), bytes_in=BYTES_PER_ELEMENT * in_elems,
                bytes_out=BYTES_PER_ELEMENT * out_elems, inputs=inputs,
            )
        for t in outs:
            self.producer[id(t)] = idx
            self.keep.append(t)
        return out

    def _record_foreach(self, name: str, args: tuple[Any, ...], outs: list[torch.Tensor]) -> None:
        """Split a foreach op into one vector op per segment, by the parameters its lists cover."""
        self.phase = "opt"
        lists = [a for a in args if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor)]
        if not lists:
            return
        n = len(lists[0])
        per_seg: dict[str, dict[str, Any]] = {}
        for i in range(n):
            if n == len(self.opt_params):
                seg = self.param_segment.get(self.opt_params[i]) or "(optimizer)"
            else:
                seg = "(optimizer)"
            elems = _numel(lists[0][i])
            ins = [lst[i] for lst in lists if i < len(lst)]
            acc = per_seg.setdefault(seg, {"elements": 0, "bytes_in": 0.0, "deps": []})
            acc["elements"] += elems
            acc["bytes_in"] += BYTES_PER_ELEMENT * sum(_numel(t) for t in ins)
            for d in self._deps(ins):
                if d not in acc["deps"]:
                    acc["deps"].append(d)
        base = name.rstrip("_")
        by_seg: dict[str, int] = {}
        for seg, acc in per_seg.items():
            by_seg[seg] = self._record(
                name=base, kind="vector", phase="opt", segment=seg, deps=acc["deps"],
                elements=acc["elements"], rows=0, flops=float(acc["elements"]),
                bytes_in=acc["bytes_in"], bytes_out=BYTES_PER_ELEMENT * acc["elements"],
            )
        # In-place foreach ops update their first list; out-of-place ones return new tensors.
        targets = outs if outs else list(lists[0])
        for i, t in enumerate(targets):
            owner = self.param_segment.get(self.opt_params[i]) if n == len(self.opt_params) and i < n else None
            self.producer[id(t)] = by_seg.get(owner or "(optimizer)", next(iter(by_seg.values())))
            self.keep.append(t)


def default_loss(output: Any) -> torch.Tensor:
    """The loss used when the model returns something other than a scalar: mean of its first tensor."""
    if isinstance(output, torch.Tensor):
        return output.float().mean() if output.dim() else output
    tensors = _tensors(output)
    if not tensors:
        raise TraceError("the model returned no tensor to compute a loss from")
    return tensors[0].float().mean()


def _to_meta(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to("meta") if obj.device.type != "meta" else obj
    if isinstance(obj, dict):
        return {k: _to_meta(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_meta(v) for v in obj)
    return obj


def trace_training_step(
    model: torch.nn.Module,
    inputs: Sequence[Any] | dict[str, Any],
    *,
    loss_fn: Callable[[Any], torch.Tensor] | None = None,
    optimizer: str = "adamw",
) -> dict[str, Any]:
    """Trace forward, loss, backward and one optimizer step; return {"ops": [...], "params": N, ...}."""
    model = model.to("meta")
    inputs = _to_meta(inputs)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise TraceError("the model has no trainable parameters")
    if optimizer == "adamw":
        opt: torch.optim.Optimizer = torch.optim.AdamW(params, foreach=True)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True)
    else:
        raise TraceError(f"unknown optimizer {optimizer!r} (allowed: adamw, sgd)")
    model.train()
    tracker = ModuleTracker()
    rec = _Recorder(tracker)
    rec.param_ids = {id(p): i for i, p in enumerate(params)}
    rec.param_storages = {_storage_key(p) for p in model.parameters()}
    try:
        with tracker, rec:
            out = model(**inputs) if isinstance(inputs, dict) else model(*inputs)
            loss = (loss_fn or default_loss)(out)
            loss.backward()  # type: ignore[no-untyped-call]  # torch leaves it unannotated
            rec.opt_params = [rec.param_ids[id(p)] for g in opt.param_groups for p in g["params"]
                              if p.grad is not None]
            opt.step()
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as exc:
        raise TraceError(_explain(exc)) from exc
    return {
        "ops": rec.ops,
        "params": int(sum(p.numel() for p in params)),
        "memory": _memory(params, rec, optimizer),
    }


# Optimizer state per updated element (AdamW: first and second moment; SGD with momentum: one buffer),
# plus one float32 step counter per parameter tensor for AdamW.
_STATE_PER_ELEMENT = {"adamw": 2, "sgd": 1}
_STEP_BYTES = {"adamw": 4, "sgd": 0}


def _memory(params: Sequence[torch.Tensor], rec: _Recorder, optimizer: str) -> dict[str, int]:
    """Bytes the step keeps at 16-bit, from the graph: every trainable parameter; a gradient and optimizer
    state for each parameter the forward read (the others get no gradient); the activations a backward op
    read that were allocated before the backward (what autograd must have saved)."""
    used = [p for i, p in enumerate(params) if i in rec.param_segment]
    used_elems = sum(p.numel() for p in used)
    b = BYTES_PER_ELEMENT
    return {
        "param_bytes": b * sum(p.numel() for p in params),
        "grad_bytes": b * used_elems,
        "optimizer_bytes": b * _STATE_PER_ELEMENT[optimizer] * used_elems + _STEP_BYTES[optimizer] * len(used),
        "saved_activation_bytes": b * sum(rec.saved.values()),
        "bytes_per_element": b,
    }


def _explain(exc: BaseException) -> str:
    """A one-line reason naming the user's source line when the trace hit data-dependent code."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "/torch/" not in f.filename and "adopter/wham/workload" not in f.filename.replace("\\", "/")]
    where = f" at {frames[-1].filename}:{frames[-1].lineno} ({frames[-1].line})" if frames else ""
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "meta" in msg.lower() and ("item" in msg.lower() or "data-dependent" in msg.lower()
                                  or "Tensor.item" in msg):
        msg += " — data-dependent code cannot run on the meta device; pass every mask/input explicitly"
    return f"{type(exc).__name__}: {msg}{where}"
