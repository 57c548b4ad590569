"""What a search is asked to do (`SearchRequest`) and its validation: every error names the parameter
and its allowed range."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from adopter.wham import constants as C
from adopter.wham.evaluate import OBJECTIVES
from adopter.wham.models import ZOO_MODELS
from adopter.wham.strategies.registry import STRATEGIES

EXECUTORS = ("process", "serial", "ray")
AGGREGATES = ("geomean", "worst")
MAX_PIPELINE = 64
MAX_TENSOR_PARALLEL = 64
MAX_BUDGET = 100_000


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A search: model, workload size, objective and limits, parallelism, strategy and budget."""

    model: str = "bert-base"
    batch: int | None = None  # global batch; None = the zoo model's default
    seq: int | None = None  # sequence length (image side for vision models)
    objective: str = "throughput"
    area_mm2: float = C.AREA_CAP_MM2
    tdp_w: float = 400.0
    min_throughput: float = 0.0  # samples/s, for objective perf-per-tdp
    pipeline: int = 1
    microbatches: int | None = None  # None = 4 × pipeline depth (or 1 without a pipeline)
    tensor_parallel: int = 1
    link_gbs: float = C.LINK_GBS
    strategy: str = "wham"
    budget: int = 200
    seed: int = 0
    top_k: int = 4
    executor: str = "process"
    ray_address: str | None = None
    workers: int = 2
    trace_timeout_s: float = 300.0
    model_path: str | None = None  # directory to import a user's `module:factory` from
    compare: tuple[str, ...] = ()  # more strategies run at the same budget, for convergence curves
    aggregate: str = "geomean"  # for a set of models (`model="a,b,…"`): geomean | worst

    @property
    def model_entries(self) -> tuple[tuple[str, int | None, int | None], ...]:
        """The models of `model` (comma-separated), each `name`, `name@BATCH` or `name@BATCHxSEQ`, as
        (name, batch, seq); a part left out is None (the request's --batch/--seq, then the zoo default)."""
        out = []
        for part in str(self.model).split(","):
            name, _, size = part.strip().partition("@")
            b, _, sq = size.partition("x")
            out.append((name.strip(), int(b) if b.strip().isdigit() else None,
                        int(sq) if sq.strip().isdigit() else None))
        return tuple(out)

    @property
    def is_set(self) -> bool:
        """Whether the request names a set of models (one common design for all)."""
        return "," in str(self.model)

    def for_model(self, name: str, batch: int | None, seq: int | None) -> SearchRequest:
        """The single-model request of one member of the set."""
        from dataclasses import replace

        return replace(self, model=name, batch=batch if batch is not None else self.batch,
                       seq=seq if seq is not None else self.seq, compare=())

    def to_json(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)

    @property
    def resolved_batch(self) -> int:
        """The global batch (the zoo default when unset)."""
        if self.batch is not None:
            return self.batch
        return ZOO_MODELS[self.model][0] if self.model in ZOO_MODELS else 8

    @property
    def resolved_seq(self) -> int:
        """The sequence length (the zoo default when unset)."""
        if self.seq is not None:
            return self.seq
        return ZOO_MODELS[self.model][1] if self.model in ZOO_MODELS else 128

    @property
    def resolved_microbatches(self) -> int:
        """Micro-batches per step."""
        if self.microbatches is not None:
            return self.microbatches
        if self.pipeline <= 1:
            return 1
        return max(1, min(4 * self.pipeline, self.resolved_batch))


