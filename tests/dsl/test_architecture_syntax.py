"""Table-driven tests of the architecture text: exact printed form, parsing of each construct, validation."""

from __future__ import annotations

import pytest

from adopter.dsl import (
    DslError,
    format_architecture,
    format_module_file,
    parse_architecture,
    parse_module_file,
)
from adopter.dsl.types import (
    Architecture,
    Binding,
    Branch,
    Ctor,
    Expr,
    Forward,
    Init,
    Kwarg,
    Loop,
    ModuleFile,
    Op,
    OpKind,
    Param,
    ParamKind,
    Problem,
    Ref,
    Return,
    Severity,
    Span,
)


def sp(line: int, col: int, end_line: int, end_col: int) -> Span:
    return Span(line, col, end_line, end_col)


BERT = Architecture(
    name="BertSelfAttention",
    bases=("torch.nn.Module",),
    init=Init(
        params=(Param("self"), Param("config"), Param("position_embedding_type", default="None")),
        bindings=(
            Binding("query", Ctor("torch.nn.Linear", (Expr("config.hidden_size"), Expr("self.all_head_size"))),
                    sp(14, 8, 14, 69)),
            Binding("act", Ctor("transformers.activations.ACT2FN", lookup="config.hidden_act"), sp(15, 8, 15, 50)),
            Binding("layer", Ctor("torch.nn.ModuleList", items=(Ctor("BertLayer", (Ref("config"),)),),
                                  repeat="config.num_hidden_layers"), sp(16, 8, 16, 80)),
            Binding("heads", Ctor("torch.nn.ModuleDict", items=(Ctor("torch.nn.ReLU"), Ctor("torch.nn.GELU")),
                                  keys=('"relu"', '"gelu"')), sp(17, 8, 17, 60)),
            Binding("distance_embedding",
                    Ctor("torch.nn.Embedding", (Expr("2 * config.max_position_embeddings - 1"), Expr("64"))),
                    sp(18, 12, 18, 90), condition='self.position_embedding_type == "relative_key"'),
            Binding("scale", Expr("head_dim ** -0.5"), sp(19, 8, 19, 30)),
        ),
        span=sp(11, 4, 29, 0),
    ),
    forward=Forward(
        "forward",
        (Param("self"), Param("hidden_states"), Param("attention_mask", default="None"),
         Param("args", ParamKind.VAR_POSITIONAL), Param("output_attentions", ParamKind.KEYWORD_ONLY, "False"),
         Param("kwargs", ParamKind.VAR_KEYWORD)),
        (
            Op(OpKind.MODULE, "self.query", (Ref("hidden_states"),), (), ("%1",), sp(44, 19, 44, 44), sp(44, 8, 44, 44)),
            Op(OpKind.METHOD, "transpose", (Ref("%1"), Expr("1"), Expr("2")), (), ("q",), sp(45, 8, 45, 30),
               sp(45, 8, 45, 30), via=("self._attn",)),
            Op(OpKind.OPERATOR, "@", (Ref("q"), Ref("k")), (), ("s",), sp(46, 8, 46, 20), sp(46, 8, 46, 20)),
            Branch(("attention_mask is not None",),
                   ((Op(OpKind.OPERATOR, "+", (Ref("s"), Ref("attention_mask")), (), ("s",), sp(48, 12, 48, 40),
                        sp(48, 12, 48, 40)),), ()),
                   sp(47, 8, 48, 40)),
            Op(OpKind.FUNCTION, "torch.nn.functional.softmax", (Ref("s"),), (Kwarg("dim", Expr("-1")),), ("p",),
               sp(49, 8, 49, 40), sp(49, 8, 49, 40)),
            Loop(("i", "layer"), "enumerate(self.layer)", "self.layer",
                 (Op(OpKind.MODULE, "self.layer[*]", (Ref("p"),), (), ("p",), sp(51, 12, 51, 30), sp(51, 12, 51, 30)),),
                 sp(50, 8, 51, 30)),
            Return((Ref("p"), Expr("None")), sp(52, 8, 52, 22)),
        ),
        sp(39, 4, 52, 22),
    ),
    span=sp(9, 0, 52, 22),
)

BERT_TEXT = """\
model BertSelfAttention(torch.nn.Module) @10:1-53:23 {
  init(self, config, position_embedding_type=None) @12:5-30:1 {
    query = torch.nn.Linear(config.hidden_size, self.all_head_size) @15:9-15:70
    act = transformers.activations.ACT2FN[config.hidden_act] @16:9-16:51
    layer = torch.nn.ModuleList{config.num_hidden_layers * BertLayer(config)} @17:9-17:81
    heads = torch.nn.ModuleDict{"relu": torch.nn.ReLU(), "gelu": torch.nn.GELU()} @18:9-18:61
    distance_embedding = torch.nn.Embedding(`2 * config.max_position_embeddings - 1`, 64) \
if `self.position_embedding_type == "relative_key"` @19:13-19:91
    scale = `head_dim ** -0.5` @20:9-20:31
  }
  forward(self, hidden_states, attention_mask=None, *args, output_attentions=False, **kwargs) @40:5-53:23 {
    %1 = module self.query(hidden_states) @45:20-45:45 stmt @45:9-45:45
    q = method transpose(%1, 1, 2) @46:9-46:31 via self._attn
    s = operator @(q, k) @47:9-47:21
    if `attention_mask is not None` {
      s = operator +(s, attention_mask) @49:13-49:41
    } @48:9-49:41
    p = function torch.nn.functional.softmax(s, dim=-1) @50:9-50:41
    for i, layer in `enumerate(self.layer)` over self.layer {
      p = module self.layer[*](p) @52:13-52:31
    } @51:9-52:31
    return p, None @53:9-53:23
  }
}
"""


