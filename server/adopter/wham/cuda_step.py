"""A traced step as PyTorch's CUDA backend runs it: one dropout kernel, and autocast's FP32 ops and casts.

The tracer runs the step on the meta device, where two things differ from a CUDA mixed-precision run
(bench/wham_gpu_published.py applies these rewrites to the rows whose run they describe, before `build_workload`):

* **Dropout** (`fused_dropout`): on a meta tensor `at::native::dropout` decomposes to `bernoulli_` on an empty
  tensor, `div_` by 1 − p and `mul` (three kernels, the mask at 16 bits); on CUDA it takes the fused path
  (`is_fused_kernel_acceptable`: a CUDA input, 0 < p < 1) — `native_dropout`, one kernel reading x and writing y
  and a 1-byte mask, and `native_dropout_backward`, one kernel reading dy and the mask and writing dx
  (`constants.SOURCES["DROPOUT_MASK_BYTES"]`).
* **Autocast** (`autocast`): under `torch.autocast("cuda")` the parameters stay FP32; a GEMM (mm, addmm, bmm,
  convolution, …) runs in FP16 with its FP32 inputs cast first, a parameter once per forward (autocast's weight
  cache) and its gradient cast back to FP32 in the backward; the ops of the "autocast to float32" list (softmax,
  log_softmax, layer_norm, the losses, pow, sum, …) run in FP32 with their 16-bit inputs cast up; any other op
  runs in the widest type of its inputs (type promotion); the optimizer updates FP32 parameters, gradients and
  state, and the GradScaler unscales the FP32 gradients in one more pass (`constants.SOURCES["AUTOCAST_FP32_BYTES"]`).

Both take and return the tracer's plain records (`{"ops": [...], ...}`), dependencies renumbered; they never
raise on a trace without the patterns (it comes back unchanged). Records traced before the `inputs` field existed
are left as they are by `autocast`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adopter.wham.constants import AUTOCAST_FP32_BYTES as FP32_BYTES
from adopter.wham.constants import BYTES_PER_ELEMENT
from adopter.wham.constants import DROPOUT_MASK_BYTES as MASK_BYTES

Record = dict[str, Any]
# The CUDA "ops that can autocast to float32" (torch.amp docs, Autocast Op Reference; aten/src/ATen/autocast_mode.cpp
# `KERNEL_CUDA(..., fp32)`) under the aten names the tracer records them by (softmax → _softmax, layer_norm →
# native_layer_norm, nll_loss → nll_loss_forward, …), and the backward ops of those, which run in the forward's type.
AUTOCAST_FP32 = frozenset({
    "_softmax", "_log_softmax", "native_layer_norm", "native_group_norm", "nll_loss_forward", "nll_loss2d_forward",
    "pow", "exp", "expm1", "log", "log10", "log1p", "log2", "rsqrt", "reciprocal", "sum", "prod", "cumsum", "cumprod",
    "acos", "asin", "cosh", "sinh", "tan", "erfinv", "softplus", "norm", "linalg_vector_norm", "renorm", "cdist",
    "_cdist_forward", "_pdist_forward", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy_with_logits", "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss_forward",
})
AUTOCAST_FP32_BACKWARD = frozenset({
    "_softmax_backward_data", "_log_softmax_backward_data", "native_layer_norm_backward",
    "native_group_norm_backward", "nll_loss_backward", "nll_loss2d_backward",
})
GRAD_UNSCALE = "_amp_foreach_non_finite_check_and_unscale_"


def _rebuild(ops: Sequence[Mapping[str, Any]], drop: set[int], alias: Mapping[int, int],
             before: Mapping[int, list[Record]], replace: Mapping[int, Record]) -> list[Record]:
    """The records with `drop` left out (a dependency on one goes to `alias[i]`), `replace[i]` instead of record
    i and the records `before[i]` ahead of it (their deps in old indices), dependencies renumbered."""
    new_index: dict[int, int] = {}
    out: list[Record] = []

    def renumber(deps: Sequence[int]) -> list[int]:
        got: list[int] = []
        for d in deps:
            d = alias.get(d, d)
            if d in new_index and new_index[d] not in got:
                got.append(new_index[d])
        return got

    for i, rec in enumerate(ops):
        for extra in before.get(i, ()):
            out.append({**extra, "deps": renumber(extra["deps"])})
        if i in drop:
            continue
        r = dict(replace.get(i, rec))
        r["deps"] = renumber(r["deps"])
        new_index[i] = len(out)
        out.append(r)
    return out


def _consumers(ops: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    got: list[list[int]] = [[] for _ in ops]
    for i, r in enumerate(ops):
        for d in r["deps"]:
            if 0 <= d < i:
                got[d].append(i)
    return got


def fused_dropout(raw: Mapping[str, Any]) -> dict[str, Any]:
    """`raw` with each decomposed dropout (`bernoulli_` → `div_` → one forward `mul`, and the backward `mul` by the
    same mask) as CUDA's `native_dropout` (reads x, writes y and a 1-byte mask) and `native_dropout_backward`
    (reads dy and the mask, writes dx), at the trace's width for x and y."""
    ops: Sequence[Mapping[str, Any]] = raw.get("ops", ())
    users = _consumers(ops)
    drop: set[int] = set()
    alias: dict[int, int] = {}
    replace: dict[int, Record] = {}
    for b, rec in enumerate(ops):
        if rec["name"] != "bernoulli_" or len(users[b]) != 1 or ops[users[b][0]]["name"] != "div_":
            continue
        d = users[b][0]
        fwd = [u for u in users[d] if ops[u]["name"] == "mul" and ops[u]["phase"] == "fwd"]
        bwd = [u for u in users[d] if ops[u]["name"] == "mul" and ops[u]["phase"] != "fwd"]
        if len(fwd) != 1 or len(fwd) + len(bwd) != len(users[d]):
            continue
        m, n = fwd[0], int(rec["elements"])
        drop |= {b, d}
        alias[b] = alias[d] = m
        x = BYTES_PER_ELEMENT * n
        replace[m] = {**ops[m], "name": "native_dropout", "deps": [e for e in ops[m]["deps"] if e != d],
                      "bytes_in": float(x), "bytes_out": float(x + MASK_BYTES * n), "flops": float(n)}
        for u in bwd:
            replace[u] = {**ops[u], "name": "native_dropout_backward",
                          "deps": [m if e == d else e for e in ops[u]["deps"]],
                          "bytes_in": float(x + MASK_BYTES * n), "bytes_out": float(x), "flops": float(n)}
    if not drop:
        return dict(raw)
    return {**raw, "ops": _rebuild(ops, drop, alias, {}, replace)}


