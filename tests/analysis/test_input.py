"""Bad input: binary, non-UTF-8, huge files, syntax errors, and one failing class among good ones."""

from __future__ import annotations

import pytest

from adopter.analysis import analyse
from adopter.dsl.types import Severity

from .helpers import HEADER, run_without_native


@pytest.mark.parametrize(
    "source, code, words",
    [
        (b"\x7fELF\x00\x01\x02", "binary", "binary"),
        ("x = 1\x00", "binary", "binary"),
        (b"x = '\xff\xfe'\nclass A: pass\n", "not-utf8", "not UTF-8"),
        (b"#" * (5 * 1024 * 1024 + 1), "too-large", "too large"),
        ("s = '\ud800'", "binary", "UTF-8"),
    ],
    ids=["binary bytes", "NUL in str", "latin-1 bytes", "huge", "lone surrogate"],
)
def test_unanalysable_input_gives_one_clear_problem(source: str | bytes, code: str, words: str) -> None:
    mf = analyse(source, "f.py")
    assert mf.architectures == () and mf.functions == ()
    assert len(mf.problems) == 1
    problem = mf.problems[0]
    assert problem.code == code and words in problem.message and problem.severity == Severity.ERROR
    assert problem.render().startswith("f.py: error:")


def test_non_ascii_source_spans_are_code_points() -> None:
    src = HEADER + "class A(nn.Module):\n    def forward(self, x):\n        y = 'é€😀' + self.f(x)\n        return y\n"
    mf = analyse(src.encode("utf-8"))
    fwd = mf.architectures[0].forward
    assert fwd is not None
    op = fwd.body[0]
    line = src.splitlines()[op.span.start_line]  # type: ignore[union-attr]
    assert line[op.span.start_col : op.span.end_col] == "self.f(x)"  # type: ignore[union-attr]


SYNTAX_BROKEN = HEADER + """
class Good(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x)


class HalfTyped(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = nn.Linear(

    def forward(self, x):
        h = self.a(x)
        y = h +
        return self.b(h)


class AlsoGood(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def test_syntax_errors_give_partial_architectures_and_problems() -> None:
    mf = analyse(SYNTAX_BROKEN, "broken.py")
    names = [a.name for a in mf.architectures]
    assert "Good" in names and "AlsoGood" in names and "HalfTyped" in names
    syntax = [p for p in mf.problems if p.code == "syntax-error"]
    assert syntax and all(p.span is not None and p.severity == Severity.ERROR for p in syntax)
    assert all(p.code != "internal-error" for p in mf.problems)
    good = next(a for a in mf.architectures if a.name == "Good")
    assert good.forward is not None and good.forward.body[0].target == "self.fc"  # type: ignore[union-attr]
    half = next(a for a in mf.architectures if a.name == "HalfTyped")
    assert half.init is not None and half.init.bindings[0].attr == "a"


@pytest.mark.parametrize("cut", range(0, len(SYNTAX_BROKEN), 37))
def test_every_prefix_of_a_file_analyses_without_exceptions(cut: int) -> None:
    mf = analyse(SYNTAX_BROKEN[:cut])
    assert all(p.code != "internal-error" for p in mf.problems)


def test_one_failing_class_becomes_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    from adopter import _native
    from adopter.analysis import analyser

    if _native.state["active"]:  # compiled methods cannot be patched: run it again without them
        run_without_native(__file__, "test_one_failing_class_becomes_a_problem")
        return

    real = analyser.Analyser._class

    def failing(self: analyser.Analyser, name: str, *args: object) -> object:
        if name == "Bad":
            raise RuntimeError("boom")
        return real(self, name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(analyser.Analyser, "_class", failing)
    src = HEADER + "class Ok(nn.Module):\n    pass\nclass Bad(nn.Module):\n    pass\nclass Ok2(nn.Module):\n    pass\n"
    mf = analyse(src, "m.py")
    assert [a.name for a in mf.architectures] == ["Ok", "Ok2"]
    (problem,) = [p for p in mf.problems if p.code == "internal-error"]
    assert "class Bad" in problem.message and "boom" in problem.message and problem.span is not None


@pytest.mark.corpus
def test_a_bracket_typed_inside_a_list_hides_no_class() -> None:
    # One `(` typed into BERT's archive list used to turn the whole file into one ERROR region
    # starting at line 1, and the repair, blanking the region's first lines, lost every class. The
    # repair now blanks the line of the unmatched bracket.
    from adopter.corpus import modeling_file

    text = modeling_file("bert").text
    clean = analyse(text, "modeling_bert.py")
    typed = text.replace('"bert-base-cased-finetuned-mrpc",', '"bert-base-cased-finetuned-mrpc"(,', 1)
    assert typed != text
    mf = analyse(typed, "modeling_bert.py")
    assert [a.name for a in mf.architectures] == [a.name for a in clean.architectures]
    assert any(p.code == "syntax-error" for p in mf.problems)


@pytest.mark.parametrize(
    "text, culprit",
    [
        ('x = [\n  "a(",\n  "b"(,\n]\n', '(,'),  # a closer that does not match blames the opener
        ("x = foo(a, b\nclass A:\n  pass\n", "(a,"),  # an opener never closed
        ("# (\ns = ')'\nx = (1, 2)\n", None),  # brackets in comments and strings do not count
        ("x = 1)\n", ")"),  # a closer with nothing open blames itself
    ],
)
def test_unbalanced_bracket(text: str, culprit: str | None) -> None:
    from adopter.analysis.parse.source import _unbalanced_bracket

    data = text.encode()
    at = _unbalanced_bracket(data, 0, len(data))
    assert (None if at is None else data[at : at + len(culprit or "")].decode()) == culprit
