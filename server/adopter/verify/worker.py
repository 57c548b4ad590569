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
import linecache
import sys
import types
from pathlib import Path
from typing import Any

import torch

from adopter.construction import Built, NotBuilt, construct, forward_inputs, load_factory
from adopter.construction.inputs import alternatives, first_layer, input_for_layer, position_like
from adopter.verify.compare import Inputs, compare
from adopter.verify.measure import peak_memory, timing
from adopter.verify.reach import lines_run, watched_lines

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
        try:
            importlib.import_module(".".join(parts[:-1]))
        except Exception:  # its package's __init__ needs what this file may not (an optional dependency)
            _bare_packages(folder, parts[:-1])
    name = ".".join(parts) if len(parts) > 1 else f"adopter_user_{path.stem}"  # never shadows a real module
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__package__ = ".".join(parts[:-1])
    sys.modules[name] = module
    if not path.is_file() or path.read_text(encoding="utf-8", errors="replace") != source:
        _remember_source(str(path), source)  # the editor's unsaved text: getsource reads it, not the disk
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def _bare_packages(root: Path, parts: list[str]) -> None:
    """The packages holding the file, as modules whose `__init__` is not run (only their folder, for
    relative imports), where importing them fails: the file's own imports still run as written."""
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name in sys.modules:
            continue
        module = types.ModuleType(name)
        module.__path__ = [str(root.joinpath(*parts[:i]))]
        module.__package__ = name
        module.__file__ = str(root.joinpath(*parts[:i], "__init__.py"))
        sys.modules[name] = module
        if i > 1:
            setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], module)


def rewritten_module(original: types.ModuleType, source: str, index: int,
                     classes: tuple[str, ...] = ()) -> types.ModuleType:
    """The rewritten text run as a sibling of the original module (same package, so relative imports work).

    A statement that fails after every class in `classes` is defined is one that succeeded in the original
    and cannot run twice in one process (a model registry refusing a second `resnet18`): the module keeps
    what ran, and the names it did not reach are the original's."""
    name = f"{original.__name__}__adopter_verify_{index}"
    module = types.ModuleType(name)
    # Its own file name, whose lines are the rewritten text: `inspect.getsource` (TorchScript's
    # `torch.jit.script`, dataclasses) must read this text, not the user's file at the same line numbers.
    filename = f"{original.__file__ or '<file>'}.adopter-verify-{index}.py"
    _remember_source(filename, source)
    module.__file__ = filename
    module.__package__ = original.__package__
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except Exception:
        if not classes or not all(c.partition(".")[0] in module.__dict__ for c in classes):  # `Outer.Inner`
            raise
        for key, value in vars(original).items():
            module.__dict__.setdefault(key, value)
    return module


def _remember_source(filename: str, source: str) -> None:
    """`source` as the lines of `filename` for `linecache` (what `inspect.getsource` reads); no modification
    time, so `linecache.checkcache` keeps it although no such file exists."""
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)


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


def finite_weights(model: torch.nn.Module, seed: int) -> int:
    """Draw again (uniform in [-1, 1]) every floating parameter or buffer holding a non-finite value or one
    above 1e4 in magnitude: a class that leaves `torch.empty` to its model's initialiser (transformers'
    `_init_weights`) holds whatever memory was there, and an overflow there compares NaN. Returns how many."""
    generator = torch.Generator().manual_seed(seed)
    redrawn = 0
    with torch.no_grad():
        for t in [*model.parameters(), *model.buffers()]:
            if t.is_floating_point() and t.numel() and not bool((t.abs() <= 1e4).all()):
                t.copy_(torch.rand(t.shape, generator=generator, dtype=torch.float32).mul_(2).sub_(1).to(t.dtype))
                redrawn += 1
    return redrawn


def _build(cls: type, module: types.ModuleType, factory: Any, seed: int, given_inputs: bool = False) -> Built:
    """`cls` built on the CPU with weights drawn from `seed`, by the factory or by inference (weights left
    uninitialised drawn again: `finite_weights`). With `given_inputs` (`--inputs`) the forward's inputs are
    not inferred: a forward argument no rule can infer would otherwise stop a class the user gave the
    inputs of."""
    built = _build_as_given(cls, module, factory, seed, given_inputs)
    finite_weights(built.model, seed)
    return built


def _build_as_given(cls: type, module: types.ModuleType, factory: Any, seed: int,
                    given_inputs: bool = False) -> Built:
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


