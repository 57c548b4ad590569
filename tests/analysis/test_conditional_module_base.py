"""Model classes whose base is a module-level name bound to a torch module class on some branches of an `if`
/ `try` / conditional expression and to a placeholder on the others (`names/conditional_bases.py`).

Shaped on sktime 0.36 `sktime/networks/ltsf/layers/enc_dec.py` lines 1-13 and 62 (`nn_module = nn.Module`
under `if _check_soft_dependencies("torch")`, a dummy `class nn_module` in the `else`, layers nested in plain
classes), rwkv 0.8.28 `rwkv/model.py` lines 17-23 and 223 (`MyModule = torch.jit.ScriptModule` on one branch,
`torch.nn.Module` on the other), and the `try: ... except ImportError: Base = object` spelling of optional
dependencies. Refusals: the nearest look-alikes, where what runs is no module.
"""

from __future__ import annotations

import pytest

from .helpers import module

BODY = '''
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return torch.softmax(self.proj(x), dim=-1)
'''


def _models(code: str) -> list[str]:
    return [a.name for a in module(code, header=False).architectures]


SKTIME = '''
import torch
from skbase.utils.dependencies import _check_soft_dependencies

if _check_soft_dependencies("torch", severity="none"):
    import torch.nn as nn

    nn_module = nn.Module
else:

    class nn_module:
        """Dummy class if torch is unavailable."""


class Layer:
    def _build(self):
        return self._Layer(4)

    class _Layer(nn_module):''' + BODY

RWKV = '''
import os
import torch
import torch.nn as nn

if os.environ.get("JIT_ON") == "0":
    MyModule = torch.nn.Module
else:
    MyModule = torch.jit.ScriptModule  # the last binding, as rwkv's second `if` (line 185) leaves it


class Block(MyModule):''' + BODY

TRY_EXCEPT = '''
try:
    import torch
    import torch.nn as nn
    Base = nn.Module
except ImportError:
    Base = object


class Block(Base):''' + BODY

CHOICE = '''
import torch
import torch.nn as nn
from importlib.util import find_spec

Base = nn.Module if find_spec("torch") else None


class Mid(Base):
    pass


class Block(Mid):''' + BODY

DEFAULT_THEN_TORCH = '''
Base = object
try:
    import torch
    import torch.nn as nn
    Base = nn.Module
except ImportError:
    pass


class Mid(Base):
    pass


class Block(Mid):''' + BODY

IMPORTED = '''
try:
    import torch
    import torch.nn as nn
    from torch.nn import Module
except ImportError:
    class Module:
        pass


class Block(Module):''' + BODY


@pytest.mark.parametrize(
    "code, name",
    [(SKTIME, "Layer._Layer"), (RWKV, "Block"), (TRY_EXCEPT, "Block"), (CHOICE, "Block"), (IMPORTED, "Block"),
     (DEFAULT_THEN_TORCH, "Block")],
    ids=["sktime-if-dummy-class", "rwkv-scriptmodule-or-module", "try-except-object", "conditional-expression",
         "conditional-import", "placeholder-first"],
)
# (TRY_EXCEPT and CHOICE leave the name a plain value: the base checker read their classes as models already,
# through the `forward` fallback of an unknown base; they fix the answer for classes without that fallback.)
def test_a_class_on_a_conditionally_bound_module_base_is_a_model(code: str, name: str) -> None:
    assert name in _models(code)


# The torch class is bound only for the type checker: at run time the base is the plain class.
TYPE_CHECKING_ONLY = '''
from typing import TYPE_CHECKING
import torch
import torch.nn as nn

if TYPE_CHECKING:
    Base = nn.Module
else:
    class Base:
        pass


class Block(Base):''' + BODY

# Bound to a placeholder on every path: no branch binds a module class.
NO_MODULE_PATH = '''
import os
import torch
import torch.nn as nn

if os.environ.get("TORCH") == "1":
    class Base:
        pass
else:
    class Base:
        """Dummy."""


class Block(Base):''' + BODY

# One branch binds a class with a base of its own (not a placeholder: it runs, and it is no module).
OTHER_CLASS_BRANCH = '''
import os
import torch
import torch.nn as nn

class Mapping:
    pass


if os.environ.get("TORCH") == "1":
    Base = nn.Module
else:
    class Base(Mapping):
        pass


class Block(Base):''' + BODY


# The torch binding is on a branch, but a dummy class is bound after it on every run.
DUMMY_AFTER = '''
import os
import torch
import torch.nn as nn

if os.environ.get("TORCH") == "1":
    Base = nn.Module


class Base:
    """Always the dummy."""


class Block(Base):''' + BODY


@pytest.mark.parametrize(
    "code", [TYPE_CHECKING_ONLY, NO_MODULE_PATH, OTHER_CLASS_BRANCH, DUMMY_AFTER],
    ids=["type-checking-only", "no-module-path", "other-class-branch", "unconditional-dummy"],
)
def test_look_alikes_are_not_models(code: str) -> None:
    assert "Block" not in _models(code)


def test_a_base_that_is_a_call_result_is_not_read_as_conditional() -> None:
    from adopter.analysis.crossfile.resolver import is_torch_module_class
    from adopter.analysis.names.conditional_bases import conditional_module_bases
    from adopter.analysis.names.symbols import ModuleSymbols
    from adopter.analysis.parse.source import SourceText, new_parser

    code = b'''
import torch.nn as nn
import os

if os.environ.get("A"):
    Base = nn.Module
else:
    Base = make_base()
Other = nn.Module if os.environ.get("B") else object
'''
    src = SourceText(code, new_parser().parse(code), "m.py")
    symbols = ModuleSymbols(src, None)
    found = conditional_module_bases(src.tree.root_node, src, symbols.qualify, is_torch_module_class)
    assert found == {"Other": "torch.nn.Module"}


def test_editing_the_branch_binding_is_seen_incrementally() -> None:
    """An incremental analysis after an edit of the branch binding equals a fresh one (the answer reads every
    binding of the base name, not only the last one, the dummy), and the class is no model any more."""
    from .helpers import reanalysed_after

    for new in ("    nn_module = object", "    nn_module = make_base()"):
        _, fresh = reanalysed_after(SKTIME, "    nn_module = nn.Module", new)
        assert fresh, new
        assert "Layer._Layer" not in _models(SKTIME.replace("    nn_module = nn.Module", new))
