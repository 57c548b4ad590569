"""Differential fuzzing of the language server: after every edit, the published diagnostics equal a
fresh analysis of the same text.

Drives the real server (`python -m adopter lsp`) over stdio with random edit sequences on real corpus
files and, after each step, compares what it published (rule, range, message, fixable) with
`adopter.session.Session.analysed` of the client's text in this process. Edit kinds: characters typed
or deleted anywhere; lines and whole methods or classes deleted, duplicated or moved; a block pasted
from another file; the whole document replaced; several changes in one `didChange`; every quick fix
the server offers applied (as minimal edits, or as one whole-document change) then undone; a new class
typed line by line; a syntax error typed then removed; CRLF files; non-ASCII text before a finding on
its line; a 20,000-character line; an empty document; close and reopen. It also asserts that the
process never dies, that no range points outside the document, that every publication carries the
latest version, that a quick fix resolved for a stale version carries no edit, and that hover answers
for the current text.

A text Python's parser rejects is compared as well, its syntax errors included: both paths read it
through the same error-tolerant masking (`adopter.analysis.parse.salvage`), whatever edits led there.

    .venv/bin/python bench/lsp_fuzz.py [--files 15] [--edits 10000] [--seed 0] [--json OUT]
"""

from __future__ import annotations

import argparse
import ast
import bisect
import json
import os
import platform
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adopter.positions import LINE_BREAK, lsp_line_starts

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_latency import server_env

TIMEOUT_S = 120.0
SNIPPETS = ["x", "\n", "    ", "self.", "(", ")", ":", "é😀", "return self.dropout(", "torch.matmul(q, k)", '"""', "#"]
NEW_CLASS = [
    "class Typed(nn.Module):",
    "    def __init__(self, config):",
    "        super().__init__()",
    "        self.dense = nn.Linear(config.hidden_size, config.hidden_size)",
    "        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)",
    "        self.dropout = nn.Dropout(config.hidden_dropout_prob)",
    "",
    "    def forward(self, hidden_states, input_tensor):",
    "        hidden_states = self.dense(hidden_states)",
    "        hidden_states = self.dropout(hidden_states)",
    "        hidden_states = self.LayerNorm(hidden_states + input_tensor)",
    "        return hidden_states",
]


SYNTAX_ERROR = "syntax-error"  # the code of a syntax error's diagnostic, compared like a finding


class Divergence(AssertionError):
    """The server and a fresh analysis disagree, or an invariant broke."""


# -- positions ----------------------------------------------------------------------------------------


def utf16_len(s: str) -> int:
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def position(text: str, offset: int) -> dict[str, int]:
    """LSP position (UTF-16) of a str offset. Lines end at \\r\\n, \\n or a lone \\r, as LSP says and as
    the server reads them (`adopter.positions.LINE_BREAK`)."""
    starts = lsp_line_starts(text)
    line = bisect.bisect_right(starts, offset) - 1
    return {"line": line, "character": utf16_len(text[starts[line] : offset])}


def offset_of(text: str, pos: dict[str, int]) -> int:
    """str offset of an LSP position (UTF-16 columns), clamped to its line."""
    starts = lsp_line_starts(text)
    if pos["line"] >= len(starts):
        return len(text)
    start = starts[pos["line"]]
    end = starts[pos["line"] + 1] if pos["line"] + 1 < len(starts) else len(text)
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    units = 0
    i = start
    while i < end and units < pos["character"]:
        units += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    return i


def lsp_lines(text: str) -> list[str]:
    """The LSP lines of `text`, without their line breaks."""
    return LINE_BREAK.split(text)


