"""The reach reads what an imported `nn.Sequential` subclass or builder holds (`reach._sequential`) only for a
definition whose own shape lets it hold items (`builders.may_hold_sequential`): for any other (a module with a
`forward` of its own, a class with two bases, a function that does more than return `nn.Sequential(...)`) the
answer is None whatever the call passes, and the calling file is not parsed whole with `ast` for it (issue 22:
14 of the 210 transformers files were parsed only there). The answers, and the files noted as read, are as
before."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from adopter.analysis import analyse
from adopter.analysis.crossfile import reads
from adopter.analysis.crossfile.ast_files import ParsedFile, imports_of, toplevel_of
from adopter.analysis.crossfile.builders import may_hold_sequential, returned_sequential, sequential_items
from adopter.analysis.crossfile.reach import CrossFileReach, torch_layer
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.dsl.types import Ctor, Expr, ModuleFile

DEFINITIONS = '''
from torch import nn


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3)

    def forward(self, x):
        return self.conv(x)


class Called(nn.Sequential):
    def __call__(self, x):
        return x


class TwoBases(nn.Sequential, object):
    def __init__(self, c):
        super().__init__(nn.Conv2d(c, c, 3))


class ConvNormAct(nn.Sequential):
    def __init__(self, c):
        super().__init__(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c), nn.ReLU())


def conv_bn(c):
    return nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c))


def conv_bn_kw(c):
    return nn.Sequential(nn.Conv2d(c, c, 3), nn.BatchNorm2d(c), inplace=True)


def conv_bn_star(layers):
    return nn.Sequential(*layers)


def conv_then(c):
    block = nn.Sequential(nn.Conv2d(c, c, 3))
    return block


def empty():
    return nn.Sequential()


def abn(c):
    bn = nn.BatchNorm2d(c)
    act = nn.ReLU()
    return nn.Sequential(OrderedDict([("bn", bn), ("act", act)]))
'''

MODEL = '''
from torch import nn

from .parts import Block, ConvNormAct


class UsesBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = Block(c)

    def forward(self, x):
        return self.block(x)


class UsesSequential(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = ConvNormAct(c)

    def forward(self, x):
        return self.block(x)
'''

SHAPES = {"Block": False, "Called": False, "TwoBases": False, "ConvNormAct": True, "conv_bn": True,
          "conv_bn_kw": False, "conv_bn_star": False, "conv_then": False, "empty": False,
          "abn": True}


def _parsed() -> ParsedFile:
    tree = ast.parse(textwrap.dedent(DEFINITIONS))
    return ParsedFile(0.0, tree, imports_of(tree), toplevel_of(tree))


def _lookup(_qualified: str, _path: str) -> None:
    return None


def _items(node: ast.ClassDef | ast.FunctionDef, parsed: ParsedFile, values: list[str]) -> tuple[str, ...] | None:
    passed = ([(ast.parse(v, mode="eval").body, parsed) for v in values], {})
    if isinstance(node, ast.FunctionDef):
        return returned_sequential(node, parsed, passed, _lookup, torch_layer)
    return sequential_items(node, parsed, "parts.py", passed, _lookup, torch_layer)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_shape_test_is_false_only_where_no_call_gets_items(name: str) -> None:
    parsed = _parsed()
    node = parsed.toplevel[name]
    assert isinstance(node, ast.ClassDef | ast.FunctionDef)
    assert may_hold_sequential(node, parsed, torch_layer) is SHAPES[name]
    answers = [_items(node, parsed, values) for values in ([], ["4"], ["4", "5"], ["[nn.ReLU()]"])]
    if not SHAPES[name]:
        assert answers == [None] * len(answers)
    else:  # the readers themselves decide: one construction at least gets the items
        assert any(a is not None for a in answers)


def _package(tmp_path: Path) -> tuple[Path, CrossFileReach]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "parts.py").write_text(textwrap.dedent(DEFINITIONS), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    return model, CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))


def _bound(mf: ModuleFile, cls: str) -> Ctor | Expr:
    arch = next(a for a in mf.architectures if a.name == cls)
    assert arch.init is not None
    return next(b.value for b in arch.init.bindings if b.attr == "block")


def test_a_module_with_a_forward_does_not_parse_the_calling_file(tmp_path: Path) -> None:
    model, reach = _package(tmp_path)
    text = MODEL.replace("        self.block = ConvNormAct(c)\n", "        self.block = Block(c)\n")
    with reads.recording() as read:
        mf = analyse(text, str(model), reach=reach)
    assert str(model) not in reach._files  # the base tree parsed it here, for an answer that was None
    assert str(model) in read  # noted as read all the same
    value = _bound(mf, "UsesBlock")
    assert isinstance(value, Ctor) and value.callee.endswith("Block") and not value.items


def test_a_sequential_subclass_is_still_read_through(tmp_path: Path) -> None:
    model, reach = _package(tmp_path)
    mf = analyse(model.read_text(encoding="utf-8"), str(model), reach=reach)
    value = _bound(mf, "UsesSequential")
    assert isinstance(value, Ctor) and value.callee == "torch.nn.Sequential"
    assert [i.callee for i in value.items] == ["torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU"]
    assert str(model) in reach._files  # the calling file read for the call's values
