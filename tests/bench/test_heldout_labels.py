"""The held-out detection labels (issue 20) keep their schema, and every label holds against its pinned file.

The schema checks run everywhere. The check against the archives runs where `python bench/heldout_corpus.py`
has fetched them (`.cache/heldout/`, or `ADOPTER_HELDOUT_DIR`), and is skipped elsewhere: the archives are
benchmark-sized downloads that tests never make.
"""

from __future__ import annotations

import ast
import copy
import re
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import heldout_corpus as hc  # noqa: E402
import realworld_corpus as rc  # noqa: E402

SOURCE = '''import torch


def helper(x):
    return x.softmax(-1)


class Block(torch.nn.Module):
    size = 3

    @staticmethod
    def make():
        return 1

    def forward(self, q, k):
        def inner(t):
            return t * 2
        return inner(q @ k.transpose(-2, -1))
'''


def test_every_listed_file_is_labelled_and_the_labels_are_well_formed() -> None:
    labels = hc.load_labels()
    assert hc.check_schema(labels) == []
    assert len(hc.MANIFEST) >= 20
    assert sum(len(members) for _, _, members in hc.MANIFEST) >= 35


def test_no_held_out_distribution_is_in_the_real_world_set() -> None:
    held_out = {dist.lower() for dist, _, _ in hc.MANIFEST}
    developed = {dist.lower() for dist, _, _ in rc.MANIFEST} | {"transformers"}
    assert held_out.isdisjoint(developed)


def test_schema_check_reports_what_is_wrong() -> None:
    labels = copy.deepcopy(hc.load_labels())
    dist, data = next(iter(labels.items()))
    member = next(iter(data["files"]))
    entry = data["files"][member]
    entry["reviewed"] = False
    entry["sites"].append({"family": 3, "line": 1, "scope": "x", "text": "x"})
    entry["sites"].append({"family": 4, "line": 2})
    entry["sites"].append({"family": 6, "line": 10**6, "scope": "x", "text": "x", "count": 0})
    data["version"] = "0"
    problems = hc.check_schema(labels)
    assert any("count 0 is not a positive integer" in p for p in problems)
    assert any("not reviewed" in p for p in problems)
    assert any("family 3 is not one of 4-17" in p for p in problems)
    assert any("lacks" in p for p in problems)
    assert any("MANIFEST pins" in p for p in problems)
    del labels[dist]
    assert any(p == f"{dist}: no label file" for p in hc.check_schema(labels))


def test_scope_names_the_method_or_function_holding_a_line() -> None:
    tree = ast.parse(SOURCE)
    lines = SOURCE.splitlines()
    assert hc.scope_of(tree, lines.index("    return x.softmax(-1)") + 1) == "helper"
    assert hc.scope_of(tree, lines.index("    size = 3") + 1) == "Block"
    assert hc.scope_of(tree, lines.index("    @staticmethod") + 1) == "Block.make"
    assert hc.scope_of(tree, lines.index("            return t * 2") + 1) == "Block.forward"
    assert hc.scope_of(tree, 1) == "<module>"


def test_archive_check_catches_a_shifted_line_and_a_wrong_scope() -> None:
    source = rc.RealWorldFile("pkg", "1.0", "pkg/m.py", SOURCE)
    line = SOURCE.splitlines().index("        return inner(q @ k.transpose(-2, -1))") + 1
    good = {"family": 10, "line": line, "scope": "Block.forward", "text": "q @ k.transpose(-2, -1)"}
    labels = {"pkg": {"distribution": "pkg", "version": "1.0",
                      "files": {"pkg/m.py": {"reviewed": True, "sites": [good], "not_sites": []}}}}
    assert hc.check_against_archives(labels, (source,)) == []
    shifted = dict(good, line=line - 1)
    labels["pkg"]["files"]["pkg/m.py"]["sites"] = [shifted, dict(good, scope="helper")]
    problems = hc.check_against_archives(labels, (source,))
    assert len(problems) == 2  # the shifted line (nested def, same method) lacks the text; the other, its scope
    assert "is not on the line" in problems[0]
    assert "scope 'helper', the line is in 'Block.forward'" in problems[1]


def test_files_read_members_from_a_wheel_in_the_given_directory(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "some_pkg-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("some_pkg/model.py", SOURCE)
    manifest = (("some-pkg", "1.0", ("some_pkg/model.py",)),)
    (found,) = rc.files(manifest, tmp_path, "bench/heldout_corpus.py")
    assert (found.package, found.member, found.text) == ("some-pkg", "some_pkg/model.py", SOURCE)
    with pytest.raises(FileNotFoundError, match=re.escape("run python bench/heldout_corpus.py")):
        rc.files((("other", "2.0", ("x.py",)),), tmp_path, "bench/heldout_corpus.py")


def test_cache_directories_follow_their_environment_variables(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADOPTER_HELDOUT_DIR", str(tmp_path / "h"))
    monkeypatch.setenv("ADOPTER_REALWORLD_DIR", str(tmp_path / "r"))
    assert hc.cache_dir() == tmp_path / "h"
    assert rc.cache_dir() == tmp_path / "r"
    with pytest.raises(FileNotFoundError, match=re.escape("run python bench/heldout_corpus.py")):
        hc.files()
    with pytest.raises(FileNotFoundError, match=re.escape("run python bench/realworld_corpus.py")):
        rc.files()


def test_every_label_holds_against_the_pinned_archives() -> None:
    try:
        listed = hc.files()
    except FileNotFoundError as missing:
        pytest.skip(f"held-out archives not fetched: {missing}")
    assert hc.check_against_archives(hc.load_labels(), listed) == []


def test_a_label_with_a_count_is_that_many_sites_on_its_line() -> None:
    """Two Linear -> GELU pairs nested on one line (`W2(act(W1(act(x))))`): one label with `count: 2` is matched
    by two findings; a third finding there is a false positive, and one finding leaves one site missed."""
    import detection_realworld as dr

    label = {"family": 6, "line": 7, "scope": "f", "text": "x", "count": 2}
    pair = [(6, 7, frozenset({7}), "f06-linear-gelu"), (6, 7, frozenset({7, 8}), "f06-linear-gelu")]
    tp, misses, extra = dr.score({"pkg/m.py": [label]}, {"pkg/m.py": pair})
    assert (tp[6], misses, extra) == (2, [], [])
    tp, misses, extra = dr.score({"pkg/m.py": [label]}, {"pkg/m.py": pair[:1]})
    assert (tp[6], len(misses)) == (1, 1)
    third = (6, 7, frozenset({7, 9}), "f06-linear-gelu")
    tp, misses, extra = dr.score({"pkg/m.py": [dict(label, count=1)]}, {"pkg/m.py": [*pair, third]})
    assert (tp[6], len(extra)) == (1, 2)


def test_every_distribution_has_one_batch_and_the_retired_half_is_the_odd_batches():
    batches = hc.batches()
    assert set(batches) == {dist for dist, _version, _members in hc.MANIFEST}
    assert batches["openai-whisper"] == 1 and batches["clip-anytorch"] == 2
    assert set(batches.values()) == set(range(1, max(batches.values()) + 1))  # no batch comment skipped
    gone = hc.retired()
    assert gone == {d for d, b in batches.items() if b % 2 == 1 and b < 30}
    assert "openai-whisper" in gone and "clip-anytorch" not in gone
