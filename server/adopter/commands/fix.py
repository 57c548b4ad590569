"""`adopter fix`: apply verified rewrites to files, or show them as a unified diff (`--diff`)."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adopter.commands._common import add_rule_options, add_run_options, session_for, split_list

if TYPE_CHECKING:
    from adopter.commands.fanout import FileOutcome
    from adopter.session import Session


def register(subparsers: Any) -> None:
    """Add the `fix` subcommand."""
    p = subparsers.add_parser("fix", help="rewrite sites to optimized kernels (verified)",
                              description="Rewrite the sites `adopter check` reports. A file is only written "
                                          "when its rewrite re-parses and re-analyses clean.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders")
    p.add_argument("--diff", action="store_true", help="print a unified diff instead of writing files")
    p.add_argument("--rule", action="append", default=[], metavar="RULE",
                   help="only fix these rules (ids, id prefixes or family numbers; repeatable)")
    run_model = p.add_argument_group(
        "running your model (--verify-run)",
        "--verify-run RUNS YOUR CODE: each fix is run against the original class as `adopter verify` runs it "
        "(your file imported and the classes built in a subprocess with a timeout; outputs and every gradient "
        "compared, the checkpoint loaded with strict=True). Only the fixes whose run agrees are written; the "
        "others (not equivalent, failing, or a class that cannot be built) are reported at your lines with "
        "the reason. On an input error (a file that does not import, a run stopped at --timeout) nothing is "
        "written. Without it, fix never runs your code.")
    run_model.add_argument("--verify-run", action="store_true",
                           help="run your model (in a subprocess) and write only the fixes that compute the same")
    run_model.add_argument("--timeout", type=float, default=None, metavar="S",
                           help="stop each run after S seconds (default 300)")
    run_model.add_argument("--factory", metavar="module:fn", help="fn(cls) returns the model, or (model, inputs)")
    run_model.add_argument("--inputs", metavar="module:fn",
                           help="fn(model) returns the inputs (tensor, tuple or dict)")
    run_model.add_argument("--python", metavar="PATH", help="the Python that runs the model (default: this one)")
    add_rule_options(p)
    add_run_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Fix every Python file under the paths to a fixed point; exit 0 done, 1 sites left (or, with
    --diff, changes), 2 input errors (a file that cannot be read or does not parse; with --verify-run,
    one that does not import or a run stopped at --timeout: then nothing is written)."""
    from adopter.commands.fanout import run_files
    from adopter.executors import ExecutorError

    given = [o for o in ("timeout", "factory", "inputs", "python") if getattr(args, o) is not None]
    if not args.verify_run and given:
        print(f"error: --{given[0]} only applies with --verify-run", file=sys.stderr)
        return 2
    if args.timeout is not None and args.timeout <= 0:
        print("error: --timeout must be positive", file=sys.stderr)
        return 2
    only = split_list(args.rule)
    session, errors = session_for(args, select=only if only else None)
    try:
        outcomes = verified_outcomes(args, session) if args.verify_run else run_files(args, "fix", session.context)
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    changed = left = 0
    writes: list[tuple[Path, str, int]] = []
    for outcome in outcomes:
        path, result = outcome.path, outcome.payload
        if result is None or "crash" in result or "error" in result:
            why = (outcome.error if result is None else result["error"] if "error" in result
                   else f"{path}: internal error ({result['crash']}); please report it with the file")
            print(f"error: {why}", file=sys.stderr)
            errors = True
            continue
        for line in result["skipped"]:
            print(line, file=sys.stderr)
        left += len(result["skipped"])
        new_source = result["new_source"]
        if new_source is None:
            continue
        changed += 1
        if args.diff:
            source = path.read_bytes().decode("utf-8")
            sys.stdout.writelines(difflib.unified_diff(
                source.splitlines(keepends=True), new_source.splitlines(keepends=True),
                fromfile=f"a/{path}", tofile=f"b/{path}"))
        else:
            writes.append((path, new_source, result["applied"]))
    if errors and args.verify_run and writes:
        print(f"error: nothing written (--verify-run): fix the errors above first ({len(writes)} file"
              f"{'s' if len(writes) != 1 else ''} had verified fixes)", file=sys.stderr)
        return 2
    for path, new_source, n in writes:
        path.write_bytes(new_source.encode("utf-8"))
        print(f"{path}: fixed {n} site{'s' if n != 1 else ''}", file=sys.stderr)
    if errors:
        return 2
    if args.diff:
        return 1 if changed else 0
    return 1 if left else 0


def verified_outcomes(args: argparse.Namespace, session: Session) -> list[FileOutcome]:
    """`fix --verify-run`'s result for every file, in this process, one after the other: each file's fixes
    run by `adopter.verify.gate` (the user's code in a subprocess), those that disagree withdrawn."""
    from adopter.commands._common import python_files, read_source
    from adopter.commands.fanout import FileOutcome
    from adopter.commands.filework import fix_payload
    from adopter.verify.gate import verified_fix
    from adopter.verify.runner import Options, RunFailed

    options = Options(timeout=args.timeout or 300.0, repeats=0, factory=args.factory, inputs=args.inputs, python=args.python)
    outcomes: list[FileOutcome] = []
    for path, missing in python_files(args.paths):
        source, why = (None, missing) if missing else read_source(path)
        if source is None:
            outcomes.append(FileOutcome(path, error=why))
            continue
        try:
            gated = verified_fix(session, source, str(path), options)
        except RunFailed as exc:
            outcomes.append(FileOutcome(path, error=f"{exc}; nothing was written"))
            continue
        if gated.ran:
            print(f"{path}: ran {gated.ran} fix{'es' if gated.ran != 1 else ''} against the original, "
                  f"{gated.withdrawn} withdrawn", file=sys.stderr)
        outcomes.append(FileOutcome(path, payload=fix_payload(str(path), gated.fix)))
    return outcomes
