"""A subclass of a class defined in another file inherits the layers that base's `__init__` builds (issue 20).

A base of the same file already gave its bindings (the same-file MRO); a base imported from another file gave
nothing, so a subclass that overrides only `forward` had no layers and no chain of its forward was found: the
shape of transformers' modular subclasses, mmseg/mmpretrain blocks and torchvision's quantizable blocks
(`QuantizableBasicBlock(BasicBlock)`). The base is read as a class of the analysed file is (its file parsed,
never imported), its bindings placed at the subclass's header with an origin naming the base's file and line;
findings that rest on them are detection-only (the fix would have to rewrite the base's file)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.cli import main
from adopter.dsl.types import Ctor, ModuleFile
from adopter.engine import check, detect_environment, load_rules
from adopter.engine.types import Finding

LAYER = '''
from torch import nn


class Layer(nn.Module):
    def __init__(self, d, p=0.1):
        super().__init__()
        self.linear = nn.Linear(d, d)
        self.dropout1 = nn.Dropout(p)
        self.norm1 = nn.LayerNorm(d)

    def forward(self, x):
        return x
'''

MINE = '''
from torch import nn

from .base import Layer


class Mine(Layer):
    def forward(self, x):
        y = self.linear(x)
        x = x + self.dropout1(y)
        return self.norm1(x)
'''

# torchvision's resnet block and its quantizable subclass (models/quantization/resnet.py), written small
BLOCK = '''
from torch import nn


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + x)
'''

QUANTIZABLE = '''
from torch import nn
from torch.ao.nn.quantized import FloatFunctional

from .resnet import BasicBlock


class QuantizableBasicBlock(BasicBlock):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_relu = FloatFunctional()

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        return self.add_relu.add_relu(out, identity)


class NoNorm(BasicBlock):
    def __init__(self, inplanes, planes):
        super().__init__(inplanes, planes)
        self.bn1 = nn.Identity()
        self.bn2 = nn.Identity()

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.bn2(self.conv2(out)) + x
'''


def _write(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return pkg


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _findings(path: Path, reach: CrossFileReach, family: int) -> list[Finding]:
    mf = analyse(path.read_text(encoding="utf-8"), str(path), reach=reach)
    rules = [r for r in load_rules().rules if r.family == family]
    return list(check(mf, rules, detect_environment("cpu")).findings)


def _init(mf: ModuleFile, name: str) -> dict[str, Ctor]:
    arch = next(a for a in mf.architectures if a.name == name)
    assert arch.init is not None
    return {b.attr: b.value for b in arch.init.bindings if isinstance(b.value, Ctor)}


def test_a_subclass_of_an_imported_layer_gets_its_layers(tmp_path: Path) -> None:
    pkg = _write(tmp_path, {"base.py": LAYER, "model.py": MINE})
    reach = _reach(tmp_path)
    mf = analyse((pkg / "model.py").read_text(encoding="utf-8"), str(pkg / "model.py"), reach=reach)
    layers = _init(mf, "Mine")
    assert {a: c.callee for a, c in layers.items()} == {
        "linear": "torch.nn.Linear", "dropout1": "torch.nn.Dropout", "norm1": "torch.nn.LayerNorm"}
    assert layers["norm1"].origin == "inherited from Layer (pkg/base.py:5)"
    arch = next(a for a in mf.architectures if a.name == "Mine")
    assert arch.init is not None and {b.span.start_line for b in arch.init.bindings} == {6}  # `class Mine(Layer):`
    found = _findings(pkg / "model.py", reach, 5)
    assert [(f.rule_id, f.span.start_line) for f in found] == [("f05-dropout-add-layernorm", 9)]
    assert not found[0].fixable
    assert found[0].no_fix_reason is not None and "another file" in found[0].no_fix_reason
    assert all(s.start_line < 11 for f in found for s in (f.span, *f.init_spans))  # lines of model.py


def test_a_quantizable_block_gets_its_bases_conv_bn(tmp_path: Path) -> None:
    pkg = _write(tmp_path, {"resnet.py": BLOCK, "quantization.py": QUANTIZABLE})
    found = _findings(pkg / "quantization.py", _reach(tmp_path), 7)
    by_class: dict[str, int] = {}
    for f in found:
        by_class[f.scope_name.split(".")[0]] = by_class.get(f.scope_name.split(".")[0], 0) + 1
    # the subclass's own bindings win: `bn = nn.Identity()` leaves no conv -> BN
    assert by_class == {"QuantizableBasicBlock": 2}


def test_a_base_that_cannot_be_read_changes_nothing(tmp_path: Path) -> None:
    pkg = _write(tmp_path, {"base.py": LAYER, "model.py": '''
        from missing.layers import Unknown

        from .base import Layer


        class Lost(Unknown):
            def forward(self, x):
                return self.norm1(x + self.dropout1(x))


        class Second(Unknown, Layer):
            def forward(self, x):
                return self.norm1(x + self.dropout1(x))
        '''})
    found = _findings(pkg / "model.py", _reach(tmp_path), 5)
    assert [f.scope_name.split(".")[0] for f in found] == ["Second"]  # read through its second base


def test_a_cycle_of_imports_ends(tmp_path: Path) -> None:
    pkg = _write(tmp_path, {
        "a.py": '''
            from torch import nn

            from .b import B


            class A(B):
                def forward(self, x):
                    return self.norm1(x + self.dropout1(x))


            class Base(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.dropout1 = nn.Dropout(0.1)
                    self.norm1 = nn.LayerNorm(d)
            ''',
        "b.py": '''
            from .a import A, Base


            class B(Base):
                pass


            class C(A):
                def forward(self, x):
                    return self.norm1(x + self.dropout1(x))
            ''',
        "c.py": '''
            from .d import D


            class E(D):
                def forward(self, x):
                    return self.norm1(x + self.dropout1(x))
            ''',
        "d.py": '''
            from .c import E


            class D(E):
                pass
            ''',
    })
    reach = _reach(tmp_path)
    assert [f.scope_name.split(".")[0] for f in _findings(pkg / "a.py", reach, 5)] == ["A"]  # A(B(Base)) across files
    assert [f.scope_name.split(".")[0] for f in _findings(pkg / "b.py", reach, 5)] == ["C"]
    assert _findings(pkg / "c.py", reach, 5) == []  # E(D(E)): no layers, and no hang


def test_an_edit_of_the_base_file_is_seen_after_changed(tmp_path: Path) -> None:
    pkg = _write(tmp_path, {"base.py": LAYER, "model.py": MINE})
    reach = _reach(tmp_path)
    assert len(_findings(pkg / "model.py", reach, 5)) == 1
    base = pkg / "base.py"
    base.write_text(base.read_text(encoding="utf-8").replace("nn.LayerNorm(d)", "nn.Identity()"), encoding="utf-8")
    assert len(_findings(pkg / "model.py", reach, 5)) == 1  # not told yet: the cached reading
    assert reach.changed([str(base)])
    assert _findings(pkg / "model.py", reach, 5) == []


def test_fix_leaves_a_site_on_inherited_layers_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADOPTER_RESULT_CACHE", "0")
    pkg = _write(tmp_path, {"base.py": LAYER, "model.py": MINE})
    before = {p.name: p.read_text(encoding="utf-8") for p in pkg.iterdir()}
    monkeypatch.chdir(tmp_path)
    assert main(["check", "pkg/model.py", "--select", "f05-dropout-add-layernorm"]) == 1
    out = capsys.readouterr().out
    assert "pkg/model.py:10:" in out and "no automatic fix" in out and "Layer (pkg/base.py:5)" in out
    main(["fix", "pkg/model.py", "--select", "f05-dropout-add-layernorm"])
    capsys.readouterr()
    assert {p.name: p.read_text(encoding="utf-8") for p in pkg.iterdir()} == before


TORCH_LAYER = '''
import torch
from torch import nn


class PostNormLayer(nn.TransformerEncoderLayer):
    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = src
        x = x + self.dropout1(self.self_attn(x, x, x, attn_mask=src_mask, need_weights=False)[0])
        x = self.norm1(x)
        x = self.norm2(x + self.dropout2(self.linear2(self.dropout(torch.relu(self.linear1(x))))))
        return x


class Padded(nn.Conv2d):
    def forward(self, x):
        return self._conv_forward(nn.functional.pad(x, (1, 1, 1, 1)), self.weight, self.bias)
'''


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch's source is not installed")
def test_a_subclass_of_torchs_transformer_layer_reads_torchs_source(tmp_path: Path) -> None:
    """docling-ibm-models' and tabicl's shape: torch's layer read from its installed file (never imported), its
    layers only (`norm_first` and the other flags are not taken); a conv subclass gets no bindings at all."""
    model = tmp_path / "model.py"
    model.write_text(textwrap.dedent(TORCH_LAYER), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(), root=str(tmp_path))
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    layers = _init(mf, "PostNormLayer")
    assert {a: c.callee for a, c in layers.items() if a.startswith(("norm", "dropout"))} == {
        "norm1": "torch.nn.LayerNorm", "norm2": "torch.nn.LayerNorm", "dropout": "torch.nn.Dropout",
        "dropout1": "torch.nn.Dropout", "dropout2": "torch.nn.Dropout"}
    origin = layers["norm1"].origin or ""
    assert origin.startswith("inherited from TransformerEncoderLayer (") and "torch/nn/modules/transformer.py:" in origin
    arch = next(a for a in mf.architectures if a.name == "PostNormLayer")
    assert arch.init is not None and all(isinstance(b.value, Ctor) for b in arch.init.bindings)
    padded = next(a for a in mf.architectures if a.name == "Padded")
    assert padded.init is None or not any((getattr(b.value, "origin", None) or "").startswith("inherited")
                                          for b in padded.init.bindings)
    found = _findings(model, reach, 5)
    assert sorted(f.span.start_line for f in found) == [8, 10]  # the two dropout -> add -> norm of the forward
    assert all(not f.fixable for f in found)


def test_the_language_servers_deferred_reach_reads_the_base_once_resolved(tmp_path: Path) -> None:
    """The server's reach never waits for a look-up: the base is queued, then read on the next analysis."""
    pkg = _write(tmp_path, {"base.py": LAYER, "model.py": MINE})
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), deferred=True, root=str(tmp_path))
    assert _findings(pkg / "model.py", reach, 5) == []
    assert reach.has_pending() and reach.resolve_pending() >= 1
    assert len(_findings(pkg / "model.py", reach, 5)) == 1


