"""Run one distribution in a process of its own: import each of its modules, build every `nn.Module`
class they define, trace it, find the family sites, and write one JSON result per class.

Runs inside the oracle's environment (`.cache/oracle/venv`, which sees the project's torch). Each class has
a time limit (SIGALRM: user code can loop forever); a class that hangs in C code is caught by the parent,
which kills this process and records that class as timed out (`CURRENT` names the class in progress), so
a rerun goes on after it. Results already on disk are skipped: the run is resumable.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata as md
import inspect
import json
import os
import random
import re
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oracle import stale

# Libraries a model calls into that are not model code: a site found in them is placed at the model line
# that called them (einops' `rearrange` is the user's reshape, not einops' source).
HELPERS = ("einops", "einx", "jaxtyping", "beartype", "typeguard", "opt_einsum", "torch", "functorch",
           "numpy", "typing_extensions", "wrapt", "decorator", "ema_pytorch")
# Pass 2 added the loss variant (`_loss_variant`) and RMSNorm through `torch.norm`; pass 3 asked the
# norm-quotient RMSNorm patterns for a √d gain, pass 4 takes that back (ScaleNorm is RMSNorm with the weight
# g/√d: `patterns._rms_norm`), adds cross-entropy over logits moved to classes-first, and lets families 5 and
# 16 share inner values (`patterns.SHARED_INNER_NODES`); pass 5 asks an erf GELU for its product with x (the
# Gaussian CDF alone is not GELU) and adds Linear -> GELU on a permuted input. Pass 6 changes no pattern:
# it builds and traces more classes (construction's argument names, sub-modules and factories; inputs of the
# rank the forward reads), so it attempts again exactly the classes an earlier pass did not trace
# (`retries`); traced ones keep their results. Pass 7 drops matches torch's own layer code composes
# (`match.torch_composed`: nn.MultiheadAttention, nn.TransformerEncoderLayer) and SDPA's math path: a class
# with a site of a family those make is traced again. Pass 8 adds to a site's lines where the torch layers
# that computed its ops were constructed (`built.py`: a conv and a BatchNorm in an `nn.Sequential`): a class
# with a site of a family such layers make is traced again. Pass 9 gives each forward argument its own tensor
# (`trace.distinct_inputs`: construction passed the input itself as `key`/`value`, making separate parameters
# one graph input): a class with a family-9 site is traced again. Pass 10 reads family 9 as the labelling
# defines it (`qkv.py`): three projections of one value that feed attention however the heads are split, and
# never projections of different forward parameters a caller passes one tensor for: a class with a family-9
# site, or whose exercised lines spell attention (`ATTENTION_LINE`), is traced again. Pass 11 added an LM head
# with a bias to family 16's patterns, and pass 13 took it back (below): nothing of it is left to redo. Pass 12 asks family 9's attention for a softmax between the
# scores and the values (a triangle multiplication's gated projections are no attention) and leaves out
# projections torch's multi-head attention makes from the model's weights: a class with a family-9 site, or whose
# file hands tensors to torch's multi-head attention (`TORCH_ATTENTION_FILE`: the q/k/v Linears before it spell no
# attention on the model's own lines), is traced again. Pass 13 takes pass 11's biased heads back: with no notion
# of a vocabulary they matched classification heads into cross-entropy (ALBERT's `num_labels` logits), and found
# none of the LM heads they were for; a class with a family-16 site is traced again. Pass 14 records where each
# site's ops are written (`match.written_at`: the construction line of each torch layer that computed one, the
# model line of each other op), so the report can set apart a pair a library model builds that the model's code
# only runs (`report.library_built`); a site whose lines all lie in its own file is written there whatever it
# records (no library file among its lines), so only a class with a site whose lines reach another file is traced
# again. A run meeting an earlier pass's results upgrades them (`_upgrade`).
PASS = 14
PATTERNS_PASS = 5  # the last pass that changed a family pattern: a trace of this pass or later stays valid
RETRY_PASS = 6  # the last pass that builds, traces or imports more: an earlier one's failures are tried again
# (pass, families): a class traced before that pass with a site of one of these families is traced again
# (pass 7: which matches are the model's own; pass 8: the lines where a site's torch layers were constructed;
# pass 9: each forward argument its own tensor)
SITES_CHANGED = ((7, frozenset({4, 5, 6, 9, 10})), (8, frozenset({6, 7, 8})), (9, frozenset({9})),
                 (10, frozenset({9})), (12, frozenset({9})), (13, frozenset({16})))
ATTENTION_PASS = 10  # the last pass whose new sites need attention on an exercised line to be found
TORCH_ATTENTION_PASS = 12  # ... and whose new sites need a file that calls torch's multi-head attention
WRITTEN_PASS = 14  # the last pass that records more of a site (`written`): a site with lines elsewhere is redone
TORCH_ATTENTION_FILE = re.compile(r"MultiheadAttention|multi_head_attention_forward", re.ASCII)
SKIP_MODULE_PARTS = ("tests", "test", "testing", "conftest", "__main__", "setup", "benchmarks", "examples",
                     "scripts", "_version", "cli", "convert", "conversion")


# torchvision's operator schemas (torchvision/csrc/ops/*.cpp). PyPI's torchvision wheels are CUDA builds
# whose `_C.so` does not load next to the CPU torch, and `import torchvision` then fails registering its
# meta kernels for operators that do not exist. Defining the schemas lets torchvision (and every package
# that imports it) import; the operators themselves have no kernel, so a model that calls one fails at
# trace time and is reported as not traced.
TORCHVISION_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, int sampling_ratio, "
    "bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, int sampling_ratio, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width) "
    "-> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, "
    "SymInt width) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, "
    "SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
    "SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, Tensor mask, "
    "Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
    "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, "
    "Tensor, Tensor)",
)
_LIBS: list[Any] = []


def torchvision_schemas() -> None:
    """Define torchvision's operators when its compiled extension cannot load (see TORCHVISION_SCHEMAS)."""
    import importlib.util

    import torch

    if _LIBS:
        return
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return
    so = next(Path(spec.submodule_search_locations[0]).glob("_C*.so"), None)
    try:
        if so is not None:
            torch.ops.load_library(str(so))
            _LIBS.append(so)
            return
    except Exception:
        pass
    try:
        lib = torch.library.Library("torchvision", "DEF")
        for schema in TORCHVISION_SCHEMAS:
            lib.define(schema)
        _LIBS.append(lib)
    except Exception:
        pass


