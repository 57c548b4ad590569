"""Differential fuzzing of the two ways a text is analysed: the server's and `adopter check`'s, broken
text included.

The server path is the one the language server drives: one `OpenText` per document, each edit applied
as tree-sitter edit arguments (`OpenText.apply`, as `lsp/documents.py` does, several edits before one
analysis when they queue up) or the whole text replaced (`OpenText.update`), then `Session.update`
(incremental re-parse, per-unit analysis and matching caches). The CLI path is `adopter check`'s per-file
work, `commands.filework.check_file`, on a session of its own (a fresh analysis of the text). After every
step both give a payload (whether the text parses, every problem rendered, every finding as its JSON
record with its planned `fixable`), and the two must be equal.

Edits are drawn on real model files (transformers 4.35 modeling files and `examples/`) and are meant to
break the text about half of the time, the way typing does: unmatched and unclosed brackets, half-typed
lines (`def f(self, x`, `return self.`), a letter at column 0 inside a class, stray indentation,
unterminated strings and docstrings, deleted and duplicated lines and blocks, undo, and going back to
the last text that parsed. A text Python's parser rejects is compared like any other.

    PYTHONPATH=$PWD/server .venv/bin/python bench/differential_fuzz.py [--edits 10000] [--seed 0]
        [--files 12] [--json OUT] [--release-rate 0.3]

Prints the number of edits, how many states did not parse, and the divergences (exit 1 if any).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import random
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

BREAKERS = ["(", ")", "[", "]", "{", "}", ":", ",", '"', "'", '"""', "\\", "x", " ", "    ", "\t", "\n", "def ",
            "class ", "@", ".", "=", "#", "é😀"]
HALF_LINES = ["def f(self, x", "return self.", "x = [1, 2", "if x", "class Half(nn.Module)", "    )", "]",
              "self.dense = nn.Linear(", "else:", '"""unterminated', "h = torch.matmul(q, k.transpose(-1, -2)",
              "z", "return", "@property", "lambda:", "    pass"]


@dataclass
class Stats:
    edits: int = 0
    analyses: int = 0  # compared states (several edits may go into one analysis)
    unparseable: int = 0  # compared states Python's parser rejects
    kinds: dict[str, int] = field(default_factory=dict)
    divergences: list[str] = field(default_factory=list)


def _byte_len(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))


def _point(text: str, offset: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset), _byte_len(text[start:offset])


def python_accepts(text: str) -> bool:
    """Python's own parser as the judge of "parses" (it runs nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for half-typed literals
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            return False
    return True


class Differential:
    """One server-side session and one CLI-side session; `compare` after each step."""

    def __init__(self) -> None:
        from adopter.session import Session, load_context

        context = load_context()
        self.server = Session(context)
        self.cli = Session(context)
        self.stats = Stats()

    def open(self, text: str, path: str) -> Any:
        from adopter.session import OpenText

        return OpenText(text, path)

    def apply(self, doc: Any, a: int, b: int, new: str) -> None:
        """One ranged change, as the server hands it to the document (`OpenText.apply`)."""
        text = doc.text
        updated = text[:a] + new + text[b:]
        start = _byte_len(text[:a])
        doc.apply(start, start + _byte_len(text[a:b]), start + _byte_len(new), _point(text, a), _point(text, b),
                  _point(updated, a + len(new)), updated)

    def server_payload(self, doc: Any) -> dict[str, Any]:
        from adopter.commands.filework import finding_record

        analysed, _ = self.server.update(doc)
        return _payload(analysed, self.server, finding_record)

    def cli_payload(self, text: str, path: str) -> dict[str, Any]:
        from adopter.commands.filework import Item, check_file

        return check_file(self.cli, Item(0, path, path, len(text), text=text))

    def compare(self, doc: Any, kind: str) -> str | None:
        """None when both paths agree on the document's current text, else what differs."""
        self.stats.analyses += 1
        self.stats.kinds[kind] = self.stats.kinds.get(kind, 0) + 1
        if not python_accepts(doc.text):
            self.stats.unparseable += 1
        try:
            live = self.server_payload(doc)
        except Exception as exc:
            return f"the server path raised {type(exc).__name__}: {exc}"
        try:
            fresh = self.cli_payload(doc.text, doc.path)
        except Exception as exc:
            return f"the CLI path raised {type(exc).__name__}: {exc}"
        crashed = [text for _, text in live["problems"] + fresh["problems"] if "internal-error" in text]
        if crashed:
            return f"an internal error (a crash caught): {crashed[0]}"
        if live == fresh:
            return None
        return _difference(live, fresh)