def test_golden_print() -> None:
    assert format_architecture(BERT) == BERT_TEXT


def test_golden_parse() -> None:
    assert parse_architecture(BERT_TEXT) == BERT


def op_in(text: str) -> object:
    arch = parse_architecture(f"model M() @1:1-9:1 {{\n  forward() @1:1-9:1 {{\n    {text}\n  }}\n}}\n")
    assert arch.forward is not None
    return arch.forward.body[0]


S = sp(0, 0, 0, 1)


@pytest.mark.parametrize(
    ("text", "stmt"),
    [
        ("a = function f(x) @1:1-1:2", Op(OpKind.FUNCTION, "f", (Ref("x"),), (), ("a",), S, S)),
        ("function f() @1:1-1:2 stmt @1:1-1:2", Op(OpKind.FUNCTION, "f", (), (), (), S, S)),
        ("a, %2 = call `fn()`(%`*args`, k=`x`) @1:1-1:2",
         Op(OpKind.CALL, "fn()", (Ref("*args"),), (Kwarg("k", Expr("x")),), ("a", "%2"), S, S)),
        ("a = operator neg(x) @1:1-1:2 via self._attn, rotate_half",
         Op(OpKind.OPERATOR, "neg", (Ref("x"),), (), ("a",), S, S, ("self._attn", "rotate_half"))),
        ("a = operator |(x, True) @1:1-1:2", Op(OpKind.OPERATOR, "|", (Ref("x"), Expr("True")), (), ("a",), S, S)),
        ("a = function f(x.y, 'z', 1e-05, `a b`, %`None`) @1:1-1:2",
         Op(OpKind.FUNCTION, "f", (Expr("x.y"), Expr("'z'"), Expr("1e-05"), Expr("a b"), Ref("None")), (), ("a",), S, S)),
        ("return @1:1-1:2", Return((), S)),
        ("if a {} else {} @1:1-1:2", Branch(("a", "else"), ((), ()), S)),
        ("if a {} @1:1-1:2", Branch(("a",), ((), ()), S)),
        ("if a {} elif `b c` {} @1:1-1:2", Branch(("a", "b c"), ((), (), ()), S)),
        ("if a {} otherwise {} otherwise {} @1:1-1:2", Branch(("a",), ((), (), ()), S)),
        ("for in range {} @1:1-1:2", Loop((), "range", None, (), S)),
    ],
)
def test_statements(text: str, stmt: object) -> None:
    assert op_in(text) == stmt


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ("self, x=1", (Param("self"), Param("x", default="1"))),
        ("*, k", (Param("k", ParamKind.KEYWORD_ONLY),)),
        ("*a, k=`a b`, **kw", (Param("a", ParamKind.VAR_POSITIONAL), Param("k", ParamKind.KEYWORD_ONLY, "a b"),
                             Param("kw", ParamKind.VAR_KEYWORD))),
    ],
)
def test_params(params: str, expected: tuple[Param, ...]) -> None:
    arch = parse_architecture(f"model M() @1:1-1:2 {{ forward({params}) @1:1-1:2 {{}} }}")
    assert arch.forward is not None and arch.forward.params == expected
    assert f"forward({params.replace('`a b`', '`a b`')})" in format_architecture(arch)


@pytest.mark.parametrize(
    "value",
    [
        Branch(("a",), ((),), S),
        Branch((), ((),), S),
        Forward("f", (Param("k", ParamKind.KEYWORD_ONLY), Param("p")), (), S),
        Forward("f", (Param("kw", ParamKind.VAR_KEYWORD), Param("p")), (), S),
        Ctor("C", items=(Ctor("A"),), keys=("a", "b")),
    ],
)
def test_values_python_cannot_express_are_refused(value: object) -> None:
    forward = value if isinstance(value, Forward) else Forward("forward", (), (value,) if isinstance(value, Branch) else (), S)
    init = Init((), (Binding("x", value, S),), S) if isinstance(value, Ctor) else None
    with pytest.raises(ValueError):
        format_architecture(Architecture("M", (), init, forward, S))


def test_module_file() -> None:
    mf = ModuleFile(
        "models/bert.py",
        (BERT,),
        (Problem("syntax error", sp(3, 0, 3, 1), "models/bert.py", Severity.ERROR, "syntax"),),
        (Forward("<module>", (), (Op(OpKind.FUNCTION, "torch.optim.AdamW", (Expr("model.parameters()"),), (),
                                     ("opt",), S, S),), sp(0, 0, 9, 0)),),
    )
    text = format_module_file(mf)
    assert text.startswith("file `models/bert.py`\n\nmodel BertSelfAttention")
    assert "function `<module>`() @1:1-10:1 {" in text
    assert 'problem error "syntax error" @4:1-4:2 code syntax path `models/bert.py`' in text
    assert parse_module_file(text) == mf


def test_parse_architecture_wants_exactly_one_model() -> None:
    with pytest.raises(DslError, match="exactly one model"):
        parse_architecture(BERT_TEXT + BERT_TEXT)
    with pytest.raises(DslError, match="does not belong"):
        parse_architecture('rule r { family 1 title "t" message "m" forward { $o = f($x) } }')