def torchaudio_without_extension() -> None:
    """Let torchaudio import without its compiled extension. PyPI has no torchaudio built for the project's
    torch (the newest is 2.11), and its `_torchaudio.so` does not load next to it: `import torchaudio` then
    fails, and with it every package that imports torchaudio. Its own loader (`_extension.utils._load_lib`)
    treats a library it cannot find as absent; this makes one it cannot load absent too, so torchaudio's
    pure-PyTorch parts (transforms, models, functional) import and run, and what needs the extension (sox,
    ffmpeg, CTC decoders) fails when called, reported as not traced."""
    import importlib.util

    name = "torchaudio._extension.utils"
    spec = importlib.util.find_spec("torchaudio") if name not in sys.modules else None
    if spec is None or not spec.submodule_search_locations:
        return
    path = Path(spec.submodule_search_locations[0]) / "_extension" / "utils.py"
    utils_spec = importlib.util.spec_from_file_location(name, path) if path.exists() else None
    if utils_spec is None or utils_spec.loader is None:
        return
    utils = importlib.util.module_from_spec(utils_spec)
    try:
        utils_spec.loader.exec_module(utils)
        load = utils._load_lib
    except Exception:
        return

    def load_or_absent(lib: str) -> bool:
        try:
            return bool(load(lib))
        except OSError:
            return False

    utils._load_lib = load_or_absent
    sys.modules[name] = utils


class ClassTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise ClassTimeout(f"over {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def top_levels(dist: str) -> list[str]:
    """The importable top-level packages and modules a distribution installs."""
    d = md.distribution(dist)
    text = d.read_text("top_level.txt")
    names = [t.strip() for t in text.splitlines() if t.strip()] if text else []
    if not names:
        names = sorted({str(f).split("/")[0].removesuffix(".py") for f in d.files or ()
                        if str(f).endswith(".py") and not str(f).startswith(("..", "bin/"))})
    return [n for n in names if n.isidentifier() and not n.startswith("_") and n not in ("tests", "test")]


def dist_files(dist: str) -> list[Path]:
    d = md.distribution(dist)
    return sorted({Path(d.locate_file(f)).resolve() for f in d.files or () if str(f).endswith(".py")})


def module_names(dist: str) -> list[str]:
    """Every module of the distribution's packages, by file, without the tests and scripts."""
    out = []
    d = md.distribution(dist)
    tops = set(top_levels(dist))
    for f in d.files or ():
        p = str(f)
        if not p.endswith(".py") or p.split("/")[0].removesuffix(".py") not in tops:
            continue
        parts = p.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts or any(x in SKIP_MODULE_PARTS or x.startswith("test_") or not x.isidentifier() for x in parts):
            continue
        out.append(".".join(parts))
    return sorted(set(out))


def result_path(out: Path, key: str) -> Path:
    return out / f"{key}.json"


def _is_model_file_fn(site: str) -> Any:
    helpers = tuple(os.path.join(site, h) + os.sep for h in HELPERS)

    def is_model_file(path: str) -> bool:
        return path.startswith(site) and not path.startswith(helpers)
    return is_model_file


def run(dist: str, out: Path, class_timeout: float, max_classes: int, site: str) -> None:
    """Attempt every nn.Module class of `dist` (at most `max_classes`, modules in a seeded shuffle)."""
    warnings.filterwarnings("ignore")
    sys.dont_write_bytecode = True
    import torch
    from torch import nn

    from adopter.construction import Built, candidates, construct
    from oracle.built import record_construction
    from oracle.match import executed_lines, find_sites
    from oracle.patterns import family_patterns
    from oracle.trace import trace_step

    torch.manual_seed(0)
    torchvision_schemas()  # here too: torchvision may have been installed after the host started
    torchaudio_without_extension()
    family_patterns()
    is_model_file = _is_model_file_fn(site)
    record_construction(is_model_file)
    out.mkdir(parents=True, exist_ok=True)
    modules = module_names(dist)
    random.Random(0).shuffle(modules)
    attempted = 0
    version = md.version(dist)
    imports: dict[str, str] = {}
    for name in modules:
        if attempted >= max_classes:
            break
        try:
            with time_limit(max(60.0, class_timeout)):
                module = importlib.import_module(name)
        except BaseException as exc:  # SystemExit and friends from user code too
            imports[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        imports[name] = "ok"
        classes = [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == name
                   and issubclass(c, nn.Module)]
        for cls in sorted(classes, key=lambda c: c.__qualname__):
            if attempted >= max_classes:
                break
            attempted += 1
            key = f"{name}.{cls.__qualname__}"
            path = result_path(out, key)
            if path.exists() and _upgrade(path, cls, module, class_timeout, is_model_file, out):
                continue
            (out / "CURRENT").write_text(key, encoding="utf-8")
            record: dict[str, Any] = {"dist": dist, "version": version, "module": name, "class": cls.__qualname__,
                                      "constructed": False, "traced": False}
            try:
                record["file"] = str(Path(inspect.getsourcefile(cls) or "").resolve())
                record["def_line"] = inspect.getsourcelines(cls)[1]
            except (TypeError, OSError):
                record["file"], record["def_line"] = None, None
            start = time.perf_counter()
            try:
                with time_limit(class_timeout):
                    built = construct(cls, module, generic_inputs=True)
                    if isinstance(built, Built):
                        record["constructed"] = True
                        record["guessed"] = list(built.guessed)
                        try:
                            traced = _trace_any(trace_step, built, candidates, record)
                        except Exception as exc:
                            traced = _on_cpu(exc, cls, module, construct, trace_step, record)
                        record["traced"] = True
                        record["backward"] = traced.backward
                        record["nodes"] = traced.joint_nodes
                        sites, lines = _found(traced, find_sites, executed_lines, is_model_file)
                        record["sites"] = list(sites.values())
                        record["executed"] = {f: sorted(v) for f, v in lines.items()}
                    else:
                        record["stage"], record["reason"], record["missing"] = built.stage, built.reason, built.missing
            except ClassTimeout as exc:
                record["stage"] = "timeout"
                record["reason"] = str(exc)
            except BaseException as exc:
                record["stage"] = "trace" if record["constructed"] else "construct"
                tb = traceback.extract_tb(exc.__traceback__)
                where = next((f"{fr.filename}:{fr.lineno}" for fr in reversed(tb) if is_model_file(fr.filename)), "")
                record["reason"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                record["where"] = where
            record["seconds"] = round(time.perf_counter() - start, 3)
            if record["traced"]:
                (out / "CURRENT").write_text(key, encoding="utf-8")  # progress, for the host's no-progress kill
                _variant(cls, module, record, class_timeout, is_model_file)
                _loss_variant(cls, module, record, class_timeout, is_model_file)
            record["pass"] = PASS
            path.write_text(json.dumps(record), encoding="utf-8")
    (out / "CURRENT").unlink(missing_ok=True)
    (out / "_imports.json").write_text(json.dumps(imports, indent=0), encoding="utf-8")
    # The digests of every file the results name: a later install that changes one makes them stale.
    named = stale.digests(stale.named_files(stale.load_classes(out, {"pass": PASS})))
    (out / "_done.json").write_text(json.dumps({"dist": dist, "version": version, "attempted": attempted,
                                                "modules": len(modules), "files": [str(p) for p in dist_files(dist)],
                                                "digests": named, "pass": PASS, "max_classes": max_classes}),
                                    encoding="utf-8")


# What a line must spell for a pattern changed since pass 1 to match ops it ran (pass 2: a vector norm;
# pass 4: a cross-entropy, a dropout; pass 5: an erf, a moved axis). A class none of whose exercised lines
# does keeps its trace; the others are traced again whole. (`self.norm(x)` calls a module: its own lines,
# in the trace too when they are model code, say what it computes.)
CHANGED_PATTERN_LINE = re.compile(r"(?<!self\.)\bnorm\s*\(|normalize\s*\(|vector_norm\s*\(|cross_entropy|CrossEntropy|"
                                  r"nll_loss|loss_f|drop|erf|permute|transpose|movedim|swapaxes|rearrange")


# What a line must spell for pass 10's family-9 sites (projections feeding attention) to be in the class's
# trace: an attention product, a softmax, or a call of an attention layer (torch's or the model's own).
ATTENTION_LINE = re.compile(r"softmax|matmul|bmm|einsum|@|scaled_dot_product|[Aa]ttention|attn", re.ASCII)


def _file_spells(record: dict[str, Any], spelled: re.Pattern[str]) -> bool:
    """Whether a file the class exercised spells `spelled` anywhere (unknown: yes)."""
    for f in record.get("executed") or {}:
        try:
            if spelled.search(Path(f).read_text(encoding="utf-8")):
                return True
        except (OSError, UnicodeDecodeError):
            return True
    return False


def may_match_a_changed_pattern(record: dict[str, Any], spelled: re.Pattern[str] = CHANGED_PATTERN_LINE) -> bool:
    for f, lines in (record.get("executed") or {}).items():
        try:
            text = Path(f).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return True  # unknown: trace again
        if any(0 < ln <= len(text) and spelled.search(text[ln - 1]) for ln in lines):
            return True
    return False


# How a class was lost when its process was killed (`_mark`): a hang in C code or a crash, which a new
# attempt would only repeat at the cost of a whole child process.
_KILLED = ("killed:", "the process died")


def retries(record: dict[str, Any]) -> bool:
    """Whether a class an earlier pass did not trace is attempted again by this one (pass 6 builds and traces
    more classes): every one not traced, except those whose process a hang or crash killed."""
    if record.get("pass", 1) >= RETRY_PASS or record.get("traced"):
        return False
    return not str(record.get("reason", "")).startswith(_KILLED)


def trace_outdated(record: dict[str, Any]) -> bool:
    """Whether a traced class's trace predates a pattern change that may match it, or a change of which
    matches are the model's own that may drop one of its sites."""
    if not record.get("traced"):
        return False
    done_in = record.get("pass", 1)
    if done_in < PATTERNS_PASS and may_match_a_changed_pattern(record):
        return True
    if done_in < ATTENTION_PASS and may_match_a_changed_pattern(record, ATTENTION_LINE):
        return True
    if done_in < TORCH_ATTENTION_PASS and _file_spells(record, TORCH_ATTENTION_FILE):
        return True
    if done_in < WRITTEN_PASS and any(s.get("elsewhere") for s in record.get("sites") or []):
        return True
    families = {s.get("family") for s in record.get("sites") or []}
    return any(done_in < at and families & changed for at, changed in SITES_CHANGED)


def _upgrade(path: Path, cls: type, module: Any, class_timeout: float, is_model_file: Any, out: Path) -> bool:
    """Bring a class's result of an earlier pass up to this one (the loss variant where it has none), in
    place; False when it must be attempted again whole instead (it was not traced, and this pass may trace
    it; or a pattern changed since may match it)."""
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("pass", 1) >= PASS:
        return True
    if retries(record) or trace_outdated(record):
        return False
    if record.get("traced") and "loss_variant" not in record:
        (out / "CURRENT").write_text(record.get("class", ""), encoding="utf-8")
        _loss_variant(cls, module, record, class_timeout, is_model_file)
    record["pass"] = PASS
    path.write_text(json.dumps(record), encoding="utf-8")
    return True


def _found(traced: Any, find_sites: Any, executed_lines: Any, is_model_file: Any,
           ) -> tuple[dict[tuple[int, Any], dict[str, Any]], dict[str, set[int]]]:
    """The family sites of a trace's graphs (by family and anchor) and the model lines it exercised."""
    sites = {(s.family, s.anchor): s.to_json() for g in traced.graphs for s in find_sites(g, is_model_file)}
    lines: dict[str, set[int]] = {}
    for g in traced.graphs:
        for f, ln in executed_lines(g, is_model_file):
            lines.setdefault(f, set()).add(ln)
    return sites, lines


def _variant(cls: type, module: Any, record: dict[str, Any], class_timeout: float, is_model_file: Any) -> None:
    """Trace the class again with its boolean parameters flipped (construction's `flip`: "all" of them to
    their non-default values, else, when that does not build or trace, "on": only those off by default
    switched on), and add the sites and exercised lines that only the variant has to `record` (its sites
    marked `"variant": true`). Classes are chosen by their parameters' types and defaults alone: every
    class that traced and has a boolean parameter (its config class's own count) gets the variant.
    `record["variant"]` says what was flipped, whether it traced, and what it added."""
    from adopter.construction import FLIPS, Built, boolean_parameters, construct
    from oracle.match import executed_lines, find_sites
    from oracle.trace import trace_step

    try:
        names = boolean_parameters(cls, module)
    except Exception:
        names = ()
    if not names:
        return
    info: dict[str, Any] = {"parameters": list(names), "traced": False}
    start = time.perf_counter()
    for flip in FLIPS:
        try:
            with time_limit(class_timeout):
                built = construct(cls, module, generic_inputs=True, flip=flip)
                if not isinstance(built, Built):
                    info[f"reason_{flip}"] = f"{built.stage}: {built.reason[:200]}"
                    continue
                traced = _trace_any(trace_step, built, _alternatives(), {})
                sites, lines = _found(traced, find_sites, executed_lines, is_model_file)
        except BaseException as exc:  # a variant's failure never loses the class's own result
            info[f"reason_{flip}"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        info.update(traced=True, flip=flip, arguments={k: v for k, v in built.arguments.items()})
        info["sites_added"], info["lines_added"] = _merge(record, sites, lines)
        break
    info["seconds"] = round(time.perf_counter() - start, 3)
    record["variant"] = info


def _merge(record: dict[str, Any], sites: dict[Any, dict[str, Any]], lines: dict[str, set[int]]) -> tuple[int, int]:
    """Add a variant trace's sites (marked `"variant": true`) and exercised lines that `record` lacks; the
    counts added."""
    own = record.get("sites", [])  # none when the class's own trace failed and only a variant ran
    known = {(s["family"], s["file"], s["line"]) for s in own}
    added = [{**s, "variant": True} for s in sites.values() if (s["family"], s["file"], s["line"]) not in known]
    record["sites"] = [*own, *added]
    executed = {f: set(v) for f, v in record.get("executed", {}).items()}
    before = sum(len(v) for v in executed.values())
    for f, v in lines.items():
        executed.setdefault(f, set()).update(v)
    record["executed"] = {f: sorted(v) for f, v in executed.items()}
    return len(added), sum(len(v) for v in executed.values()) - before


# A forward's loss branch runs only when it is asked for: a switch off by default (`return_loss=False`) or
# labels passed. Labels are given the shape and values of the forward's integer input (token ids: the
# language-model case, where labels are the next tokens of the same ids); a forward that wants another
# label (a class index per sample) rejects them, and the class keeps its own trace alone.
LABEL_PARAMETERS = ("labels", "label", "targets", "target")


def loss_parameter(name: str, default: object, has_default: bool) -> str | None:
    """"switch" for a loss switch off by default, "labels" for a labels parameter (no default or None),
    else None: the one reading of a forward's parameters, from its signature or its source (`upgrade`)."""
    if has_default and default is False and "loss" in name.lower():
        return "switch"
    if name in LABEL_PARAMETERS and (not has_default or default is None):
        return "labels"
    return None


def loss_arguments(forward: Any, given: dict[str, Any], ids: Any) -> dict[str, Any]:
    """The keyword arguments that switch `forward`'s loss branch on, for parameters `given` does not set."""
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return {}
    out: dict[str, Any] = {}
    for name, p in params.items():
        if name in given or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            continue
        kind = loss_parameter(name, p.default, p.default is not p.empty)
        if kind == "switch":
            out[name] = True
        elif kind == "labels" and ids is not None:
            out[name] = ids.clone()
    return out


def _loss_variant(cls: type, module: Any, record: dict[str, Any], class_timeout: float, is_model_file: Any) -> None:
    """Trace the class again with its loss branch switched on (`loss_arguments`), and add what only that
    trace has to `record` (as `_variant` does). `record["loss_variant"]` says what was passed and added."""
    import torch

    from adopter.construction import Built, construct
    from oracle.match import executed_lines, find_sites
    from oracle.trace import trace_step

    info: dict[str, Any] = {"arguments": [], "traced": False}
    record["loss_variant"] = info
    try:
        params = list(inspect.signature(cls.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    if not any(loss_parameter(p.name, p.default, p.default is not p.empty) for p in params):
        return  # no loss switch and no labels parameter: nothing to build
    start = time.perf_counter()
    try:
        with time_limit(class_timeout):
            built = construct(cls, module, generic_inputs=True)
            if not isinstance(built, Built):
                return
            values = [*built.args, *built.kwargs.values()]
            ids = next((v for v in values if isinstance(v, torch.Tensor) and not v.is_floating_point()
                        and not v.is_complex() and v.dtype != torch.bool), None)
            extra = loss_arguments(built.model.forward, built.kwargs, ids)
            info["arguments"] = sorted(extra)
            if not extra:
                return
            traced = trace_step(built.model, built.args, {**built.kwargs, **extra})
            sites, lines = _found(traced, find_sites, executed_lines, is_model_file)
    except BaseException as exc:  # the variant's failure never loses the class's own result
        info["reason"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        return
    finally:
        info["seconds"] = round(time.perf_counter() - start, 3)
    info["traced"] = True
    info["sites_added"], info["lines_added"] = _merge(record, sites, lines)


def _alternatives() -> Any:
    from adopter.construction import candidates

    return candidates


def _trace_any(trace_step: Any, built: Any, candidates: Any, record: dict[str, Any]) -> Any:
    """Trace with the inferred inputs, then, while the model's code rejects them, with the first input's
    other likely shapes (construction's `candidates(model, x)`: the rank its forward reads first), each
    forward argument given the first input given the new one too; raises the first error when none
    traces (a class's time limit stops the retries)."""
    try:
        return trace_step(built.model, built.args, built.kwargs)
    except ClassTimeout:
        raise
    except Exception as first_error:
        names = list(built.kwargs)
        if not names or not hasattr(built.kwargs[names[0]], "shape"):
            raise
        x = built.kwargs[names[0]]
        for alt in candidates(built.model, x):
            kwargs = {k: alt if v is x else v for k, v in built.kwargs.items()}
            try:
                traced = trace_step(built.model, built.args, kwargs)
            except ClassTimeout:
                raise
            except Exception:
                continue
            record["input_shape"] = list(alt.shape)
            return traced
        raise first_error


CPU_PARAMETERS = 20_000_000  # a model this large at the chosen sizes is not rebuilt with real weights


def _on_cpu(exc: Exception, cls: type, module: Any, construct: Any, trace_step: Any, record: dict[str, Any]) -> Any:
    """When the meta trace failed for want of real tensors (`needs_real_tensors`), build the class again on
    the CPU (same arguments and inputs: construction is deterministic) and trace it there with `make_fx`;
    when its forward branches on its own values, which `make_fx` cannot follow, through dynamo's graphs
    (`trace_with_dynamo`). Raises the original error when neither applies."""
    from adopter.construction import Built, candidates
    from oracle.trace import DATA_DEPENDENT, needs_real_tensors, trace_with_dynamo

    if not needs_real_tensors(exc):
        raise exc
    built = construct(cls, module, generic_inputs=True, device="cpu")
    if not isinstance(built, Built) or sum(p.numel() for p in built.model.parameters()) > CPU_PARAMETERS:
        raise exc
    try:
        traced = _trace_any(lambda m, a, k: trace_step(m, a, k, device="cpu"), built, candidates, record)
        record["device"] = "cpu"
    except Exception as cpu_error:
        if DATA_DEPENDENT not in str(cpu_error):
            raise
        traced = trace_with_dynamo(built.model, built.args, built.kwargs)
        record["device"] = "cpu, dynamo"
    return traced


def _mark(out: Path, how: str) -> None:
    """Record the class in progress (named by CURRENT) as lost to a hang or crash, so a rerun skips it."""
    current = out / "CURRENT"
    try:
        key = current.read_text(encoding="utf-8").strip()
    except OSError:
        return
    if key and not result_path(out, key).exists():
        cls = key.rpartition(".")[2]
        result_path(out, key).write_text(json.dumps({"key": key, "class": cls, "constructed": False,
                                                      "traced": False, "stage": "timeout", "reason": how}),
                                         encoding="utf-8")
    current.unlink(missing_ok=True)


def host(dists: list[str], root: Path, class_timeout: float, max_classes: int, site: str) -> None:
    """Load torch and compile the patterns once, then fork one child per distribution (its imports stay
    its own). A child silent for longer than a class may take (a hang in C code) is killed, its class
    recorded as timed out, and the distribution resumed in a new child; at most three tries each."""
    import torch

    torch.set_num_threads(1)  # before any op: forked children must not inherit a started thread pool
    torchvision_schemas()
    from oracle.patterns import family_patterns

    family_patterns()
    for spec in _claimed(dists, root, max_classes):
        dist = spec.split("==")[0]
        out = root / dist
        installed = _installed(spec)
        if installed is not True:
            out.mkdir(parents=True, exist_ok=True)
            (out / "_done.json").write_text(json.dumps({"dist": dist, "install": installed or "not installed",
                                                        "attempted": 0}), encoding="utf-8")
            continue
        for _ in range(3):
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    run(dist, out, class_timeout, max_classes, site)
                except BaseException:
                    traceback.print_exc()
                    code = 1
                finally:
                    os._exit(code)
            status = _wait(pid, out / "CURRENT", class_timeout + 60)
            if status == 0 and done(out, max_classes):
                break
            _mark(out, "killed: no progress past the class time limit" if status is None
                  else f"the process died (status {status})")
        print(f"oracle: {dist} done", flush=True)


def done(out: Path, max_classes: int = 0) -> bool:
    """A distribution is done when it failed to install (nothing to redo), or when its pass is this one's
    and it was not cut short by a smaller `max_classes` than this run's (results before the cap was recorded
    were all run with 50)."""
    try:
        meta = json.loads((out / "_done.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if "install" in meta:
        return True
    cap = meta.get("max_classes", 50)
    cut_short = meta.get("attempted", 0) >= cap and max_classes > cap
    return meta.get("pass", 1) >= PASS and not cut_short


def _claimed(dists: list[str], root: Path, max_classes: int, wait_s: float = 1800.0) -> Iterator[str]:
    """The distributions this host runs: every host gets the whole list and takes, in turn, the first one
    that is installed (or failed to install), not done, and not taken by another host (an exclusive
    `_claim` file). Waits while the installers have not reached any that is left."""
    from oracle.install import ledger_entry

    left = list(dists)
    deadline = time.time() + wait_s
    while left and time.time() < deadline:
        for spec in list(left):
            out = root / spec.split("==")[0]
            if done(out, max_classes):
                left.remove(spec)
                continue
            if ledger_entry(spec) is None:
                continue
            left.remove(spec)
            out.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(out / "_claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            yield spec
            deadline = time.time() + wait_s
            break
        else:
            time.sleep(5)


def _installed(spec: str) -> bool | str:
    """True when the installer's ledger says `spec` installed; its reason when it failed."""
    from oracle.install import ledger_entry

    entry = ledger_entry(spec) or {}
    return True if entry.get("ok") else str(entry.get("how", "not installed"))


def _wait(pid: int, current: Path, limit: float) -> int | None:
    """The child's exit status, or None once it was killed for making no progress for `limit` seconds."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        try:
            age = time.time() - current.stat().st_mtime
        except OSError:
            age = 0.0
        if age > limit:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.5)


def main(argv: list[str]) -> int:
    root, timeout, max_classes, site = Path(argv[0]), float(argv[1]), int(argv[2]), argv[3]
    host(argv[4:], root, timeout, max_classes, site)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
