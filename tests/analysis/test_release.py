"""DocumentAnalysis.release: the trees go, the answers stay. A released document gives the same result as
one that kept its trees and as a fresh analysis, through edits (clean and broken texts), whole-text
updates, invalidation and the tree properties; its unit cache survives, so an edit after a release
still re-analyses only what changed."""

from __future__ import annotations

import random
from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis

from .test_incremental import SOURCE, _replace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpt_decoder.py"


def test_release_drops_the_trees_and_keeps_the_result() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    first = doc.result()
    doc.release()
    assert doc.released
    assert doc._tree is None and doc._data is None and doc._analysed is None and doc._previous is None
    # Nothing else holds the text's bytes: the word index and salvage's last text go too.
    assert doc._analyser.read is None and doc._analyser._words is None and doc._analyser.memo.last_chunks is None
    assert doc.result() is first  # unchanged text: the kept result, nothing parsed
    assert doc.released
    assert doc.tree is not None and doc.tree.root_node.end_byte == len(SOURCE.encode())  # parsed on demand
    assert not doc.released
    assert doc.result() is first


def test_an_edit_after_a_release_reanalyses_only_the_edited_class() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    doc.release()
    text = _replace(doc, "torch.relu(x)", "torch.tanh(x)")
    assert not doc.released
    assert doc.result() == analyse(text, "m.py")
    assert doc.reanalysed == ("class C",)  # the unit cache outlived the trees


def test_a_released_document_keeps_no_layout_text_and_its_next_edit_still_carries_the_fingerprints() -> None:
    """The last analysis's layout (what the next run's changed names are found from) held the text's bytes: a
    released document keeps it without them, and gets them back from its text at its next change."""
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    doc.release()
    assert doc._analyser._layout is None  # nothing holds the released text's bytes
    text = _replace(doc, "torch.relu(x)", "torch.tanh(x)")
    assert doc.result() == analyse(text, "m.py")
    assert doc._analyser._changed is not None  # carried: the names that changed were found from the layout
    assert doc.reanalysed == ("class C",)
    doc.release()
    assert doc.result() == analyse(text, "m.py")  # unchanged text: the kept result
    assert doc.tree is not None  # parsed again: the layout gets the same text back
    assert doc._analyser._layout is not None and doc._analyser._layout.data == text.encode()


def test_a_released_document_whose_text_was_masked_drops_its_layout() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    _replace(doc, "return helper(self.fc(x))", "return helper((self.fc(x))")  # broken: masked
    doc.result()
    doc.release()
    assert doc._analyser._layout is None and doc._analyser._layout_released is None
    text = _replace(doc, "return helper((self.fc(x))", "return helper(self.fc(x))")
    assert doc.result() == analyse(text, "m.py")


def test_analysed_text_and_tree_after_a_release() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    text = _replace(doc, "return helper(self.fc(x))", "return helper((self.fc(x))")  # broken: masked
    masked = doc.analysed_text
    broken = doc.result()
    doc.release()
    assert doc.analysed_text == masked
    assert doc.analysed_tree is not None
    assert doc.result() == broken == analyse(text, "m.py")


def test_invalidate_after_a_release_analyses_again() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    doc.release()
    doc.invalidate()
    assert doc.result() == analyse(SOURCE, "m.py")


def test_update_and_binary_text_after_a_release() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    doc.release()
    doc.update(SOURCE)  # the same text: nothing to do, still released
    assert doc.released
    doc.update("x = 1\x00")
    assert [p.code for p in doc.result().problems] == ["binary"]
    doc.release()
    doc.update(SOURCE + "\n# more\n")
    assert doc.result() == analyse(SOURCE + "\n# more\n", "m.py")


def test_random_keystrokes_with_releases_match_a_document_that_kept_its_trees() -> None:
    """Typing and deleting characters in a real model file, the document released at random between
    keystrokes (and between an edit and its result), against a twin that never releases and a fresh
    analysis: the same `ModuleFile` every time, broken texts included."""
    original = EXAMPLE.read_text()
    rng = random.Random(5)
    kept, released = DocumentAnalysis(original, "m.py"), DocumentAnalysis(original, "m.py")
    kept.result()
    released.result()
    text, base = original, original
    releases = broken = 0
    for step in range(150):
        lines = text.split("\n")
        line = rng.randrange(len(lines))
        col = rng.randint(0, len(lines[line]))
        if rng.random() < 0.6 or not lines[line]:
            insert = rng.choice(["(", ")", ":", ",", "x", " ", "\n", "    ", "[", "]", "def ", "."])
            start, end = (line, col), (line, col)
        else:
            start, end, insert = (line, col), (line, min(len(lines[line]), col + rng.randint(1, 3))), ""
        if rng.random() < 0.4:
            released.release()
            releases += 1
        kept.edit(start, end, insert)
        released.edit(start, end, insert)
        if rng.random() < 0.2:
            released.release()  # between the edit and its result: the result parses the text again
            releases += 1
        text = kept.text
        assert released.text == text
        fresh = analyse(text, "m.py")
        assert released.result() == kept.result() == fresh, step
        assert released.analysed_text == kept.analysed_text, step
        if kept.analysed_text != text.encode():
            broken += 1
            if rng.random() < 0.5:  # undo to the last text Python accepted
                kept.update(base)
                released.update(base)
                text = base
                assert released.result() == kept.result() == analyse(base, "m.py"), step
        else:
            base = text
    assert releases > 50 and broken > 10


def test_a_resolver_within_a_parse_budget_gives_the_same_answers(tmp_path: Path) -> None:
    """`ModuleResolver.parsed_budget`: other files' parses beyond the budget are dropped, least recently used
    first, and parsed again when asked: the answers are those of a resolver that keeps everything."""
    from adopter.analysis.crossfile.resolver import ModuleResolver

    (tmp_path / "base.py").write_text("import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (tmp_path / "mid.py").write_text("from base import Base\n\n\nclass Mid(Base):\n    pass\n\n\nclass Plain:\n    pass\n")
    (tmp_path / "top.py").write_text("from mid import Mid, Plain\n\n\nclass Top(Mid):\n    pass\n")
    importer = str(tmp_path / "model.py")
    questions = ["top.Top", "mid.Plain", "mid.Mid", "base.Base", "top.Missing"]
    kept = ModuleResolver(search_paths=[str(tmp_path)])
    bounded = ModuleResolver(search_paths=[str(tmp_path)])
    bounded.parsed_budget = 0  # keep only the file parsed last
    expected = [kept.is_module_class(q, importer) for q in questions]
    assert expected == [True, False, True, True, None]
    assert [bounded.is_module_class(q, importer) for q in questions] == expected
    assert sum(s is not None for _, s in bounded._symbols.values()) == 1
    assert sum(s is not None for _, s in kept._symbols.values()) == 3
    fresh = ModuleResolver(search_paths=[str(tmp_path)])
    fresh.parsed_budget = 0
    assert [fresh.is_module_class(q, importer) for q in reversed(questions)] == expected[::-1]
