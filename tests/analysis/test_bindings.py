"""__init__ scope analysis: bindings, conditions, containers, lookups, aliases, shadowing."""

from __future__ import annotations

from adopter.dsl.types import Binding, Ctor, Expr

from .helpers import arch, bindings


def summary(bs: list[Binding]) -> list[tuple[str, str, str | None]]:
    def show(v: Ctor | Expr) -> str:
        if isinstance(v, Expr):
            return f"={v.text}"
        text = v.callee + (f"[{v.lookup}]" if v.lookup else "")
        if v.items:
            text += "{" + ", ".join(show(i) for i in v.items) + "}"
        if v.keys:
            text += "keys" + repr(v.keys)
        if v.repeat:
            text += f" x {v.repeat}"
        return text

    return [(b.attr, show(b.value), b.condition) for b in bs]


def init(body: str, *, extra: str = "", name: str = "M") -> list[tuple[str, str, str | None]]:
    indented = "\n".join("        " + ln for ln in body.splitlines())
    src = f"{extra}\nclass {name}(nn.Module):\n    def __init__(self, config, n=2):\n        super().__init__()\n{indented}\n"
    return summary(bindings(src, name))


def test_plain_bindings_and_arguments() -> None:
    a = arch(
        "class M(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n"
        "        self.fc = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)\n"
        "        self.scale = config.d ** -0.5\n"
    )
    assert a.init is not None
    fc, scale = a.init.bindings
    assert fc.value == Ctor(
        "torch.nn.Linear", (Expr("config.hidden_size"), Expr("4 * config.hidden_size")),
        (__import__("adopter.dsl.types", fromlist=["Kwarg"]).Kwarg("bias", Expr("False")),),
    )
    assert scale.value == Expr("config.d ** -0.5") and scale.condition is None
    assert a.init.params[0].name == "config"
    assert fc.span.start_line == 7


def test_conditional_bindings_if_elif_else() -> None:
    got = init(
        "if config.kind == 'a':\n    self.act = nn.GELU()\nelif config.kind == 'b':\n    self.act = nn.ReLU()\n"
        "else:\n    self.act = nn.SiLU()"
    )
    assert got == [
        ("act", "torch.nn.GELU", "config.kind == 'a'"),
        ("act", "torch.nn.ReLU", "not (config.kind == 'a') and config.kind == 'b'"),
        ("act", "torch.nn.SiLU", "not (config.kind == 'a') and not (config.kind == 'b')"),
    ]


def test_binding_before_a_partial_if_survives_on_the_other_path() -> None:
    got = init("self.norm = nn.LayerNorm(4)\nif config.rms:\n    self.norm = RMSNorm(4)", extra="from x import RMSNorm")
    assert got == [("norm", "torch.nn.LayerNorm", "not (config.rms)"), ("norm", "x.RMSNorm", "config.rms")]


def test_nested_ifs_join_conditions() -> None:
    got = init("if config.a:\n    if config.b:\n        self.x = nn.ReLU()")
    assert got == [("x", "torch.nn.ReLU", "config.a and config.b")]


def test_later_unconditional_rebinding_shadows() -> None:
    got = init("if config.a:\n    self.x = nn.ReLU()\nself.x = nn.GELU()\nself.y = nn.Tanh()\nself.y = None")
    assert got == [("x", "torch.nn.GELU", None), ("y", "=None", None)]


def test_conditional_expression_gives_two_bindings() -> None:
    got = init("self.d = nn.Dropout(0.1) if config.train else nn.Identity()")
    assert got == [("d", "torch.nn.Dropout", "config.train"), ("d", "torch.nn.Identity", "not (config.train)")]


def test_act2fn_lookup_and_else_branch() -> None:
    got = init(
        "if isinstance(config.hidden_act, str):\n    self.act = ACT2FN[config.hidden_act]\n"
        "else:\n    self.act = config.hidden_act",
        extra="from transformers.activations import ACT2FN",
    )
    assert got == [
        ("act", "transformers.activations.ACT2FN[config.hidden_act]", "isinstance(config.hidden_act, str)"),
        ("act", "=config.hidden_act", "not (isinstance(config.hidden_act, str))"),
    ]


def test_modulelist_comprehension_and_loop_append() -> None:
    got = init(
        "self.a = nn.ModuleList([Layer(config) for _ in range(config.n)])\n"
        "self.b = nn.ModuleList()\nfor i in range(n):\n    self.b.append(Layer(config, i))\n"
        "layers = []\nfor _ in range(4):\n    layers.append(nn.Linear(2, 2))\nself.c = nn.Sequential(*layers)\n"
        "self.d = nn.ModuleList(Layer(config) for _ in range(config.n))",
        extra="class Layer(nn.Module):\n    pass",
    )
    assert got == [
        ("a", "torch.nn.ModuleList{Layer} x config.n", None),
        ("b", "torch.nn.ModuleList{Layer} x n", None),
        ("c", "torch.nn.Sequential{torch.nn.Linear} x 4", None),
        ("d", "torch.nn.ModuleList{Layer} x config.n", None),
    ]


