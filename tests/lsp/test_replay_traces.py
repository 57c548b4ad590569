"""Fuzz traces that once made the live analysis disagree with a fresh one, replayed through the
server's own document pipeline (in process: the same `Analyses` the server runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from adopter.dsl.types import Span
from adopter.lsp.documents import Analyses
from adopter.lsp.edits import TextChange, apply_changes
from adopter.lsp.pipeline import load_rule_context
from adopter.lsp.settings import Settings
from adopter.session import Session, load_context

DATA = Path(__file__).parent / "data"


def lsp_change(c: dict) -> types.TextDocumentContentChangePartial | types.TextDocumentContentChangeWholeDocument:
    if "range" not in c:
        return types.TextDocumentContentChangeWholeDocument(text=c["text"])
    r = c["range"]
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(**r["start"]), end=types.Position(**r["end"])), text=c["text"])


def sites(findings) -> list[tuple[str, int, int, int, int]]:
    return sorted((f.rule_id, f.span.start_line, f.span.start_col, f.span.end_line, f.span.end_col) for f in findings)


@pytest.mark.corpus
def test_several_changes_in_one_did_change_after_a_syntax_error() -> None:
    """Three changes in one didChange used to reach the analysis as one diffed region spanning all of
    them; masked as a whole while broken, it stayed masked after the undo made the file parse again."""
    from adopter.corpus import modeling_file

    trace = json.loads((DATA / "t5_multi_change_trace.json").read_text(encoding="utf-8"))
    base = modeling_file("t5").text.replace("\r\n", "\n").replace("\n", "\r\n")
    opened = apply_changes(base, [TextChange(Span(*c[:4]), c[4]) for c in trace["opened_from_corpus"]])
    context = load_rule_context(Settings(), None)
    analyses = Analyses(lambda: context)
    fresh = Session(load_context())
    try:
        doc = analyses.open("file:///tmp/modeling_t5_crlf.py", "python", opened, 1)
        analyses.compute(doc)
        for version, content in enumerate(trace["changes"], start=2):
            analyses.change(doc.uri, version, [lsp_change(c) for c in content])
            live = analyses.compute(doc)
        assert sites(live.findings) == sites(fresh.analysed(doc.text, doc.path).findings)
    finally:
        analyses.shutdown()


@pytest.mark.corpus
def test_a_class_pasted_into_a_method_is_not_masked() -> None:
    """Found by the fuzzer: a top-level class pasted into `ViTSelfAttention.__init__` ends that class
    (the file parses), but parsed alone the method's region is broken, and the analysis masked the
    pasted lines as half-typed: 4 findings published, 2 fresh."""
    import ast

    from adopter.corpus import modeling_file

    vit, clip = modeling_file("vit").text, modeling_file("clip").text
    node = next(n for n in ast.parse(clip).body if isinstance(n, ast.ClassDef) and n.name == "CLIPTextModelWithProjection")
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    block = "\n".join(clip.split("\n")[first:node.end_lineno]) + "\n"
    line = next(i for i, text in enumerate(vit.split("\n")) if "self.all_head_size =" in text)
    context = load_rule_context(Settings(), None)
    analyses = Analyses(lambda: context)
    try:
        doc = analyses.open("file:///tmp/modeling_vit.py", "python", vit, 1)
        analyses.compute(doc)
        analyses.change(doc.uri, 2, [lsp_change({"range": {"start": {"line": line, "character": 0},
                                                            "end": {"line": line, "character": 0}}, "text": block})])
        live = analyses.compute(doc)
        ast.parse(doc.text)  # the pasted file is valid Python
        assert sites(live.findings) == sites(Session(load_context()).analysed(doc.text, doc.path).findings)
    finally:
        analyses.shutdown()