MIXED = '''
from torch import nn

from .base import Layer


class Mine(Helpers, Layer):
    def forward(self, x):
        y = self.linear(x)
        x = x + self.dropout1(y)
        return self.norm1(x)


class Helpers:  # below its subclass: the edit moves no line of Mine
    pass
'''


def test_a_same_file_base_that_gains_the_called_methods_re_reads_the_subclass(tmp_path: Path) -> None:
    """Whether the forward's `self.x(...)` calls are methods of a same-file base decides whether the bases of
    other files are read at all: an edit that only adds those methods to the same-file base leaves the
    subclass's text unchanged, yet its analysis must equal a fresh one (no inherited layers any more)."""
    from adopter.analysis.incremental import DocumentAnalysis

    from .helpers import strictly_equal

    pkg = _write(tmp_path, {"base.py": LAYER, "mine.py": MIXED})
    path = str(pkg / "mine.py")
    doc = DocumentAnalysis(textwrap.dedent(MIXED), path, reach=_reach(tmp_path))
    assert "linear" in _init(doc.result(), "Mine")
    methods = "\n".join(f"    def {m}(self, x):\n        return x\n" for m in ("linear", "dropout1", "norm1"))
    text = doc.text
    at = text.index("    pass\n")
    line = text[:at].count("\n")
    doc.edit((line, 0), (line + 1, 0), methods)
    got, fresh = doc.result(), analyse(doc.text, path, reach=_reach(tmp_path))
    assert next(a for a in fresh.architectures if a.name == "Mine").init is None
    assert got == fresh
    assert strictly_equal(got, fresh)