def _inputs_that_run(name: str, model: torch.nn.Module, given: Inputs, inferred: bool, device: torch.device,
                     dtype: torch.dtype, seed: int) -> Inputs:
    """`given` (moved to the device), or, when the original does not run on inferred inputs, the same with
    the config-sized `hidden_states` replaced by the first layer's input (a block whose first Linear takes
    the intermediate width), or the first input in the other shapes it may take (`alternatives`: a
    feature vector as a sequence), then each of those with its optional position embeddings given
    (`construction.inputs.position_like`). Raises `BadInput` when none runs."""
    candidates = [given]
    first = input_for_layer(first_layer(model), model) if inferred else None
    hidden = given[1].get("hidden_states")
    if (isinstance(first, torch.Tensor) and isinstance(hidden, torch.Tensor) and first.dim() == hidden.dim()
            and first.shape != hidden.shape and first.is_floating_point()):
        candidates.append((given[0], {**given[1], "hidden_states": first}))
    if inferred:  # the first input in other shapes: a feature vector as a sequence of them (`B, N, C = x.shape`)
        args, kwargs = given
        key = next((k for k, v in kwargs.items() if isinstance(v, torch.Tensor)), None) if not args else None
        x = args[0] if args else kwargs.get(key) if key is not None else None
        if isinstance(x, torch.Tensor):
            for other in alternatives(x):
                candidates.append(((other, *args[1:]), kwargs) if args else (args, {**kwargs, str(key): other}))
    if inferred:  # a DETR-style layer needs its position embedding (`hidden_states + object_queries`)
        for args, kwargs in list(candidates):
            x = kwargs.get("hidden_states", args[0] if args else next(iter(kwargs.values()), None))
            extra = position_like(model, kwargs, x) if isinstance(x, torch.Tensor) else {}
            if extra:
                candidates.append((args, {**kwargs, **extra}))
    error: Exception | None = None
    for args, kwargs in candidates:
        inputs = (_move(args, device, dtype), _move(kwargs, device, dtype))
        try:
            compare(model, model, inputs, seed=seed, dtype=dtype)  # the original itself must run on these
            return inputs
        except Exception as exc:
            error = error or exc
    assert error is not None
    raise BadInput(f"{name} does not run on the inferred inputs ({type(error).__name__}: {str(error)[:200]}); "
                   "pass --inputs module:fn (fn(model) returns the inputs)") from error


def _reproduces(cls: type, module: types.ModuleType, factory: Any, model: torch.nn.Module, inputs: Inputs,
                device: torch.device, dtype: torch.dtype, seed: int) -> str | None:
    """None when the original class, built again with other random weights and loaded with `model`'s
    state dict, computes what `model` computes (the control the rewrite is held to); else why not: the
    class keeps state outside its state dict, so no rewrite of it can be judged this way."""
    control = _build(cls, module, factory, seed + 1).model
    try:
        control.load_state_dict(model.state_dict(), strict=True)
        control.to(device, dtype).eval()
        same = compare(model, control, inputs, seed=seed, dtype=dtype)
    except Exception as exc:
        return f"the original, built again and loaded with its own state dict, fails: {type(exc).__name__}: {exc}"[:400]
    if same.equivalent:
        return None
    return (f"the original itself does not reproduce from its state dict (built again with other random weights "
            f"and loaded strictly, it differs by {same.max_abs:.3g} in {same.detail}): it keeps state outside the "
            "state dict, so the rewrite cannot be compared; pass --factory module:fn that builds it deterministically")


def _class_named(module: types.ModuleType, name: str) -> Any:
    """The class a finding's scope names: `Outer.Inner` (a class nested in a class body) by its qualified name."""
    obj: Any = module
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj


