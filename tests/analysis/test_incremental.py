"""DocumentAnalysis: edits re-parse incrementally and re-analyse only what changed, with the same
result as a fresh analysis."""

from __future__ import annotations

from adopter.analysis import analyse
from adopter.analysis.incremental import DocumentAnalysis

from .helpers import HEADER, strictly_equal

SOURCE = HEADER + '''
def helper(x):
    return x * 2


class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        return helper(self.fc(x))


class B(A):
    def forward(self, x):
        return self.fc(x) + 1


class C(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''


def _matches_fresh(doc: DocumentAnalysis, text: str) -> None:
    """The incremental result is the fresh analysis of the text, broken or not; a broken text is read
    with the statements that do not parse blanked (or made `pass`), nothing else changed."""
    got = doc.result()
    fresh = analyse(text, "m.py")
    assert got == fresh
    assert strictly_equal(got, fresh)  # the fields `==` leaves out too (cached objects are reused)
    analysed = doc.analysed_text
    assert analysed is not None
    if analysed == text.encode():
        return
    real = text.encode()
    assert len(analysed) == len(real)
    for mine, theirs in zip(analysed.split(b"\n"), real.split(b"\n")):
        assert len(mine) == len(theirs)
        assert mine == theirs or not mine.strip() or mine.strip() == b"pass", (mine, theirs)
    assert any(p.code == "syntax-error" for p in got.problems)
    assert not _python_accepts(text)  # only texts Python rejects are masked


def _replace(doc: DocumentAnalysis, old: str, new: str) -> str:
    text = doc.text
    i = text.index(old)
    line = text[:i].count("\n")
    col = i - (text.rfind("\n", 0, i) + 1)
    end_line = line + old.count("\n")
    end_col = (col + len(old)) if "\n" not in old else len(old.rsplit("\n", 1)[1])
    doc.edit((line, col), (end_line, end_col), new)
    return doc.text


def test_first_result_equals_analyse() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    assert doc.result() == analyse(SOURCE, "m.py")
    assert set(doc.reanalysed) == {"class A", "class B", "class C", "def helper", "<module>"}
    assert doc.result() is doc.result()  # no change, no work


def test_edit_inside_one_class_reanalyses_it_only() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    text = _replace(doc, "torch.relu(x)", "torch.tanh(x)")
    assert doc.result() == analyse(text, "m.py")
    assert doc.reanalysed == ("class C",)


def test_edit_of_a_base_class_reanalyses_subclasses() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    text = _replace(doc, "nn.Linear(2, 2)", "nn.Linear(2, 3)")
    assert doc.result() == analyse(text, "m.py")
    assert set(doc.reanalysed) == {"class A", "class B"}


def test_edit_of_an_inlined_helper_reanalyses_its_users() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    text = _replace(doc, "return x * 2", "return x * 3")
    assert doc.result() == analyse(text, "m.py")
    assert set(doc.reanalysed) == {"def helper", "class A"}


def test_new_import_changes_qualification() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    text = _replace(doc, "import torch\n", "import torch\nfrom mylib import helper2 as relu_impl\n")
    assert doc.result() == analyse(text, "m.py")


def test_update_with_whole_text_and_multibyte_characters() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    new = SOURCE.replace("torch.relu(x)", "torch.relu(x)  # é😀 ünïcode").replace("x * 2", "x * 2 + 'ö'")
    doc.update(new)
    assert doc.result() == analyse(new, "m.py")
    tree = doc.tree
    assert tree is not None and not tree.root_node.has_error


def test_typing_character_by_character_matches_fresh_analysis() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    insertion = "\n        y = self.fc(x) @ x.t()\n"
    anchor = SOURCE.index("        return torch.relu(x)")
    line = SOURCE[:anchor].count("\n")
    for k, ch in enumerate(insertion):
        target = SOURCE[:anchor] + insertion[: k + 1] + SOURCE[anchor:]
        text_before = doc.text
        i = len(SOURCE[:anchor]) + k
        ln = text_before[:i].count("\n")
        col = i - (text_before.rfind("\n", 0, i) + 1)
        doc.edit((ln, col), (ln, col), ch)
        assert doc.text == target
        _matches_fresh(doc, target)
    assert line > 0


def test_binary_then_fixed() -> None:
    doc = DocumentAnalysis("x = 1\x00", "m.py")
    assert doc.result().problems[0].code == "binary"
    doc.update(SOURCE)
    assert doc.result() == analyse(SOURCE, "m.py")


def test_apply_edit_with_tree_sitter_arguments() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    start = SOURCE.index("torch.relu")
    new_text = SOURCE[:start] + "F.relu" + SOURCE[start + len("torch.relu") :]
    row = SOURCE[:start].count("\n")
    col = start - (SOURCE.rfind("\n", 0, start) + 1)
    doc.apply_edit(start, start + 10, start + 6, (row, col), (row, col + 10), (row, col + 6), new_text)
    assert doc.result() == analyse(new_text, "m.py")
    assert doc.reanalysed == ("class C",)


def test_random_line_edits_match_fresh_analysis() -> None:
    import random

    base = SOURCE + "\nmodel = A()\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
    rng = random.Random(7)
    doc = DocumentAnalysis(base, "m.py")
    doc.result()
    text = base
    for _ in range(40):
        lines = text.splitlines(keepends=True)
        i = rng.randrange(len(lines))
        choice = rng.choice(["delete", "duplicate", "truncate", "bracket"])
        if choice == "delete":
            del lines[i]
        elif choice == "duplicate":
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif choice == "truncate":
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        else:
            lines[i] = lines[i][:4] + "(" + lines[i][4:]
        new = "".join(lines)
        doc.update(new)
        _matches_fresh(doc, new)
        text = new if rng.random() < 0.5 else text


def test_edit_of_a_method_no_analysis_reads_reanalyses_nothing() -> None:
    source = SOURCE.replace(
        "class B(A):", "class Base(nn.Module):\n    def unused(self):\n        return 1\n\n\nclass B(Base):"
    )
    source = source.replace("        return self.fc(x) + 1", "        return self.helper2(x) + 1")
    doc = DocumentAnalysis(source, "m.py")
    doc.result()
    text = _replace(doc, "return 1", "return 2")
    assert doc.result() == analyse(text, "m.py")
    assert set(doc.reanalysed) == set()  # no analysis reads `unused`, Base's own included
    # A method the subclass does look up (and does not define) is a dependency.
    text = _replace(doc, "    def unused(self):", "    def helper2(self, x):")
    assert doc.result() == analyse(text, "m.py")
    assert "class B" in doc.reanalysed


def test_a_half_typed_line_is_masked_and_the_other_classes_stay_cached() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    clean = doc.result()
    text = _replace(doc, "return helper(self.fc(x))", "return helper((self.fc(x))")
    broken = doc.result()
    assert broken == analyse(text, "m.py")  # what `adopter check` reads, whatever the edits were
    # The broken statement is blanked (a `pass` keeps the method): A keeps its layers, C is untouched.
    assert [a.name for a in broken.architectures] == [a.name for a in clean.architectures]
    assert broken.architectures[0].init == clean.architectures[0].init
    assert broken.architectures[2] == clean.architectures[2]
    (problem,) = [p for p in broken.problems if p.code == "syntax-error"]
    line = text[: text.index("helper((")].count("\n")
    assert problem.span is not None and problem.span.start_line == line  # the real line
    assert "never closed" in problem.message
    assert "class C" not in doc.reanalysed
    # A broken `def` line: that method is blanked, the other classes keep their analysis.
    text = _replace(doc, "    def forward(self, x):\n        return torch.relu",
                    "    def forward(self, x)):\n        return torch.relu")
    assert doc.result() == analyse(text, "m.py")
    assert [a.name for a in doc.result().architectures] == ["A", "B", "C"]
    assert set(doc.reanalysed) <= {"class C"}
    # Fixing both lines gives exactly the fresh analysis again.
    text = _replace(doc, "helper((self", "helper(self")
    text = _replace(doc, "def forward(self, x)):\n        return torch.relu", "def forward(self, x):\n        return torch.relu")
    assert text == SOURCE and doc.analysed_text == SOURCE.encode()
    assert doc.result() == analyse(SOURCE, "m.py")


def test_a_letter_at_column_zero_inside_a_class_is_an_unexpected_indent_not_a_new_module() -> None:
    # tree-sitter accepts the indented methods below such a line as module-level code; Python does not.
    doc = DocumentAnalysis(SOURCE, "m.py")
    clean = doc.result()
    anchor = SOURCE.index("    def forward(self, x):\n        return helper")
    line = SOURCE[:anchor].count("\n")
    doc.edit((line, 0), (line, 0), "z\n")
    broken = doc.result()
    assert [a.name for a in broken.architectures] == [a.name for a in clean.architectures]
    assert [f.name for f in broken.functions] == [f.name for f in clean.functions]
    assert broken == analyse(doc.text, "m.py")
    assert any("unexpected indent" in p.message for p in broken.problems)
    (problem,) = [p for p in broken.problems if p.code == "syntax-error"]
    assert problem.span is not None and problem.span.start_line == line + 1  # where Python reports it


def test_a_line_added_in_an_unread_method_only_moves_the_class_end() -> None:
    source = SOURCE.replace("        return torch.relu(x)", "        return torch.relu(x)\n\n    def extra(self):\n        pass")
    doc = DocumentAnalysis(source, "m.py")
    doc.result()
    text = _replace(doc, "        pass", "        a = 1\n        pass")
    assert doc.result() == analyse(text, "m.py")  # the class's span grew by a line
    assert not any(unit.startswith("class") for unit in doc.reanalysed)


def test_a_mask_goes_when_another_line_fixes_its_statement() -> None:
    doc = DocumentAnalysis(SOURCE, "m.py")
    doc.result()
    # Break a statement on one line, then complete it on the next line: valid again.
    text = _replace(doc, "return helper(self.fc(x))", "return helper(self.fc(x),")
    assert any(p.code == "syntax-error" for p in doc.result().problems)
    line = text[: text.index("return helper(self.fc(x),")].count("\n")
    doc.edit((line + 1, 0), (line + 1, 0), "            )\n")  # an edit that does not touch the mask
    text = doc.text
    assert "helper(self.fc(x),\n            )\n" in text
    assert not any(p.code == "syntax-error" for p in analyse(text, "m.py").problems)
    assert doc.analysed_text == text.encode()
    assert doc.result() == analyse(text, "m.py")


def _python_accepts(text: str) -> bool:
    """Python's own parser as the oracle (it parses, it runs nothing). tree-sitter accepts some
    texts Python rejects, such as a dedent to a column no enclosing block has."""
    import ast

    try:
        ast.parse(text)
    except SyntaxError:  # IndentationError included
        return False
    return True


def test_random_keystrokes_never_leave_a_stale_mask() -> None:
    """Typing and deleting single characters and short snippets anywhere in a real model file, and
    going back (undo): a text Python accepts is always analysed exactly as a fresh file is (no mask
    left behind), and a broken one is analysed exactly as `analyse` reads it."""
    import random
    from pathlib import Path

    original = (Path(__file__).resolve().parents[2] / "examples" / "gpt_decoder.py").read_text()
    rng = random.Random(11)
    doc = DocumentAnalysis(original, "m.py")
    doc.result()
    text, base, broken_for = original, original, 0
    checked_clean = checked_masked = 0
    for step in range(200):
        lines = text.split("\n")
        line = rng.randrange(len(lines))
        col = rng.randint(0, len(lines[line]))
        if rng.random() < 0.6 or not lines[line]:
            insert = rng.choice(["(", ")", ":", ",", "x", " ", "\n", "    ", "[", "]", '"', "def ", "."])
            doc.edit((line, col), (line, col), insert)
        else:
            doc.edit((line, col), (line, min(len(lines[line]), col + rng.randint(1, 3))), "")
        text = doc.text
        fresh = analyse(text, "m.py")
        if _python_accepts(text):
            assert doc.analysed_text == text.encode(), f"stale mask at step {step}"
            assert doc.result() == fresh, step
            base, broken_for = text, 0
            checked_clean += 1
        else:
            _matches_fresh(doc, text)
            checked_masked += doc.analysed_text != text.encode()
            broken_for += 1
            if broken_for > 2 or rng.random() < 0.5:  # undo back to the last valid text
                doc.update(base)
                text, broken_for = base, 0
                assert doc.result() == analyse(base, "m.py"), f"undo at step {step}"
    assert checked_clean > 40 and checked_masked > 20


def test_deleting_lines_that_split_a_function_leaves_nothing_masked() -> None:
    """A copy of a function's head pasted above its last line, then those lines deleted: the last line
    joins its own function again. Parsed alone, that line is an unexpected indent; it must not be taken
    for a half-typed line and masked (found by bench/lsp_fuzz.py on a CRLF GPT-NeoX-Japanese file)."""
    for eol in ("\n", "\r\n"):
        source = SOURCE.replace("def helper(x):\n    return x * 2\n",
                                "def helper(x):\n    y = x + 1\n    return y * 2\n").replace("\n", eol)
        doc = DocumentAnalysis(source, "m.py")
        doc.result()
        line = source.split(eol).index("    return y * 2")
        pasted = eol.join(["def helper(x):", "    y = x + 1", ""])
        doc.edit((line, 0), (line, 0), pasted)
        doc.result()
        doc.edit((line, 0), (line + 2, 0), "")
        assert doc.text == source
        assert doc.analysed_text == source.encode()
        assert doc.result() == analyse(source, "m.py")


def test_a_reanalysed_unit_whose_result_did_not_change_keeps_its_object() -> None:
    """B reads A's `__init__`: a docstring edited there re-analyses B, whose result is the same, so the cached
    object is handed back (its findings and diagnostics are reused downstream); A's moved spans are new."""
    source = SOURCE.replace("super().__init__()", '"""One layer."""\n        super().__init__()')
    doc = DocumentAnalysis(source, "m.py")
    before = {a.name: a for a in doc.result().architectures}
    text = _replace(doc, "One layer", "One Layer")
    after = {a.name: a for a in doc.result().architectures}
    assert {"class A", "class B"} <= set(doc.reanalysed)
    assert after["B"] is before["B"]
    assert after["C"] is before["C"]
    _matches_fresh(doc, text)
    text = _replace(doc, "nn.Linear(2, 2)", "nn.Linear(2, 3)")  # B's layer changes: a new B
    assert doc.result().architectures[1] is not after["B"]
    _matches_fresh(doc, text)


def test_extra_fields_list_every_field_equality_leaves_out() -> None:
    import dataclasses

    from adopter.analysis.analyser import EXTRA_FIELDS
    from adopter.dsl import types

    left_out = {
        (cls.__name__, f.name)
        for cls in vars(types).values()
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == types.__name__
        for f in dataclasses.fields(cls)
        if not f.compare
    }
    assert left_out == EXTRA_FIELDS


def test_results_equal_but_for_an_extra_field_are_not_identical() -> None:
    from dataclasses import replace

    from adopter.analysis.analyser import identical as _identical
    from adopter.dsl.types import Ctor, Op, OpKind

    mf = analyse(SOURCE, "m.py")
    a = mf.architectures[0]
    assert _identical(a, analyse(SOURCE, "m.py").architectures[0])
    assert a.init is not None and a.forward is not None
    binding = a.init.bindings[0]
    assert isinstance(binding.value, Ctor)
    moved = replace(binding, value=replace(binding.value, origin="elsewhere.py:1"))
    other = replace(a, init=replace(a.init, bindings=(moved, *a.init.bindings[1:])))
    assert other == a and not _identical(other, a)
    assert not _identical(replace(a.forward, referenced=False), a.forward)
    op = next(s for s in a.forward.body if isinstance(s, Op))
    marked = replace(op, origin=replace(op, kind=OpKind.METHOD))
    with_origin = replace(a, forward=replace(a.forward, body=tuple(marked if s is op else s for s in a.forward.body)))
    assert with_origin == a and not _identical(with_origin, a)


def test_a_space_moved_between_sequential_items_moves_their_spans() -> None:
    """A whitespace move inside one `nn.Sequential(...)` statement keeps the statement's extent and the
    bindings' values, but moves the items (`Binding.item_spans`, which the findings' __init__ spans and the
    diagnostics' related locations come from): the re-analysed class is not the cached object."""
    source = HEADER + (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body = nn.Sequential(nn.Conv2d(3, 8, 3),  nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3))\n"
        "\n"
        "    def forward(self, x):\n"
        "        return self.body(x)\n"
    )
    doc = DocumentAnalysis(source, "m.py")
    before = doc.result().architectures[0]
    text = _replace(doc, "3),  nn.", "3), nn.")
    text = _replace(doc, "nn.ReLU(), nn.Conv2d", "nn.ReLU(),  nn.Conv2d")
    after = doc.result().architectures[0]
    assert after is not before
    assert strictly_equal(after, analyse(text, "m.py").architectures[0])


def test_an_edit_of_a_size_local_in_init_reaches_the_architecture() -> None:
    """`Init.sizes` (what `inner = heads * dim` holds, read by `same_width`) is left out of equality: an edit that
    changes only what such a local holds still gives a new `__init__`, not the cached one."""
    from adopter.analysis.analyser import identical as _identical

    source = HEADER + (
        "class Net(nn.Module):\n"
        "    def __init__(self, dim, heads):\n"
        "        super().__init__()\n"
        "        inner = heads * dim\n"
        "        self.q = nn.Linear(dim, inner)\n"
        "\n"
        "    def forward(self, x):\n"
        "        return self.q(x)\n"
    )
    doc = DocumentAnalysis(source, "m.py")
    before = doc.result().architectures[0].init
    assert before is not None and dict(before.sizes) == {"inner": "heads * dim"}
    text = _replace(doc, "inner = heads * dim", "inner = heads * 2")
    after = doc.result().architectures[0].init
    assert after is not None and dict(after.sizes) == {"inner": "heads * 2"}
    assert after == before and not _identical(after, before)
    _matches_fresh(doc, text)
