"""The early start (`adopter.lsp.early`): `initialize` answered and the first diagnostics published before
pygls and lsprotocol are imported, then the full server reads the same bytes and takes over.

Each test drives a real `adopter lsp` over pipes, with its own cache folder."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from lsp_session import EXAMPLES, SNIPPET

from adopter.lsp import wire
from adopter.lsp.convert import LspIndex, lsp_finding_diagnostic, lsp_problem_diagnostic

TIMEOUT_S = 120.0  # the machine is shared: behaviour, never speed
CAPABILITIES = {
    "textDocument": {"publishDiagnostics": {"versionSupport": True}, "synchronization": {"didSave": True}},
    "workspace": {"configuration": False},
    "general": {"positionEncodings": ["utf-8", "utf-16"]},
}
NON_ASCII = SNIPPET.replace("import torch", "import torch  # é, 😀, 中文", 1)
BROKEN = SNIPPET + "\nclass Broken(nn.Module):\n    def forward(self, x:\n        return self.lin(\n"


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Server:
    """`adopter lsp` over pipes; its messages read on a thread."""

    def __init__(self, cache: Path, **env: str) -> None:
        environment = {**os.environ, "ADOPTER_CACHE_DIR": str(cache), **env}
        self.process = subprocess.Popen([sys.executable, "-m", "adopter", "lsp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        stdout = self.process.stdout
        while True:
            length = 0
            while (line := stdout.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            self.messages.put(json.loads(stdout.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame(message))
        self.process.stdin.flush()

    def until(self, predicate: Any) -> list[dict[str, Any]]:
        """Every message up to and including the first that satisfies `predicate`."""
        seen = []
        while True:
            message = self.messages.get(timeout=TIMEOUT_S)
            seen.append(message)
            if predicate(message):
                return seen

    def stop(self) -> list[dict[str, Any]]:
        """Shut down; the messages that were still unread."""
        self.send({"jsonrpc": "2.0", "id": 99, "method": "shutdown"})
        rest = self.until(lambda m: m.get("id") == 99 and "method" not in m)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        assert self.process.wait(TIMEOUT_S) == 0
        return rest


def opening(root: Path, path: Path, text: str) -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": root.as_uri(), "capabilities": CAPABILITIES,
            "initializationOptions": {"debounce_ms": 0},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}}},
    ]


def start_and_open(cache: Path, root: Path, text: str, **env: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(what the server sent until the full server's analysis of the opened file was announced, the rest)."""
    path = root / "model.py"
    server = Server(cache, **env)
    for message in opening(root, path, text):
        server.send(message)
    seen = server.until(lambda m: m.get("method") == "adopter/analysisDone")
    return seen, server.stop()


def answers(messages: list[dict[str, Any]], request_id: int) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("id") == request_id and "method" not in m]