def safe(text: str, offset: int) -> int:
    """Never split a \\r\\n pair."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


# -- the client -----------------------------------------------------------------------------------------


class Server:
    """A minimal synchronous JSON-RPC client over the server's stdio (a reader thread fills a queue)."""

    def __init__(self, root: Path) -> None:
        self.stderr = root / "server-stderr.log"  # the server's own log: a traceback, if it has one
        with self.stderr.open("wb") as err:
            self.process = subprocess.Popen([sys.executable, "-m", "adopter", "lsp"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=err, cwd=root,
                                            env=server_env())
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.published: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}
        self.messages: list[str] = []
        self._id = 0
        threading.Thread(target=self._read, daemon=True).start()
        caps = {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]},
                                                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                                                    "quickfix", "source.fixAll"]}}}}}
        self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": caps,
                                    "initializationOptions": {"debounce_ms": 0}})
        self.notify("initialized", {})

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length is not None:
                self.inbox.put(json.loads(stream.read(length)))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            stdin.flush()
        except BrokenPipeError as exc:
            raise Divergence(f"the server process died (exit {self.process.poll()})") from exc

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        self._id += 1
        wanted = self._id
        self._send({"id": wanted, "method": method, "params": params})
        reply = self._pump(lambda m: m.get("id") == wanted and "method" not in m)
        if "error" in reply:
            raise Divergence(f"{method} failed: {reply['error']}")
        return reply.get("result")

    def _pump(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                message = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise Divergence(f"no answer from the server in {TIMEOUT_S:.0f} s{self._stack()}") from None
            if message is None:
                raise Divergence(f"the server process died (exit {self.process.wait()})")
            method = message.get("method")
            if method == "textDocument/publishDiagnostics":
                p = message["params"]
                self.published[p["uri"]] = (p.get("version"), p["diagnostics"])
            elif method == "window/showMessage":
                self.messages.append(message["params"]["message"])
            elif method is not None and "id" in message:  # a request from the server
                result: Any = [None] if method == "workspace/configuration" else None
                self._send({"id": message["id"], "result": result})
            if done(message):
                return message

    def _stack(self) -> str:
        """Where the server is stuck: its threads' stacks by py-spy (when installed), into a file."""
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(spy).exists():
            return f" (install py-spy to see where it is stuck; its stderr: {self.stderr})"
        out = self.stderr.with_name("server-stack.txt")
        dump = subprocess.run([spy, "dump", "--pid", str(self.process.pid)], capture_output=True, text=True, check=False)
        out.write_text(dump.stdout + dump.stderr)
        return f" (its stacks in {out}, its stderr in {self.stderr})"

    def diagnostics(self, uri: str, version: int) -> list[dict[str, Any]]:
        """Wait for the diagnostics of `version` (the server publishes only the latest version)."""
        def reached(m: dict[str, Any]) -> bool:
            return m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri \
                and m["params"].get("version") == version
        current = self.published.get(uri)
        if current is None or current[0] != version:
            self._pump(reached)
        return self.published[uri][1]

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()


# -- the oracle -----------------------------------------------------------------------------------------


class Oracle:
    """A fresh analysis of a text, as the diagnostics the server would publish for it."""

    def __init__(self) -> None:
        from adopter.lsp.settings import Settings
        from adopter.session import Session, load_context

        s = Settings()
        self.session = Session(load_context(select=s.select, ignore=s.ignore or None, target=s.target))

    def keys(self, text: str, path: str) -> list[tuple[Any, ...]]:
        from adopter.lsp.convert import LspIndex, lsp_finding_diagnostic, lsp_problem_diagnostic

        index = LspIndex(text)
        out = []
        analysed = self.session.analysed(text, path)
        for f in analysed.findings:
            d = lsp_finding_diagnostic(f, index, "file://x", ())
            r = d.range
            out.append((d.code, r.start.line, r.start.character, r.end.line, r.end.character, d.message,
                        bool(d.data["fixable"]) if isinstance(d.data, dict) else None))
        for p in analysed.problems:
            if p.code == SYNTAX_ERROR:
                d = lsp_problem_diagnostic(p, index)
                r = d.range
                out.append((d.code, r.start.line, r.start.character, r.end.line, r.end.character, d.message, None))
        return sorted(out)


def published_keys(diagnostics: list[dict[str, Any]], rule_ids: set[str]) -> list[tuple[Any, ...]]:
    out = []
    for d in diagnostics:
        if d.get("code") in rule_ids or d.get("code") == SYNTAX_ERROR:
            r = d["range"]
            out.append((d["code"], r["start"]["line"], r["start"]["character"], r["end"]["line"],
                        r["end"]["character"], d["message"], (d.get("data") or {}).get("fixable")))
    return sorted(out)


# -- a document under edit -------------------------------------------------------------------------------


@dataclass
class Doc:
    uri: str
    path: str
    text: str
    original: str = ""
    opened: str = ""  # the text at didOpen, and every didChange's content changes since: a replayable trace
    trace: list[list[dict[str, Any]]] = field(default_factory=list)
    version: int = 1
    undo: list[str] = field(default_factory=list)


@dataclass
class Stats:
    steps: int = 0
    compared: int = 0
    invalid: int = 0
    fixes_applied: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    divergences: list[str] = field(default_factory=list)


class Fuzzer:
    """Random edit sequences on one server; `check` after every step."""

    def __init__(self, root: Path, corpus: list[tuple[str, str]], seed: int, fixes: bool = True) -> None:
        self.root = root
        self.corpus = corpus
        self.rng = random.Random(seed)
        self.server = Server(root)
        self.oracle = Oracle()
        self.rule_ids = {r.id for r in self.oracle.session.rules}
        self.stats = Stats()
        self.fixes = fixes
        self.valid: dict[str, str] = {}  # per uri, the last text Python's parser accepted
        self.broken_steps = 0

    # -- sending ------------------------------------------------------------------------------------

    def open(self, name: str, text: str) -> Doc:
        path = self.root / name
        doc = Doc(path.as_uri(), str(path), text, text, text)
        self.server.notify("textDocument/didOpen", {"textDocument": {
            "uri": doc.uri, "languageId": "python", "version": 1, "text": text}})
        return doc

    def send(self, doc: Doc, changes: list[tuple[int, int, str]] | None, whole: str | None = None) -> None:
        """Ranged changes (offsets into the text as it is when each applies), or one whole-document text."""
        doc.undo.append(doc.text)
        del doc.undo[:-20]
        content: list[dict[str, Any]] = []
        if whole is not None:
            doc.text = whole
            content.append({"text": whole})
        for a, b, new in changes or ():
            if not 0 <= a <= b <= len(doc.text):  # the fuzzer's own mistake: never send a client's bad range
                raise ValueError(f"the fuzzer made a change outside the text: {a}:{b} of {len(doc.text)}")
            a, b = safe(doc.text, a), safe(doc.text, b)
            content.append({"range": {"start": position(doc.text, a), "end": position(doc.text, b)}, "text": new})
            doc.text = doc.text[:a] + new + doc.text[b:]
        doc.version += 1
        doc.trace.append(content)
        self.server.notify("textDocument/didChange", {"textDocument": {"uri": doc.uri, "version": doc.version},
                                                       "contentChanges": content})

    # -- checking -----------------------------------------------------------------------------------

    def check(self, doc: Doc, kind: str) -> None:
        self.stats.steps += 1
        self.stats.kinds[kind] = self.stats.kinds.get(kind, 0) + 1
        if self.server.process.poll() is not None:
            raise Divergence(f"the server process died after {kind}")
        published = self.server.diagnostics(doc.uri, doc.version)
        version = self.server.published[doc.uri][0]
        if version != doc.version:
            self.fail(doc, kind, f"published version {version}, latest {doc.version}")
        lines = lsp_lines(doc.text)
        for d in published:
            for end in ("start", "end"):
                p = d["range"][end]
                if not (0 <= p["line"] < max(1, len(lines)) and 0 <= p["character"] <= utf16_len(
                        lines[p["line"]] if p["line"] < len(lines) else "")):
                    self.fail(doc, kind, f"range outside the document: {d['range']} ({d.get('code')})")
        try:
            ast.parse(doc.text)
        except (SyntaxError, ValueError):
            self.stats.invalid += 1
            self.broken_steps += 1
        else:
            self.valid[doc.uri], self.broken_steps = doc.text, 0
        self.stats.compared += 1
        fresh = self.oracle.keys(doc.text, doc.path)
        live = published_keys(published, self.rule_ids)
        if fresh != live:
            only_live = list((Counter(live) - Counter(fresh)).elements())
            only_fresh = list((Counter(fresh) - Counter(live)).elements())
            self.fail(doc, kind, f"published {len(live)}, fresh {len(fresh)}; only published: {only_live[:4]}; "
                                 f"only fresh: {only_fresh[:4]}")

    def fail(self, doc: Doc, kind: str, what: str) -> None:
        message = f"{Path(doc.path).name} v{doc.version} after {kind}: {what}"
        self.stats.divergences.append(message)
        dump = self.root / f"divergence-{len(self.stats.divergences)}.py"
        dump.write_text(doc.text, encoding="utf-8")
        trace = dump.with_suffix(".json")
        trace.write_text(json.dumps({"path": doc.path, "opened": doc.opened, "changes": doc.trace}))
        raise Divergence(message + f" (text in {dump}, replayable trace in {trace})")

    # -- edit kinds ---------------------------------------------------------------------------------

    def step(self, doc: Doc) -> Doc:
        kinds: list[tuple[str, Callable[[Doc], Doc | None], int]] = [
            ("char", self.e_char, 30), ("lines", self.e_lines, 10), ("block", self.e_block, 8),
            ("paste", self.e_paste, 4), ("whole", self.e_whole, 3), ("multi", self.e_multi, 6),
            ("undo", self.e_undo, 8), ("type-class", self.e_type_class, 2), ("syntax", self.e_syntax, 4),
            ("non-ascii", self.e_non_ascii, 3), ("long-line", self.e_long_line, 1), ("empty", self.e_empty, 1),
            ("reopen", self.e_reopen, 1), ("hover", self.e_hover, 2),
        ]
        if self.fixes:
            kinds += [("fix", self.e_fix, 3), ("stale", self.e_stale, 1)]
        names, funcs, weights = zip(*kinds, strict=True)
        if len(doc.text) < 0.7 * len(doc.original) or len(doc.text) > 1.5 * len(doc.original) + 30_000:
            # Deletions add up: go back to the real file (as minimal edits or one change) to keep testing it.
            self._to(doc, doc.original, whole=self.rng.random() < 0.3)
            self.check(doc, "restore")
            return doc
        if self.broken_steps >= 3 and doc.uri in self.valid:  # back to parsing code, as a user gets there
            self._to(doc, self.valid[doc.uri], whole=self.rng.random() < 0.3)
            self.check(doc, "repair")
            return doc
        i = self.rng.choices(range(len(names)), weights)[0]
        result = funcs[i](doc)
        return result or doc

    def e_char(self, doc: Doc) -> None:
        a = safe(doc.text, self.rng.randint(0, len(doc.text)))
        if self.rng.random() < 0.5:
            typed = self.rng.choice(SNIPPETS)
            self.send(doc, [(a, a, typed)])
            self.check(doc, "char")
            if self.rng.random() < 0.7:  # and deleted again, as when typing then correcting
                self.send(doc, [(a, a + len(typed), "")])
                self.check(doc, "char-deleted")
        else:
            self.send(doc, [(a, min(len(doc.text), a + self.rng.randint(1, 3)), "")])
            self.check(doc, "char")

    def _line_offsets(self, text: str) -> list[int]:
        starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        return starts

    def _move(self, doc: Doc, a: int, b: int, kind: str) -> None:
        """Delete, duplicate or move text[a:b] (whole lines), as incremental changes."""
        block = doc.text[a:b]
        how = self.rng.choice(["delete", "duplicate", "move"])
        starts = self._line_offsets(doc.text)
        if how == "delete":
            self.send(doc, [(a, b, "")])
        elif how == "duplicate":
            self.send(doc, [(b, b, block)])
        else:
            to = self.rng.choice(starts)
            if a <= to <= b:
                to = a
            # One didChange, two changes: remove, then insert (offsets of the text after the removal: a
            # place at or before the block's start does not move; one after its end moves up by its length).
            at = to if to <= a else to - len(block)
            self.send(doc, [(a, b, ""), (at, at, block)])
        self.check(doc, f"{kind}-{how}")

    def e_lines(self, doc: Doc) -> None:
        starts = self._line_offsets(doc.text)
        first = self.rng.randrange(len(starts))
        last = min(len(starts) - 1, first + self.rng.randint(1, 5))
        a, b = starts[first], starts[last] if last > first else len(doc.text)
        self._move(doc, a, b, "lines")

    def _defs(self, text: str) -> list[tuple[int, int]]:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return []
        spans = []
        for node in ast.walk(tree):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                spans.append((first - 1, node.end_lineno))
        return spans

    def e_block(self, doc: Doc) -> None:
        defs = self._defs(doc.text)
        if not defs:
            return self.e_lines(doc)
        first, last = self.rng.choice(defs)
        starts = self._line_offsets(doc.text)
        a = starts[first]
        b = starts[last] if last < len(starts) else len(doc.text)
        self._move(doc, a, b, "block")
        return None

    def e_paste(self, doc: Doc) -> None:
        _, other = self.rng.choice(self.corpus)
        defs = self._defs(other)
        starts = self._line_offsets(other)
        if defs:
            first, last = self.rng.choice(defs)
        else:
            first = self.rng.randrange(len(starts))
            last = min(len(starts) - 1, first + 10)
        block = other[starts[first]: starts[last] if last < len(starts) else len(other)]
        if "\r\n" in doc.text:
            block = block.replace("\r\n", "\n").replace("\n", "\r\n")
        at = self.rng.choice(self._line_offsets(doc.text))
        self.send(doc, [(at, at, block)])
        self.check(doc, "paste")

    def e_whole(self, doc: Doc) -> None:
        text = doc.text
        a = self.rng.randint(0, len(text))
        self.send(doc, None, whole=text[:a] + self.rng.choice(SNIPPETS) + text[a:])
        self.check(doc, "whole")

    def e_multi(self, doc: Doc) -> None:
        changes = []
        length = len(doc.text)
        for _ in range(self.rng.randint(2, 5)):
            a = self.rng.randint(0, length)
            new = self.rng.choice(SNIPPETS) if self.rng.random() < 0.6 else ""
            b = a if new else min(length, a + self.rng.randint(1, 4))
            changes.append((a, b, new))
            length += len(new) - (b - a)
        self.send(doc, changes)
        self.check(doc, "multi")

    def e_undo(self, doc: Doc) -> None:
        if not doc.undo:
            return self.e_char(doc)
        previous = doc.undo.pop()
        self._to(doc, previous, whole=self.rng.random() < 0.3)
        doc.undo.pop()  # the undo itself is not undone
        self.check(doc, "undo")
        return None

    def _to(self, doc: Doc, new: str, whole: bool) -> None:
        """Turn the document into `new`: one whole-document change, or its minimal edits (old positions)."""
        if whole:
            self.send(doc, None, whole=new)
            return
        from adopter.lsp.edits import minimal_changes

        changes = minimal_changes(doc.text, new)
        starts = lsp_line_starts(doc.text)  # its spans count LSP lines (a lone \r ends one)
        # Minimal changes are in old-text positions: send them last first, so each applies as given.
        ranged = [(starts[c.span.start_line] + c.span.start_col, starts[c.span.end_line] + c.span.end_col
                   if c.span.end_line < len(starts) else len(doc.text), c.new_text) for c in changes]
        self.send(doc, sorted(ranged, reverse=True))

    def e_type_class(self, doc: Doc) -> None:
        at = len(doc.text)
        nl = "\r\n" if "\r\n" in doc.text else "\n"
        self.send(doc, [(at, at, nl + nl)])
        self.check(doc, "type-class")
        for line in NEW_CLASS:
            at = len(doc.text)
            self.send(doc, [(at, at, line + nl)])
            self.check(doc, "type-class")

    def e_syntax(self, doc: Doc) -> None:
        before = doc.text
        a = self.rng.choice(self._line_offsets(doc.text))
        bad = self.rng.choice(["(", "def broken(:\n", "    )", "class :", "x = [\n"])
        self.send(doc, [(a, a, bad)])
        self.check(doc, "syntax-typed")
        self.send(doc, [(a, a + len(bad), "")])
        assert doc.text == before
        self.check(doc, "syntax-removed")

    def e_non_ascii(self, doc: Doc) -> None:
        published = self.server.published.get(doc.uri, (None, []))[1]
        findings = [d for d in published if d.get("code") in self.rule_ids]
        if findings:
            line = self.rng.choice(findings)["range"]["start"]["line"]
        else:
            line = self.rng.randrange(doc.text.count("\n") + 1)
        starts = self._line_offsets(doc.text)
        a = starts[min(line, len(starts) - 1)]
        end = doc.text.find("\n", a)
        end = len(doc.text) if end < 0 else end
        indent = len(doc.text[a:end]) - len(doc.text[a:end].lstrip(" "))
        self.send(doc, [(a + indent, a + indent, '_ = "é😀"; ')])
        self.check(doc, "non-ascii")

    def e_long_line(self, doc: Doc) -> None:
        a = self.rng.choice(self._line_offsets(doc.text))
        nl = "\r\n" if "\r\n" in doc.text else "\n"
        self.send(doc, [(a, a, "#" + "x" * 20_000 + nl)])
        self.check(doc, "long-line")

    def e_empty(self, doc: Doc) -> None:
        before = doc.text
        self.send(doc, None, whole="")
        self.check(doc, "empty")
        self.send(doc, None, whole=before)
        self.check(doc, "empty-restored")

    def e_reopen(self, doc: Doc) -> Doc:
        self.server.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
        self.server.published.pop(doc.uri, None)
        again = self.open(Path(doc.path).name, doc.text)
        again.original = doc.original
        self.check(again, "reopen")
        return again

    def e_hover(self, doc: Doc) -> None:
        try:
            classes = [n for n in ast.parse(doc.text).body if isinstance(n, ast.ClassDef)]
        except (SyntaxError, ValueError):
            return
        if not classes:
            return
        node = self.rng.choice(classes)
        line = node.lineno - 1
        col = lsp_lines(doc.text)[line].index(node.name)
        result = self.server.request("textDocument/hover", {"textDocument": {"uri": doc.uri},
                                                            "position": {"line": line, "character": col + 1}})
        known = {a.name for a in self.oracle.session.analysed(doc.text, doc.path).module_file.architectures}
        if node.name in known and (result is None or f"**{node.name}**" not in result["contents"]["value"]):
            self.fail(doc, "hover", f"hover on {node.name} at line {line + 1} does not show it")

    def _actions(self, doc: Doc) -> list[dict[str, Any]]:
        published = self.server.diagnostics(doc.uri, doc.version)
        findings = [d for d in published if d.get("code") in self.rule_ids]
        if not findings:
            return []
        d = self.rng.choice(findings)
        actions = self.server.request("textDocument/codeAction", {
            "textDocument": {"uri": doc.uri}, "range": d["range"],
            "context": {"diagnostics": [d]}}) or []
        return [a for a in actions if not a.get("disabled")]

    def e_fix(self, doc: Doc) -> None:
        try:
            ast.parse(doc.text)
        except (SyntaxError, ValueError):
            return self.e_char(doc)
        actions = self._actions(doc)
        if not actions:
            return None
        action = self.rng.choice(actions)
        resolved = self.server.request("codeAction/resolve", action)
        edit = (resolved or {}).get("edit")
        if not edit:
            return None
        before = doc.text
        change = edit["documentChanges"][0]
        if change["textDocument"]["version"] != doc.version:
            self.fail(doc, "fix", f"edit for version {change['textDocument']['version']}, document at {doc.version}")
        spans = sorted(((offset_of(before, e["range"]["start"]), offset_of(before, e["range"]["end"]), e["newText"])
                        for e in change["edits"]), reverse=True)
        new = before
        for a, b, text in spans:
            new = new[:a] + text + new[b:]
        self.stats.fixes_applied += 1
        if self.rng.random() < 0.5:
            self.send(doc, None, whole=new)
            kind = "fix-whole"
        else:
            self.send(doc, spans)  # last first: each edit applies to the text as the client has it
            kind = "fix-edits"
        if doc.text != new:
            self.fail(doc, kind, "the edits did not reproduce the rewritten text")
        self.check(doc, kind)
        if self.rng.random() < 0.7:  # undo
            self._to(doc, before, whole=self.rng.random() < 0.5)
            self.check(doc, "fix-undone")
        return None

    def e_stale(self, doc: Doc) -> None:
        try:
            ast.parse(doc.text)
        except (SyntaxError, ValueError):
            return None
        actions = self._actions(doc)
        if not actions:
            return None
        action = self.rng.choice(actions)
        self.e_char(doc)  # the document moves on
        resolved = self.server.request("codeAction/resolve", action)
        if resolved and resolved.get("edit"):
            self.fail(doc, "stale", "a quick fix resolved for a stale version carries an edit")
        return None


def corpus_files(count: int, seed: int) -> list[tuple[str, str]]:
    """`count` 4.35 modeling files: the ten of issue 16 first, then others by seed (smaller ones)."""
    from adopter.corpus import modeling_file, modeling_files

    first = ["bert", "gpt2", "t5", "bart", "vit", "llama", "mistral", "opt", "gpt_neo", "clip"]
    chosen = [(f"modeling_{m}.py", modeling_file(m).text) for m in first[:count]]
    if count > len(chosen):
        rest = [f for f in modeling_files() if f.model not in first and len(f.text) < 80_000]
        random.Random(seed).shuffle(rest)
        chosen += [(f.name, f.text) for f in rest[: count - len(chosen)]]
    return chosen


def run(files: list[tuple[str, str]], edits: int, seed: int, root: Path, *, fixes: bool = True,
        crlf_every: int = 3, log: Callable[[str], None] = lambda s: None) -> Stats:
    """`edits` steps spread over `files` (every `crlf_every`-th file with CRLF line ends); raises
    `Divergence` at the first disagreement."""
    fuzzer = Fuzzer(root, files, seed, fixes)
    try:
        per_file = max(1, edits // len(files))
        for n, (name, text) in enumerate(files):
            if crlf_every and n % crlf_every == crlf_every - 1:
                text = text.replace("\r\n", "\n").replace("\n", "\r\n")
                name = name.replace(".py", "_crlf.py")
            doc = fuzzer.open(name, text)
            fuzzer.check(doc, "open")
            target = fuzzer.stats.steps + per_file
            while fuzzer.stats.steps < target:
                try:
                    doc = fuzzer.step(doc)
                except Divergence as exc:
                    if "replayable trace" in str(exc):
                        raise
                    fuzzer.fail(doc, "a step", str(exc))  # a hang or a crash: keep the trace that led there
            fuzzer.server.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})
            log(f"{name}: {fuzzer.stats.steps} steps so far, {fuzzer.stats.compared} compared, "
                f"{fuzzer.stats.fixes_applied} fixes applied")
    finally:
        fuzzer.server.close()
    return fuzzer.stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=15)
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-fixes", action="store_true", help="skip the quick-fix steps (they are slow)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    files = corpus_files(args.files, args.seed)
    started = time.time()
    root = Path(tempfile.mkdtemp(prefix="adopter-fuzz-"))
    error = None
    try:
        stats = run(files, args.edits, args.seed, root, fixes=not args.no_fixes,
                    log=lambda s: print(f"[{time.time() - started:6.0f}s] {s}", flush=True))
    except Divergence as exc:
        error = str(exc)
        stats = Stats(divergences=[error])
    summary = {"files": [n for n, _ in files], "edits": stats.steps, "compared": stats.compared,
               "invalid_python": stats.invalid, "fixes_applied": stats.fixes_applied, "kinds": stats.kinds,
               "divergences": stats.divergences, "seconds": round(time.time() - started),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 1 if error else 0


if __name__ == "__main__":
    raise SystemExit(main())