def run_class(original: types.ModuleType, rewritten: types.ModuleType, name: str, job: dict[str, Any],
              factories: tuple[Any, Any], make_inputs: Any, watched: frozenset[int] = frozenset()) -> dict[str, Any] | None:
    """One row: the class built from both modules, compared, timed. None when it is not an nn.Module, and a
    row not run when the comparison ran none of the `watched` lines of the rewrite (`reach.watched_lines`)."""
    cls0, cls1 = _class_named(original, name), _class_named(rewritten, name)
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
    given = _as_inputs(make_inputs(m0)) if make_inputs is not None else (built.args, built.kwargs)
    inputs = _inputs_that_run(name, m0, given, make_inputs is None, device, dtype, seed)
    unsettled = _reproduces(cls0, original, factories[0], m0, inputs, device, dtype, seed)
    if unsettled is not None:
        return {"class": name, "not_built": unsettled}
    try:
        with lines_run(getattr(rewritten, "__file__", None) or "") as ran:
            result = compare(m0, m1, inputs, seed=seed, dtype=dtype)
    except Exception as exc:
        row.update(equivalent=False, error=f"the rewrite fails: {type(exc).__name__}: {exc}"[:400])
        return row
    if watched and not ran & watched:
        switched = _switch_to_the_rewrite(m0, m1, inputs, seed, dtype, rewritten, watched)
        if switched is not None:
            outcome, switch = switched
            row["switched"] = switch
            if isinstance(outcome, Exception):
                row.update(equivalent=False, error=f"the rewrite fails with {switch}: {type(outcome).__name__}: "
                                                   f"{outcome}"[:400])
                return row
            result = outcome
    if watched and "switched" not in row and not ran & watched:
        lines = sorted(watched)
        return {"class": name, "not_built": (
            f"{name}: the inputs did not reach the code the fix wrote (lines {lines[0]}-{lines[-1]} of the rewrite "
            "did not run: a branch such as `if self.fused_attn:` took another path), so the comparison proves "
            "nothing; pass --inputs module:fn or --factory module:fn that takes that path")}
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


def _switch_to_the_rewrite(m0: torch.nn.Module, m1: torch.nn.Module, inputs: Inputs, seed: int, dtype: torch.dtype,
                           rewritten: types.ModuleType, watched: frozenset[int]) -> tuple[Any, str] | None:
    """When the comparison did not reach the rewrite, a boolean switch the modules hold may choose the path
    (`self.fused_attn = True` takes the library kernel, not the matched code): flip each public boolean
    attribute of the modules in turn, in both alike, until the rewritten lines run (a switch under which the
    original itself fails is skipped). Returns the comparison, or the rewrite's exception, and the switch
    (`attn.fused_attn=False`), the modules left switched (the timing then measures that path); None when no
    single switch reaches it."""
    filename = getattr(rewritten, "__file__", None) or ""
    others = dict(m1.named_modules())
    for path, module in m0.named_modules():
        other = others.get(path)
        if other is None:
            continue
        for attr, value in sorted(vars(module).items()):
            if attr.startswith("_") or attr == "training" or not isinstance(value, bool) \
                    or getattr(other, attr, None) is not value:
                continue
            setattr(module, attr, not value)
            setattr(other, attr, not value)
            switch = f"{path + '.' if path else ''}{attr}={not value}"
            try:
                compare(m0, m0, inputs, seed=seed, dtype=dtype)  # the original must run so switched
                runs = True
            except Exception:
                runs = False
            if runs:
                ran: set[int] = set()
                try:
                    with lines_run(filename) as ran:
                        result: Any = compare(m0, m1, inputs, seed=seed, dtype=dtype)
                except Exception as exc:  # the original runs so, the rewrite does not: a failure to report
                    result = exc
                if ran & watched:
                    return result, switch
            setattr(module, attr, value)
            setattr(other, attr, value)
    return None


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Every case of the job: one row per (fix, changed class)."""
    path = Path(job["path"]).resolve()
    if str(job["device"]).startswith("cuda") and not torch.cuda.is_available():
        raise BadInput(f"--device {job['device']}: this Python's torch ({torch.__version__}) sees no CUDA device; "
                       "use --device cpu, or auto (CUDA when there is one)")
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
            rewritten = rewritten_module(original, case["new_source"], i, tuple(case["classes"]))
        except Exception as exc:
            rows.append({**base, "class": case["scope"], "equivalent": False,
                         "error": f"the rewritten file fails to import: {type(exc).__name__}: {exc}"[:400]})
            continue
        factories = _factories(job.get("factory"), original, rewritten)
        watched = watched_lines(job["source"], case["new_source"])
        built: list[dict[str, Any]] = []
        for name in case["classes"]:
            try:
                row = run_class(original, rewritten, name, job, factories, make_inputs, watched)
            except BadInput as exc:  # this class only: the other fixes still run
                row = {"class": name, "not_built": str(exc)[:600]}
            if row is not None:
                built.append(row)
        if not built:  # nothing ran, so nothing was compared: not run, never "not equivalent"
            built.append({"class": case["scope"], "not_built": (
                "the rewrite changed no nn.Module class that could be run (a fix outside module code, such as "
                "an optimizer's construction, is proven by its rule's own equivalence tests, not by verify)")})
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
