"""A pair a library model builds, which the user's module keeps and only runs, is no site of the user's
distribution (`oracle/owned.py`): the trace records where each site's ops are written (`match.written_at`: a torch
layer's construction line, any other op's own line), and the report sets apart, per family, the sites none of
whose ops is written in the distribution that owns the site's file; the user's own pairs (and pairs with one layer
of the user's) stay sites. Shaped on hezar 1.0.0 (fresh6, dev) `models/text_detection/craft/craft_text_detection.py`
lines 150-188 (torchvision's `vgg16_bn().features` re-parented into `nn.Sequential` slices by `add_module`, run
as `h = self.slice1(x)`), torchvision 0.28.0 `models/vgg.py` lines 70-83 (`make_layers`), mit-semseg 1.0.0 (dev2)
`models/models.py` lines 193-195 (a ResNet's stem conv and BN kept as attributes and called in the user's forward),
easyfsl 1.5.0 (fresh6) `modules/feat_resnet12.py` lines 27-45 (torchvision's `conv3x3` before the user's own
`nn.BatchNorm2d`), rewritten at fixture size."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from oracle.owned import library_built  # noqa: E402

USER = "/site/userpkg/model.py"
LIB = "/site/libpkg/models.py"
OWNER = {USER: "userpkg"}


def test_a_site_is_the_users_only_when_one_of_its_ops_is_written_in_the_users_files() -> None:
    container = {"family": 7, "file": USER, "line": 40, "lines": [40], "elsewhere": {LIB: [8, 9]},
                 "written": {LIB: [8, 9]}}
    assert library_built([container], "userpkg", OWNER) is True
    own = {**container, "lines": [12, 13, 40], "elsewhere": {}, "written": {USER: [12, 13]}}
    assert library_built([own], "userpkg", OWNER) is False
    # one class built the layers itself, another ran the library's: the pair is the user's where it is written
    assert library_built([container, own], "userpkg", OWNER) is False
    # the library's conv before the user's own BatchNorm: one layer of the user's keeps it a site
    mixed = {**container, "written": {LIB: [8], USER: [13]}}
    assert library_built([mixed], "userpkg", OWNER) is False


def test_results_of_an_earlier_pass_are_decided_only_when_their_lines_stay_in_their_distribution() -> None:
    earlier = {"family": 7, "file": USER, "line": 40, "lines": [12, 13, 40], "elsewhere": {}}
    assert library_built([earlier], "userpkg", OWNER) is False
    # lines in another file of the same distribution (torchgan's `acgan.py` running `dcgan.py`'s layers)
    sibling = "/site/userpkg/blocks.py"
    assert library_built([{**earlier, "elsewhere": {sibling: [3]}}], "userpkg", {**OWNER, sibling: "userpkg"}) is False
    reaching = {**earlier, "lines": [40], "elsewhere": {LIB: [8, 9]}}
    assert library_built([reaching], "userpkg", OWNER) is None
    # an undecided record beside one that shows the user's op: the user's
    assert library_built([reaching, {**earlier, "written": {USER: [12]}}], "userpkg", OWNER) is False


def _scored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, findings: list[dict[str, Any]]) -> dict[str, Any]:
    from oracle import report
    from oracle.report import Dist, score

    user = tmp_path / "userpkg" / "model.py"
    lib = tmp_path / "libpkg" / "models.py"
    for p in (user, lib):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n" * 60, encoding="utf-8")
    u, lb = str(user), str(lib)
    sites = [
        # a library's conv and BatchNorm in a container the user's forward runs (hezar's `self.slice1(x)`)
        {"family": 7, "pattern": "conv_bn", "file": u, "line": 40, "lines": [40], "elsewhere": {lb: [8, 9]},
         "written": {lb: [8, 9]}},
        # the user's own pair in a container of its own
        {"family": 7, "pattern": "conv_bn", "file": u, "line": 44, "lines": [12, 13, 44], "elsewhere": {},
         "written": {u: [12, 13]}},
        # the user's Linear before a library's GELU module
        {"family": 6, "pattern": "linear_gelu_2d", "file": u, "line": 46, "lines": [20, 46], "elsewhere": {lb: [30]},
         "written": {u: [20], lb: [30]}},
        # a library block's Linear -> GELU kept in the user's Sequential: the rule is every family's
        {"family": 6, "pattern": "linear_gelu_2d", "file": u, "line": 48, "lines": [48], "elsewhere": {lb: [31, 32]},
         "written": {lb: [31, 32]}},
        # traced before pass 14, lines in its own file only: the user's
        {"family": 7, "pattern": "conv_bn", "file": u, "line": 50, "lines": [15, 16, 50], "elsewhere": {}},
        # traced before pass 14, lines reaching the library's file: undecided, kept
        {"family": 7, "pattern": "conv_bn", "file": u, "line": 52, "lines": [52], "elsewhere": {lb: [8, 9]}},
    ]
    cls = {"class": "M", "file": u, "traced": True, "executed": {u: [40, 44, 46, 48, 50, 52]}, "sites": sites}
    monkeypatch.setattr(report, "check", lambda files: [{**f, "path": u} for f in findings])
    return score({"userpkg": Dist("userpkg", "1", classes=[cls], files={u})})


def _finding(family: int, line: int) -> dict[str, Any]:
    return {"family": family, "rule": f"f{family:02d}", "scope": "M", "statements": [[line, line]],
            "range": {"start": {"line": line, "column": 0}, "end": {"line": line, "column": 9}}}


def test_the_report_sets_library_built_pairs_apart_and_scores_the_users(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    table = _scored(monkeypatch, tmp_path, [_finding(7, 44), _finding(7, 40)])
    fam7, fam6 = table["families"][7], table["families"][6]
    assert (fam7["sites"], fam7["library_built"], fam7["undecided"]) == (3, 1, 1)
    assert (fam6["sites"], fam6["library_built"]) == (1, 1)
    assert [(s["family"], s["line"]) for s in table["library_built"]] == [(6, 48), (7, 40)]
    assert table["library_built"][1]["written"] == {str(tmp_path / "libpkg" / "models.py"): [8, 9]}
    assert {(m["family"], m["line"]) for m in table["misses"]} == {(6, 46), (7, 50), (7, 52)}
    assert fam7["found"] == 1 and table["dists"]["userpkg"]["library_built"] == 2
    # a finding at a library-built pair is judged like any finding at no site: wrong, and marked
    assert (fam7["judged"], fam7["right"]) == (2, 1)
    assert [(w["line"], w["library_built"]) for w in table["wrong"]] == [(40, True)]


def test_the_fresh_aggregate_counts_library_built_pairs_without_naming_them(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    from oracle_fresh import aggregate

    table = _scored(monkeypatch, tmp_path, [])
    figures = aggregate(table, ["userpkg"])
    assert figures["overall"]["library-built, set apart"] == 2 and figures["overall"]["undecided, kept"] == 1
    assert figures["by family"]["7"]["library_built"] == 1 and figures["by family"]["6"]["library_built"] == 1
    assert figures["per distribution"]["userpkg"]["library_built"] == 2
    assert "libpkg" not in str(figures) and "conv_bn" not in str(figures)


LIBRARY = '''from torch import nn


def make_layers(cfg, batch_norm=True):
    layers = []
    c = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(2, 2)]
        else:
            conv2d = nn.Conv2d(c, v, 3, padding=1)
            layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            c = v
    return nn.Sequential(*layers)


class TinyVGG(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = make_layers([4, "M", 8])


class Stemmed(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)


def conv3x3(a, b):
    return nn.Conv2d(a, b, 3, padding=1, bias=False)


class Mlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.act = nn.GELU()
'''

USERS = '''import torch
from torch import nn

from oracle_libpkg import Mlp, Stemmed, TinyVGG, conv3x3


class Sliced(nn.Module):
    def __init__(self):
        super().__init__()
        features = TinyVGG().features
        self.slice1 = nn.Sequential()
        for i in range(3):
            self.slice1.add_module(str(i), features[i])
        self.head = nn.Sequential(nn.Conv2d(4, 4, 1, bias=False), nn.BatchNorm2d(4))

    def forward(self, x):
        h = self.slice1(x)
        return self.head(h)


class StemAliases(nn.Module):
    def __init__(self):
        super().__init__()
        stem = Stemmed()
        self.conv1 = stem.conv1
        self.bn1 = stem.bn1

    def forward(self, x):
        return self.bn1(self.conv1(x))


class OwnNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = conv3x3(3, 4)
        self.bn1 = nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn1(self.conv1(x))


class KeptMlp(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        mlp = Mlp(d)
        self.ff = nn.Sequential(mlp.fc1, mlp.act)

    def forward(self, x):
        return self.ff(x)
'''


def _traced_sites(tmp_path: Path, name: str, x: Any) -> list[dict[str, Any]]:
    torch = pytest.importorskip("torch")
    from oracle.built import record_construction
    from oracle.match import find_sites
    from oracle.trace import trace_step

    files = {}
    for mod, text in (("oracle_libpkg", LIBRARY), ("oracle_userpkg", USERS)):
        path = tmp_path / f"{mod}.py"
        path.write_text(text, encoding="utf-8")
        files[mod] = str(path.resolve())
    sys.path.insert(0, str(tmp_path))
    try:
        for mod in files:
            sys.modules.pop(mod, None)
        spec = importlib.util.spec_from_file_location("oracle_userpkg", files["oracle_userpkg"])
        assert spec is not None and spec.loader is not None
        users = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(users)
        is_model = set(files.values()).__contains__
        stop = record_construction(is_model)
        try:
            model = getattr(users, name)()
        finally:
            stop()
        traced = trace_step(model, (x(torch),), {})
        return [s.to_json() for g in traced.graphs for s in find_sites(g, is_model)]
    finally:
        sys.path.remove(str(tmp_path))
        for mod in files:
            sys.modules.pop(mod, None)


def _line(text: str, what: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if what in ln)


def _owner(tmp_path: Path) -> dict[str, str]:
    return {str((tmp_path / "oracle_userpkg.py").resolve()): "userpkg"}


@pytest.mark.torch
@pytest.mark.slow
def test_a_library_models_pair_in_the_users_slices_is_written_in_the_library(tmp_path: Path) -> None:
    sites = {s["line"]: s for s in _traced_sites(tmp_path, "Sliced", lambda t: t.randn(2, 3, 8, 8)) if s["family"] == 7}
    sliced, head = sites[_line(USERS, "h = self.slice1(x)")], sites[_line(USERS, "return self.head(h)")]
    lib = str((tmp_path / "oracle_libpkg.py").resolve())
    user = str((tmp_path / "oracle_userpkg.py").resolve())
    # the trace places the library's pair at the user's container call; its layers were written in make_layers
    assert sliced["file"] == user
    assert sliced["written"] == {lib: [_line(LIBRARY, "conv2d = nn.Conv2d"), _line(LIBRARY, "nn.BatchNorm2d(v)")]}
    assert library_built([sliced], "userpkg", _owner(tmp_path)) is True
    # the user's own conv -> BN beside it stays the user's
    assert set(head["written"]) == {user}
    assert library_built([head], "userpkg", _owner(tmp_path)) is False


@pytest.mark.torch
@pytest.mark.slow
def test_a_library_stem_called_in_the_users_forward_is_the_librarys(tmp_path: Path) -> None:
    (site,) = [s for s in _traced_sites(tmp_path, "StemAliases", lambda t: t.randn(2, 3, 8, 8)) if s["family"] == 7]
    assert site["line"] == _line(USERS, "return self.bn1(self.conv1(x))")
    assert library_built([site], "userpkg", _owner(tmp_path)) is True


@pytest.mark.torch
@pytest.mark.slow
def test_a_library_conv_before_the_users_own_batchnorm_stays_a_site(tmp_path: Path) -> None:
    (site,) = [s for s in _traced_sites(tmp_path, "OwnNorm", lambda t: t.randn(2, 3, 8, 8)) if s["family"] == 7]
    user = str((tmp_path / "oracle_userpkg.py").resolve())
    assert _line(USERS, "self.bn1 = nn.BatchNorm2d(4)") in site["written"][user]
    assert library_built([site], "userpkg", _owner(tmp_path)) is False


@pytest.mark.torch
@pytest.mark.slow
def test_a_library_blocks_linear_gelu_kept_in_the_users_sequential_is_the_librarys(tmp_path: Path) -> None:
    (site,) = [s for s in _traced_sites(tmp_path, "KeptMlp", lambda t: t.randn(2, 8)) if s["family"] == 6]
    assert site["line"] == _line(USERS, "return self.ff(x)")
    assert library_built([site], "userpkg", _owner(tmp_path)) is True
