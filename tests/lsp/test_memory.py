"""The server keeps parse trees for the most recently opened or edited documents only (issue 22's memory
must-hold); a document whose trees were dropped answers every request as before, and an edit of it
(parsed in full) answers as a fresh document with the same text does."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lsp_session import EXAMPLES, analysed, change, open_doc, start
from lsprotocol import converters, types
from pytest_lsp import LanguageClient, client_capabilities

from adopter.lsp.documents import TREES_KEPT

_CONVERTER = converters.get_converter()


def _capabilities() -> types.ClientCapabilities:
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {"adopterClientCommands": True}  # code lenses
    return capabilities


def _plain(value: Any, uri: str) -> Any:
    """JSON of an answer with the document's uri spelled `URI` (also inside command links), to compare two
    documents' answers."""
    out = _CONVERTER.unstructure(value)

    def swap(v: Any) -> Any:
        if isinstance(v, str):
            return v.replace(uri, "URI").replace(quote(uri), "URI")
        if isinstance(v, list):
            return [swap(x) for x in v]
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        return v

    return swap(out)


async def answers(client: LanguageClient, uri: str, version: int) -> dict[str, Any]:
    """Everything the editor asks about a document: diagnostics, hovers (each diagnostic's start and
    each class line), code lenses, code actions for each diagnostic and the first one resolved."""
    diagnostics = await analysed(client, uri, version)
    doc = types.TextDocumentIdentifier(uri=uri)
    text_lines = client.documents_text[uri].split("\n")  # type: ignore[attr-defined]
    positions = [(d.range.start.line, d.range.start.character) for d in diagnostics]
    positions += [(i, 7) for i, line in enumerate(text_lines) if line.startswith("class ")]
    hovers = [await client.text_document_hover_async(types.HoverParams(text_document=doc,
                                                                       position=types.Position(*p)))
              for p in positions]
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc))
    actions, resolved = [], []
    for d in diagnostics:
        found = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=doc, range=d.range, context=types.CodeActionContext(diagnostics=[d])))
        found = [a for a in found or [] if isinstance(a, types.CodeAction)]
        actions.append(found)
        quick = [a for a in found if a.kind == types.CodeActionKind.QuickFix and not a.disabled]
        if quick:
            resolved.append(await client.code_action_resolve_async(quick[0]))
    return {name: _plain(value, uri) for name, value in (
        ("diagnostics", diagnostics), ("hovers", hovers), ("lenses", lenses), ("actions", actions),
        ("resolved", resolved))}


