"""`adopter demo`: the README's main job — architectures, findings, fix diffs and a short accelerator search."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run Adopter end to end on a folder of example models")
    p.add_argument("folder", nargs="?", default="examples", help="folder of model files (default: examples)")
    p.add_argument("--out", default="out", help="where to write reports (default: out/)")
    p.add_argument("--no-wham", action="store_true", help="skip the accelerator search")
    p.set_defaults(run=run)


def _section(title: str) -> None:
    print(f"\n{'=' * 100}\n{title}\n{'=' * 100}", flush=True)


def run(args: argparse.Namespace) -> int:
    from adopter.cli import main

    folder = Path(args.folder)
    files = sorted(folder.glob("*.py"))
    if not folder.is_dir() or not files:
        print(f"adopter demo: no Python files in {folder}")
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    status = 0
    for f in files:
        _section(f"Architecture of {f} (adopter arch {f})")
        status |= main(["arch", str(f)]) not in (0,)
    _section(f"Findings (adopter check {folder})")
    main(["check", str(folder)])
    _section(f"Fixes, as a diff; nothing is written (adopter fix --diff {folder})")
    main(["fix", "--diff", str(folder)])
    if not args.no_wham:
        report = out / "wham-bert-base.html"
        _section(f"Accelerator search for BERT-base training, written to {report}")
        status |= main(["wham", "--model", "bert-base", "--batch", "8", "--seq", "512", "--budget", "200",
                        "--html", str(report), "--json", str(out / "wham-bert-base.json")]) != 0
    return 1 if status else 0
