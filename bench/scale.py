"""`adopter check` at three sizes, in one process, on the process pool and on a local two-node Ray cluster.

Sizes (built under `.cache/scale/` the first time, from the transformers 4.35.0 wheel in `.cache/corpus`,
see scripts/fetch-corpus.sh):
- `modeling`: every PyTorch `models/*/modeling_*.py` of the package (no `_tf_`/`_flax_` files);
- `transformers`: the whole `transformers` package as the wheel has it;
- `monorepo`: `--copies` copies of the package (20,384 files for 14), each its own top-level package
  with every class it defines renamed (`BertModel` -> `BertModelC3`, in every file of the copy).

Modes, each a fresh `python -m adopter check PATH --format json --target cpu -q` process:
- `serial`: `--jobs 1 --no-cache`;
- `pool`: `--jobs N` with an empty result cache (the cold run), then `pool-warm`: the same again, every
  result cached (what a second run over an unchanged tree costs);
- `ray`: `--no-cache --ray-address` of a cluster this script starts: a head and a worker node, separate
  `ray start` processes with `--ray-cpus` CPUs each (HOME and temp folder of their own), `ray stop` after.

Reported per run: wall seconds, files/s, lines/s, the peak RSS of the command's process tree (sampled
every 0.1 s from /proc; on Ray the driver only: the cluster's workers are not its children), whether
its JSON findings are byte-identical to `serial`'s, and speed-up over `serial` per worker. One JSON line
per run, then a Markdown table.

Before the first run the tree's `server/adopter` is byte-compiled (`compileall`), as `pip install` does: a
plain install imports from `.pyc` files, and a tree without them (`PYTHONDONTWRITEBYTECODE=1`, a fresh
checkout) compiled every module again in every timed process (0.25–0.45 s of CPU per run, issue 22).

    PYTHONPATH=server .venv/bin/python bench/scale.py [--sets modeling transformers monorepo]
        [--modes serial pool ray] [--jobs 2] [--copies 14] [--markdown]
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from ray_local import LocalCluster

REPO = Path(__file__).resolve().parents[1]
SCALE = REPO / ".cache" / "scale"
WHEEL = REPO / ".cache" / "corpus" / "transformers-4.35.0-py3-none-any.whl"
_CLASS = re.compile(r"^class\s+([A-Za-z_]\w*)", re.MULTILINE)
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def package() -> Path:
    """The transformers 4.35.0 package, extracted from the wheel."""
    out = SCALE / "transformers-4.35.0"
    if not (out / "transformers" / "__init__.py").is_file():
        tmp = Path(tempfile.mkdtemp(dir=SCALE.parent if SCALE.parent.exists() else None))
        with zipfile.ZipFile(WHEEL) as wheel:
            wheel.extractall(tmp, [m for m in wheel.namelist() if m.startswith("transformers/")])
        out.mkdir(parents=True, exist_ok=True)
        shutil.move(str(tmp / "transformers"), str(out / "transformers"))
        shutil.rmtree(tmp, ignore_errors=True)
    return out / "transformers"


def monorepo(copies: int) -> Path:
    """`copies` copies of the package with every class renamed per copy."""
    source = package()
    out = SCALE / f"monorepo-{copies}"
    done = out / ".complete"
    if done.is_file():
        return out
    files = sorted(source.rglob("*.py"))
    texts = {f: f.read_text(encoding="utf-8") for f in files}
    classes = {name for text in texts.values() for name in _CLASS.findall(text)}
    shutil.rmtree(out, ignore_errors=True)
    for n in range(copies):
        suffix = f"C{n}"
        root = out / f"pkg{n:02d}"
        for f, text in texts.items():
            target = root / f.relative_to(source.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            renamed = _NAME.sub(lambda m, s=suffix: m.group(0) + s if m.group(0) in classes else m.group(0), text)
            target.write_text(renamed, encoding="utf-8")
    done.write_text(f"{copies * len(files)} files\n")
    return out


def modeling_paths() -> list[str]:
    models = package() / "models"
    return sorted(str(p) for p in models.glob("*/modeling_*.py") if "_tf_" not in p.name and "_flax_" not in p.name)


def byte_compile(root: Path) -> None:
    """Write the `.pyc` file of every module under `root` that has none or a stale one, as `pip install`
    does, whatever `PYTHONDONTWRITEBYTECODE` says (it stops only the imports' own writing); a module that
    does not compile is left to fail where it is imported."""
    compileall.compile_dir(str(root), quiet=2)


def count(paths: list[str]) -> tuple[int, int]:
    """(files, lines) under `paths`."""
    files = lines = 0
    for p in paths:
        for f in ([Path(p)] if Path(p).is_file() else Path(p).rglob("*.py")):
            files += 1
            with f.open("rb") as fh:
                lines += fh.read().count(b"\n")
    return files, lines


def tree_rss_mb(pid: int) -> float:
    """RSS of `pid` and all its descendants, in MB."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
            for task in Path(f"/proc/{p}/task").iterdir():
                stack.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, StopIteration, ValueError):
            continue
    return total / 1024


