"""A model class split over two files: the subclass's forward calls helper methods its imported base defines
(issue 20, `idioms.inherited_methods`, `flow.foreign`).

`class Net(NetBase)` holding only `forward`, with `__init__` and the methods `forward` calls in `NetBase` of a
sibling file (torchvision's `ResNet.forward` -> `self._forward_impl(x)`, the wenet-style attention of
chatterbox-tts -> `self.forward_qkv(...)` / `self.forward_attention(...)`): the base's methods are inlined as a
same-file method is, read from the base's file (parsed, never imported), the subclass's own definitions winning.
Their ops sit at the statement of the analysed file that calls them, and a finding through them is detection-only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import adopter
from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.incremental import DocumentAnalysis
from adopter.cli import main
from adopter.dsl.types import ModuleFile
from adopter.engine import check, detect_environment, load_rules
from adopter.engine.types import Finding

# torchvision 0.29.1, torchvision/models/resnet.py:166-285 (`ResNet.__init__`, `_forward_impl`, `forward`),
# written small and split as `modeling_*_base.py`-style code does: the helper in the base, `forward` in the subclass
RESNET_BASE = '''
from torch import nn


class ResNetBase(nn.Module):
    def __init__(self, num_classes=10, width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.fc = nn.Linear(width, num_classes)

    def stem(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        return self.relu(x)

    def _forward_impl(self, x):
        x = self.stem(x)
        return self.fc(x.mean((2, 3)))
'''

RESNET = '''
from .base import ResNetBase


class ResNet(ResNetBase):
    def forward(self, x):
        return self._forward_impl(x)
'''

# chatterbox-tts 0.1.7, chatterbox/models/s3gen/transformer/attention.py:26-155 (`MultiHeadedAttention`:
# `forward_qkv`, `forward_attention`, `forward`), written small: the two helpers in the base, `forward` here
ATTENTION_BASE = '''
import torch
from torch import nn


class AttentionBase(nn.Module):
    def __init__(self, n_head, n_feat, dropout_rate=0.0):
        super().__init__()
        self.d_k = n_feat // n_head
        self.h = n_head
        self.linear_q = nn.Linear(n_feat, n_feat)
        self.linear_k = nn.Linear(n_feat, n_feat)
        self.linear_v = nn.Linear(n_feat, n_feat)
        self.linear_out = nn.Linear(n_feat, n_feat)
        self.dropout = nn.Dropout(p=dropout_rate)

    def forward_qkv(self, query, key, value):
        n_batch = query.size(0)
        q = self.linear_q(query).view(n_batch, -1, self.h, self.d_k).transpose(1, 2)
        k = self.linear_k(key).view(n_batch, -1, self.h, self.d_k).transpose(1, 2)
        v = self.linear_v(value).view(n_batch, -1, self.h, self.d_k).transpose(1, 2)
        return q, k, v

    def forward_attention(self, value, scores):
        n_batch = value.size(0)
        attn = torch.softmax(scores, dim=-1)
        p_attn = self.dropout(attn)
        x = torch.matmul(p_attn, value)
        x = x.transpose(1, 2).contiguous().view(n_batch, -1, self.h * self.d_k)
        return self.linear_out(x)
'''

ATTENTION = '''
import math

import torch

from .base import AttentionBase


class MultiHeadedAttention(AttentionBase):
    def forward(self, query, key, value):
        q, k, v = self.forward_qkv(query, key, value)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        return self.forward_attention(v, scores)
'''


def _write(root: Path, package: str, files: dict[str, str]) -> Path:
    pkg = root / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return pkg


def _reach(*roots: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(r) for r in roots]), root=str(roots[0]))


def _module(path: Path, reach: CrossFileReach) -> ModuleFile:
    return analyse(path.read_text(encoding="utf-8"), str(path), reach=reach)


def _findings(mf: ModuleFile, family: int) -> list[Finding]:
    rules = [r for r in load_rules().rules if r.family == family]
    return list(check(mf, rules, detect_environment("cpu")).findings)


def test_a_helper_method_of_the_imported_base_is_inlined(tmp_path: Path) -> None:
    pkg = _write(tmp_path, "pkg", {"base.py": RESNET_BASE, "model.py": RESNET})
    found = _findings(_module(pkg / "model.py", _reach(tmp_path)), 7)
    assert [(f.rule_id, f.scope_name, f.span.start_line) for f in found] == [("f07-conv-bn", "ResNet", 6)]
    # the site is placed at the call in model.py (`return self._forward_impl(x)`, line 7), not at base.py's lines
    assert found[0].span.end_line == 6
    assert not found[0].fixable
    assert found[0].no_fix_reason is not None and "another file" in found[0].no_fix_reason


def test_helpers_of_a_split_attention_class_are_inlined(tmp_path: Path) -> None:
    pkg = _write(tmp_path, "pkg", {"base.py": ATTENTION_BASE, "model.py": ATTENTION})
    mf = _module(pkg / "model.py", _reach(tmp_path))
    lines = len((pkg / "model.py").read_text(encoding="utf-8").splitlines())
    found = _findings(mf, 10)
    assert [f.scope_name for f in found] == ["MultiHeadedAttention"]
    assert all(s.start_line < lines for f in found for s in (f.span, *f.call_spans))
    assert not found[0].fixable and "another file" in (found[0].no_fix_reason or "")


def test_the_fix_leaves_both_files_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADOPTER_RESULT_CACHE", "0")
    pkg = _write(tmp_path, "pkg", {"base.py": RESNET_BASE, "model.py": RESNET})
    before = {p.name: p.read_text(encoding="utf-8") for p in pkg.iterdir() if p.is_file()}
    monkeypatch.chdir(tmp_path)
    assert main(["check", "pkg/model.py", "--select", "f07-conv-bn"]) == 1
    out = capsys.readouterr().out
    assert "pkg/model.py:7:" in out and "no automatic fix" in out
    main(["fix", "pkg/model.py", "--select", "f07-conv-bn", "--jobs", "1", "--no-cache"])
    assert {p.name: p.read_text(encoding="utf-8") for p in pkg.iterdir() if p.is_file()} == before


def test_the_subclass_overriding_a_helper_the_base_method_calls_wins(tmp_path: Path) -> None:
    pkg = _write(tmp_path, "pkg", {"base.py": RESNET_BASE, "model.py": '''
        from torch import nn

        from .base import ResNetBase


        class NoStem(ResNetBase):
            def stem(self, x):
                return self.relu(x)

            def forward(self, x):
                return self._forward_impl(x)
        '''})
    assert _findings(_module(pkg / "model.py", _reach(tmp_path)), 7) == []


def test_the_subclass_override_a_base_method_calls_is_read_at_its_own_lines(tmp_path: Path) -> None:
    pkg = _write(tmp_path, "pkg", {"base.py": RESNET_BASE, "model.py": '''
        from .base import ResNetBase


        class OwnStem(ResNetBase):
            def stem(self, x):
                return self.relu(self.bn1(self.conv1(x)))

            def forward(self, x):
                return self._forward_impl(x)
        '''})
    found = _findings(_module(pkg / "model.py", _reach(tmp_path)), 7)
    # the conv -> BN is written in model.py's `stem` (line 7), reached through the base's `_forward_impl`
    assert [(f.rule_id, f.scope_name, f.span.start_line) for f in found] == [("f07-conv-bn", "OwnStem", 6)]
    assert not found[0].fixable


def test_a_helper_rebound_to_a_layer_by_the_subclass_is_a_layer(tmp_path: Path) -> None:
    pkg = _write(tmp_path, "pkg", {"base.py": RESNET_BASE, "model.py": '''
        from torch import nn

        from .base import ResNetBase


        class Rebound(ResNetBase):
            def __init__(self):
                super().__init__()
                self.stem = nn.Identity()

            def forward(self, x):
                return self.fc(self.stem(x).mean((2, 3)))
        '''})
    assert _findings(_module(pkg / "model.py", _reach(tmp_path)), 7) == []


def test_a_base_of_another_package_is_not_read(tmp_path: Path) -> None:
    lib = tmp_path / "site"
    _write(lib, "library", {"base.py": RESNET_BASE})
    pkg = _write(tmp_path / "src", "pkg", {"model.py": RESNET.replace("from .base", "from library.base")})
    assert _findings(_module(pkg / "model.py", _reach(tmp_path / "src", lib)), 7) == []


def test_an_edit_of_the_base_file_changes_the_subclass_findings(tmp_path: Path) -> None:
    pkg = _write(tmp_path, "pkg", {"base.py": RESNET_BASE, "model.py": RESNET})
    reach = _reach(tmp_path)
    model = pkg / "model.py"
    assert len(_findings(DocumentAnalysis(model.read_text(encoding="utf-8"), str(model), reach=reach).result(), 7)) == 1
    base = pkg / "base.py"
    base.write_text(base.read_text(encoding="utf-8").replace("        x = self.bn1(x)\n", ""), encoding="utf-8")
    # what the server does on a save or a change on disk (`lsp.reach.files_changed`): the reach forgets what it
    # read from the file (the base's layers and the file the methods are read from), the documents start over
    assert reach.changed([str(base)])
    assert _findings(DocumentAnalysis(model.read_text(encoding="utf-8"), str(model), reach=reach).result(), 7) == []


def test_the_result_cache_entry_depends_on_the_base_file(tmp_path: Path) -> None:
    pkg = _write(tmp_path, "pkg", {"base.py": RESNET_BASE.replace("        x = self.bn1(x)\n", ""),
                                   "model.py": RESNET})
    env = {**os.environ, "ADOPTER_RESULT_CACHE": "1", "ADOPTER_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(Path(adopter.__file__).parents[1])}

    def check_model() -> subprocess.CompletedProcess[str]:  # one `adopter check` process, as a user runs it
        return subprocess.run([sys.executable, "-m", "adopter", "check", "pkg/model.py", "--select", "f07-conv-bn"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    assert check_model().returncode == 0
    (pkg / "base.py").write_text(textwrap.dedent(RESNET_BASE), encoding="utf-8")  # the base's stem gains its BN
    second = check_model()
    assert second.returncode == 1 and "pkg/model.py:7:" in second.stdout
