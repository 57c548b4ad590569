"""Results traced from a file that has changed since are stale: the report leaves them out and a run
sets them aside and traces them again (a later install upgraded a package an earlier one was traced
from). And the loss variant: the keyword arguments that switch a forward's loss branch on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle import stale  # noqa: E402
from oracle.worker import PASS, done, loss_arguments  # noqa: E402


def _results(tmp_path: Path, model: Path, *, with_digests: bool) -> Path:
    results = tmp_path / "results"
    folder = results / "pkg"
    folder.mkdir(parents=True)
    record = {"class": "M", "traced": True, "executed": {str(model): [3]}, "pass": PASS,
              "sites": [{"family": 4, "file": str(model), "line": 3, "elsewhere": {}}]}
    (folder / "pkg.M.json").write_text(json.dumps(record), encoding="utf-8")
    meta: dict[str, object] = {"dist": "pkg", "pass": PASS}
    if with_digests:
        meta["digests"] = stale.digests(stale.named_files([record]))
    (folder / "_done.json").write_text(json.dumps(meta), encoding="utf-8")
    return results


def test_a_changed_file_makes_its_results_stale_by_digest(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text("import torch\n\nx = torch.softmax(y, -1)\n", encoding="utf-8")
    results = _results(tmp_path, model, with_digests=True)
    assert stale.stale_folders(results) == {}
    model.write_text("import torch\n# a new line moves every site\nx = torch.softmax(y, -1)\n", encoding="utf-8")
    assert stale.stale_folders(results) == {"pkg": [str(model)]}
    moved = stale.set_aside(results, ["pkg"])
    assert not (results / "pkg").exists() and moved[0].parent == results / stale.STALE
    assert stale.stale_folders(results) == {}  # set-aside results are never read again


def test_results_without_digests_are_judged_by_time(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text("x = 1\n", encoding="utf-8")
    results = _results(tmp_path, model, with_digests=False)
    done_at = (results / "pkg" / "_done.json").stat().st_mtime
    os.utime(model, (done_at - 10, done_at - 10))
    assert stale.stale_folders(results) == {}
    os.utime(model, (done_at + 10, done_at + 10))
    assert list(stale.stale_folders(results)) == ["pkg"]


def test_an_earlier_pass_is_not_done_but_a_failed_install_is(tmp_path: Path) -> None:
    (tmp_path / "_done.json").write_text(json.dumps({"dist": "pkg", "version": "1"}), encoding="utf-8")
    assert not done(tmp_path)
    (tmp_path / "_done.json").write_text(json.dumps({"dist": "pkg", "pass": PASS}), encoding="utf-8")
    assert done(tmp_path)
    (tmp_path / "_done.json").write_text(json.dumps({"dist": "pkg", "install": "no wheel"}), encoding="utf-8")
    assert done(tmp_path)


def test_loss_arguments_switch_the_loss_branch_on() -> None:
    def forward(x, mask=None, return_loss=False, labels=None, return_attn=False):
        return x

    ids = torch.randint(0, 10, (2, 5))
    extra = loss_arguments(forward, {"x": ids}, ids)
    assert extra["return_loss"] is True and "return_attn" not in extra and "mask" not in extra
    assert torch.equal(extra["labels"], ids) and extra["labels"] is not ids
    assert "labels" not in loss_arguments(forward, {"x": ids}, None)  # no integer input: no labels to give
    assert loss_arguments(forward, {"x": ids, "return_loss": False, "labels": ids}, ids) == {}


MODEL = '''import torch
from torch import nn


class LM(nn.Module):
    def forward(self, x, return_loss=False):
        return x


class Tagger(nn.Module):
    def forward(self, x, *, labels=None):
        return x


class Plain(nn.Module):
    def forward(self, x, return_attn=False):
        return torch.relu(x)


class RMS(nn.Module):
    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True).clamp(min=1e-8)


class Inherits(Plain):
    pass
'''


def _record(path: Path, name: str, line: int) -> dict[str, object]:
    return {"class": name, "file": str(path), "def_line": line, "traced": True, "executed": {str(path): [line + 2]}}


def test_which_classes_an_upgrade_must_redo(tmp_path: Path) -> None:
    from oracle.upgrade import needs_work

    path = tmp_path / "m.py"
    path.write_text(MODEL, encoding="utf-8")
    lines = MODEL.splitlines()
    at = {n: next(i for i, ln in enumerate(lines, 1) if ln.startswith(f"class {n}(")) for n in
          ("LM", "Tagger", "Plain", "RMS", "Inherits")}
    work = {n: needs_work(_record(path, n, line)) for n, line in at.items()}
    # loss switch, labels, a norm in an exercised line, a forward not in the class body: work; else none
    assert work == {"LM": True, "Tagger": True, "Plain": False, "RMS": True, "Inherits": True}
    assert not needs_work({**_record(path, "LM", at["LM"]), "pass": PASS})
    # pass 6 attempts again every class not traced, but not one whose process a hang or crash killed
    assert needs_work({**_record(path, "Plain", at["Plain"]), "traced": False, "pass": 5})
    assert not needs_work({**_record(path, "Plain", at["Plain"]), "traced": False, "pass": 5,
                           "reason": "killed: no progress past the class time limit"})
    assert not needs_work({**_record(path, "Plain", at["Plain"]), "traced": False, "pass": 6})
    # a pass-5 trace stays valid for the patterns (none changed since): no work for a traced class with its
    # loss variant, unless pass 7 may drop one of its sites (torch's own composites: families 4, 5, 6, 9, 10)
    assert not needs_work({**_record(path, "RMS", at["RMS"]), "pass": 5, "loss_variant": {}})
    assert not needs_work({**_record(path, "RMS", at["RMS"]), "pass": 5, "loss_variant": {},
                           "sites": [{"family": 12, "line": 3}]})
    assert needs_work({**_record(path, "RMS", at["RMS"]), "pass": 6, "loss_variant": {},
                       "sites": [{"family": 10, "line": 3}]})
    # pass 8 adds where a site's torch layers were constructed: families 6, 7, 8 traced before it
    assert needs_work({**_record(path, "RMS", at["RMS"]), "pass": 7, "loss_variant": {},
                       "sites": [{"family": 7, "line": 3}]})
    assert not needs_work({**_record(path, "RMS", at["RMS"]), "pass": 7, "loss_variant": {},
                           "sites": [{"family": 10, "line": 3}]})
    # pass 10 finds family 9 where projections feed attention: a class whose exercised lines spell it
    attends = tmp_path / "a.py"
    attends.write_text("import torch\n\n\ndef f(x):\n    return torch.softmax(x, -1)\n", encoding="utf-8")
    record = {**_record(path, "Plain", at["Plain"]), "pass": 9, "loss_variant": {}}
    assert not needs_work(record)
    assert needs_work({**record, "executed": {str(attends): [5]}})


def test_a_distribution_with_nothing_to_redo_is_marked_without_running(tmp_path: Path) -> None:
    from oracle.upgrade import upgrade_quietly

    path = tmp_path / "m.py"
    path.write_text(MODEL, encoding="utf-8")
    line = next(i for i, ln in enumerate(MODEL.splitlines(), 1) if ln.startswith("class Plain("))
    results = tmp_path / "results"
    for dist, name in (("quiet", "Plain"), ("busy", "LM")):
        (results / dist).mkdir(parents=True)
        (results / dist / f"m.{name}.json").write_text(json.dumps(_record(path, name, line if name == "Plain" else 5)),
                                                        encoding="utf-8")
        (results / dist / "_done.json").write_text(json.dumps({"dist": dist}), encoding="utf-8")
    assert upgrade_quietly(results) == (1, 1)
    assert done(results / "quiet") and not done(results / "busy")
    record = json.loads((results / "quiet" / "m.Plain.json").read_text(encoding="utf-8"))
    assert record["pass"] == PASS and record["loss_variant"] == {"arguments": [], "traced": False}
    assert json.loads((results / "quiet" / "_done.json").read_text(encoding="utf-8"))["digests"] == {
        str(path): stale.digest(path)}


def test_a_distribution_cut_short_by_a_smaller_cap_is_run_again_with_a_larger_one(tmp_path: Path) -> None:
    meta = {"dist": "pkg", "pass": PASS, "attempted": 50}  # written before the cap was recorded: 50
    (tmp_path / "_done.json").write_text(json.dumps(meta), encoding="utf-8")
    assert done(tmp_path, 50)
    assert not done(tmp_path, 150)
    (tmp_path / "_done.json").write_text(json.dumps({**meta, "attempted": 150, "max_classes": 150}), encoding="utf-8")
    assert done(tmp_path, 150) and not done(tmp_path, 300)
    # every class was attempted below the cap: nothing more to run, whatever the cap
    (tmp_path / "_done.json").write_text(json.dumps({**meta, "attempted": 12}), encoding="utf-8")
    assert done(tmp_path, 300)


def test_a_distribution_with_a_module_that_did_not_import_is_imported_again(tmp_path: Path) -> None:
    from oracle.upgrade import upgrade_quietly

    results = tmp_path / "results"
    for dist, imports in (("imported", {"a": "ok"}), ("failed", {"a": "ok", "b": "OSError: Could not load"})):
        (results / dist).mkdir(parents=True)
        (results / dist / "_imports.json").write_text(json.dumps(imports), encoding="utf-8")
        (results / dist / "_done.json").write_text(json.dumps({"dist": dist, "pass": 5}), encoding="utf-8")
    assert upgrade_quietly(results) == (1, 1)
    assert done(results / "imported") and not done(results / "failed")


def test_what_a_distribution_declares_for_a_module_it_could_not_import(tmp_path: Path, monkeypatch) -> None:
    from oracle import install

    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
                                   "Requires-Dist: sh>=2.0.7\nRequires-Dist: einx>=0.5; extra == 'vision'\n"
                                   "Requires-Dist: numpy\n", encoding="utf-8")
    monkeypatch.setattr(install, "_site", lambda: tmp_path)
    imports = {"pkg.a": "ModuleNotFoundError: No module named 'sh'", "pkg.b": "ok",
               "pkg.c": "ModuleNotFoundError: No module named 'einx.op'",
               "pkg.d": "ModuleNotFoundError: No module named 'pkg_resources'",
               "pkg.e": "ModuleNotFoundError: No module named 'undeclared'"}
    assert install.missing_requirements("pkg", imports) == ["einx>=0.5", "setuptools<81", "sh>=2.0.7"]


def test_a_record_no_run_attempted_since_is_a_leftover_never_scored_nor_upgraded(tmp_path: Path) -> None:
    """A class record of an earlier pass beside a finished later run is a class that run did not attempt (its
    module list or class cap changed): the report leaves it out, and an upgrade from results leaves it as it is."""
    from oracle.report import load
    from oracle.upgrade import upgrade_quietly

    results = tmp_path / "results"
    folder = results / "pkg"
    folder.mkdir(parents=True)
    site = {"family": 4, "file": "m.py", "line": 3, "elsewhere": {}}
    for name, p in (("kept", PASS), ("leftover", PASS - 8), ("unnumbered", None)):
        record = {"class": name, "traced": True, "sites": [site], "executed": {}}
        if p is not None:
            record["pass"] = p
        (folder / f"pkg.{name}.json").write_text(json.dumps(record), encoding="utf-8")
    (folder / "_done.json").write_text(json.dumps({"dist": "pkg", "pass": PASS}), encoding="utf-8")
    assert [c["class"] for c in load(results)["pkg"].classes] == ["kept"]

    (folder / "_done.json").write_text(json.dumps({"dist": "pkg", "pass": PASS - 1}), encoding="utf-8")
    (folder / "pkg.kept.json").write_text(json.dumps({"class": "kept", "traced": False, "pass": PASS - 1,
                                                      "stage": "arguments"}), encoding="utf-8")
    assert [c["class"] for c in load(results)["pkg"].classes] == ["kept"]
    upgrade_quietly(results)
    passes = {json.loads(f.read_text(encoding="utf-8"))["class"]: json.loads(f.read_text(encoding="utf-8")).get("pass")
              for f in folder.glob("pkg.*.json")}
    assert passes["leftover"] == PASS - 8 and passes["unnumbered"] is None