def _open(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    text = path.read_text(encoding="utf-8") if text is None else text
    uri = open_doc(client, path, text, version=version)
    client.documents_text[uri] = text  # type: ignore[attr-defined]
    return uri


async def test_a_document_whose_trees_were_dropped_answers_as_before_and_as_a_fresh_one(
        client: LanguageClient, tmp_path: Path) -> None:
    for example in EXAMPLES.glob("*.py"):
        shutil.copy(example, tmp_path / example.name)
    client.documents_text = {}  # type: ignore[attr-defined]
    await start(client, tmp_path, capabilities=_capabilities())
    bert = tmp_path / "bert_encoder.py"
    uri = _open(client, bert)
    before = await answers(client, uri, 1)
    assert before["diagnostics"] and before["resolved"] and before["lenses"]  # something to compare
    assert any(before["hovers"])

    others = sorted(p for p in tmp_path.glob("*.py") if p != bert)
    assert len(others) >= TREES_KEPT  # enough documents opened after it to drop its trees
    for path in others:
        other = _open(client, path)
        await analysed(client, other, 1)
    assert await answers(client, uri, 1) == before  # dropped: the same answers

    # An edit of the dropped document parses its whole text (no tree to re-parse from) ...
    text = client.documents_text[uri]  # type: ignore[attr-defined]
    lines = text.split("\n")
    gone = next(i for i, line in enumerate(lines) if line.strip() == "hidden_states = self.dropout(hidden_states)")
    change(client, uri, 2, [((gone, 0), (gone + 1, 0), "")])
    text = "\n".join(lines[:gone] + lines[gone + 1:])
    client.documents_text[uri] = text  # type: ignore[attr-defined]
    edited = await answers(client, uri, 2)
    assert client.reparsed[uri] == "full"  # type: ignore[attr-defined]
    assert edited != before  # the edit removed the dropout-add-LayerNorm site and moved the lines below it
    # ... and answers as a fresh document of the same text does.
    fresh = _open(client, tmp_path / "fresh_copy.py", text, version=2)  # the versions appear in the answers
    assert await answers(client, fresh, 2) == edited

    # Edited again, the document is among the most recent: it kept its trees (an incremental re-parse).
    change(client, uri, 3, [((0, 0), (0, 0), "\n")])
    client.documents_text[uri] = "\n" + text  # type: ignore[attr-defined]
    again = await answers(client, uri, 3)
    assert client.reparsed[uri] == "incremental"  # type: ignore[attr-defined]
    change(client, fresh, 3, [((0, 0), (0, 0), "\n")])
    client.documents_text[fresh] = "\n" + text  # type: ignore[attr-defined]
    assert await answers(client, fresh, 3) == again


def test_only_the_most_recently_opened_or_edited_documents_keep_their_trees(tmp_path: Path) -> None:
    """In-process: `Analyses` releases all but the `TREES_KEPT` most recently touched documents after each
    analysis; an edit makes a document recent again (and another one is released)."""
    from adopter.lsp.documents import Analyses
    from adopter.lsp.pipeline import load_rule_context
    from adopter.lsp.settings import Settings

    analyses = Analyses(lambda: context)
    context = load_rule_context(Settings(), None, None)
    docs = []
    for i in range(TREES_KEPT + 2):
        doc = analyses.open((tmp_path / f"m{i}.py").as_uri(), "python", f"import torch\nx{i} = torch.ones(2)\n", 1)
        doc.snapshot = analyses.compute(doc)
        docs.append(doc)
    assert [d.model.released for d in docs if d.model] == [True] * 2 + [False] * TREES_KEPT
    first = docs[0]
    analyses.change(first.uri, 2, [types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)), text="\n")])
    snapshot = analyses.compute(first)
    assert snapshot.reparsed == "full" and snapshot.version == 2
    assert [d.model.released for d in docs if d.model] == [False, True, True] + [False] * (TREES_KEPT - 1)
    analyses.shutdown()


def test_a_compacted_line_index_locates_and_edits_as_before() -> None:
    """`LineStarts.compact` (a released document's index): the same offsets, and the next change gives the
    same index and text as on an index never compacted."""
    from adopter.lsp.sync import LineStarts, byte_edit

    text = "import torch\r\nclass A:\n    x = 'é😀'\n\n    def f(self):\n        return 1\n"
    plain, compact = LineStarts(text), LineStarts(text)
    compact.compact()
    assert not isinstance(compact.starts, list)
    for line in range(8):
        for col in range(0, 12, 3):
            assert compact.offset(text, line, col) == plain.offset(text, line, col)
    for edit in (((2, 4), (2, 5), "y\nz"), ((0, 0), (1, 0), ""), ((5, 8), (5, 14), "pass")):
        new_plain, e1 = byte_edit(text, *edit, lines=plain)
        new_compact, e2 = byte_edit(text, *edit, lines=compact)
        assert (new_plain, e1, list(plain.starts)) == (new_compact, e2, list(compact.starts))
        plain, compact = LineStarts(new_plain), LineStarts(new_plain)
        compact.compact()
        text = new_plain


def test_opening_a_clean_document_fills_salvages_memo(tmp_path: Path) -> None:
    """In-process: once the open's diagnostics are published, `Analyses.prepare` runs `OpenText.prepare` on the
    analysis thread, so the first keystroke that breaks the text finds the statements it did not touch in
    salvage's memo (`DocumentAnalysis.prepare`)."""
    from adopter.lsp.documents import Analyses
    from adopter.lsp.pipeline import load_rule_context
    from adopter.lsp.settings import Settings

    analyses = Analyses(lambda: context)
    context = load_rule_context(Settings(), None, None)
    text = (EXAMPLES / "bert_encoder.py").read_text(encoding="utf-8")
    doc = analyses.open((tmp_path / "m.py").as_uri(), "python", text, 1)
    doc.snapshot = analyses.compute(doc)
    assert doc.model is not None and doc.model._analysis is not None
    memo = doc.model._analysis._analyser.memo
    assert memo.last_chunks is None  # not on the open's path: the diagnostics go out first
    prepared = analyses.prepare(doc)
    assert prepared is not None
    prepared.result()
    assert analyses.prepare(doc) is None  # once per open
    assert memo.last_chunks is not None and memo.last_chunks[0] == text.encode()
    analyses.shutdown()
