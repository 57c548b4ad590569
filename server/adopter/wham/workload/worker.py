"""Subprocess entry: trace one model's training step and write the raw op list as JSON.

Run as `python -m adopter.wham.workload.worker SPEC BATCH SEQ OUT [--path DIR]`. SPEC is a zoo name,
`module:function` (returns `(model, inputs)` or `(model, inputs, loss_fn)`; called with `batch=`/`seq=`
when it accepts them) or `module:Class` (built with its default arguments; its inputs come from a
`example_inputs(batch, seq)` static/class method) or `path/to/file.py:Class` (built by `user_model`). Exit status 0 on success; otherwise the reason is
written to OUT as `{"error": ...}`.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import traceback
from typing import Any


def _load(spec: str, batch: int, seq: int) -> tuple[Any, Any, Any]:
    from adopter.wham.workload.zoo import ZOO

    if spec in ZOO:
        return ZOO[spec][0](batch, seq)
    file, _, class_name = spec.rpartition(":")
    if file.endswith(".py"):  # a class of the user's file: adopter.wham.workload.user_model builds it
        from adopter.wham.workload.user_model import build

        return build(file, class_name, batch, seq)
    if ":" not in spec:
        raise ValueError(f"--model {spec!r}: not a zoo model ({', '.join(sorted(ZOO))}) nor module:factory")
    mod_name, attr = spec.split(":", 1)
    module = importlib.import_module(mod_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    import torch

    if inspect.isclass(obj):
        if not issubclass(obj, torch.nn.Module):
            raise TypeError(f"{spec} is a class but not an nn.Module")
        make_inputs = getattr(obj, "example_inputs", None)
        if make_inputs is None:
            raise TypeError(f"{spec}: a model class needs an `example_inputs(batch, seq)` static method, "
                            "or pass a factory function returning (model, inputs)")
        with torch.device("meta"):
            model = obj()
        return model, make_inputs(batch, seq), None
    if not callable(obj):
        raise TypeError(f"{spec} is neither a factory function nor an nn.Module class")
    params = inspect.signature(obj).parameters
    kwargs = {k: v for k, v in (("batch", batch), ("seq", seq)) if k in params}
    result = obj(**kwargs)
    if not isinstance(result, tuple) or len(result) not in (2, 3):
        raise TypeError(f"{spec} must return (model, inputs) or (model, inputs, loss_fn)")
    model, inputs = result[0], result[1]
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{spec} returned {type(model).__name__}, not an nn.Module")
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    return model, inputs, result[2] if len(result) == 3 else None


def main(argv: list[str]) -> int:
    """Trace and write JSON; returns the exit status."""
    spec, batch, seq, out = argv[0], int(argv[1]), int(argv[2]), argv[3]
    if "--path" in argv:
        sys.path.insert(0, argv[argv.index("--path") + 1])
    try:
        from adopter.wham.workload.trace import trace_training_step

        model, inputs, loss_fn = _load(spec, batch, seq)
        raw = trace_training_step(model, inputs, loss_fn=loss_fn)
    except Exception as exc:  # any failure in user code becomes a message for the parent
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/torch/" not in f.filename]
        where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames and "TraceError" not in \
            type(exc).__name__ else ""
        with open(out, "w", encoding="utf-8") as fh:
            json.dump({"error": f"{type(exc).__name__}: {exc}{where}"}, fh)
        return 1
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(raw, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