def _cast(rec: Mapping[str, Any], elements: int, phase: str, src: int, dst: int) -> Record:
    """A cast kernel (`_to_copy`) of `elements` from `src` to `dst` bytes an element, in `rec`'s segment."""
    return {"name": "_to_copy", "kind": "vector", "phase": phase, "segment": rec["segment"], "deps": [],
            "elements": elements, "rows": 0, "flops": float(elements),
            "bytes_in": float(src * elements), "bytes_out": float(dst * elements)}


def autocast(raw: Mapping[str, Any]) -> dict[str, Any]:
    """`raw` as the step runs under CUDA autocast with FP32 parameters (see the module docstring): each record's
    bytes at the width its inputs and outputs have, the casts autocast and autograd add, an FP32 optimizer
    and the GradScaler's unscale pass. Model inputs with no producer are taken at 16 bits (the loader's)."""
    ops: Sequence[Mapping[str, Any]] = raw.get("ops", ())
    if not ops or any("inputs" not in r for r in ops if r["phase"] != "opt"):
        return dict(raw)
    width: dict[int, int] = {}  # forward record -> bytes an element of its float output
    cached: set[int] = set()
    before: dict[int, list[Record]] = {}
    replace: dict[int, Record] = {}
    grad_casts: list[Record] = []
    first_opt = next((i for i, r in enumerate(ops) if r["phase"] == "opt"), len(ops))
    for i, rec in enumerate(ops):
        phase, name = rec["phase"], str(rec["name"]).split(":")[0]
        if phase == "opt":
            replace[i] = {**rec, "bytes_in": 2 * float(rec["bytes_in"]), "bytes_out": 2 * float(rec["bytes_out"])}
            continue
        ins = [(int(p), int(n), int(q), bool(f)) for p, n, q, f in rec["inputs"]]
        params = [(n, q) for _, n, q, f in ins if f and q >= 0]
        acts = [(width.get(p, BYTES_PER_ELEMENT), n) for p, n, q, f in ins if f and q < 0]
        extra_in = 0.0
        casts: list[Record] = []
        if rec["kind"] == "gemm":
            if phase == "fwd":
                for n, q in params:  # autocast's weight cache: one cast a parameter a forward, one back in the backward
                    if q not in cached:
                        cached.add(q)
                        casts.append(_cast(rec, n, "fwd", FP32_BYTES, BYTES_PER_ELEMENT))
                        grad_casts.append(_cast(rec, n, "bwd", BYTES_PER_ELEMENT, FP32_BYTES))
                casts += [_cast(rec, n, phase, w, BYTES_PER_ELEMENT) for w, n in acts if w != BYTES_PER_ELEMENT]
                width[i] = BYTES_PER_ELEMENT
        elif phase == "fwd" and name in AUTOCAST_FP32:
            casts += [_cast(rec, n, phase, w, FP32_BYTES) for w, n in acts if w != FP32_BYTES]
            extra_in = sum((FP32_BYTES - BYTES_PER_ELEMENT) * n for _, n in acts) + \
                sum((FP32_BYTES - BYTES_PER_ELEMENT) * n for n, _ in params)
            replace[i] = {**rec, "bytes_in": float(rec["bytes_in"]) + extra_in,
                          "bytes_out": float(rec["bytes_out"]) * FP32_BYTES / BYTES_PER_ELEMENT}
            width[i] = FP32_BYTES
        elif phase != "fwd" and name in AUTOCAST_FP32_BACKWARD:
            # The gradient arrives at 16 bits (cast up: the forward cast's backward) and leaves cast back down.
            grad = max((n for _, n in acts), default=0)
            casts.append(_cast(rec, grad, phase, BYTES_PER_ELEMENT, FP32_BYTES))
            replace[i] = {**rec, "bytes_in": 2 * float(rec["bytes_in"]), "bytes_out": 2 * float(rec["bytes_out"])}
            out = int(float(rec["bytes_out"]) // BYTES_PER_ELEMENT)
            before.setdefault(i + 1, []).append(_cast(rec, out, phase, FP32_BYTES, BYTES_PER_ELEMENT))
        else:
            # Type promotion: the widest activation input sets the op's type; FP32 parameters (a norm's
            # weight and bias) are read at 4 bytes without widening it.
            w = max((w for w, _ in acts), default=BYTES_PER_ELEMENT)
            extra_in = sum((a - BYTES_PER_ELEMENT) * n for a, n in acts) + \
                sum((FP32_BYTES - BYTES_PER_ELEMENT) * n for n, _ in params)
            if phase == "fwd":
                width[i] = w
            if extra_in or w != BYTES_PER_ELEMENT:
                replace[i] = {**rec, "bytes_in": float(rec["bytes_in"]) + extra_in,
                              "bytes_out": float(rec["bytes_out"]) * w / BYTES_PER_ELEMENT}
        if casts:
            before.setdefault(i, []).extend(casts)
    params_total = int(raw.get("params", 0))
    unscale = {"name": GRAD_UNSCALE, "kind": "vector", "phase": "opt", "segment": "(optimizer)", "deps": [],
               "elements": params_total, "rows": 0, "flops": float(params_total),
               "bytes_in": float(FP32_BYTES * params_total), "bytes_out": float(FP32_BYTES * params_total)}
    before.setdefault(first_opt, []).extend([*grad_casts, unscale])
    rebuilt = _rebuild(ops, set(), {}, before, replace)
    if first_opt == len(ops):  # no optimizer records: the casts and the unscale close the step
        rebuilt += [{**r, "deps": []} for r in before[first_opt]]
    return {**raw, "ops": rebuilt}
