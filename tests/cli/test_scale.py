"""`check` and `fix` over many files: a process pool prints what one process prints, byte for byte, and
results kept on disk are reused only while the file, the files it reads and the settings are unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from adopter.cli import main
from adopter.commands import fanout, filework

HERE = Path(__file__).parent
EXAMPLES = HERE.parents[1] / "examples"
RULE = (HERE / "relu_twice.adl").read_text(encoding="utf-8")
RELU_TWICE = (HERE / "relu_twice_model.py").read_text(encoding="utf-8")
BASE = "from torch import nn\n\n\nclass Base(nn.Module):\n    pass\n"
SUBCLASS = ("import torch\n\nfrom .base import Base\n\n\nclass Model(Base):\n    def forward(self, x):\n"
            "        a = torch.relu(x)\n        b = torch.relu(a)\n        return b\n")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Enough files for the pool (the examples three times over, a package whose model's base class is in
    another file, a syntax error, a binary file) and a cache folder of its own."""
    root = tmp_path / "tree"
    for copy in ("a", "b", "c"):
        shutil.copytree(EXAMPLES, root / copy, ignore=shutil.ignore_patterns("__pycache__", "*.md"))
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "base.py").write_text(BASE)
    (root / "pkg" / "model.py").write_text(SUBCLASS)
    (root / "relu.py").write_text(RELU_TWICE)
    (root / "broken.py").write_text("import torch\n\nclass A(:\n    pass\n")
    (root / "binary.py").write_bytes(b"\x00\x01\xff")
    (tmp_path / "relu.adl").write_text(RULE)
    monkeypatch.setenv("ADOPTER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ADOPTER_RESULT_CACHE", raising=False)
    monkeypatch.delenv("ADOPTER_RULE_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`adopter ARGV` as a new process runs it: without the files the last run's analysis read."""
    from adopter.analysis import analyser

    analyser._DEFAULT_RESOLVER = analyser._DEFAULT_REACH = None
    filework._SESSIONS.clear()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rules() -> list[str]:
    return ["--rules", "relu.adl", "--target", "cpu"]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_the_pool_prints_what_one_process_prints(tree: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    alone = run(capsys, "check", "tree", "--format", fmt, "--jobs", "1", "--no-cache", *rules())
    assert filework._SESSIONS, "--jobs 1 analyses in this process"
    pooled = run(capsys, "check", "tree", "--format", fmt, "--jobs", "2", "--no-cache", *rules())
    assert not filework._SESSIONS, "--jobs 2 over this many files analyses in worker processes"
    assert pooled == alone
    assert alone[0] == 2  # the binary file
    assert "user-relu-twice" in alone[1] and "binary.py: a binary file" in alone[2]
    assert "pkg/model.py" in alone[1]  # its base class, in another file, was read


def test_fix_diff_in_the_pool_is_the_same_diff(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alone = run(capsys, "fix", "tree", "--diff", "--jobs", "1", "--no-cache", *rules())
    pooled = run(capsys, "fix", "tree", "--diff", "--jobs", "2", "--no-cache", *rules())
    assert pooled == alone
    assert "+++ b/tree/relu.py" in alone[1]


def test_a_second_run_reuses_results_until_a_file_changes(tree: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    first = run(capsys, "check", "tree", "--jobs", "1", *rules())
    assert "tree/pkg/model.py:8:9: user-relu-twice" in first[1]

    analysed: list[str] = []
    real = filework.check_file

    def counting(session: object, item: filework.Item) -> filework.Payload:
        analysed.append(item.path)
        return real(session, item)  # type: ignore[arg-type]

    monkeypatch.setattr(filework, "check_file", counting)
    assert run(capsys, "check", "tree", "--jobs", "1", *rules()) == first
    assert analysed == [], "an unchanged tree is not analysed again"

    # An edit to the file itself: only that file is analysed again, and its result is the new one.
    (tree / "relu.py").write_text(RELU_TWICE.replace("b = torch.relu(a)", "b = torch.sigmoid(a)"))
    second = run(capsys, "check", "tree", "--jobs", "1", *rules())
    assert analysed == ["tree/relu.py"]
    assert "tree/relu.py" not in second[1] and "tree/pkg/model.py:8:9" in second[1]

    # An edit to a file it read (its base class is no module any more) invalidates it too.
    analysed.clear()
    (tree / "pkg" / "base.py").write_text("class Base:\n    pass\n")
    third = run(capsys, "check", "tree", "--jobs", "1", *rules())
    assert "tree/pkg/model.py" in analysed
    assert "tree/pkg/model.py" not in third[1]
    assert third == run(capsys, "check", "tree", "--jobs", "1", "--no-cache", *rules())

    # Other settings (another target) are other entries.
    analysed.clear()
    run(capsys, "check", "tree", "--jobs", "1", "--rules", "relu.adl", "--target", "cuda")
    assert len(analysed) > 10


def test_the_cache_can_be_turned_off(tree: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADOPTER_RESULT_CACHE", "0")
    run(capsys, "check", "tree", "--jobs", "1", *rules())
    assert not (tree.parent / "cache" / "check").exists()


def test_input_errors_and_options(tree: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("adopter.analysis.parse.source.MAX_BYTES", 64)
    code, _, err = run(capsys, "check", "tree/relu.py", "tree/pkg/base.py", "--jobs", "1", *rules())
    assert code == 2 and "tree/relu.py: too large to analyse" in err
    with pytest.raises(SystemExit) as exit_:
        main(["check", "tree", "--jobs", "0"])
    assert exit_.value.code == 2
    assert "give a whole number of worker processes" in capsys.readouterr().err


def test_chunks_cover_every_file_once_largest_first() -> None:
    items = [filework.Item(i, f"f{i}.py", f"/f{i}.py", i % 7) for i in range(100)]
    parts = fanout.chunks(items, 2)
    flat = [item.index for part in parts for item in part]
    assert sorted(flat) == list(range(100))
    assert parts[0][0].size == 6 and max(len(p) for p in parts) <= fanout.MAX_CHUNK


def test_the_progress_bar_waits_a_second_and_erases_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from adopter.commands import progress

    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    bar = progress.Progress(4, enabled=True, stream=stream)
    bar.advance()
    assert stream.getvalue() == "", "nothing in the first second"
    now[0] += progress.DELAY_S
    bar.advance()
    assert stream.getvalue().endswith("] 2/4 files")
    bar.close()
    assert stream.getvalue().endswith("\r\033[K")
    quiet = progress.Progress(4, enabled=False, stream=stream)
    now[0] += 10
    quiet.advance()
    quiet.close()
    assert stream.getvalue().endswith("\r\033[K")


def test_dropping_the_other_files_read_changes_no_finding(tree: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run drops the files the analysis kept (memory stays bounded); findings stay the same."""
    whole = run(capsys, "check", "tree", "--jobs", "1", "--no-cache", *rules())
    dropped: list[int] = []
    real = filework.forget_other_files
    monkeypatch.setattr(filework, "FORGET_AFTER_FILES", 2)
    monkeypatch.setattr(filework, "forget_other_files", lambda: (dropped.append(1), real())[1])
    assert run(capsys, "check", "tree", "--jobs", "1", "--no-cache", *rules()) == whole
    assert len(dropped) >= 8


def test_local_workers_read_the_file_and_notice_an_edit(tree: Path) -> None:
    """Pool workers read the files themselves (the driver keeps no text); a file that changed after the
    driver hashed it is analysed as it is now and flagged, so its result is not cached under the old hash."""
    from adopter.commands import result_cache
    from adopter.commands.fingerprint import code_fingerprint
    from adopter.session import load_context

    context = load_context(rule_paths=[tree.parent / "relu.adl"], target="cpu")
    work = filework.Work("check", context, "digest", code_fingerprint(), str(tree.parent))
    relu = tree / "relu.py"
    data = relu.read_bytes()
    same = filework.Item(0, "tree/relu.py", str(relu), len(data), result_cache.content(data))
    edited = filework.Item(1, "tree/relu.py", str(relu), len(data), result_cache.content(b"old"))
    gone = filework.Item(2, "tree/gone.py", str(tree / "gone.py"), 1, "x")
    done = filework.run_chunk(work, (same, edited, gone))
    assert [d.changed for d in done] == [False, True, True]
    assert done[0].payload == done[1].payload and done[0].payload["findings"]
    assert "tree/gone.py" in done[2].payload["unreadable"]


def test_failing_workers_are_one_line_and_exit_2(tree: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(work: filework.Work, items: tuple[filework.Item, ...]) -> list[filework.Done]:
        raise RuntimeError("this worker runs other Adopter code")

    monkeypatch.setattr(fanout, "run_chunk", refuse)
    code, _, err = run(capsys, "check", "tree", "--jobs", "1", "--no-cache", *rules())
    assert code == 2 and "error: the workers failed (RuntimeError: this worker runs other Adopter code)" in err
