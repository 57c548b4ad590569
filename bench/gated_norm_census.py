"""Recall census of families 14 (gated MLP) and 11 (hand-written LayerNorm) over the dev corpora, by syntax.

Walks every `.py` file that mentions `torch` in the dev corpora one may read (main's transformers 4.35 wheel,
the realworld and dev2 archives, fresh1's and fresh2's installed site-packages; never a held-out
distribution: `heldout_corpus.MANIFEST` and the held-out oracle slice are skipped by name, and so are
infrastructure packages such as torch and numpy) and flags candidate sites with deliberately broad patterns,
read with stdlib `ast` only:

- family 14: a product (`a * b`, `a.mul(b)`, `a.mul_(b)`, `torch.mul(a, b)`) where one operand is (through
  local names and casts) a call whose callee's name says activation (`silu`, `gelu`, `swish`, `act`,
  `activation`, `nonlin`, `sigmoid`, `glu`), and both operands come from projection-like calls (a `self.`
  submodule, `F.linear`, `matmul`/`@`/`einsum`/`bmm`, a local callable), or from a `chunk`/`split`/`unbind`
  or subscript of one;
- family 11: a function that calls `mean`, computes a spread (`var`/`std`, a power, `pow`/`square`),
  normalises (`sqrt`/`rsqrt`/`std`/`** 0.5`) and subtracts something (the mean).

`scan` writes each file holding a candidate under OUT/src/<corpus>__<package>/ and the candidates to
OUT/candidates.json; run `adopter check --select 11,14 --format json` over OUT/files.txt (pure Python, no
result cache) and `left` subtracts what it reports (same file and family, finding inside the candidate's
function) and prints the leftovers sorted into coarse buckets, for reading by hand.

    .venv/bin/python bench/gated_norm_census.py scan /tmp/census
    ADOPTER_NATIVE=0 ADOPTER_RESULT_CACHE=0 PYTHONPATH=server nice -n 10 .venv/bin/python -m adopter check \
        --select 11,14 --target cuda --format json --jobs 2 --quiet --no-cache $(cat /tmp/census/files.txt) \
        > /tmp/census/check.json
    .venv/bin/python bench/gated_norm_census.py left /tmp/census
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
# Infrastructure, not model code: never scanned (the checker is run over model-code packages only).
_NOT_MODEL_CODE = frozenset({
    "torch", "numpy", "scipy", "pandas", "sklearn", "jax", "tensorflow", "keras", "sympy", "setuptools", "pip",
    "_pytest", "pytest", "networkx", "matplotlib", "PIL", "cv2", "triton", "IPython", "jedi", "pygments", "numba",
    "llvmlite", "onnx", "onnxruntime", "google", "grpc", "botocore", "boto3", "sqlalchemy", "aiohttp", "pydantic",
    "fsspec", "datasets", "pyarrow", "nltk", "spacy", "thinc", "skimage", "statsmodels", "plotly", "bokeh",
    "sentencepiece", "tokenizers", "tqdm", "yaml", "rich", "click", "typer", "fontTools", "h5py", "mpmath",
})
_ACTIVATION = re.compile(r"(silu|gelu|swish|act|activation|nonlin|sigmoid|glu)", re.I)
_SPLITS = ("chunk", "split", "unbind", "tensor_split")
_CASTS = ("float", "to", "type_as", "contiguous")
_PASSING = (*_CASTS, "view", "reshape", "transpose", "permute")
_PRODUCTS = ("linear", "matmul", "einsum", "bmm", "mm", "conv1d", "addmm", "baddbmm")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def held_out_names() -> frozenset[str]:
    """The distributions nobody may read: the held-out labelled set's and the held-out oracle slice's."""
    sys.path.insert(0, str(ROOT / "bench"))
    from heldout_corpus import MANIFEST
    from oracle.fresh import SLICES

    names = {dist for dist, _, _ in MANIFEST}
    names.update(s.split("==")[0] for s in SLICES["fresh3"].specs())
    return frozenset(_norm(n) for n in names)


def corpus_files(forbidden: frozenset[str]) -> Iterator[tuple[str, str, bytes]]:
    """(corpus:package, path inside it, bytes) of every `.py` file of the readable dev corpora."""
    for folder in ("corpus", "realworld", "dev2"):
        for archive in sorted((CACHE / folder).iterdir()):
            dist = re.split(r"-\d", archive.name)[0]
            if archive.is_dir() or _norm(dist) in forbidden:
                continue
            package = f"{folder}:{dist}"
            if archive.name.endswith((".whl", ".zip")):
                with zipfile.ZipFile(archive) as z:
                    for name in z.namelist():
                        if name.endswith(".py"):
                            yield package, name, z.read(name)
            elif archive.name.endswith((".tar.gz", ".tgz")):
                with tarfile.open(archive) as t:
                    for member in t.getmembers():
                        handle = t.extractfile(member) if member.isfile() and member.name.endswith(".py") else None
                        if handle is not None:
                            yield package, member.name, handle.read()
    for folder in ("fresh", "fresh2"):
        site = CACHE / folder / "venv/lib/python3.11/site-packages"
        owner: dict[str, str] = {}
        for info in site.glob("*.dist-info"):
            record = info / "RECORD"
            if record.exists():
                for line in record.read_text(errors="replace").splitlines():
                    path = line.split(",")[0]
                    if path.endswith(".py"):
                        owner[path] = _norm(info.name.split("-")[0])
        for path, dist in sorted(owner.items()):
            top = path.split("/")[0]
            if dist in forbidden or top in _NOT_MODEL_CODE or top.endswith(".dist-info") or ".." in path:
                continue
            try:
                yield f"{folder}:{dist}", path, (site / path).read_bytes()
            except OSError:
                continue


def _callee(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Subscript):  # `ACT2FN[...](x)`
        v = f.value
        return v.attr if isinstance(v, ast.Attribute) else v.id if isinstance(v, ast.Name) else ""
    if isinstance(f, ast.Call):
        return _callee(f)
    return ""


class _Function:
    """One function's local assignments, to follow a value back to what computed it."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.assigned: dict[str, list[ast.expr]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    names = [target] if isinstance(target, ast.Name) else (
                        target.elts if isinstance(target, ast.Tuple | ast.List) else [])
                    for name in names:
                        if isinstance(name, ast.Name):
                            self.assigned.setdefault(name.id, []).append(node.value)

    def origins(self, e: ast.expr, depth: int = 0) -> Iterator[ast.expr]:
        if depth > 6:
            return
        if isinstance(e, ast.Name) and e.id in self.assigned:
            for value in self.assigned[e.id]:
                yield from self.origins(value, depth + 1)
        else:
            yield e

    def activated(self, e: ast.expr, depth: int = 0) -> bool:
        for o in self.origins(e):
            if isinstance(o, ast.Call):
                if _ACTIVATION.search(_callee(o)):
                    return True
                f = o.func
                if isinstance(f, ast.Attribute) and f.attr in _CASTS and depth < 3 and self.activated(
                        f.value, depth + 1):
                    return True
        return False

    def projected(self, e: ast.expr, depth: int = 0) -> bool:
        return depth <= 8 and any(self._projection(o, depth) for o in self.origins(e))

    def _projection(self, o: ast.expr, depth: int) -> bool:
        if isinstance(o, ast.BinOp):
            return isinstance(o.op, ast.MatMult)
        if isinstance(o, ast.Subscript):
            return self.projected(o.value, depth + 1)
        if not isinstance(o, ast.Call):
            return False
        name, f = _callee(o), o.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            return True  # `self.proj(x)`
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute | ast.Subscript):
            if isinstance(f.value, ast.Subscript) or name in _SPLITS:
                return True  # `self.layers[i](x)`, `self.proj.chunk(...)`
        if name in _PRODUCTS:
            return True
        if isinstance(f, ast.Attribute) and name in (*_SPLITS, *_PASSING) and self.projected(f.value, depth + 1):
            return True
        if o.args and (name in _SPLITS or _ACTIVATION.search(name)) and self.projected(o.args[0], depth + 1):
            return True
        return isinstance(f, ast.Name) and f.id not in ("len", "range")  # a callable held in a local


