"""The callee check's use table read per top-level statement (`adopter.engine.file_uses`) is the table of the
whole-file walk it replaced (`_WholeFile`, the walk of `engine/called_elsewhere.py` at 2367f4ee, kept here as the
reference), and an edit re-parses only the statement it is in.

The fixtures are shaped on the files the check runs on (a fixable site in a helper): transformers 5.0.0
models/llama/modeling_llama.py:198-222 (`eager_attention_forward`, a module-level function that
`LlamaAttention.forward` names at :275 as a value and calls through `attention_interface`), torchvision 0.20.1
models/resnet.py:15 (`__all__`), :288 (`_resnet`) and :682-683 (stacked decorators at column 0 over each
builder), and the cuts that must not be made: a line at column 0 inside a string, `else:`/`except` at column 0,
a decorator whose arguments run over lines, Windows line ends; and broken texts, which raise as `ast.parse` does.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import pytest

from adopter.engine import file_uses
from adopter.engine.file_uses import PARSE_ERRORS, FileUses


class _WholeFile(ast.NodeVisitor):
    """The whole-file walk of `engine.called_elsewhere._Uses` at 2367f4ee (defs as (name, lines, class))."""

    def __init__(self, tree: ast.Module) -> None:
        self.defs: list[tuple[str, int, int, str | None]] = []
        self.names: dict[str, list[tuple[int, bool]]] = {}
        self.attrs: dict[str, list[tuple[int, bool, str | None]]] = {}
        self.bases: dict[str, set[str]] = {}
        self.exported: set[str] = set()
        self.modules = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                        if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
        self._called: set[int] = set()
        self._classes: list[tuple[str, bool]] = []
        self.visit(tree)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bases.setdefault(node.name, set()).update(
            ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases if isinstance(b, ast.Name | ast.Attribute))
        self._classes.append((node.name, True))
        self.generic_visit(node)
        self._classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        in_body = bool(self._classes) and self._classes[-1][1]
        self.defs.append((node.name, node.lineno, node.end_lineno or node.lineno,
                          self._classes[-1][0] if in_body else None))
        self._classes.append((self._classes[-1][0] if self._classes else "", False))
        self.generic_visit(node)
        self._classes.pop()

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.visit_FunctionDef(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._called.add(id(node.func))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.names.setdefault(node.id, []).append((node.lineno, id(node) in self._called))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        root = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.modules:
            pass
        elif not isinstance(node.ctx, ast.Store):
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            around = self._classes[-1][0] if own and self._classes and self._classes[-1][0] else None
            self.attrs.setdefault(node.attr, []).append((node.lineno, id(node) in self._called, around))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._exports(node.targets, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._exports([node.target], node.value)
        self.generic_visit(node)

    def _exports(self, targets: Sequence[ast.expr], value: ast.expr) -> None:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and isinstance(
                value, ast.List | ast.Tuple | ast.Set):
            self.exported.update(e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))


def _tables(uses: FileUses | _WholeFile) -> tuple[object, ...]:
    if isinstance(uses, _WholeFile):
        return ({k: v for k, v in uses.names.items()}, {k: v for k, v in uses.attrs.items() if v}, uses.defs,
                uses.bases, uses.exported)
    names = {k: uses.names_of(k) for _, t in uses.parts for k in t.names}
    attrs = {k: uses.attrs_of(k) for _, t in uses.parts for k in t.attrs}
    return names, {k: v for k, v in attrs.items() if v}, uses.defs(), uses.bases, uses.exported


LLAMA = '''"""A decoder (docstring)."""
from typing import Callable

import torch
from torch import nn

ALL_ATTENTION_FUNCTIONS = {}


def repeat_kv(hidden_states, n_rep):
    return hidden_states.repeat_interleave(n_rep, dim=1)


def eager_attention_forward(module, query, key, value, scaling, dropout=0.0, **kwargs):
    key_states = repeat_kv(key, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    return torch.matmul(attn_weights, value), attn_weights


@use_kernel_hub("attention")
class Attention(nn.Module):
    def forward(self, query, key, value):
        attention_interface: Callable = eager_attention_forward
        if self.config.impl != "eager":
            attention_interface = ALL_ATTENTION_FUNCTIONS[self.config.impl]
        return attention_interface(self, query, key, value, self.scaling)


class SdpaAttention(Attention):
    async def forward(self, query, key, value):
        return self.helper(query) + super().forward(query, key, value)


__all__ = ["Attention", "eager_attention_forward"]
'''

RESNET = '''__all__ = [
    "ResNet",
    "resnet18",
]


def _resnet(block, layers, weights, progress, **kwargs):
    model = ResNet(block, layers, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet18_Weights.IMAGENET1K_V1))
def resnet18(*, weights=None, progress=True, **kwargs):
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, progress, **kwargs)


@handle_legacy_interface(
weights=("pretrained", ResNet34_Weights.IMAGENET1K_V1),
)
def resnet34(*, weights=None, progress=True, **kwargs):
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, progress, **kwargs)
'''

# the nearest look-alikes of a statement's first line: a line at column 0 inside a string, the arms that continue
# a statement at column 0, a comment and a closing bracket at column 0
NOT_CUTS = '''try:
    import triton
except ImportError:
    triton = None
else:
    pass
finally:
    pass
if triton is None:
    def attend(x):
        return x.softmax(-1)
elif triton:
    attend = None
else:
    pass
TEMPLATE = """
def attend(x):
    return x.softmax(-2)
