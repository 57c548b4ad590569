"""The held-out measurement's join (bench/oracle_heldout_join.py) on synthetic labels, results and findings:
traced or not and why, the oracle's agreement by line and by class, the checker's hits, and the oracle's sites the
labels do not list. No held-out data is read here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle_heldout_join import REASONS, Label, join, labels_of, load_classes  # noqa: E402

F = "/site/pkg/model.py"


def _finding(family: int, lines: tuple[int, int]) -> dict:
    return {"path": F, "family": family, "statements": [list(lines)], "init": []}


def _class(name: str, *, traced: bool = True, constructed: bool = True, executed=(), sites=()) -> dict:
    return {"file": F, "class": name, "constructed": constructed, "traced": traced,
            "executed": {F: list(executed)} if traced else {}, "sites": list(sites)}


def _scope(_f: str, line: int) -> str:
    return "Block.forward" if 10 <= line < 30 else "Block.__init__" if line < 10 else "Head.forward"


def test_traced_labels_split_by_the_oracles_agreement_and_the_checkers_hits():
    labels = [Label(6, F, 12, "Block.forward", "pkg"), Label(9, F, 20, "Block.forward", "pkg"),
              Label(6, F, 25, "Block.forward", "pkg")]
    classes = [_class("Block", executed=(12, 20, 25),
                      sites=[{"family": 6, "file": F, "line": 13, "lines": [12, 13], "pattern": "p"},
                             {"family": 9, "file": F, "line": 22, "lines": [22], "pattern": "p"}])]
    out = join(labels, {}, classes, {"pkg"}, [_finding(6, (12, 12)), _finding(9, (20, 20))], scope_of=_scope)
    assert out["all"]["traced"] == 3 and out["all"]["checker"] == 2
    assert out["6"]["traced: oracle agrees"] == 1 and out["6"]["traced: oracle agrees at its anchor"] == 0
    assert out["6"]["traced: oracle agrees: checker"] == 1
    assert out["6"]["traced: no oracle site"] == 1 and out["6"]["traced: no oracle site: checker"] == 0
    # family 9: the oracle's site is two lines away (no agreement by line), in the same class (agreement by class)
    assert out["9"]["traced: oracle agrees"] == 0 and out["9"]["class traced: oracle agrees in class"] == 1
    assert out["9"]["oracle sites not labelled"] == 1 and out["9"]["oracle sites not labelled in class"] == 0


def test_untraced_labels_get_the_first_reason_that_holds():
    labels = [Label(7, F, 5, "Block.__init__", "pkg"), Label(7, F, 40, "Head.forward", "pkg"),
              Label(7, F, 50, "helper", "pkg"), Label(7, F, 60, "Gone.forward", "pkg"),
              Label(7, "/site/pkg/other.py", 3, "X.forward", "pkg"), Label(7, F, 70, "Y.forward", "other"),
              Label(7, "/site/pkg/broken.py", 3, "Z.forward", "pkg")]
    classes = [_class("Block", executed=(12,)), _class("Head", traced=False)]
    out = join(labels, {}, classes, {"pkg"}, [], class_names={F: {"Block", "Head"}},
               failed_files={"/site/pkg/broken.py"})["7"]
    assert out["untraced"] == 7 and out[f"untraced: {REASONS[8]}"] == 1  # its module did not import and out["class traced"] == 1  # the __init__ line of a traced class
    assert out[f"untraced: {REASONS[5]}"] == 1  # traced, line in __init__
    assert out[f"untraced: {REASONS[4]}"] == 1  # Head built, not traced
    assert out[f"untraced: {REASONS[7]}"] == 1  # a module-level function
    assert out[f"untraced: {REASONS[2]}"] == 1  # Gone: a class the run never attempted
    assert out[f"untraced: {REASONS[1]}"] == 1  # a file no class of which was attempted
    assert out[f"untraced: {REASONS[0]}"] == 1  # a distribution that did not finish


def test_oracle_sites_the_labels_do_not_list_and_those_they_list_as_not_sites():
    classes = [_class("Block", executed=(12, 14, 16),
                      sites=[{"family": 11, "file": F, "line": 12, "lines": [12], "pattern": "p"},
                             {"family": 11, "file": F, "line": 14, "lines": [14], "pattern": "p"},
                             {"family": 11, "file": F, "line": 16, "lines": [16], "pattern": "old_one"},
                             {"family": 11, "file": "/elsewhere.py", "line": 1, "lines": [1], "pattern": "p"}])]
    not_sites = {F: [{"family": 11, "line": 14, "reason": "r"}, {"family": 11, "reason": "no line"}]}
    out = join([Label(11, F, 12, "Block.forward", "pkg")], not_sites, classes, {"pkg"}, [_finding(11, (14, 14))],
               retired=lambda p: p == "old_one", scope_of=_scope)["11"]
    assert out["oracle sites"] == 2  # the retired pattern's site and the unlabelled file's are left out
    assert out["oracle sites: checker"] == 1
    assert out["oracle sites not labelled"] == 1 and out["oracle sites not labelled: listed as not_sites"] == 1


def test_a_finding_covers_one_label_and_family_17_has_no_oracle_pattern():
    labels = [Label(17, F, 8, "Block.__init__", "pkg"), Label(6, F, 12, "Block.forward", "pkg"),
              Label(6, F, 13, "Block.forward", "pkg")]
    out = join(labels, {}, [], {"pkg"}, [_finding(6, (12, 13)), _finding(17, (8, 8))])
    assert out["6"]["checker"] == 1 and out["17"]["checker"] == 1
    assert out["17"]["no oracle pattern"] == 1 and out["all"]["labelled"] == 3


def test_labels_and_results_are_read_from_their_files(tmp_path: Path):
    labels = {"pkg": {"distribution": "pkg", "files": {
        "pkg/model.py": {"reviewed": True, "sites": [{"family": 6, "line": 3, "scope": "A.forward", "text": "x"}],
                         "not_sites": [{"family": 9, "reason": "r"}]},
        "pkg/draft.py": {"reviewed": False, "sites": [{"family": 6, "line": 1, "scope": "B", "text": "y"}]}}}}
    sites, not_sites = labels_of(labels, ["pkg", "absent"], tmp_path)
    assert sites == [Label(6, str(tmp_path / "pkg/model.py"), 3, "A.forward", "pkg")]
    assert list(not_sites) == [str(tmp_path / "pkg/model.py")]
    for name, done in (("pkg", {"dist": "pkg", "attempted": 1}), ("broken", {"dist": "broken", "install": "x"})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "_done.json").write_text(json.dumps(done))
        (tmp_path / name / "m.A.json").write_text(json.dumps({"class": "A", "traced": False}))
    (tmp_path / "running").mkdir()
    (tmp_path / "running" / "m.B.json").write_text(json.dumps({"class": "B"}))
    classes, finished = load_classes(tmp_path, ["pkg", "broken", "running"])
    assert finished == {"pkg"} and [c["class"] for c in classes] == ["A"]


def test_the_shared_oracle_folder_is_refused(monkeypatch: pytest.MonkeyPatch):
    from oracle_heldout import SHARED_ROOT, oracle_root, pinned_specs

    monkeypatch.delenv("ADOPTER_ORACLE_ROOT", raising=False)
    with pytest.raises(SystemExit):
        oracle_root(str(SHARED_ROOT))
    assert oracle_root(None).name == "hocover"
    assert pinned_specs(["a"], (("a", "1.0", ("a/m.py",)),)) == ["a==1.0"]
    with pytest.raises(SystemExit):
        pinned_specs(["b"], (("a", "1.0", ("a/m.py",)),))


def test_the_oracle_root_override_moves_the_venv_ledger_and_results(tmp_path: Path):
    import subprocess

    code = ("import sys; sys.path.insert(0, 'bench'); from oracle import install, run; "
            "print(install.CACHE, install.VENV, install.LEDGER, run.RESULTS)")
    env = {"ADOPTER_ORACLE_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(tmp_path), str(tmp_path / "venv"), str(tmp_path / "installs"),
                                  str(tmp_path / "results")]