def _products(fn: ast.AST) -> Iterator[tuple[int, ast.expr, ast.expr]]:
    for n in ast.walk(fn):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            yield n.lineno, n.left, n.right
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("mul", "mul_"):
            if len(n.args) == 1:
                yield n.lineno, n.func.value, n.args[0]
            elif len(n.args) == 2:
                yield n.lineno, n.args[0], n.args[1]


def family14(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[int]:
    """Lines of products of an activated projection and another projection (see the module docstring)."""
    local = _Function(fn)
    return sorted({line for line, a, b in _products(fn) for x, y in ((a, b), (b, a))
                   if local.activated(x) and not isinstance(y, ast.Constant)
                   and local.projected(x) and local.projected(y)})


def family11(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[int]:
    """The first `mean` line of a function that also takes a spread, normalises and subtracts."""
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
    powers = [n for n in ast.walk(fn) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow)]
    means = [c for c in calls if _callee(c) == "mean"]
    spreads = ("var", "std", "var_mean", "std_mean")
    spread = bool(powers) or any(_callee(c) in (*spreads, "pow", "square") for c in calls)
    normalised = any(_callee(c) in ("sqrt", "rsqrt", "std", "std_mean") for c in calls) or any(
        isinstance(p.right, ast.Constant) and p.right.value in (0.5, -0.5) for p in powers)
    subtracted = any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) for n in ast.walk(fn)) or any(
        _callee(c) in spreads for c in calls)
    return [min(m.lineno for m in means)] if means and spread and normalised and subtracted else []