def run_check(paths: list[str], extra: list[str], env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, "-m", "adopter", "check", *paths, "--format", "json", "--target", "cpu", "-q", *extra]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=REPO)
        peak = 0.0
        while proc.poll() is None:
            peak = max(peak, tree_rss_mb(proc.pid))
            time.sleep(0.1)
        wall = time.perf_counter() - start
        out.seek(0)
        data = out.read()
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-1:]
    findings = len(json.loads(data)) if data.strip() else None
    return {"wall_s": round(wall, 2), "rc": proc.returncode, "peak_rss_mb": round(peak, 1), "findings": findings,
            "sha256": hashlib.sha256(data).hexdigest()[:16], "stderr_tail": tail[0] if tail else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["modeling", "transformers", "monorepo"],
                        choices=["modeling", "transformers", "monorepo"])
    parser.add_argument("--modes", nargs="+", default=["serial", "pool", "ray"], choices=["serial", "pool", "ray"])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="pool workers (default: CPUs)")
    parser.add_argument("--ray-cpus", type=int, default=1, help="CPUs of each of the two Ray nodes")
    parser.add_argument("--copies", type=int, default=14, help="copies of the package in the monorepo")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    SCALE.mkdir(parents=True, exist_ok=True)
    byte_compile(REPO / "server" / "adopter")  # as `pip install` does (module doc)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "server"), env.get("PYTHONPATH")]))
    sets = {"modeling": modeling_paths, "transformers": lambda: [str(package())],
            "monorepo": lambda: [str(monorepo(args.copies))]}
    cluster = LocalCluster(args.ray_cpus, env=env) if "ray" in args.modes else None
    rows: list[dict[str, Any]] = []
    try:
        for name in args.sets:
            paths = sets[name]()
            files, lines = count(paths)
            base: dict[str, Any] | None = None
            for mode in args.modes:
                runs: list[tuple[str, list[str], int, dict[str, str]]] = []
                if mode == "serial":
                    runs.append(("serial", ["--jobs", "1", "--no-cache"], 1, env))
                elif mode == "pool":
                    cache = tempfile.mkdtemp(prefix="adopter-scale-cache-")
                    cached = dict(env, ADOPTER_CACHE_DIR=cache)
                    runs += [("pool", ["--jobs", str(args.jobs)], args.jobs, cached),
                             ("pool-warm", ["--jobs", str(args.jobs)], args.jobs, cached)]
                elif cluster is not None:
                    runs.append(("ray", ["--no-cache", "--ray-address", cluster.address], 2,
                                 dict(env, HOME=str(cluster.home), RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")))
                for label, extra, workers, run_env in runs:
                    load = os.getloadavg()
                    result = run_check(paths, extra, run_env)
                    row = {"set": name, "mode": label, "workers": workers, "files": files, "lines": lines,
                           **result, "files_per_s": round(files / result["wall_s"], 1),
                           "lines_per_s": round(lines / result["wall_s"]), "load": [round(x, 2) for x in load]}
                    if label == "serial":
                        base = row
                    if base is not None:
                        row["same_as_serial"] = row["sha256"] == base["sha256"]
                        if label != "pool-warm":
                            row["speedup_per_worker"] = round(base["wall_s"] / result["wall_s"] / workers, 2)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
    if args.markdown:
        print("| set | files | lines | mode | workers | wall s | files/s | lines/s | peak RSS MB | same findings "
              "as serial | speed-up per worker | load |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['set']} | {r['files']} | {r['lines']} | {r['mode']} | {r['workers']} | {r['wall_s']} | "
                  f"{r['files_per_s']} | {r['lines_per_s']} | {r['peak_rss_mb']} | {r.get('same_as_serial', '')} | "
                  f"{r.get('speedup_per_worker', '')} | {r['load'][0]} |")


if __name__ == "__main__":
    main()
