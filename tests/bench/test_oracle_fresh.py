"""The fresh oracle slice (bench/oracle/fresh.py, bench/oracle_fresh.py): its list keeps clear of every other set,
its root is never the shared oracle folder, and its report prints aggregates only (synthetic results)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle.fresh import FRESH, specs  # noqa: E402
from oracle.install import heldout_names  # noqa: E402
from oracle.packages import distributions  # noqa: E402


def _normal(spec: str) -> str:
    return spec.split("==")[0].replace("_", "-").replace(".", "-").lower()


def test_the_list_is_pinned_n_to_z_and_clear_of_every_other_set():
    chosen = specs()
    assert 25 <= len(chosen) <= 30
    assert len({_normal(s) for s in chosen}) == len(chosen)
    assert all(s.count("==") == 1 and s.split("==")[1] for s in chosen), "every spec pinned"
    assert all(s[0].lower() in "nopqrstuvwxyz0123456789" for s in chosen)
    others = {_normal(d) for d in distributions()} | {"transformers"}
    for module in ("heldout_corpus", "realworld_corpus", "dev2_corpus"):
        names = heldout_names((REPO / "bench" / f"{module}.py").read_text(encoding="utf-8"))
        assert names, module
        others |= {_normal(n) for n in names}
    assert not {_normal(s) for s in chosen} & others


def test_the_domains_are_interleaved_so_a_short_run_covers_each():
    first = specs()[: len(FRESH)]
    assert [next(d for d, g in FRESH.items() if s in g) for s in first] == list(FRESH)
    assert len(FRESH) >= 8


def test_the_shared_oracle_folder_is_refused(monkeypatch: pytest.MonkeyPatch):
    from oracle_fresh import SHARED_ROOT, oracle_root

    monkeypatch.delenv("ADOPTER_ORACLE_ROOT", raising=False)
    with pytest.raises(SystemExit):
        oracle_root(str(SHARED_ROOT))
    monkeypatch.setenv("ADOPTER_ORACLE_ROOT", str(SHARED_ROOT / "." ))
    with pytest.raises(SystemExit):
        oracle_root(None)
    monkeypatch.delenv("ADOPTER_ORACLE_ROOT")
    assert oracle_root(None) == (REPO / ".cache" / "fresh").resolve()


SECRET = "zzsecretmodel"


def _results(root: Path) -> None:
    """One finished distribution, one traced class with two oracle sites in a file no rule matches (two misses)."""
    model = root / "site" / f"{SECRET}.py"
    model.parent.mkdir(parents=True)
    model.write_text("import torch\n\n\nclass Qq(torch.nn.Module):\n    def forward(self, x):\n"
                     "        return x + 1\n", encoding="utf-8")
    folder = root / "results" / "somedist"
    folder.mkdir(parents=True)
    f = str(model.resolve())
    sites = [{"family": fam, "file": f, "line": 6, "lines": [6], "pattern": f"{SECRET}_pattern"} for fam in (6, 10)]
    (folder / "Qq.json").write_text(json.dumps({"file": f, "class": "Qq", "constructed": True, "traced": True,
                                                "executed": {f: [6]}, "sites": sites}), encoding="utf-8")
    (folder / "_imports.json").write_text(json.dumps({f"{SECRET}.a": "ok", f"{SECRET}.b": f"ModuleNotFoundError: "
                                                      f"No module named '{SECRET}x'"}), encoding="utf-8")
    (folder / "_done.json").write_text(json.dumps({"version": "1.0", "files": [f]}), encoding="utf-8")


def test_the_report_prints_aggregates_only_and_keeps_the_misses_in_its_root(tmp_path: Path):
    root = tmp_path / "fresh"
    _results(root)
    out = tmp_path / "aggregate.json"
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import oracle_fresh; "
            "oracle_fresh.report(Path(sys.argv[2]), Path(sys.argv[3]), ['somedist', 'notrun'])")
    env = dict(os.environ, PYTHONPATH=str(REPO / "server"), ADOPTER_NATIVE="0")
    env.pop("ADOPTER_ORACLE_RESULTS", None)
    proc = subprocess.run([sys.executable, "-c", code, str(REPO / "bench"), str(root), str(out)],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = proc.stdout + proc.stderr + out.read_text(encoding="utf-8")
    assert SECRET not in printed and "Qq" not in printed and "site" not in printed.replace("sites", "")
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["overall"]["oracle sites"] == 2 and figures["overall"]["found"] == 0
    assert figures["per distribution"]["somedist"]["sites"] == 2 and figures["not finished"] == ["notrun"]
    assert figures["module imports"] == {"ok": 1, "ModuleNotFoundError": 1}
    assert figures["by family"]["6"]["sites"] == 1 and figures["by family"]["10"]["sites"] == 1
    full = json.loads((root / "report-full.json").read_text(encoding="utf-8"))
    assert len(full["misses"]) == 2 and all(SECRET in m["file"] for m in full["misses"])


def test_the_aggregate_holds_no_string_from_the_sites():
    from oracle_fresh import aggregate

    table = {"families": {6: {"sites": 3, "found": 2, "judged": 2, "right": 2, "unjudged": 1}}, "classes": 5,
             "constructed": 4, "traced": 3, "backward": 1, "failures": {"construct": 1},
             "dists": {"d": {"install": "ok", "how": f"no-deps (pip: {SECRET} conflicts)", "classes": 5,
                             "import_error": f"ImportError: {SECRET}", "sites": 3, "found": 2}},
             "misses": [{"file": SECRET, "line": 9, "pattern": SECRET}], "forms": [{"form": SECRET}],
             "wrong": [{"file": SECRET}], "reasons": [(SECRET, 1)]}
    figures = aggregate(table, ["d"])
    assert SECRET not in json.dumps(figures)
    assert figures["per distribution"]["d"]["install"] == "no-deps"
    assert figures["overall"]["static recall"] == "66.7 %"
