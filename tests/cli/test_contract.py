"""The command line's contract (README, "Exit codes and input"): one row per input and command.

0 clean, 1 findings (or a syntax error `check` reports), 2 usage or input errors; one message on
stderr names the file and what to do; the other files of the same call are still processed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from adopter.cli import main

RULE = (Path(__file__).parent / "relu_twice.adl").read_text(encoding="utf-8")

MODEL = (Path(__file__).parent / "relu_twice_model.py").read_text(encoding="utf-8")

FILES: dict[str, bytes] = {
    "clean.py": b"def f(x):\n    return x\n",
    "model.py": MODEL.encode(),
    "broken.py": b"import torch\n\nclass A(:\n    pass\n",
    "binary.py": b"\x00\x01\x02\xff",
    "latin1.py": 'x = "caf\xe9"\n'.encode("latin-1"),
}

# (command, input, exit code, what stderr says (a piece of it), what stdout says (a piece), does
# model.py, given too, still get processed)
ROWS = [
    ("check", "clean.py", 0, None, "No sites found."),
    ("check", "model.py", 1, None, "Found 1 site (1 fixable"),
    ("check", "missing.py", 2, "missing.py: no such file or directory", None),
    ("check", "emptydir", 2, "emptydir: no Python (.py) files", None),
    ("check", "binary.py", 2, "binary.py: a binary file", None),
    ("check", "latin1.py", 2, "latin1.py: not UTF-8", None),
    ("check", "broken.py", 1, "broken.py:3:", "1 file with a syntax error"),
    ("fix", "clean.py", 0, None, None),
    ("fix", "broken.py", 2, "broken.py:3:", None),
    ("fix --diff", "broken.py", 2, "the file does not parse", None),
    ("fix", "binary.py", 2, "binary.py: a binary file", None),
    ("fix", "missing.py", 2, "missing.py: no such file", None),
    ("arch", "broken.py", 0, "warning: broken.py:3:", None),
    ("arch", "binary.py", 2, "binary.py: a binary file", None),
    ("arch", "latin1.py", 2, "latin1.py: not UTF-8", None),
    ("arch", "missing.py", 2, "missing.py: no such file", None),
]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "emptydir").mkdir()
    (tmp_path / "my-rules").mkdir()
    (tmp_path / "my-rules" / "relu.adl").write_text(RULE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def argv(command: str, *paths: str) -> list[str]:
    words = command.split()
    if words[0] == "arch":
        return [*words, *paths]
    return [*words, *paths, "--rules", "my-rules", "--select", "user-relu-twice", "--target", "cpu"]


@pytest.mark.parametrize(("command", "given", "code", "err", "out"), ROWS, ids=[f"{r[0]}-{r[1]}" for r in ROWS])
def test_contract(workspace: Path, capsys: pytest.CaptureFixture[str], command: str, given: str, code: int,
                  err: str | None, out: str | None) -> None:
    assert main(argv(command, given)) == code
    captured = capsys.readouterr()
    if err is not None:
        assert err in captured.err
    if out is not None:
        assert out in captured.out
    assert "No sites found" not in captured.out or code == 0
    if code == 2 and err is not None:
        assert len([line for line in captured.err.splitlines() if given in line]) == 1


@pytest.mark.parametrize("command", ["check", "fix --diff"])
@pytest.mark.parametrize("bad", ["missing.py", "binary.py", "broken.py", "latin1.py"])
def test_other_files_are_still_processed(workspace: Path, capsys: pytest.CaptureFixture[str], command: str,
                                         bad: str) -> None:
    code = main(argv(command, bad, "model.py"))
    captured = capsys.readouterr()
    assert code in (1, 2)
    if command == "check":
        assert "model.py:7:9: user-relu-twice" in captured.out
    else:
        assert "+++ b/model.py" in captured.out


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads unreadable files")
def test_unreadable_file(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = workspace / "model.py"
    target.chmod(0)
    try:
        assert main(argv("check", "model.py")) == 2
        assert "model.py: cannot read it" in capsys.readouterr().err
    finally:
        target.chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_fix_reports_no_sites_left_at_the_users_lines(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv("fix", "model.py")) == 0
    assert main(argv("check", "model.py")) == 0
