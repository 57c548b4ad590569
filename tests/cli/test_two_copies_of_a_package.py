"""Two copies of one package in one run (a vendored `transformers` beside another version, as the census corpora
hold) name their modules alike: `.configuration_vit.ViTConfig` is qualified as
`pkg.models.vit.configuration_vit.ViTConfig` in both. The cross-file reach cached a definition by that name alone,
so the second copy's pooler read the first copy's config: with the first copy's `pooler_act = "gelu"`, the second
copy's `"tanh"` pooler was reported as Linear -> GELU when the first copy had been checked before it, and not when
it was checked alone (helpers mech59 and mech62 saw transformers' DPT / DeiT / ViT poolers come and go with the
batch). A file's findings must not depend on which files were checked before it in the same process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jedi")

SERVER = Path(__file__).resolve().parents[2] / "server"

ACTIVATIONS = """\
from torch import nn

ACT2FN = {"gelu": nn.GELU, "tanh": nn.Tanh, "relu": nn.ReLU}
"""

CONFIG = """\
class ViTConfig:
    def __init__(self, hidden_size=768, pooler_act="{act}", **kwargs):
        self.hidden_size = hidden_size
        self.pooler_act = pooler_act
"""

MODELING = """\
from torch import nn

from ...activations import ACT2FN
from .configuration_vit import ViTConfig


class ViTPooler(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = ACT2FN[config.pooler_act]

    def forward(self, hidden_states):
        pooled = self.dense(hidden_states[:, 0])
        return self.activation(pooled)
"""


def _copy(root: Path, act: str) -> Path:
    pkg = root / "pkg"
    vit = pkg / "models" / "vit"
    vit.mkdir(parents=True)
    for folder in (pkg, pkg / "models", vit):
        (folder / "__init__.py").write_text("")
    (pkg / "activations.py").write_text(ACTIVATIONS)
    (vit / "configuration_vit.py").write_text(textwrap.dedent(CONFIG).replace("{act}", act))
    (vit / "modeling_vit.py").write_text(MODELING)
    return vit / "modeling_vit.py"


def _check(*files: Path) -> dict[str, list[int]]:
    out = subprocess.run(
        [sys.executable, "-m", "adopter", "check", "--no-cache", "--quiet", "--jobs", "1", "--format", "json",
         "--select", "f06", *map(str, files)],
        capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(SERVER), "ADOPTER_NATIVE": "0", "ADOPTER_RESULT_CACHE": "0", "PATH": "/usr/bin:/bin"})
    assert out.returncode in (0, 1), out.stderr
    lines: dict[str, list[int]] = {str(f): [] for f in files}
    for finding in json.loads(out.stdout):
        lines[finding["path"]].append(finding["range"]["start"]["line"])
    return lines


def test_a_files_findings_do_not_depend_on_the_copy_checked_before_it(tmp_path: Path) -> None:
    gelu = _copy(tmp_path / "old", "gelu")
    tanh = _copy(tmp_path / "new", "tanh")
    alone = _check(tanh)
    assert alone[str(tanh)] == []  # a tanh pooler is not Linear -> GELU
    after = _check(gelu, tanh)
    assert after[str(gelu)] == [14]  # the first copy's GELU pooler (`pooled = self.dense(...)`): the case is live
    assert after[str(tanh)] == alone[str(tanh)]