def published(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"] for m in messages if m.get("method") == "textDocument/publishDiagnostics"]


@pytest.mark.parametrize("text", [SNIPPET, NON_ASCII, BROKEN], ids=["snippet", "non-ascii", "broken"])
def test_the_early_start_sends_what_the_full_server_sends(tmp_path: Path, text: str) -> None:
    cache, root = tmp_path / "cache", tmp_path / "ws"
    root.mkdir()
    first, rest = start_and_open(cache, root, text)  # no kept answer yet: pygls answers, and it is kept
    (answer,) = answers(first + rest, 1)
    kept = list((cache / "lsp").glob("initialize-*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == answer["result"]
    assert answer["result"]["capabilities"]["positionEncoding"] == "utf-16"
    (full,) = published(first)

    first, rest = start_and_open(cache, root, text)  # the early start answers; pygls' answer is dropped
    assert answers(first + rest, 1) == [answer]
    early, again = published(first)  # the early start's, then the full server's own
    assert early == again == full
    assert full["diagnostics"] and full["version"] == 1


def test_without_the_early_start_nothing_changes(tmp_path: Path) -> None:
    cache, root = tmp_path / "cache", tmp_path / "ws"
    root.mkdir()
    start_and_open(cache, root, SNIPPET)
    first, rest = start_and_open(cache, root, SNIPPET, ADOPTER_LSP_EARLY="0")
    assert len(answers(first + rest, 1)) == 1 and len(published(first)) == 1


def test_other_openings_go_to_the_full_server(tmp_path: Path) -> None:
    """A request before the first didOpen: the early start stops, the full server answers all of it."""
    cache, root = tmp_path / "cache", tmp_path / "ws"
    root.mkdir()
    start_and_open(cache, root, SNIPPET)
    server = Server(cache)
    messages = opening(root, root / "model.py", SNIPPET)
    hover = {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": (root / "model.py").as_uri()}, "position": {"line": 0, "character": 0}}}
    for message in [*messages[:2], hover, *messages[2:]]:
        server.send(message)
    seen = server.until(lambda m: m.get("id") == 2 and "method" not in m)  # the hover's answer
    if not any(m.get("method") == "adopter/analysisDone" for m in seen):
        seen += server.until(lambda m: m.get("method") == "adopter/analysisDone")
    seen += server.stop()
    assert len(answers(seen, 1)) == 1 and len(answers(seen, 2)) == 1
    assert len(published(seen)) == 1  # only the full server's


def test_the_first_diagnostics_need_neither_pygls_nor_lsprotocol(tmp_path: Path) -> None:
    cache, root = tmp_path / "cache", tmp_path / "ws"
    root.mkdir()
    start_and_open(cache, root, SNIPPET)  # keeps the initialize answer
    code = ("import json, sys\nfrom adopter.lsp import early\n"
            "h = early.serve_first(sys.stdin.buffer, sys.stdout.buffer)\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'cattrs.preconf'))\n"
            "sys.stderr.write(json.dumps({'published': h.published, 'loaded': loaded}))\n")
    stdin = b"".join(frame(m) for m in opening(root, root / "model.py", SNIPPET))
    env = {**os.environ, "ADOPTER_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, env=env,
                          timeout=TIMEOUT_S, check=True)
    report = json.loads(proc.stderr)
    assert report["published"] == [(root / "model.py").as_uri()]
    assert report["loaded"] == ["pygls", "pygls.uris"]  # the two small modules for file URIs
    assert b"textDocument/publishDiagnostics" in proc.stdout



def test_adopter_lsp_publishes_before_asyncio_cattrs_and_the_toml_reader_load(tmp_path: Path) -> None:
    """`adopter lsp` itself (the command, not the early start alone): the event loop, the settings'
    converter and the TOML reader (no pyproject.toml here) are loaded after the first diagnostics."""
    cache, root = tmp_path / "cache", tmp_path / "ws"
    root.mkdir()
    start_and_open(cache, root, SNIPPET)  # keeps the initialize answer
    code = ("import json, os, sys\nfrom adopter.cli import main\nfrom adopter.lsp import early\n"
            "serve = early.serve_first\n"
            "def first(stdin, stdout):\n"
            "    h = serve(stdin, stdout)\n"
            "    loaded = sorted(m for m in ('asyncio', 'cattrs', 'attrs', 'tomllib', 'lsprotocol', 'difflib')\n"
            "              if m in sys.modules)\n"
            "    sys.stderr.write(json.dumps({'published': h.published, 'loaded': loaded}))\n"
            "    sys.stderr.flush()\n"
            "    os._exit(0)\n"
            "early.serve_first = first\n"
            "main(['lsp'])\n")
    stdin = b"".join(frame(m) for m in opening(root, root / "model.py", SNIPPET))
    env = {**os.environ, "ADOPTER_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, env=env,
                          timeout=TIMEOUT_S, check=True)
    report = json.loads(proc.stderr.decode().splitlines()[-1])
    assert report == {"published": [(root / "model.py").as_uri()], "loaded": []}
    assert b"textDocument/publishDiagnostics" in proc.stdout



def test_the_analysis_is_ready_before_the_document_arrives(tmp_path: Path) -> None:
    """Right after answering `initialize` the early start imports the analysis and loads the rules (while
    the client prepares its `didOpen`): with no document sent at all, they are loaded and nothing is
    published."""
    cache, root = tmp_path / "cache", tmp_path / "ws"
    root.mkdir()
    start_and_open(cache, root, SNIPPET)  # keeps the initialize answer
    code = ("import json, sys\nfrom adopter.lsp import early\n"
            "h = early.serve_first(sys.stdin.buffer, sys.stdout.buffer)\n"
            "loaded = [m in sys.modules for m in ('adopter.analysis.analyser', 'adopter.engine.sites')]\n"
            "sys.stderr.write(json.dumps({'published': h.published, 'loaded': loaded}))\n")
    stdin = b"".join(frame(m) for m in opening(root, root / "model.py", SNIPPET)[:2])  # no didOpen
    env = {**os.environ, "ADOPTER_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, env=env,
                          timeout=TIMEOUT_S, check=True)
    assert json.loads(proc.stderr) == {"published": [], "loaded": [True, True]}
    assert b'"id": 1' in proc.stdout and b"publishDiagnostics" not in proc.stdout  # answered, nothing published


@pytest.mark.parametrize("name", ["bert_encoder.py", "gpt_decoder.py", "llama_block.py", "resnet_block.py"])
def test_wire_json_is_lsprotocols(name: str) -> None:
    """Every diagnostic of real model files: the JSON built without lsprotocol is lsprotocol's."""
    from lsprotocol.converters import get_converter

    from adopter.session import OpenText, Session, load_context

    text = (EXAMPLES / name).read_text(encoding="utf-8") + "\n# é 😀\nclass Broken(nn.Module):\n    def f(self, x:\n"
    session = Session(load_context(target="cuda"))
    analysed, _ = session.update(OpenText(text, str(EXAMPLES / name)))
    index, plain = LspIndex(text), wire.LspIndex(text)
    bindings = wire.module_bindings(analysed.module_file)
    converter = get_converter()
    assert analysed.findings and analysed.module_file.problems
    for f in analysed.findings:
        for severity in (None, "hint"):
            typed = converter.unstructure(lsp_finding_diagnostic(f, index, "file:///m.py", bindings, severity))
            assert typed == wire.finding_diagnostic(f, plain, "file:///m.py", bindings, severity)
    for p in analysed.module_file.problems:
        assert converter.unstructure(lsp_problem_diagnostic(p, index)) == wire.problem_diagnostic(p, plain)


def test_initialize_params_pygls_may_reject_are_left_to_it(tmp_path: Path) -> None:
    """A kept answer is not sent for params of the wrong type: pygls answers, once."""
    cache, root = tmp_path / "cache", tmp_path / "ws"
    root.mkdir()
    start_and_open(cache, root, SNIPPET)  # keeps the answer for these capabilities
    server = Server(cache)
    initialize, *_ = opening(root, root / "model.py", SNIPPET)
    initialize["params"]["rootUri"] = 5
    server.send(initialize)
    seen = server.until(lambda m: m.get("id") == 1 and "method" not in m)
    server.send({"jsonrpc": "2.0", "method": "exit"})
    server.process.wait(TIMEOUT_S)
    while not server.messages.empty():
        seen.append(server.messages.get())
    assert len(answers(seen, 1)) == 1