def scan(out: Path) -> None:
    """Write the candidates and the files holding them under `out`."""
    found: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    files: list[str] = []
    for package, path, data in corpus_files(held_out_names()):
        if b"torch" not in data:
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        local = out / "src" / package.replace(":", "__") / path
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for family, lines in ((14, family14(fn)), (11, family11(fn))):
                for line in lines:
                    key = (str(local), package, family, line)
                    end = fn.end_lineno or fn.lineno
                    known = found.get(key)
                    if known is None or end - fn.lineno < known["end"] - known["start"]:  # the innermost function
                        found[key] = {"path": str(local), "package": package, "file": path, "family": family,
                                      "line": line, "function": fn.name, "start": fn.lineno, "end": end}
        if any(k[0] == str(local) for k in found) and str(local) not in files:
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(data)
            files.append(str(local))
    (out / "candidates.json").write_text(json.dumps(list(found.values()), indent=0))
    (out / "files.txt").write_text("\n".join(files) + "\n")
    _summary(list(found.values()), "candidates")


def _summary(records: list[dict[str, Any]], what: str) -> None:
    for family in (14, 11):
        mine = [r for r in records if r["family"] == family]
        packages = {r["package"].split(":", 1)[1] for r in mine}
        print(f"family {family}: {len(mine)} {what} in {len(packages)} packages")


_BUCKETS14 = (
    ("not torch (a flax / tf / mindspore / jax port)", r"flax|_tf_|tensorflow|mindspore|/jax|_jax", "file"),
    ("sigmoid / tanh / softmax gate (SE, attention or RNN gate, sigmoid GLU)", r"sigmoid|tanh|softmax", "line"),
    ("SSM / recurrent output gate (y * act(z))",
     r"mamba|ssm|jamba|zamba|bamba|falcon_h1|nemotron_h|gated_delta|qwen3_next|lfm2|xlstm|rwkv", "file"),
    ("MoE: stacked expert weights or grouped expert layers",
     r"expert|gate_up_proj|tokens_per_expert|offsets|mul_mat_id|batched_linear", "body"),
    ("SiLU / GELU / act-named product (read by hand)", r"silu|gelu|swish|act", "line"),
)


def left(out: Path) -> None:
    """Subtract what the checker reported and print the leftovers by bucket and package."""
    candidates = json.loads((out / "candidates.json").read_text())
    reported: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for finding in json.loads((out / "check.json").read_text()):
        reported[finding["path"]].append((int(finding["family"]), finding["range"]["start"]["line"]))
    rest = [c for c in candidates if not any(
        family == c["family"] and c["start"] - 1 <= line <= c["end"] + 1 for family, line in reported[c["path"]])]
    (out / "left.json").write_text(json.dumps(rest, indent=0))
    _summary(rest, "left")
    buckets: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for c in rest:
        if c["family"] != 14:
            continue
        lines = Path(c["path"]).read_text(errors="replace").splitlines()
        texts = {"file": c["file"].lower(), "line": lines[c["line"] - 1],
                 "body": "\n".join(lines[c["start"] - 1:c["line"]])}
        bucket = next((name for name, pattern, where in _BUCKETS14 if re.search(pattern, texts[where], re.I)),
                      "other products (scales, masks, losses, residual gates)")
        buckets[bucket][c["package"].split(":", 1)[1]] += 1
    for name, by_package in sorted(buckets.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  family 14 left: {sum(by_package.values()):4d} in {len(by_package):3d} packages  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("scan", "left"))
    parser.add_argument("out", type=Path, help="a folder outside the checkout (candidates, files, check.json)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    scan(args.out) if args.command == "scan" else left(args.out)


if __name__ == "__main__":
    main()
