"""Loading workloads: zoo names, user factories traced in a subprocess, and the on-disk graph cache.

Graphs are cached by content (the model spec, batch, sequence length, the tracer's and zoo's source, the
user module's source) under `$ADOPTER_CACHE_DIR/wham` (default `~/.cache/adopter/wham`).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adopter.wham.graph import Workload, build_workload

# Zoo models: name -> (default batch, default sequence length or image side, description).
ZOO_MODELS: dict[str, tuple[int, int, str]] = {
    "bert-base": (8, 512, "BERT-base masked LM (110 M)"),
    "bert-large": (8, 512, "BERT-large masked LM (340 M)"),
    "bert-base-pretrain": (8, 512, "BERT-base pre-training as NVIDIA's scripts run it (MLM head on masked "
                                   "positions only, NSP head)"),
    "bert-large-pretrain": (8, 512, "BERT-large pre-training as NVIDIA's scripts run it (MLM head on masked "
                                    "positions only, NSP head)"),
    "gpt2": (8, 1024, "GPT-2 small causal LM (124 M)"),
    "gpt2-xl": (8, 1024, "GPT-2 XL causal LM (1.5 B)"),
    "t5-base": (8, 512, "T5-base encoder-decoder (220 M)"),
    "resnet50": (32, 224, "ResNet-50, ImageNet 224×224"),
    "resnext101-32x4d": (32, 224, "ResNeXt-101 32x4d, ImageNet 224×224 (NVIDIA's ConvNets definition)"),
    "se-resnext101-32x4d": (32, 224, "SE-ResNeXt-101 32x4d, ImageNet 224×224 (NVIDIA's ConvNets definition)"),
    "vit-b16": (32, 224, "ViT-B/16, ImageNet 224×224"),
    "llama-1b": (4, 2048, "Llama-style 1.1 B decoder (GQA, SwiGLU, RMSNorm, RoPE)"),
    "tiny-transformer": (2, 32, "2-layer 64-wide transformer (tests)"),
    "tiny-mlp": (16, 64, "3-layer MLP (tests)"),
}
TRACE_TIMEOUT_S = 300.0


class WorkloadError(Exception):
    """The model could not be loaded or traced; the message says why."""


def cache_dir() -> Path:
    """Where traced graphs are cached (`ADOPTER_CACHE_DIR` overrides `~/.cache/adopter`)."""
    root = os.environ.get("ADOPTER_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "adopter"
    return base / "wham"


def _source_hash(spec: str, path: str | None) -> str:
    """Hash of the code that determines the graph: our tracer and zoo, and the user's module."""
    h = hashlib.sha256()
    here = Path(__file__).parent / "workload"
    for name in ("trace.py", "zoo.py", "worker.py"):
        h.update((here / name).read_bytes())
    file = spec.rpartition(":")[0]
    if file.endswith(".py"):  # a class of the user's file: that file and its configuration module
        from adopter.wham.workload.user_model import source_digest

        h.update((here / "user_model.py").read_bytes() + source_digest(file))
    elif ":" in spec:
        mod = spec.split(":", 1)[0]
        search = [path] if path else []
        origin = _module_file(mod, search)
        if origin is not None:
            h.update(Path(origin).read_bytes())
    try:
        from importlib.metadata import version

        h.update(version("torch").encode())
    except Exception:  # torch missing: the subprocess will say so
        pass
    return h.hexdigest()


def _module_file(mod: str, search: list[str]) -> str | None:
    for base in search:
        cand = Path(base, *mod.split(".")).with_suffix(".py")
        if cand.is_file():
            return str(cand)
    old = list(sys.path)
    try:
        sys.path[:0] = search
        spec = importlib.util.find_spec(mod)
    except (ImportError, ValueError):
        return None
    finally:
        sys.path[:] = old
    return spec.origin if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def factory_origin(spec: str) -> str:
    """Import the module of `module:factory` in this process and return the file it came from; raises
    ImportError or AttributeError when either is missing. Run on a Ray worker, it says whether (and
    from where) the worker imports the user's code that the search ships through `runtime_env`."""
    module_name, _, factory = spec.partition(":")
    module = importlib.import_module(module_name)
    if factory and not callable(getattr(module, factory)):
        raise AttributeError(f"{spec}: {factory} is not callable")
    return str(module.__file__)


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """What to trace: a zoo name or `module:factory`, batch, sequence length, optional import path."""

    model: str
    batch: int
    seq: int
    path: str | None = None


def trace_raw(spec: WorkloadSpec, *, timeout_s: float = TRACE_TIMEOUT_S, use_cache: bool = True) -> dict[str, Any]:
    """The raw trace of `spec`, from the cache or a fresh subprocess."""
    key = hashlib.sha256(json.dumps([spec.model, spec.batch, spec.seq, _source_hash(spec.model, spec.path)])
                         .encode()).hexdigest()[:32]
    cached = cache_dir() / f"{key}.json.gz"
    if use_cache and cached.is_file():
        try:
            with gzip.open(cached, "rt", encoding="utf-8") as fh:
                data: dict[str, Any] = json.load(fh)
            return data
        except (OSError, ValueError):
            pass  # a broken cache entry is re-traced
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace.json"
        cmd = [sys.executable, "-m", "adopter.wham.workload.worker", spec.model, str(spec.batch), str(spec.seq),
               str(out)]
        if spec.path:
            cmd += ["--path", spec.path]
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env,
                                  cwd=spec.path or None)
        except subprocess.TimeoutExpired as exc:
            raise WorkloadError(f"tracing {spec.model} took longer than {timeout_s:g} s (--trace-timeout)") from exc
        if not out.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise WorkloadError(f"tracing {spec.model} failed: {tail[0]}")
        data = json.loads(out.read_text(encoding="utf-8"))
    if "error" in data:
        raise WorkloadError(f"tracing {spec.model} failed: {data['error']}")
    if use_cache:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp_file = cached.with_suffix(f".{os.getpid()}.tmp")
            with gzip.open(tmp_file, "wt", encoding="utf-8") as fh:
                json.dump(data, fh)
            tmp_file.replace(cached)
        except OSError:
            pass  # a read-only cache only costs time
    return data


def load_workload(spec: WorkloadSpec, *, timeout_s: float = TRACE_TIMEOUT_S, use_cache: bool = True,
                  fuse: bool = True) -> Workload:
    """Trace (or load from cache) and build the segmented workload, fused unless `fuse` is False."""
    raw = trace_raw(spec, timeout_s=timeout_s, use_cache=use_cache)
    return build_workload(raw, model=spec.model, batch=spec.batch, seq=spec.seq, fuse=fuse)