def _payload(analysed: Any, session: Any, record: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """`check_file`'s payload built from the server's `Analysed` (the same fields, the same order)."""
    findings = []
    for f in analysed.findings:
        decision = session.planned(analysed, f)
        findings.append(record(f, decision.fixable, decision.reason))
    return {"parses": analysed.parses,
            "problems": [[p.severity.value == "error", p.render()] for p in analysed.problems],
            "findings": findings}


def _difference(live: dict[str, Any], fresh: dict[str, Any]) -> str:
    parts = []
    if live["parses"] != fresh["parses"]:
        parts.append(f"parses: server {live['parses']}, check {fresh['parses']}")
    if live["problems"] != fresh["problems"]:
        parts.append(f"problems: server {[p for _, p in live['problems']][:3]}, check "
                     f"{[p for _, p in fresh['problems']][:3]}")
    if live["findings"] != fresh["findings"]:
        key = [(f["rule"], f["range"]["start"]["line"], f["scope"]) for f in live["findings"]]
        other = [(f["rule"], f["range"]["start"]["line"], f["scope"]) for f in fresh["findings"]]
        parts.append(f"findings: server {len(live['findings'])}, check {len(fresh['findings'])}; only server "
                     f"{sorted(set(key) - set(other))[:3]}, only check {sorted(set(other) - set(key))[:3]}"
                     if key != other else "findings: same sites, other details")
    return "; ".join(parts)


class EditMaker:
    """Random edits that break the text about half of the time (see the module docstring)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def edit(self, text: str, valid: str) -> tuple[str, list[tuple[int, int, str]] | str]:
        """(kind, ranged changes applied one after another, or a whole new text)."""
        rng = self.rng
        lines = text.split("\n")
        starts = [0]
        for line in lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        n = len(lines)
        i = rng.randrange(n)
        line = lines[i]
        kinds = ["char", "delete-chars", "half-line", "col0", "indent", "string", "lines", "duplicate", "block",
                 "valid", "multi"]
        kind = rng.choices(kinds, [25, 12, 12, 6, 8, 6, 8, 5, 4, 8, 6])[0]
        at = starts[i] + rng.randint(0, len(line))
        if kind == "char":
            return kind, [(at, at, rng.choice(BREAKERS))]
        if kind == "delete-chars":
            return kind, [(at, min(starts[i] + len(line), at + rng.randint(1, 4)), "")]
        if kind == "half-line":
            indent = line[: len(line) - len(line.lstrip())]
            return kind, [(starts[i], starts[i], indent + rng.choice(HALF_LINES) + "\n")]
        if kind == "col0":  # a letter or a half-typed line at column 0, inside a class or a method
            return kind, [(starts[i], starts[i], rng.choice(["z\n", "x = 1\n", "def f(\n", "foo\n", "class X:\n"]))]
        if kind == "indent":  # stray indentation, or a line dedented
            if line.startswith(" ") and rng.random() < 0.5:
                return kind, [(starts[i], starts[i] + rng.randint(1, min(4, len(line) - len(line.lstrip()))), "")]
            return kind, [(starts[i], starts[i], rng.choice([" ", "  ", "    ", "\t"]))]
        if kind == "string":  # an unterminated string or docstring, or one closed again
            return kind, [(at, at, rng.choice(['"""', "'''", '"', "'", 'f"{x', 'r"""\n']))]
        if kind == "lines":
            j = min(n, i + rng.randint(1, 6))
            end = starts[j] if j < n else len(text)
            return kind, [(starts[i], end, "")]
        if kind == "duplicate":
            j = min(n, i + rng.randint(1, 8))
            end = starts[j] if j < n else len(text)
            piece = text[starts[i] : end]
            k = rng.randrange(n)
            return kind, [(starts[k], starts[k], piece if piece.endswith("\n") else piece + "\n")]
        if kind == "block":  # a method or class cut at a random line: the part that remains is half a block
            j = min(n, i + rng.randint(5, 40))
            end = starts[j] if j < n else len(text)
            cut = starts[i] + rng.randint(0, len(line))
            return kind, [(cut, end, "")]
        if kind == "valid":  # back to the last text Python accepted (as an undo would)
            return kind, valid
        changes = []  # several changes in one step (they queue while the analysis thread is busy)
        size = len(text)
        for _ in range(rng.randint(2, 4)):
            a = rng.randint(0, size)
            changes.append((a, a, rng.choice(BREAKERS)))
            size += len(changes[-1][2])
        return kind, changes


def corpus(count: int, seed: int) -> list[tuple[str, str]]:
    """Small and middle-sized real files: the examples, then 4.35 modeling files by seed."""
    files = [(p.name, p.read_text()) for p in sorted((REPO / "examples").glob("*.py"))]
    try:
        from adopter.corpus import modeling_files
    except ImportError:
        return files[:count]
    real = [f for f in modeling_files() if 8_000 < len(f.text) < 45_000]
    random.Random(seed).shuffle(real)
    files += [(f.name, f.text) for f in real]
    return files[:count]


def run(files: list[tuple[str, str]], edits: int, seed: int, *, log: Callable[[str], None] = lambda s: None,
        root: Path | None = None, release_rate: float = 0.0) -> Stats:
    """`edits` random edits spread over `files`; compared after every step. With `release_rate`, the document
    is released before that share of the steps (`OpenText.release`: what the server does to the documents
    nobody edits), drawn from a generator of its own, so the edits are those of the same seed without it."""
    rng = random.Random(seed)
    releases = random.Random(seed + 1)
    maker = EditMaker(rng)
    diff = Differential()
    root = root or Path("/nonexistent-adopter-fuzz")
    per_file = max(1, -(-edits // max(1, len(files))))  # rounded up: at least `edits` in all
    for name, original in files:
        path = str(root / name)
        doc = diff.open(original, path)
        valid = original
        problem = diff.compare(doc, "open")
        doc.prepare()  # as the server does once a document is opened (`lsp.documents.Analyses.compute`)
        if problem:
            diff.stats.divergences.append(f"{name} open: {problem}")
        target = diff.stats.edits + per_file
        broken_for = 0
        while diff.stats.edits < target:
            if len(doc.text) < 0.5 * len(original) or len(doc.text) > 2 * len(original) or broken_for > 6:
                kind, change = "restore", (valid if broken_for > 6 else original)
            else:
                kind, change = maker.edit(doc.text, valid)
            before = doc.text
            if release_rate and releases.random() < release_rate:
                doc.release()
            if isinstance(change, str):
                if kind == "restore" and rng.random() < 0.2:
                    doc.reset(change)  # the client closed and reopened the file
                else:
                    doc.update(change)  # one whole-document change: the analysis diffs the texts
                diff.stats.edits += 1
            else:
                for a, b, new in change:
                    a, b = min(a, len(doc.text)), min(b, len(doc.text))
                    diff.apply(doc, a, b, new)
                    diff.stats.edits += 1
            if doc.text == before and kind != "restore":
                continue
            problem = diff.compare(doc, kind)
            if problem:
                message = f"{name} after {kind} (edit {diff.stats.edits}): {problem}"
                diff.stats.divergences.append(message)
                log(message)
                doc.reset(doc.text)  # go on from a fresh document: one divergence is reported once
            if python_accepts(doc.text):
                valid, broken_for = doc.text, 0
            else:
                broken_for += 1
        log(f"{name}: {diff.stats.edits} edits so far, {diff.stats.analyses} states compared "
            f"({diff.stats.unparseable} unparseable), {len(diff.stats.divergences)} divergences")
    return diff.stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--release-rate", type=float, default=0.0,
                        help="release the document before this share of the edits, as the server releases those "
                             "nobody edits (default 0: never)")
    args = parser.parse_args()
    started, cpu = time.time(), time.process_time()
    files = corpus(args.files, args.seed)
    stats = run(files, args.edits, args.seed, log=lambda s: print(f"[{time.time() - started:6.0f}s] {s}", flush=True),
                release_rate=args.release_rate)
    summary = {"files": [n for n, _ in files], "edits": stats.edits, "states_compared": stats.analyses,
               "unparseable_states": stats.unparseable, "divergences": len(stats.divergences),
               "first_divergences": stats.divergences[:10], "kinds": stats.kinds,
               "wall_s": round(time.time() - started), "cpu_s": round(time.process_time() - cpu),
               "load_average": os.getloadavg()[0],
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 1 if stats.divergences else 0


if __name__ == "__main__":
    sys.exit(main())
