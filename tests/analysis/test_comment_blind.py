"""A comment never changes what the analysis reads (issue 20): the readings that searched a method's raw text
read its code only (`adopter.analysis.parse.code_text.code_bytes`, comments blanked to spaces). Each case is
the analysis of a text with a plain comment against the same text with a comment naming a call or a binding:
equal (on a4c764f1 each pair differed). Shaped on the dev packages where such comments occur (census in
`docs/notes/lat26.md`: a comment in a forward naming `self.<attr>(`, 144 places in 42 dev packages):

- `_calls_itself` (`flow/calls.py`): autogluon-timeseries 1.x, `timeseries/dataset/ts_dataframe.py` line 903, a
  comment in `def dropna` saying "Calling self.dropna() results in an exception": the method read as recursive,
  its parameters left unbound where it is inlined.
- `InitSource.called` (`crossfile/init_source.py`) and `inherit`'s gate (`idioms/inherited_layers.py`):
  change-detection-pytorch 0.1.x, `pspnet/decoder.py` line 73, `# features = self.aggregation_layer(...)` at the
  top of a forward; biotrainer, `models/light_attention.py` line 60, `# extraction = torch.sum(x *
  self.softmax(attention), dim=-1)`: commented-out calls of layers.
- `_caller` (`idioms/processors.py`): a commented-out alternative binding in `__init__`, as pretrainedmodels
  0.7.4 `models/cafferesnet.py` line 115 keeps `# self.layer4 = self._make_layer(...)`, in the diffusers
  processor form of `tests/engine/test_attention_processors.py`.
(`self_call_arguments`, `chains/call_arguments.py`: `tests/engine/test_comment_blind_callers.py`.)
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.analysis.parse.code_text import code_bytes, code_key, comments
from adopter.analysis.parse.source import SourceText, new_parser
from adopter.dsl.printer import format_architecture
from adopter.dsl.types import ModuleFile, Ref

from .helpers import ops

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

INLINED = HEADER + '''
class Attention(nn.Module):
    def _attn(self, q, k, d):
        scores = q @ k.transpose(-1, -2)
        COMMENT
        return torch.softmax(scores, dim=d)

    def forward(self, q, k):
        return self._attn(q, k, -1)
'''

PROCESSOR = HEADER + '''
class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        COMMENT
        self.processor = AttnProcessor()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)

    def forward(self, x):
        return self.processor(self, x)


class AttnProcessor:
    def __call__(self, attn, x):
        query = attn.to_q(x)
        key = attn.to_k(x)
        value = attn.to_v(x)
        return F.scaled_dot_product_attention(query, key, value)
'''

PARTS = '''
from torch import nn


def make_act():
    return nn.SiLU()


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = nn.Linear(d, d)
        self.norm1 = nn.LayerNorm(d)

    def forward(self, x):
        return x
'''

CALLED = '''
from torch import nn

from .parts import make_act


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = make_act()

    def forward(self, x):
        COMMENT
        return self.fc(x)
'''

INHERITED = '''
from torch import nn

from .parts import Layer


class Mine(Layer):
    def forward(self, x):
        COMMENT
        return x * 2
'''


def _printed(mf: ModuleFile, root: str = "") -> str:
    return "\n".join(format_architecture(a).replace(root, "ROOT") if root else format_architecture(a)
                     for a in (*mf.architectures, *mf.chains))


def _in_file(code: str, comment: str) -> str:
    return _printed(analyse(code.replace("COMMENT", comment), "m.py"))


def _cross_file(tmp_path: Path, model: str, comment: str) -> str:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "parts.py").write_text(textwrap.dedent(PARTS), encoding="utf-8")
    path = pkg / "model.py"
    path.write_text(model.replace("COMMENT", comment), encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    return _printed(analyse(path.read_text(encoding="utf-8"), str(path), reach=reach), str(tmp_path))


def _softmax_dim(code: str) -> str:
    forward = analyse(code, "m.py").architectures[0].forward
    assert forward is not None
    found = [s for s in ops(forward.body) if s.target.endswith("softmax")]
    value = found[-1].kwargs[0].value
    return value.name if isinstance(value, Ref) else str(getattr(value, "text", value))


def test_a_comment_naming_the_inlined_call_leaves_its_parameters_bound() -> None:
    plain = _in_file(INLINED, "# the scores, then the weights")
    assert plain == _in_file(INLINED, "# unlike self._attn(q, k, 1) of the parent")
    assert _softmax_dim(INLINED.replace("COMMENT", "# see self._attn(q, k, d)")) == "-1"  # bound through the call


def test_refusal_a_call_of_itself_written_as_code_is_recursion() -> None:
    code = INLINED.replace("COMMENT", "if d is None:\n            return self._attn(q, k, -1)")
    assert _softmax_dim(code) == "d"  # a real recursive call: the parameters stay unbound, as before


def test_a_commented_out_binding_leaves_the_processor_its_caller() -> None:
    plain = _in_file(PROCESSOR, "# the default processor")
    assert "AttnProcessor.__call__" in plain
    assert plain == _in_file(PROCESSOR, "# self.processor = AttnProcessor() by default")


def test_refusal_a_second_binding_written_as_code_leaves_no_caller() -> None:
    assert "AttnProcessor.__call__" not in _in_file(PROCESSOR, "self.processor = AttnProcessor()")


def test_a_commented_out_call_in_forward_is_no_call(tmp_path: Path) -> None:
    plain = _cross_file(tmp_path, CALLED, "# the projection")
    assert "pkg.parts.make_act()" in plain  # forward never calls `self.act`: not looked up
    assert plain == _cross_file(tmp_path, CALLED, "# x = self.act(x) before the projection")


def test_refusal_a_call_in_forward_written_as_code_is_looked_up(tmp_path: Path) -> None:
    assert "torch.nn.SiLU()" in _cross_file(tmp_path, CALLED, "x = self.act(x)")


def test_a_commented_out_call_in_forward_inherits_nothing(tmp_path: Path) -> None:
    plain = _cross_file(tmp_path, INHERITED, "# the identity, doubled")
    assert "inherited from Layer" not in plain
    assert plain == _cross_file(tmp_path, INHERITED, "# x = self.norm1(x) is the parent's")


def test_refusal_a_call_of_a_base_layer_written_as_code_inherits(tmp_path: Path) -> None:
    assert "inherited from Layer" in _cross_file(tmp_path, INHERITED, "x = self.norm1(x)")


def _src(text: str) -> SourceText:
    data = text.encode()
    return SourceText(data, new_parser().parse(data), "m.py")


def test_code_bytes_blanks_comments_only() -> None:
    text = 'def f(x):\n    # self.g(x)\n    s = "# not a comment"  # self.h(\n    return x  #\n'
    src = _src(text)
    node = src.tree.root_node.named_children[0]
    code = code_bytes(src, node)
    assert len(code) == len(src.raw(node)) and code.count(b"\n") == src.raw(node).count(b"\n")
    assert b"self.g" not in code and b"self.h" not in code and b'"# not a comment"' in code
    assert [text[a:b] for a, b in comments(src, 0, len(src.data))] == ["# self.g(x)", "# self.h(", "#"]


def test_code_key_is_equal_for_texts_that_differ_in_comments_only() -> None:
    a, b = _src("x = f(y)  # one\n# two\nz = 1\n"), _src("x = f(y)  # one more\n# three\nz = 1\n")
    assert code_key(a, 0, len(a.data)) == code_key(b, 0, len(b.data)) == b"x = f(y)  #\n#\nz = 1\n"
    # Refusals: code, a string's `#`, a comment's presence and the whitespace before it are kept.
    for other in ("x = f(z)  # one\n# two\nz = 1\n", "x = f(y)\n# two\nz = 1\n", "x = f(y)   # one\n# two\nz = 1\n",
                  'x = f("#")  # one\n# two\nz = 1\n'):
        c = _src(other)
        assert code_key(c, 0, len(c.data)) != code_key(a, 0, len(a.data))


def test_code_key_keeps_comments_that_an_expression_a_header_or_a_span_holds() -> None:
    """Only comments between statements are reduced: a comment inside an expression (its text holds it), on a
    definition's first line (`header_span` reads it) or ending a block (the block's span ends with it) stays."""
    text = ("class A(B):  # header\n    # first\n    def f(self, a):\n        # lead\n        y = g(a,  # inside\n"
            "              2)  # after\n        return y  # last\n")
    src = _src(text)
    key = code_key(src, 0, len(src.data)).decode()
    assert "# header" in key and "# inside" in key and "# last" in key
    assert "# first" not in key and "# lead" not in key and "# after" not in key
    assert key.count("#") == text.count("#")
