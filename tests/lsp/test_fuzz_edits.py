"""Random edit sequences on real files: the server never falls over, and the diagnostics after the
edits equal those of a fresh open of the final text (incremental analysis == full analysis), text Python
rejects included."""

from __future__ import annotations

import itertools
from hashlib import sha256
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_session import EXAMPLES, analysed, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

from adopter.lsp.edits import split_lines

SNIPPETS = [
    "x",
    "\n",
    "    ",
    "self.",
    "(",
    ")",
    ":",
    "def f(self, x:",
    "return self.dropout(",
    "        h = self.LayerNorm(h + x)\n",
    "class Half(nn.Module):\n    def forward(self, x):\n        return self.",
    "torch.matmul(q, k.transpose(-1, -2))",
    '"""',
    "é😀",
]
_counter = itertools.count()


def lsp_position(text: str, offset: int) -> types.Position:
    lines = split_lines(text[:offset])
    if not lines or lines[-1].endswith(("\n", "\r")):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=len(lines) - 1, character=sum(2 if ord(c) > 0xFFFF else 1 for c in lines[-1]))


def key(d: types.Diagnostic) -> tuple[object, ...]:
    return (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.message)


async def run_sequence(client: LanguageClient, original: str, data: st.DataObject, folder: Path, steps: int) -> None:
    text = original
    undo: list[tuple[int, int, str]] = []  # (start, end, text) restoring the previous state
    uri = open_doc(client, folder / f"edited_{next(_counter)}.py", text)
    version = 1
    for _ in range(data.draw(st.integers(1, steps), label="steps")):
        op = data.draw(st.sampled_from(["insert", "delete", "replace", "undo"]), label="op")
        if op == "undo" and undo:
            a, b, new = undo.pop()
        else:
            a = data.draw(st.integers(0, len(text)), label="start")
            b = a if op == "insert" else min(len(text), a + data.draw(st.integers(0, 200), label="length"))
            new = "" if op == "delete" else data.draw(st.sampled_from(SNIPPETS), label="text")
            undo.append((a, a + len(new), text[a:b]))
        if 0 < a < len(text) and text[a - 1 : a + 1] == "\r\n":
            a -= 1
        change = types.TextDocumentContentChangePartial(
            range=types.Range(start=lsp_position(text, a), end=lsp_position(text, b)), text=new
        )
        text = text[:a] + new + text[b:]
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
        ))
    edited = sorted(map(key, await analysed(client, uri, version)))
    held = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="adopter.debugInfo", arguments=[{"uri": uri}])
    )
    assert held["document"] == {"version": version, "sha256": sha256(text.encode()).hexdigest(), "length": len(text)}
    fresh_uri = open_doc(client, folder / f"fresh_{next(_counter)}.py", text)
    fresh = sorted(map(key, await analysed(client, fresh_uri, 1)))
    for done in (uri, fresh_uri):
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=done)))
    # Broken or not, the edited document reads as a fresh open of its text does (adopter.analysis.parse.salvage):
    # the same findings and the same syntax errors.
    assert edited == fresh


FILES = sorted(EXAMPLES.glob("*.py"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_random_edits_on_example_models(client: LanguageClient, tmp_path: Path, data: st.DataObject) -> None:
    if client.capabilities is None:
        await start(client, tmp_path)
    path = data.draw(st.sampled_from(FILES), label="file")
    await run_sequence(client, path.read_text(encoding="utf-8"), data, tmp_path, steps=8)


@pytest.mark.corpus
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
async def test_random_edits_on_a_transformers_file(client: LanguageClient, tmp_path: Path, data: st.DataObject) -> None:
    from adopter.corpus import modeling_file

    if client.capabilities is None:
        await start(client, tmp_path)
    await run_sequence(client, modeling_file("bert").text, data, tmp_path, steps=6)
