"""`adopter demo`: the README's main job — findings, fix diffs, one line per model, a short accelerator search.

The full architecture of every model in the DSL is behind `--dsl` (it is long; `adopter arch` prints it).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="run Adopter end to end on a folder of example models")
    p.add_argument("folder", nargs="?", default="examples", help="folder of model files (default: examples)")
    p.add_argument("--out", default="out", help="where to write reports (default: out/)")
    p.add_argument("--no-wham", action="store_true", help="skip the accelerator search")
    p.add_argument("--dsl", action="store_true", help="also print every model's full architecture in the DSL")
    p.set_defaults(run=run)


def _section(title: str) -> None:
    print(f"\n{'=' * 100}\n{title}\n{'=' * 100}", flush=True)


def summary_lines(path: Path) -> list[str]:
    """One line per nn.Module of `path`: its name, bases and the submodules its __init__ builds."""
    from adopter.dsl.types import Ctor
    from adopter.session import RuleContext, Session

    module_file = Session(RuleContext(())).analyse(path.read_text(encoding="utf-8"), str(path))
    lines = []
    for arch in module_file.architectures:
        parts = [f"{b.attr}={b.value.callee.rsplit('.', 1)[-1]}" for b in (arch.init.bindings if arch.init else ())
                 if isinstance(b.value, Ctor)]
        shown = ", ".join(parts[:6]) + (f", … ({len(parts)} in all)" if len(parts) > 6 else "")
        bases = ", ".join(b.rsplit(".", 1)[-1] for b in arch.bases) or "nn.Module"
        lines.append(f"{path}:{arch.span.start_line + 1}: {arch.name}({bases}): {shown or 'no submodules'}")
    return lines


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
    _section(f"Findings (adopter check {folder})")
    main(["check", str(folder)])
    _section(f"Fixes, as a diff; nothing is written (adopter fix --diff {folder})")
    main(["fix", "--diff", str(folder)])
    _section("The models, one line each (`adopter arch FILE` or `adopter demo --dsl` for the full DSL)")
    for f in files:
        for line in summary_lines(f):
            print(line)
    if args.dsl:
        for f in files:
            _section(f"Architecture of {f} (adopter arch {f})")
            status |= main(["arch", str(f)]) not in (0,)
    if not args.no_wham:
        report = out / "wham-bert-base.html"
        _section(f"Accelerator search for BERT-base training, written to {report}")
        status |= main(["wham", "--model", "bert-base", "--batch", "8", "--seq", "512", "--budget", "200",
                        "--html", str(report), "--json", str(out / "wham-bert-base.json")]) != 0
    return 1 if status else 0