def _int_in(name: str, value: Any, lo: int, hi: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        return f"{name}={value!r}: must be an integer in [{lo}, {hi}]"
    return None


def _pos(name: str, value: Any, lo: float = 0.0, hi: float = math.inf, *, closed: bool = False) -> str | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and (
        lo <= value <= hi if closed else lo < value <= hi)
    if not ok:
        rng = f"[{lo:g}, {hi:g}]" if closed else f"({lo:g}, {hi:g}]"
        return f"{name}={value!r}: must be a number in {rng}"
    return None


def validate(req: SearchRequest) -> list[str]:
    """Every problem with the request, each naming the parameter and its allowed range (empty: valid)."""
    errs: list[str | None] = []
    if isinstance(req.model, str) and req.is_set:
        errs.extend(_validate_set(req))
    elif not isinstance(req.model, str) or not req.model.strip() or (req.model not in ZOO_MODELS
                                                                   and ":" not in req.model):
        errs.append(f"--model {req.model!r}: a zoo model ({', '.join(ZOO_MODELS)}) or module:factory")
    if req.aggregate not in AGGREGATES:
        errs.append(f"--aggregate {req.aggregate!r}: allowed {', '.join(AGGREGATES)}")
    if req.batch is not None:
        errs.append(_int_in("--batch", req.batch, 1, 1 << 20))
    if req.seq is not None:
        errs.append(_int_in("--seq", req.seq, 1, 1 << 20))
    if req.objective not in OBJECTIVES:
        errs.append(f"--objective {req.objective!r}: allowed {', '.join(OBJECTIVES)}")
    errs.append(_pos("--area-mm2", req.area_mm2, 0.0, 1e5))
    errs.append(_pos("--tdp-w", req.tdp_w, 0.0, 1e5))
    errs.append(_pos("--min-throughput", req.min_throughput, 0.0, 1e12, closed=True))
    errs.append(_int_in("--pipeline", req.pipeline, 1, MAX_PIPELINE))
    errs.append(_int_in("--tensor-parallel", req.tensor_parallel, 1, MAX_TENSOR_PARALLEL))
    errs.append(_pos("--link-gbs", req.link_gbs, 0.0, 1e5))
    if req.strategy not in STRATEGIES:
        errs.append(f"--strategy {req.strategy!r}: allowed {', '.join(STRATEGIES)}")
    errs.append(_int_in("--budget", req.budget, 1, MAX_BUDGET))
    errs.append(_int_in("--seed", req.seed, 0, 2**32 - 1))
    errs.append(_int_in("--top-k", req.top_k, 1, 64))
    errs.append(_int_in("--workers", req.workers, 1, 256))
    errs.append(_pos("--trace-timeout", req.trace_timeout_s, 0.0, 86400.0))
    for name in req.compare:
        if name not in STRATEGIES:
            errs.append(f"--compare {name!r}: allowed {', '.join(STRATEGIES)}")
    if req.executor not in EXECUTORS:
        errs.append(f"--executor {req.executor!r}: allowed {', '.join(EXECUTORS)}")
    if req.microbatches is not None:
        errs.append(_int_in("--microbatches", req.microbatches, 1, 1 << 16))
    out = [e for e in errs if e]
    if not out and req.is_set:
        return out
    if not out:
        b, m = req.resolved_batch, req.resolved_microbatches
        if m > b or b % m:
            out.append(f"--microbatches {m}: must divide the batch ({b}); allowed divisors of {b} up to {b}")
        if req.pipeline == 1 and req.microbatches not in (None, 1):
            out.append("--microbatches: only meaningful with --pipeline S > 1")
    return out


def _validate_set(req: SearchRequest) -> list[str | None]:
    """Errors of a set of models: each entry names the model it is about."""
    entries = req.model_entries
    if not any(name for name, _, _ in entries):
        return [f"--model {req.model!r}: an empty list of models; give zoo names or module:factory, "
                "separated by commas"]
    errs: list[str | None] = []
    seen: set[str] = set()
    for part, (name, b, sq) in zip(str(req.model).split(","), entries):
        if not name:
            errs.append(f"--model {req.model!r}: an empty entry in the list of models")
        elif name not in ZOO_MODELS and ":" not in name:
            errs.append(f"--model {name!r}: unknown model; a zoo model ({', '.join(ZOO_MODELS)}) or "
                        "module:factory")
        elif "@" in part and b is None:
            errs.append(f"--model {part.strip()!r}: the size must be NAME@BATCH or NAME@BATCHxSEQ")
        if name in seen:
            errs.append(f"--model {name!r}: listed twice")
        seen.add(name)
        for flag, v in (("batch", b), ("seq", sq)):
            if v is not None:
                errs.append(_int_in(f"--model {name}@ {flag}", v, 1, 1 << 20))
    if req.pipeline > 1 or req.tensor_parallel > 1 or req.microbatches not in (None, 1):
        errs.append("--pipeline/--tensor-parallel/--microbatches: not supported with a set of models "
                    "(search one model at a time for distributed training)")
    return errs
