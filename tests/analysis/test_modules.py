"""Which classes are nn.Modules: aliases, same-file chains in any order, bases from other files."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from adopter.analysis import ModuleResolver, analyse

from .helpers import module

ALIAS_CASES = [
    ("from torch import nn", "nn.Module"),
    ("import torch.nn as nn", "nn.Module"),
    ("import torch", "torch.nn.Module"),
    ("import torch.nn", "torch.nn.Module"),
    ("from torch.nn import Module", "Module"),
    ("from torch.nn import Module as M0", "M0"),
    ("from torch import nn as tnn", "tnn.Linear"),  # subclassing a torch.nn layer is a module too
]


@pytest.mark.parametrize("imports, base", ALIAS_CASES)
def test_module_base_through_aliases(imports: str, base: str) -> None:
    mf = module(f"{imports}\nclass A({base}):\n    def __init__(self):\n        super().__init__()\n", header=False)
    assert [a.name for a in mf.architectures] == ["A"]
    assert mf.architectures[0].bases[0].startswith("torch.nn.")


def test_non_modules_are_skipped() -> None:
    src = """
    from dataclasses import dataclass
    class Config:
        pass
    class Output(dict):
        pass
    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x
    class P(nn.Parameter):
        pass
    """
    assert module(src).architectures == ()


def test_subclass_chains_in_any_order() -> None:
    src = """
    class C(B):
        pass
    class B(A):
        pass
    class A(nn.Module):
        pass
    class Loop1(Loop2):
        pass
    class Loop2(Loop1):
        pass
    """
    assert [a.name for a in module(src).architectures] == ["C", "B", "A"]


def test_unreadable_base_with_forward_counts_as_module() -> None:
    src = """
    from somewhere_not_installed import Base
    class WithForward(Base):
        def forward(self, x):
            return x
    class WithoutForward(Base):
        pass
    class Child(WithForward):
        pass
    """
    assert [a.name for a in module(src).architectures] == ["WithForward", "Child"]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_bases_from_workspace_files(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .base import PreTrained as PreTrained\n",
            "pkg/base.py": "import torch.nn as nn\nclass Mixin:\n    pass\nclass PreTrained(nn.Module, Mixin):\n    pass\n",
            "pkg/util.py": "class NotAModule:\n    pass\n",
            "pkg/models/__init__.py": "",
            "pkg/models/m.py": (
                "from ..base import PreTrained\nfrom pkg.util import NotAModule\nfrom pkg import PreTrained as P2\n"
                "class A(PreTrained):\n    pass\nclass B(NotAModule):\n    pass\nclass C(P2):\n    pass\n"
            ),
        },
    )
    path = tmp_path / "pkg/models/m.py"
    mf = analyse(path.read_text(), str(path), resolver=ModuleResolver(search_paths=[]))
    assert [a.name for a in mf.architectures] == ["A", "C"]
    assert mf.architectures[0].bases == ("pkg.base.PreTrained",)


def test_resolver_reads_files_lazily_and_caches(tmp_path: Path) -> None:
    _write(tmp_path, {"base.py": "import torch\nclass B(torch.nn.Module):\n    pass\n", "m.py": "from base import B\n"})
    reads: list[str] = []

    def reader(path: str) -> str | None:
        reads.append(path)
        p = Path(path)
        return p.read_text() if p.is_file() else None

    resolver = ModuleResolver(reader, search_paths=[str(tmp_path)])
    code = "from base import B\nclass A(B):\n    pass\n"
    for _ in range(3):
        mf = analyse(code, str(tmp_path / "m.py"), resolver=resolver)
        assert [a.name for a in mf.architectures] == ["A"]
    assert reads.count(str(tmp_path / "base.py")) == 1


def test_resolver_over_a_wheel_archive(tmp_path: Path) -> None:
    wheel = tmp_path / "lib.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("lib/__init__.py", "")
        zf.writestr("lib/modeling_utils.py", "from torch import nn\nclass PreTrainedModel(nn.Module):\n    pass\n")
        zf.writestr("lib/models/__init__.py", "")
        zf.writestr("lib/models/x/__init__.py", "")
        zf.writestr(
            "lib/models/x/modeling_x.py",
            "from ...modeling_utils import PreTrainedModel\nfrom ...activations import ACT\n"
            "class XPreTrained(PreTrainedModel):\n    pass\n",
        )
    resolver = ModuleResolver.for_archive(str(wheel))
    text = "from ...modeling_utils import PreTrainedModel\nfrom ...activations import ACT\nclass XPreTrained(PreTrainedModel):\n    pass\n"
    mf = analyse(text, "lib/models/x/modeling_x.py", resolver=resolver)
    assert [a.bases for a in mf.architectures] == [("lib.modeling_utils.PreTrainedModel",)]