"""
calls = [
attend(1),
]
# a comment at column 0
class Block:
    def forward(self, x):
        return attend(x)
'''


# Functions, classes, imports and `__all__` in every statement that holds statements (the statement-only walk).
NESTED = """try:
    import a.b as ab
    def in_try(): pass
except ImportError as err:
    from c import d
    def in_except(): pass
else:
    def in_else(): pass
finally:
    class InFinally(ab.Base):
        async def method(self):
            def inner(): return self.method()
            return inner
match v:
    case 1:
        def in_case(): pass
    case _:
        import e
with open(f) as h:
    for i in range(3):
        def in_for(): pass
    else:
        while i:
            def in_while(): pass
        else:
            __all__ = ["in_while"]
            __all__ += ("in_for",)
if x:
    class K(InFinally, object):
        class Inner(K):
            def m(self): return in_case()
elif y:
    def in_elif(): pass
"""


@pytest.mark.parametrize("text", [LLAMA, RESNET, NOT_CUTS, LLAMA.replace("\n", "\r\n"), RESNET + LLAMA,
                                  "", "\n\n# only comments\n", LLAMA.rstrip("\n"), NESTED],
                         ids=["llama", "resnet", "not-cuts", "crlf", "two-files", "empty", "comments", "no-end", "nested"])
def test_the_table_read_per_statement_is_the_whole_file_walk(text: str) -> None:
    assert _tables(file_uses.file_uses(text)) == _tables(_WholeFile(ast.parse(text)))


def test_a_line_at_column_0_in_a_string_or_an_arm_is_not_a_statement() -> None:
    pieces = [piece.split("\n", 1)[0] for _, piece in file_uses._pieces(NOT_CUTS)]
    assert pieces == ["try:", "if triton is None:", 'TEMPLATE = """', "def attend(x):", '"""', "calls = [",
                      "attend(1),", "class Block:"], pieces
    uses = file_uses.file_uses(NOT_CUTS)  # the cuts in the string and the list do not parse: joined again
    assert [name for name, *_ in uses.defs()] == ["attend", "forward"]
    assert [p.split("\n", 1)[0] for p in _texts(uses, NOT_CUTS)] == ["try:", "if triton is None:",
                                                                      'TEMPLATE = """', "calls = [", "class Block:"]


def _texts(uses: FileUses, text: str) -> list[str]:
    lines = text.split("\n")
    firsts = [before for before, _ in uses.parts]
    return ["\n".join(lines[a:b]) for a, b in zip(firsts, [*firsts[1:], len(lines)])]


@pytest.mark.parametrize("broken", [
    LLAMA.replace("def repeat_kv(hidden_states, n_rep):", "def repeat_kv(hidden_states, n_rep)"),
    LLAMA.replace('__all__ = ["Attention", "eager_attention_forward"]', '__all__ = ["Attention", '),
    '"""A decoder (docstring).\n' + LLAMA.split("\n", 1)[1],
    LLAMA.replace("class SdpaAttention(Attention):", "else:\nclass SdpaAttention(Attention):"),
    RESNET.replace("def resnet34(", "x = 1\ndef resnet34("),
    LLAMA + "\0",
], ids=["first-statement", "last-statement", "open-string", "lone-else", "decorated-assignment", "null-byte"])
def test_a_text_that_does_not_parse_raises_as_the_whole_file_parse_does(broken: str) -> None:
    with pytest.raises(PARSE_ERRORS):
        ast.parse(broken)
    with pytest.raises(PARSE_ERRORS):
        file_uses.file_uses(broken)


