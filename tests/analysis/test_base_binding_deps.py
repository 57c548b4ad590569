"""A class whose analysis only asks whether a same-file base is imported (its constructors' classes subclass it,
or its own bases do) depends on what that base name is bound to, not on the base's whole text: editing a
method of the base that nothing reads re-analyses nothing, and every result stays equal to a fresh analysis."""

from __future__ import annotations

from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.incremental import DocumentAnalysis

SOURCE = '''\
import torch
from torch import nn
from transformers import PreTrainedModel


class Pretrained(PreTrainedModel):
    def _init_weights(self, module):
        module.weight.data.normal_(mean=0.0, std=0.02)

    def _shift(self, ids):
        return ids.roll(1, dims=-1)


class Stack(Pretrained):
    def __init__(self, config):
        super().__init__(config)
        self.fc = nn.Linear(4, 4)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.fc(x))


class Model(Pretrained):
    def __init__(self, config):
        super().__init__(config)
        self.encoder = Stack(config)

    def forward(self, x):
        return self.encoder(x)


class Shifted(Pretrained):
    def __init__(self, config):
        super().__init__(config)
        self.encoder = Stack(config)

    def forward(self, ids):
        return self.encoder(self._shift(ids))
'''


def _replace(doc: DocumentAnalysis, old: str, new: str) -> str:
    text = doc.text.replace(old, new, 1)
    assert text != doc.text
    doc.update(text)
    return text


def _reach(tmp_path: Path) -> CrossFileReach:
    return CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def test_editing_a_base_method_nothing_reads_reanalyses_no_subclass_user(tmp_path: Path) -> None:
    doc = DocumentAnalysis(SOURCE, str(tmp_path / "m.py"), reach=_reach(tmp_path))
    doc.result()
    text = _replace(doc, "std=0.02", "std=0.05")
    assert doc.result() == analyse(text, str(tmp_path / "m.py"), reach=_reach(tmp_path))
    assert not {"class Model", "class Stack", "class Shifted"} & set(doc.reanalysed)


def test_editing_a_base_method_a_forward_calls_reanalyses_its_caller_only(tmp_path: Path) -> None:
    doc = DocumentAnalysis(SOURCE, str(tmp_path / "m.py"), reach=_reach(tmp_path))
    doc.result()
    text = _replace(doc, "ids.roll(1, dims=-1)", "ids.roll(2, dims=-1)")
    assert doc.result() == analyse(text, str(tmp_path / "m.py"), reach=_reach(tmp_path))
    assert "class Shifted" in doc.reanalysed
    assert "class Model" not in doc.reanalysed


def test_a_base_that_becomes_an_import_reanalyses_its_users(tmp_path: Path) -> None:
    doc = DocumentAnalysis(SOURCE, str(tmp_path / "m.py"), reach=_reach(tmp_path))
    doc.result()
    text = _replace(doc, "from transformers import PreTrainedModel\n",
                    "from transformers import PreTrainedModel\nfrom other import Pretrained\n")
    assert doc.result() == analyse(text, str(tmp_path / "m.py"), reach=_reach(tmp_path))
    assert {"class Model", "class Stack"} <= set(doc.reanalysed)
