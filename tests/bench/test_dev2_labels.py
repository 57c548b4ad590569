"""The second dev set's labels (issue 20) keep the held-out schema, and every label holds against its pinned file.

The schema checks run everywhere. The check against the archives runs where `python bench/dev2_corpus.py` has
fetched them (`.cache/dev2/`, or `ADOPTER_DEV2_DIR`), and is skipped elsewhere: the archives are benchmark-sized
downloads that tests never make.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import dev2_corpus as dc  # noqa: E402
import heldout_corpus as hc  # noqa: E402
import realworld_corpus as rc  # noqa: E402


def test_every_listed_file_is_labelled_and_the_labels_are_well_formed() -> None:
    labels = dc.load_labels()
    assert dc.check_schema(labels) == []
    # batch 1: 14 distributions, batch 2: 10 more, batch 3: 9 a-m and 10 n-z, batch 4: 9, batch 5: 10 (label8),
    # batch 6: 9 (label9), batch 7: 12 n-z (label10), batch 8: 12 a-m (label11), ..., batch 12: 12 (dev2b12),
    # batch 13: 12, batches 14 and 15: 12 each (two labellers at once, a-m and n-z): 179
    assert 20 <= len(dc.MANIFEST) <= 230
    assert sum(len(members) for _, _, members in dc.MANIFEST) >= 40
    assert sum(dc.counts(labels).values()) >= 120


def test_no_dev2_distribution_is_in_the_real_world_or_held_out_set() -> None:
    dev2 = {dist.lower() for dist, _, _ in dc.MANIFEST}
    others = ({dist.lower() for dist, _, _ in rc.MANIFEST} | {dist.lower() for dist, _, _ in hc.MANIFEST}
              | {"transformers"})
    assert dev2.isdisjoint(others)


def test_every_label_file_names_its_distribution_and_pinned_version() -> None:
    pinned = {dist: version for dist, version, _ in dc.MANIFEST}
    for path in sorted(dc.LABELS.glob("*.json")):
        data = dc.load_labels(path.parent)[path.stem]
        assert data["version"] == pinned[path.stem]
        for entry in data["files"].values():
            for site in entry["sites"]:
                assert set(site) <= {"family", "line", "scope", "text", "note", "count"}
                assert site["text"].strip(), site


def test_schema_check_reports_what_is_wrong() -> None:
    labels = copy.deepcopy(dc.load_labels())
    dist, data = next(iter(labels.items()))
    member = next(iter(data["files"]))
    entry = data["files"][member]
    entry["reviewed"] = False
    entry["sites"].append({"family": 18, "line": 1, "scope": "x", "text": "x"})
    data["version"] = "0"
    problems = dc.check_schema(labels)
    assert any("not reviewed" in p for p in problems)
    assert any("family 18 is not one of 4-17" in p for p in problems)
    assert any("MANIFEST pins" in p for p in problems)
    del labels[dist]
    assert any(p == f"{dist}: no label file" for p in dc.check_schema(labels))


def test_cache_directory_follows_its_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADOPTER_DEV2_DIR", str(tmp_path / "d"))
    assert dc.cache_dir() == tmp_path / "d"
    with pytest.raises(FileNotFoundError, match=re.escape("run python bench/dev2_corpus.py")):
        dc.files()


def test_every_label_holds_against_the_pinned_archives() -> None:
    try:
        listed = dc.files()
    except FileNotFoundError as missing:
        pytest.skip(f"dev2 archives not fetched: {missing}")
    assert dc.check_against_archives(dc.load_labels(), listed) == []