@pytest.mark.pure_python  # counts the parses through the module's `ast`, which a compiled module binds itself
def test_an_edit_re_parses_only_the_statement_it_is_in(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = ast.parse

    def counting(source: str) -> ast.Module:
        parsed.append(source)
        return real(source)

    memo = file_uses.StatementMemo()
    file_uses.file_uses(LLAMA, memo)
    monkeypatch.setattr(file_uses.ast, "parse", counting)
    edited = LLAMA.replace("return attention_interface(self,", "return attention_interface(self,  ")
    grown = edited.replace("def repeat_kv(", "# a new line\n\ndef repeat_kv(")  # later statements move down
    for text in (edited, grown):
        parsed.clear()
        uses = file_uses.file_uses(text, memo)
        assert [p.split("\n", 1)[0] for p in parsed] == (
            ['@use_kernel_hub("attention")'] if text is edited else ["ALL_ATTENTION_FUNCTIONS = {}"]), parsed
        assert _tables(uses) == _tables(_WholeFile(real(text)))


@pytest.mark.parametrize("text", [LLAMA, RESNET, NOT_CUTS, LLAMA.replace("\n", "\r\n"), RESNET + LLAMA,
                                  "", "\n\n# only comments\n", LLAMA.rstrip("\n"), "# é\n" + LLAMA, NESTED],
                         ids=["llama", "resnet", "not-cuts", "crlf", "two-files", "empty", "comments", "no-end",
                              "non-ascii", "nested"])
def test_a_name_asked_first_is_read_as_the_whole_file_walk_reads_it(text: str) -> None:
    """Each name asked of a fresh table (nothing read before it: the uses are read only in the statements
    whose text holds the name), present or not, gives the whole-file walk's uses."""
    whole = _WholeFile(ast.parse(text))
    for name in sorted({*whole.names, *whole.attrs, "Attention", "absent", "repeat"}):
        assert file_uses.file_uses(text).names_of(name) == whole.names.get(name, []), name
        assert file_uses.file_uses(text).attrs_of(name) == whole.attrs.get(name, []), name


def test_a_non_ascii_identifier_that_stands_for_the_name_is_a_use() -> None:
    """Python reads identifiers in NFKC: `ａttend` (a full-width a) is `attend`, which the text does not hold."""
    text = ("def attend(x):\n    return x\n\n\nclass A:\n    def forward(self, x):\n"
            "        return \uff41ttend(x) + self.\uff41ttn(x)\n")
    whole = _WholeFile(ast.parse(text))
    assert whole.names["attend"] == [(7, True)] and whole.attrs["attn"] == [(7, True, "A")]
    assert file_uses.file_uses(text).names_of("attend") == [(7, True)]
    assert file_uses.file_uses(text).attrs_of("attn") == [(7, True, "A")]


@pytest.mark.pure_python  # counts the parses through the module's `ast`, which a compiled module binds itself
def test_uses_are_read_only_in_the_statements_that_hold_the_name(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = ast.parse

    def counting(source: str, *args: Any, **kwargs: Any) -> ast.Module:
        parsed.append(source)
        return real(source, *args, **kwargs)

    uses = file_uses.file_uses(LLAMA)
    monkeypatch.setattr(file_uses.ast, "parse", counting)
    assert uses.names_of("absent") == [] and uses.attrs_of("absent") == [] and parsed == []
    assert uses.names_of("eager_attention_forward") == [(24, False)]  # stored as a value in `forward`
    assert [p.split("\n", 1)[0] for p in parsed] == ["def eager_attention_forward(module, query, key, value, "
                                                    "scaling, dropout=0.0, **kwargs):", '@use_kernel_hub("attention")',
                                                    "__all__ = [\"Attention\", \"eager_attention_forward\"]"], parsed


@pytest.mark.pure_python  # counts the parses through the module's `ast`, which a compiled module binds itself
def test_a_name_inside_a_longer_identifier_is_no_use(monkeypatch: pytest.MonkeyPatch) -> None:
    text = ("class A:\n    def _attn(self, x):\n        return x\n\n\nclass B:\n    def forward(self, x):\n"
            "        return self._attn_implementation(x) + self.my_attn + _attn2\n\n\n"
            "class C:\n    def forward(self, x):\n        return self._attn(x)\n")
    whole = _WholeFile(ast.parse(text))
    parsed: list[str] = []
    real = ast.parse

    def counting(source: str, *args: Any, **kwargs: Any) -> ast.Module:
        parsed.append(source)
        return real(source, *args, **kwargs)

    uses = file_uses.file_uses(text)
    monkeypatch.setattr(file_uses.ast, "parse", counting)
    assert uses.attrs_of("_attn") == whole.attrs["_attn"] == [(13, True, "C")]
    assert [p.split("\n", 1)[0] for p in parsed] == ["class A:", "class C:"]  # `class B` is not read
    assert uses.names_of("_attn") == [] and "_attn" not in whole.names
