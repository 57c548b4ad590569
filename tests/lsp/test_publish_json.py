"""Diagnostics are published as JSON text built without lsprotocol's converter (`adopter.lsp.publish`):
the same JSON pygls would send for lsprotocol's types, and no cattrs work per keystroke."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter

from adopter.dsl.types import Span
from adopter.lsp.app import build_server
from adopter.lsp.convert import LspIndex, lsp_finding_diagnostic, lsp_problem_diagnostic
from adopter.lsp.pipeline import published_problems
from adopter.lsp.server import AdopterServer
from adopter.lsp.sync import LineStarts
from adopter.lsp.wire import LspIndex as WireIndex
from adopter.lsp.wire import module_bindings, severity_override
from adopter.positions import LspLines

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class Captured:
    """A writer keeping every message the server sends, parsed."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        while data:
            header, _, rest = data.partition(b"\r\n\r\n")
            length = int(header.split(b"\r\n")[0].split(b":")[1])
            self.messages.append(json.loads(rest[:length]))
            data = rest[length:]

    def close(self) -> None:
        pass


def opened(text: str, severity: dict[str, str] | None = None) -> tuple[AdopterServer, Captured, Any]:
    server = build_server()
    captured = Captured()
    server.protocol.set_writer(captured)
    if severity:
        server.settings = type(server.settings)(severity=severity)
    doc = server.analyses.open("file:///w/model.py", "python", text, 1)
    return server, captured, doc


def lsprotocols(server: AdopterServer, doc: Any, snapshot: Any) -> dict[str, Any]:
    """The params pygls would send for the snapshot, built from lsprotocol's types."""
    index = LspIndex(snapshot.text)
    bindings = module_bindings(snapshot.module_file)
    diagnostics = [
        lsp_finding_diagnostic(f, index, doc.uri, bindings, severity_override(server.settings, f.rule_id, f.family))
        for f in snapshot.findings
    ] + [lsp_problem_diagnostic(p, index) for p in published_problems(snapshot, False)]
    params = types.PublishDiagnosticsParams(uri=doc.uri, version=snapshot.version, diagnostics=diagnostics)
    unstructured: dict[str, Any] = get_converter().unstructure(params)
    return unstructured


@pytest.mark.parametrize("name", ["bert_encoder.py", "llama_block.py"])
def test_published_json_is_lsprotocols_and_converts_nothing(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (EXAMPLES / name).read_text(encoding="utf-8") + "\n# é 😀\nclass Broken(nn.Module):\n    def f(self, x:\n"
    server, captured, doc = opened(text, {"f01": "hint"})
    snapshot = server.analyses.compute(doc)
    assert snapshot.findings and snapshot.module_file is not None and snapshot.module_file.problems
    expected = lsprotocols(server, doc, snapshot)
    calls: list[object] = []  # what pygls turns into JSON through lsprotocol's converter
    original = server.protocol._serialize_message
    monkeypatch.setattr(server.protocol, "_serialize_message", lambda obj: calls.append(obj) or original(obj))
    server.publisher.publish(doc, snapshot)
    server.publisher.publish(doc, snapshot)  # again: the findings' JSON text is kept
    # As a notebook cell whose own lines end before the last finding's end: the rest is not published.
    cut = max(d["range"]["end"]["line"] for d in expected["diagnostics"])
    doc.own_lines = cut
    server.publisher.publish(doc, snapshot)
    assert calls == []  # no lsprotocol object turned into JSON on a keystroke's path
    assert captured.writes == 3  # the diagnostics and the analysis notice of a run in one write
    published = [m for m in captured.messages if m["method"] == "textDocument/publishDiagnostics"]
    assert len(published) == 3 and all(m["jsonrpc"] == "2.0" for m in published)
    assert published[0]["params"] == expected == published[1]["params"]
    own = [d for d in expected["diagnostics"] if d["range"]["end"]["line"] < cut]
    assert published[2]["params"] == {**expected, "diagnostics": own} and 0 < len(own) < len(expected["diagnostics"])
    done = [m["params"] for m in captured.messages if m["method"] == "adopter/analysisDone"]
    assert [(d["uri"], d["version"], d["reparse"]) for d in done] == [(doc.uri, 1, snapshot.reparsed)] * 3



def test_problems_are_clamped_without_splitting_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken keystroke publishes a problem, cut to the text through the document's line index (no split of
    the whole text into lines), at the same place a split gives."""
    text = (EXAMPLES / "bert_encoder.py").read_text(encoding="utf-8") + "\nclass Broken(nn.Module):\n    def f(self, x:\n"
    server, captured, doc = opened(text)
    snapshot = server.analyses.compute(doc)
    assert snapshot.module_file is not None and snapshot.module_file.problems
    expected = lsprotocols(server, doc, snapshot)
    splits: list[str] = []
    original = LspLines.rows
    monkeypatch.setattr(LspLines, "rows", lambda self: splits.append("rows") or original(self))
    server.publisher.publish(doc, snapshot)
    assert splits == []
    assert captured.messages[0]["params"] == expected


@pytest.mark.parametrize("text", ["", "a", "a\n", "ab\ncd\n\nxyz", "\n\n", "x = 1\ny = (\n"])
def test_clamp_with_line_starts_is_clamp_by_lines(text: str) -> None:
    starts = LineStarts(text).starts
    lines = text.split("\n")
    spans = [Span(a, b, c, d) for a in range(-1, len(lines) + 2) for b in (-1, 0, 1, 2, 5)
             for c in range(a, len(lines) + 2) for d in (0, 1, 3, 9)]
    for span in spans:
        assert WireIndex(text, starts).clamp(span) == WireIndex(text).clamp(span), span
