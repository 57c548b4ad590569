"""The subprocess of `adopter verify`: import the user's file and each rewrite, build both classes, run them.

Reads one job (JSON) on stdin and writes one result (JSON) to the job's `out` file (stdout is the user
code's: a print in a model must not corrupt the result). Runs the user's code, so only ever in
a subprocess started by `adopter.verify.runner`, with a timeout. Exit 0 with the rows; 2 with `error`
when the file cannot be imported or a class cannot be built (the message names what to pass).
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import types
from pathlib import Path
from typing import Any

import torch

from adopter.construction import Built, NotBuilt, construct, forward_inputs, load_factory
from adopter.verify.compare import Inputs, compare
from adopter.verify.measure import peak_memory, timing

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class BadInput(Exception):
    """The job cannot run: the message says what to give (`--factory`, `--inputs`)."""


def original_module(path: Path, source: str) -> types.ModuleType:
    """`source` run as the module the file at `path` is in its package (the package itself imported, so
    relative imports work), else as a module of its own: the text given, not the file on disk (in the
    editor they differ until the file is saved)."""
    parts, folder = [path.stem], path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    if len(parts) > 1:
        importlib.import_module(".".join(parts[:-1]))
    name = ".".join(parts) if len(parts) > 1 else f"adopter_user_{path.stem}"  # never shadows a real module
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__package__ = ".".join(parts[:-1])
    sys.modules[name] = module
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def rewritten_module(original: types.ModuleType, source: str, index: int) -> types.ModuleType:
    """The rewritten text run as a sibling of the original module (same package, so relative imports work)."""
    name = f"{original.__name__}__adopter_verify_{index}"
    module = types.ModuleType(name)
    module.__file__ = original.__file__
    module.__package__ = original.__package__
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    exec(compile(source, original.__file__ or "<rewritten>", "exec"), module.__dict__)
    return module


def _factories(spec: str | None, original: types.ModuleType,
               rewritten: types.ModuleType) -> tuple[Any, Any]:
    """The factory `module:fn` as it builds the original, and as it builds the rewrite.

    A factory in the user's file is taken from each module. One in another module is imported again with
    the rewritten module standing in for the original under its name, so its `from model import Block`
    binds the rewritten class."""
    if spec is None:
        return None, None
    module_name, _, attr = spec.partition(":")
    if module_name in (original.__name__, Path(original.__file__ or "").stem):  # the user's file itself
        return _attribute(original, attr, spec), _attribute(rewritten, attr, spec)
    try:
        first = load_factory(spec)
    except Exception as exc:
        raise BadInput(f"--factory {spec}: cannot import it ({type(exc).__name__}: {exc})") from exc
    saved_factory, saved_user = sys.modules.pop(module_name, None), sys.modules[original.__name__]
    sys.modules[original.__name__] = rewritten
    try:
        second = load_factory(spec)
    finally:
        sys.modules[original.__name__] = saved_user
        if saved_factory is not None:
            sys.modules[module_name] = saved_factory
    return first, second


def _attribute(module: types.ModuleType, attr: str, spec: str) -> Any:
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
    if not callable(obj):
        raise BadInput(f"--factory {spec}: the file has no function {attr}")
    return obj


def _build(cls: type, module: types.ModuleType, factory: Any, seed: int, given_inputs: bool = False) -> Built:
    """`cls` built on the CPU with weights drawn from `seed`, by the factory or by inference. With
    `given_inputs` (`--inputs`) the forward's inputs are not inferred: a forward argument no rule can
    infer would otherwise stop a class the user gave the inputs of."""
    torch.manual_seed(seed)
    if factory is None:
        made = construct(cls, module, device="cpu", inputs=() if given_inputs else None)
    else:
        try:
            out = factory(cls) if _takes_class(factory) else factory()
        except Exception as exc:
            raise BadInput(f"the factory failed: {type(exc).__name__}: {exc}") from exc
        model, given = (out[0], out[1]) if isinstance(out, tuple) and len(out) == 2 else (out, None)
        if not isinstance(model, torch.nn.Module):
            raise BadInput(f"the factory returned {type(model).__name__}, not an nn.Module (or (module, inputs))")
        if given is not None:
            args, kwargs = _as_inputs(given)
            made = Built(model, args, kwargs)
        elif given_inputs:
            made = Built(model, (), {})
        else:
            found = forward_inputs(model, device="cpu")
            made = found if isinstance(found, NotBuilt) else Built(model, found[0], found[1])
    if isinstance(made, NotBuilt):
        hint = ("pass --inputs module:fn (fn(model) returns the inputs)" if made.stage == "inputs" else
                "pass --factory module:fn (fn() or fn(cls) returns the model, or (model, inputs))")
        raise BadInput(f"{made.render()}; {hint}")
    return made


def _takes_class(fn: Any) -> bool:
    try:
        return len(inspect.signature(fn).parameters) >= 1
    except (TypeError, ValueError):
        return False


def _move(value: Any, device: torch.device, dtype: torch.dtype) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device, dtype) if value.is_floating_point() else value.to(device)
    if isinstance(value, dict):
        return {k: _move(v, device, dtype) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_move(v, device, dtype) for v in value)
    return value


def _as_inputs(value: Any) -> Inputs:
    if isinstance(value, dict):
        return (), dict(value)
    return (tuple(value), {}) if isinstance(value, (tuple, list)) else ((value,), {})


def run_class(original: types.ModuleType, rewritten: types.ModuleType, name: str, job: dict[str, Any],
              factories: tuple[Any, Any], make_inputs: Any) -> dict[str, Any] | None:
    """One row: the class built from both modules, compared, timed. None when it is not an nn.Module."""
    cls0, cls1 = getattr(original, name, None), getattr(rewritten, name, None)
    if not (inspect.isclass(cls0) and issubclass(cls0, torch.nn.Module) and inspect.isclass(cls1)):
        return None
    device, dtype, seed = torch.device(job["device"]), DTYPES[job["dtype"]], int(job["seed"])
    built = _build(cls0, original, factories[0], seed, make_inputs is not None)
    m0 = built.model
    m1 = _build(cls1, rewritten, factories[1], seed + 1, make_inputs is not None).model  # other weights: the checkpoint must carry them
    row: dict[str, Any] = {"class": name}
    try:
        m1.load_state_dict(m0.state_dict(), strict=True)
        row["checkpoint_loads"] = True
    except Exception as exc:
        row.update(checkpoint_loads=False, equivalent=False, error=f"load_state_dict(strict=True): {exc}"[:400])
        return row
    m0.to(device, dtype).eval()
    m1.to(device, dtype).eval()  # eval: dropout off, so both compute the same function
    inputs = _as_inputs(make_inputs(m0)) if make_inputs is not None else (built.args, built.kwargs)
    inputs = (_move(inputs[0], device, dtype), _move(inputs[1], device, dtype))
    try:
        compare(m0, m0, inputs, seed=seed, dtype=dtype)  # the original itself must run on these inputs
    except Exception as exc:
        raise BadInput(f"{name} does not run on the inferred inputs ({type(exc).__name__}: {str(exc)[:200]}); "
                       "pass --inputs module:fn (fn(model) returns the inputs)") from exc
    try:
        result = compare(m0, m1, inputs, seed=seed, dtype=dtype)
    except Exception as exc:
        row.update(equivalent=False, error=f"the rewrite fails: {type(exc).__name__}: {exc}"[:400])
        return row
    row.update(equivalent=result.equivalent, max_abs=result.max_abs, max_rel=result.max_rel,
               compared=result.compared, worst=result.detail)
    if job["repeats"] > 0:
        m0.train()
        m1.train()
        t = timing(m0, m1, inputs, pairs=int(job["repeats"]), device=device)
        row.update(speedup=t.speedup, speedup_q1=t.q1, speedup_q3=t.q3, pairs=t.pairs,
                   original_ms=t.original_ms, rewritten_ms=t.rewritten_ms,
                   original_peak=peak_memory(m0, inputs, device), rewritten_peak=peak_memory(m1, inputs, device))
    return row


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Every case of the job: one row per (fix, changed class)."""
    path = Path(job["path"]).resolve()
    try:
        original = original_module(path, job["source"])
    except Exception as exc:
        raise BadInput(f"importing {path} failed: {type(exc).__name__}: {exc}; verify imports the file with "
                       "this Python, which needs the file's imports installed") from exc
    for folder in (str(path.parent), str(Path.cwd())):  # where a factory or inputs module may live
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        make_inputs = load_factory(job["inputs"]) if job.get("inputs") else None
    except Exception as exc:
        raise BadInput(f"--inputs {job['inputs']}: cannot import it ({type(exc).__name__}: {exc})") from exc
    rows: list[dict[str, Any]] = []
    for i, case in enumerate(job["cases"]):
        base = {"rule": case["rule_id"], "line": case["line"], "scope": case["scope"]}
        try:
            rewritten = rewritten_module(original, case["new_source"], i)
        except Exception as exc:
            rows.append({**base, "class": case["scope"], "equivalent": False,
                         "error": f"the rewritten file fails to import: {type(exc).__name__}: {exc}"[:400]})
            continue
        factories = _factories(job.get("factory"), original, rewritten)
        built: list[dict[str, Any]] = []
        for name in case["classes"]:
            try:
                row = run_class(original, rewritten, name, job, factories, make_inputs)
            except BadInput as exc:  # this class only: the other fixes still run
                row = {"class": name, "not_built": str(exc)[:600]}
            if row is not None:
                built.append(row)
        if not built:
            built.append({"class": case["scope"], "equivalent": False,
                          "error": "the rewrite changed no nn.Module class that could be run"})
        rows.extend({**base, **r} for r in built)
    return {"rows": rows, "torch": torch.__version__, "device": job["device"], "dtype": job["dtype"]}


def main() -> int:
    job = json.loads(sys.stdin.read())
    sys.dont_write_bytecode = True
    torch.use_deterministic_algorithms(False)
    out = Path(job["out"])
    try:
        result = run(job)
    except BadInput as exc:
        out.write_text(json.dumps({"error": str(exc)}), encoding="utf-8")
        return 2
    out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
