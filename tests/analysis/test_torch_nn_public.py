"""`torch.nn.modules.<sub>.<Name>` read as `torch.nn.<Name>` (`adopter.analysis.names.torch_nn_public`): the table
against the installed torch, the spellings that reach it, and the names that keep theirs."""

from __future__ import annotations

import pkgutil

import pytest

from adopter.analysis.names.torch_nn_public import REEXPORTED, torch_nn_public

from .helpers import bindings

GRAPH_TRANSFORMER = '''from torch.nn.modules.normalization import LayerNorm
from torch.nn.modules.dropout import Dropout
import torch.nn.modules.linear as lin
from torch.nn import modules


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.normX1 = LayerNorm(d)
        self.dropoutX1 = Dropout(0.1)
        self.fc = lin.Linear(d, d)
        self.fc2 = torch.nn.modules.linear.Linear(d, d)
        self.act = modules.activation.GELU()
        self.bn = torch.nn.modules.BatchNorm1d(d)

    def forward(self, x):
        return self.normX1(x + self.dropoutX1(self.act(self.fc2(self.fc(x)))))
'''


def test_the_table_is_what_the_installed_torch_reexports() -> None:
    torch = pytest.importorskip("torch")
    import torch.nn.modules as modules

    assert set(modules.__all__) == REEXPORTED
    for name in REEXPORTED:
        assert getattr(torch.nn, name) is getattr(modules, name), name
    # every public submodule that defines or imports a re-exported name holds the same object under it; a
    # private one (`_functions`: autograd functions named like the layers, `CrossMapLRN2d`) keeps its names
    for info in pkgutil.iter_modules(modules.__path__):
        sub = __import__(f"torch.nn.modules.{info.name}", fromlist=["_"])
        for name in REEXPORTED & set(vars(sub)):
            spelled = f"torch.nn.modules.{info.name}.{name}"
            if info.name.startswith("_"):
                assert torch_nn_public(spelled) == spelled
                continue
            assert getattr(sub, name) is getattr(torch.nn, name), (info.name, name)
            assert torch_nn_public(spelled) == f"torch.nn.{name}"


def test_public_spelling() -> None:
    assert torch_nn_public("torch.nn.modules.normalization.LayerNorm") == "torch.nn.LayerNorm"
    assert torch_nn_public("torch.nn.modules.LayerNorm") == "torch.nn.LayerNorm"
    assert torch_nn_public("torch.nn.modules.module.Module.register_parameter") == "torch.nn.Module.register_parameter"
    # private bases and helpers are not re-exported; other names are not torch.nn.modules'
    for kept in ("torch.nn.modules.batchnorm._BatchNorm", "torch.nn.modules.loss._Loss",
                 "torch.nn.modules.utils._pair", "torch.nn.modules.conv", "torch.nn.LayerNorm",
                 "mylib.nn.modules.norm.LayerNorm", "torch.nn.modules.Norm.LayerNorm",
                 "torch.nn.modules._functions.CrossMapLRN2d"):
        assert torch_nn_public(kept) == kept


def test_layers_imported_from_torch_nn_modules_are_torch_nn_layers() -> None:
    callees = {b.attr: b.value.callee for b in bindings(GRAPH_TRANSFORMER)}  # type: ignore[union-attr]
    assert callees == {
        "normX1": "torch.nn.LayerNorm", "dropoutX1": "torch.nn.Dropout", "fc": "torch.nn.Linear",
        "fc2": "torch.nn.Linear", "act": "torch.nn.GELU", "bn": "torch.nn.BatchNorm1d",
    }


def test_a_private_base_and_a_local_modules_package_keep_their_names() -> None:
    code = '''from torch.nn.modules.batchnorm import _BatchNorm
from mylib.modules.normalization import LayerNorm


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = LayerNorm(d)
        self.bn = _BatchNorm(d)

    def forward(self, x):
        return self.bn(self.norm(x))
'''
    callees = {b.attr: b.value.callee for b in bindings(code)}  # type: ignore[union-attr]
    assert callees == {"norm": "mylib.modules.normalization.LayerNorm",
                       "bn": "torch.nn.modules.batchnorm._BatchNorm"}