def test_alternating_layers_in_a_loop() -> None:
    got = init(
        "self.layers = nn.ModuleList()\nfor i in range(n):\n    if i % 2:\n        self.layers.append(nn.ReLU())\n"
        "    else:\n        self.layers.append(nn.GELU())"
    )
    assert got == [("layers", "torch.nn.ModuleList{torch.nn.ReLU, torch.nn.GELU} x n", None)]


def test_sequential_and_moduledict() -> None:
    got = init(
        "self.s = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 2))\n"
        "self.o = nn.Sequential(OrderedDict([('fc', nn.Linear(2, 2)), ('act', nn.Tanh())]))\n"
        "self.d = nn.ModuleDict({'q': nn.Linear(2, 2), 'k': nn.Linear(2, 2)})\n"
        "self.e = nn.ModuleDict()\nself.e['v'] = nn.Linear(2, 2)",
        extra="from collections import OrderedDict",
    )
    assert got == [
        ("s", "torch.nn.Sequential{torch.nn.Linear, torch.nn.ReLU, torch.nn.Linear}", None),
        ("o", "torch.nn.Sequential{torch.nn.Linear, torch.nn.Tanh}keys('fc', 'act')", None),
        ("d", "torch.nn.ModuleDict{torch.nn.Linear, torch.nn.Linear}keys('q', 'k')", None),
        ("e", "torch.nn.ModuleDict{torch.nn.Linear}keys('v',)", None),
    ]


def test_local_aliases_of_classes_and_instances() -> None:
    got = init(
        "attn_cls = SelfAttention if config.fast else nn.MultiheadAttention\nself.attn = attn_cls(config)\n"
        "layer = nn.Linear(2, 2)\nself.fc = layer",
        extra="class SelfAttention(nn.Module):\n    pass",
    )
    assert got == [
        ("attn", "SelfAttention", "config.fast"),
        ("attn", "torch.nn.MultiheadAttention", "not (config.fast)"),
        ("fc", "torch.nn.Linear", None),
    ]


def test_local_alias_assigned_in_branches() -> None:
    got = init("if config.fast:\n    cls = nn.GELU\nelse:\n    cls = nn.ReLU\nself.act = cls()")
    assert got == [("act", "torch.nn.GELU", "config.fast"), ("act", "torch.nn.ReLU", "not (config.fast)")]


def test_super_init_of_same_file_base_and_helper_methods() -> None:
    src = """
    class Base(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.q = nn.Linear(2, 2)

    class Child(Base):
        def __init__(self, config):
            super().__init__(config)
            self._build(config)

        def _build(self, config):
            self.k = nn.Linear(2, 2)
    """
    got = summary(bindings(src, "Child"))
    assert got == [("q", "torch.nn.Linear", None), ("k", "torch.nn.Linear", None)]


def test_qualified_ctor_through_imports_and_plain_values() -> None:
    got = init(
        "self.a = modeling.BertLayer(config)\nself.b = math.sqrt(4)\nself.c = torch.zeros(3)\n"
        "self.p = nn.Parameter(torch.ones(3))\nself.e = F.gelu",
        extra="from transformers.models.bert import modeling_bert as modeling",
    )
    assert got == [
        ("a", "transformers.models.bert.modeling_bert.BertLayer", None),
        ("b", "=math.sqrt(4)", None),
        ("c", "=torch.zeros(3)", None),
        ("p", "torch.nn.Parameter", None),
        ("e", "=torch.nn.functional.gelu", None),  # an activation function, qualified (test_function_values)
    ]


def test_tuple_and_chained_targets() -> None:
    got = init("self.a, self.b = nn.ReLU(), nn.Tanh()\nself.c = self.d = nn.GELU()")
    assert got == [
        ("a", "torch.nn.ReLU", None),
        ("b", "torch.nn.Tanh", None),
        ("c", "torch.nn.GELU", None),
        ("d", "torch.nn.GELU", None),
    ]


def test_unpacking_pairs_like_forward_does() -> None:
    # The walk `forward`'s data flow uses: a list pattern unpacks element by element too, and a target
    # whose names do not match the display one for one binds nothing it cannot tell.
    got = init("[self.a, self.b] = nn.ReLU(), nn.Tanh()\nself.c, self.d = nn.GELU(), nn.SiLU(), nn.ELU()")
    assert got == [("a", "torch.nn.ReLU", None), ("b", "torch.nn.Tanh", None)]
