"""Snapshot of the analysis output, to prove that a speed-up changes nothing.

For every PyTorch modeling file of transformers 4.35.0 (all of them, not only the 202 `modeling_<m>.py`),
the bundled examples, and a truncated copy of every tenth corpus file (a syntax error in the middle of
a class, which exercises error repair), writes `format_module_file(analyse(...))` and the full `repr` of
the `ModuleFile` (every span, statement span and `via` chain, which the printer may not show) into
DIR, one pair of files per input. `--check DIR` recomputes and compares byte for byte, listing every
input whose output differs.

Base classes resolve through the wheel, as in tests/analysis (`ModuleResolver.for_archive`).

Usage: .venv/bin/python bench/analysis_snapshot.py --write DIR | --check DIR
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterator
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]


def _inputs() -> Iterator[tuple[str, str, str | None]]:
    """(snapshot name, source text, path given to analyse) for every input."""
    from adopter.corpus import modeling_files

    files = modeling_files(pytorch_only=False)
    for f in files:
        yield f"{f.model}__{f.name}", f.text, f.member
    for k, f in enumerate(files):
        if k % 10 == 0:
            cut = f.text.index("\n", len(f.text) // 2)
            # Drop the second half of a line in the middle: an unclosed bracket or a broken statement.
            broken = f.text[: cut - 7] + f.text[cut:]
            yield f"broken__{f.model}__{f.name}", broken, f.member
    for path in sorted((_ROOT / "examples").glob("*.py")):
        yield f"examples__{path.name}", path.read_text(encoding="utf-8"), str(path.relative_to(_ROOT))


def _outputs() -> Iterator[tuple[str, str, str]]:
    from adopter.analysis import ModuleResolver, analyse
    from adopter.corpus import wheel_path
    from adopter.dsl import format_module_file

    archive = wheel_path()
    if archive is None:
        raise SystemExit("transformers wheel not cached: run scripts/fetch-corpus.sh")
    resolver = ModuleResolver.for_archive(str(archive))
    for name, text, path in _inputs():
        mf = analyse(text, path, resolver=resolver)
        yield name, format_module_file(mf), repr(mf) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="DIR", help="write the snapshot into DIR")
    group.add_argument("--check", type=Path, metavar="DIR", help="compare the current output with DIR")
    args = parser.parse_args()

    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
        n = 0
        for name, dsl, rep in _outputs():
            (args.write / f"{name}.adl").write_text(dsl, encoding="utf-8")
            (args.write / f"{name}.repr").write_text(rep, encoding="utf-8")
            n += 1
        print(f"wrote {n} snapshots to {args.write}")
        return 0

    folder: Path = args.check
    if not folder.is_dir():
        print(f"no snapshot folder {folder}", file=sys.stderr)
        return 2
    differing: list[str] = []
    n = 0
    for name, dsl, rep in _outputs():
        n += 1
        for suffix, now in ((".adl", dsl), (".repr", rep)):
            path = folder / f"{name}{suffix}"
            before = path.read_text(encoding="utf-8") if path.exists() else None
            if before == now:
                continue
            differing.append(f"{name}{suffix}")
            if suffix == ".adl" and len(differing) <= 3:
                diff = difflib.unified_diff(
                    (before or "").splitlines(), now.splitlines(), "snapshot", "now", lineterm="", n=1
                )
                print("\n".join(list(diff)[:40]))
    if differing:
        print(f"{len(differing)} of {2 * n} outputs differ: {', '.join(differing[:20])}", file=sys.stderr)
        return 1
    print(f"all {n} inputs identical ({2 * n} outputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
