"""Differential fuzzing (bench/lsp_fuzz.py) in CI: the live server's diagnostics equal a fresh analysis
of the same text after every step of seeded random edit sequences on real files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import lsp_fuzz  # noqa: E402


@pytest.mark.corpus
def test_quick_fix_applied_as_one_whole_document_change(tmp_path: Path) -> None:
    """Issue 14: GPT-2, the attention fix applied as a whole-document change, then a fresh analysis.

    The server matched each class on its own and skipped the engine's one-finding-per-site reduction,
    so the softmax of `_attn`, inherited by the subclass the fix writes, was published twice.
    """
    from adopter.corpus import modeling_file

    fuzzer = lsp_fuzz.Fuzzer(tmp_path, [], seed=0)
    try:
        doc = fuzzer.open("modeling_gpt2.py", modeling_file("gpt2").text)
        fuzzer.check(doc, "open")
        published = fuzzer.server.diagnostics(doc.uri, doc.version)
        site = next(d for d in published if d["code"] == "f03-gpt2-attention")
        actions = fuzzer.server.request("textDocument/codeAction", {
            "textDocument": {"uri": doc.uri}, "range": site["range"], "context": {"diagnostics": [site]}})
        action = next(a for a in actions if not a.get("disabled") and a["kind"] == "quickfix")
        edit = fuzzer.server.request("codeAction/resolve", action)["edit"]["documentChanges"][0]["edits"]
        new = doc.text
        for a, b, text in sorted(((lsp_fuzz.offset_of(doc.text, e["range"]["start"]),
                                   lsp_fuzz.offset_of(doc.text, e["range"]["end"]), e["newText"]) for e in edit),
                                 reverse=True):
            new = new[:a] + text + new[b:]
        assert new != doc.text
        fuzzer.send(doc, None, whole=new)
        fuzzer.check(doc, "fix-whole")  # raises Divergence on any difference (it did: 7 published, 5 fresh)
    finally:
        fuzzer.server.close()


@pytest.mark.corpus
@pytest.mark.slow
def test_seeded_random_edit_sequences(tmp_path: Path) -> None:
    """A bounded run (well under 3 minutes): every edit kind, CRLF on one file, zero divergences."""
    files = lsp_fuzz.corpus_files(10, seed=0)
    chosen = [files[1], files[4], files[8], files[9]]  # GPT-2, ViT, GPT-Neo (CRLF), CLIP: small and varied
    stats = lsp_fuzz.run(chosen, edits=600, seed=14, root=tmp_path, crlf_every=3)
    assert stats.divergences == []
    assert stats.steps >= 600 and stats.compared >= 200
    kinds = {k.split("-")[0] for k in stats.kinds}
    assert {"char", "lines", "block", "paste", "whole", "multi", "undo", "type", "syntax", "non", "fix"} <= kinds
