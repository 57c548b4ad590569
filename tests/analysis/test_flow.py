"""forward as operator sequences: hoisting, names, inlining, control flow, unpacking."""

from __future__ import annotations

import pytest

from adopter.dsl.types import Branch, Expr, Kwarg, Loop, Op, OpKind, Ref, Return

from .helpers import arch, forward_lines, module, ops, walk

# (id, forward body (inside `def forward(self, x, y, mask=None):`), expected op lines)
CASES = [
    (
        "hoisting order: nested add before the module call",
        "return self.norm(x + y)",
        ["%1 = operator +(x, y)", "%2 = module self.norm(%1)"],
    ),
    (
        "assignment target names the outer op",
        "h = self.norm(self.drop(x) + y)\nreturn h",
        ["%1 = module self.drop(x)", "%2 = operator +(%1, y)", "h = module self.norm(%2)"],
    ),
    (
        "F alias resolves to torch.nn.functional",
        "p = F.softmax(x, dim=-1)",
        ["p = function torch.nn.functional.softmax(x, dim=-1)"],
    ),
    (
        "nn.functional and the full path resolve the same",
        "a = nn.functional.softmax(x, dim=-1)\nb = torch.nn.functional.softmax(x, dim=-1)",
        [
            "a = function torch.nn.functional.softmax(x, dim=-1)",
            "b = function torch.nn.functional.softmax(x, dim=-1)",
        ],
    ),
    (
        "torch.matmul vs @ vs .matmul: one canonical op",
        "a = torch.matmul(x, y)\nb = x @ y\nc = x.matmul(y)",
        ["a = function torch.matmul(x, y)", "b = function torch.matmul(x, y)", "c = function torch.matmul(x, y)"],
    ),
    (
        "method chain: receiver first; transpose dims in order; contiguous is a cast",
        "z = x.transpose(-1, -2).contiguous()",
        ["%1 = method transpose(x, -2, -1)", "z = operator cast(%1)"],
    ),
    (
        "opaque values stay expressions",
        "z = x / math.sqrt(self.head_dim) * self.scale",
        ["%1 = operator /(x, math.sqrt(self.head_dim))", "z = operator *(%1, self.scale)"],
    ),
    (
        "size, shape and getitem are ops; dtype is metadata",
        "n = x.size(0)\nd = x.shape[-1]\nz = x.to(y.dtype)",
        [
            "n = method size(x, 0)",
            "%1 = operator getattr(x, shape)",
            "d = operator getitem(%1, -1)",
            "z = operator cast(x, y.dtype)",
        ],
    ),
    (
        "unary minus and comparisons on tensors",
        "a = -x\nb = x == 0\nc = x is None",
        ["a = operator neg(x)", "b = operator ==(x, 0)"],
    ),
    (
        "augmented assignment",
        "x += y\nx *= 2",
        ["x = operator +(x, y)", "x = operator *(x, 2)"],
    ),
    (
        "subscript assignment is setitem on the container",
        "x[mask] = 0",
        ["x = operator setitem(x, mask, 0)"],
    ),
    (
        "tuple unpacking gives several outputs",
        "a, b = x.chunk(2, dim=-1)\nq, k, v = self.qkv(x).split(64, dim=2)",
        ["a, b = method chunk(x, 2, dim=-1)", "%1 = module self.qkv(x)", "q, k, v = method split(%1, 64, dim=2)"],
    ),
    (
        "pairwise assignment names each value",
        "a, b = self.f(x), self.g(y)",
        ["a = module self.f(x)", "b = module self.g(y)"],
    ),
    (
        "pairwise swap evaluates the right side first",
        "x, y = self.f(y), self.g(x)",
        ["%1 = module self.f(y)", "%2 = module self.g(x)"],
    ),
    (
        "tuple displays with tracked values are packed",
        "z = torch.cat((x, -y), dim=-1)",
        ["%1 = operator neg(y)", "%2 = operator tuple(x, %1)", "z = function torch.cat(%2, dim=-1)"],
    ),
    (
        "*args and **kwargs are passed on",
        "return self.inner(x, *y, **mask)",
        ["%1 = module self.inner(x, *y, **=mask)"],
    ),
    (
        "with blocks are transparent",
        "with torch.no_grad():\n    z = self.f(x)",
        ["z = module self.f(x)"],
    ),
    (
        "calls with only opaque arguments of plain functions are not ops",
        "n = int(math.sqrt(self.d))\nlogger = print('hi')",
        [],
    ),
    (
        "tensor factories are ops even with opaque arguments",
        "z = torch.zeros(3, 4)",
        ["z = function torch.zeros(3, 4)"],
    ),
    (
        "walrus binds its name",
        "if (h := self.f(x)) is not None:\n    z = h",
        ["h = module self.f(x)"],
    ),
]


@pytest.mark.parametrize("code, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_forward_ops(code: str, expected: list[str]) -> None:
    body = "\n".join("        " + ln for ln in code.splitlines())
    src = f"class M(nn.Module):\n    def forward(self, x, y, mask=None):\n{body}\n"
    assert forward_lines(src) == expected


def test_module_alias_imports() -> None:
    src = """
    from torch import nn as tnn
    from torch.nn import functional
    from torch.nn import Module, Linear
    gelu = functional.gelu

    class M(Module):
        def __init__(self):
            super().__init__()
            self.fc = Linear(2, 2)
            self.fc2 = tnn.Linear(2, 2)

        def forward(self, x):
            return gelu(self.fc(x)) + functional.relu(x)
    """
    a = arch(src, header=False)
    assert a.bases == ("torch.nn.Module",)
    assert a.init is not None
    assert [b.value.callee for b in a.init.bindings] == ["torch.nn.Linear", "torch.nn.Linear"]  # type: ignore[union-attr]
    assert a.forward is not None
    assert [o.target for o in ops(a.forward.body)] == [
        "self.fc", "torch.nn.functional.gelu", "torch.nn.functional.relu", "+"
    ]


def test_relative_import_without_package_keeps_dotted_form() -> None:
    src = """
    from ...activations import ACT2FN
    from .helpers import rotate as rot

    class M(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.act = ACT2FN[config.hidden_act]

        def forward(self, x):
            return rot(self.act(x))
    """
    a = arch(src)
    assert a.init is not None and a.forward is not None
    ctor = a.init.bindings[0].value
    assert ctor.callee == "...activations.ACT2FN" and ctor.lookup == "config.hidden_act"  # type: ignore[union-attr]
    assert ops(a.forward.body)[-1].target == ".helpers.rotate"


def test_inline_method_renames_params_and_binds_return() -> None:
    src = """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(4, 4)

        def split(self, t, n):
            t = t.view(n, -1)
            return t.permute(1, 0)

        def forward(self, hidden):
            q = self.split(self.q(hidden), 2)
            return q
    """
    a = arch(src)
    assert a.forward is not None
    got = ops(a.forward.body)
    assert [(o.kind, o.target, o.outputs) for o in got] == [
        (OpKind.MODULE, "self.q", ("%1",)),
        (OpKind.METHOD, "view", ("t",)),
        (OpKind.METHOD, "permute", ("q",)),
    ]
    assert got[1].args == (Ref("%1"), Expr("2"), Expr("-1"))  # parameter `n` replaced by the argument
    assert got[2].args[0] == Ref("t")
    assert got[1].via == ("self.split",) and got[0].via == ()
    # the inlined ops carry spans of the helper's statements
    assert got[1].span.start_line == 11 and got[1].stmt_span.start_line == 11


def test_inlined_locals_do_not_clobber_caller_names() -> None:
    src = """
    class M(nn.Module):
        def helper(self, x):
            out = x * 2
            return out + 1

        def forward(self, x):
            out = self.a(x)
            y = self.helper(out)
            return out + y
    """
    lines = forward_lines(src)
    assert lines == [
        "out = module self.a(x)",
        "out_2 = operator *(out, 2)",
        "y = operator +(out_2, 1)",
        "%1 = operator +(out, y)",
    ]


def test_module_level_helper_inlined_with_via_chain() -> None:
    src = """
    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary(q, cos, sin):
        return (q * cos) + (rotate_half(q) * sin)

    class M(nn.Module):
        def forward(self, q, cos, sin):
            q = apply_rotary(q, cos, sin)
            return q
    """
    a = arch(src)
    assert a.forward is not None
    got = ops(a.forward.body)
    assert [o.target for o in got] == ["*", "getitem", "getitem", "neg", "tuple", "torch.cat", "*", "+"]
    assert got[1].via == ("apply_rotary", "rotate_half")
    assert got[-1].outputs == ("q",)
    assert got[1].args[1] == Expr("..., : q.shape[-1] // 2")  # callee text in the caller's names
    # helpers are still analysed as functions of their own
    mf = module(src)
    assert {f.name for f in mf.functions} >= {"rotate_half", "apply_rotary"}


def test_recursion_is_cut_and_depth_bounded() -> None:
    src = """
    def f(x):
        return f(x) + 1

    class M(nn.Module):
        def a(self, x):
            return self.b(x) * 2

        def b(self, x):
            return self.a(x) - 1

        def forward(self, x):
            return self.a(f(x))
    """
    a = arch(src)
    assert a.forward is not None
    got = ops(a.forward.body)
    # f inlined once, its recursive call kept as a call; a→b→(a again: kept as a call)
    assert [(o.kind.value, o.target) for o in got] == [
        ("function", "f"), ("operator", "+"), ("call", "self.a"), ("operator", "-"), ("operator", "*")
    ]
    assert got[2].via == ("self.a", "self.b")


def test_deep_inlining_is_bounded() -> None:
    chain = "\n".join(f"    def m{i}(self, x):\n        return self.m{i + 1}(x) + {i}\n" for i in range(10))
    src = f"class M(nn.Module):\n{chain}\n    def forward(self, x):\n        return self.m0(x)\n"
    a = arch(src)
    assert a.forward is not None
    depth = max(len(o.via) for o in ops(a.forward.body))
    assert depth == 4  # at most 4 inlined levels below forward
    assert any(o.kind == OpKind.CALL for o in ops(a.forward.body))


def test_branches_and_early_return() -> None:
    src = """
    class M(nn.Module):
        def forward(self, x, mask=None):
            if mask is None:
                return self.a(x)
            elif self.training:
                x = self.b(x)
            else:
                x = self.c(x) * mask
            return x
    """
    a = arch(src)
    assert a.forward is not None
    branch = a.forward.body[0]
    assert isinstance(branch, Branch)
    assert branch.conditions == ("mask is None", "self.training", "else")
    assert isinstance(branch.paths[0][-1], Return)
    assert [len(p) for p in branch.paths] == [2, 1, 2]
    assert isinstance(a.forward.body[-1], Return) and a.forward.body[-1].values == (Ref("x"),)


def test_if_without_else_has_empty_last_path() -> None:
    src = """
    class M(nn.Module):
        def forward(self, x):
            if self.pre:
                x = self.norm(x)
            return x
    """
    a = arch(src)
    assert a.forward is not None
    branch = a.forward.body[0]
    assert isinstance(branch, Branch) and branch.paths[1] == () and branch.conditions[-1] == "else"


def test_conditional_expression_is_a_branch() -> None:
    src = """
    class M(nn.Module):
        def forward(self, x):
            y = self.a(x) if self.flag else self.b(x)
            z = x if self.flag else None
            return y, z
    """
    a = arch(src)
    assert a.forward is not None
    branch = a.forward.body[0]
    assert isinstance(branch, Branch) and branch.conditions == ("self.flag", "else")
    assert [p[0].outputs for p in branch.paths] == [("y",), ("y",)]  # type: ignore[union-attr]
    assert len(a.forward.body) == 2  # no op for the opaque conditional


def test_conditional_expression_of_two_values_chooses_one_per_path() -> None:
    src = """
    class M(nn.Module):
        def forward(self, x, kv=None):
            source = kv if kv is not None else x
            same = x if self.flag else x
            return self.k(source), same
    """
    a = arch(src)
    assert a.forward is not None
    branch = a.forward.body[0]
    assert isinstance(branch, Branch) and branch.conditions == ("kv is not None", "else")
    ops = [p[0] for p in branch.paths]
    assert all(isinstance(op, Op) and op.target == "choose" and op.outputs == ("source",) for op in ops)
    assert [op.args for op in ops] == [(Ref("kv"),), (Ref("x"),)]  # type: ignore[union-attr]
    # One value on both paths needs no choice (no op: `same` is a plain alias of `x`).
    assert isinstance(a.forward.body[1], Op) and a.forward.body[1].args == (Ref("source"),)
    assert len(a.forward.body) == 3


def test_early_return_inside_inlined_callee_binds_both_paths() -> None:
    src = """
    class M(nn.Module):
        def helper(self, x):
            if self.skip:
                return x
            y = self.f(x)
            return self.g(y)

        def forward(self, x):
            out = self.helper(x)
            return self.h(out)
    """
    a = arch(src)
    assert a.forward is not None
    branch = a.forward.body[0]
    assert isinstance(branch, Branch)
    # the statements after the early return belong to the alternative that did not return
    assert [o.target for o in ops(branch.paths[1])] == ["self.f", "self.g"]
    assert ops(branch.paths[1])[-1].outputs == ("out",)
    assert ops(a.forward.body)[-1].args == (Ref("out"),)


def test_loops_over_module_lists() -> None:
    src = """
    class M(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])
            self.heads = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])

        def forward(self, x, masks):
            for layer in self.layers:
                x = layer(x)
            for i, layer in enumerate(self.layers):
                x = layer(x) + i
            for head, m in zip(self.heads, masks):
                x = head(x, m)
            for i in range(len(self.layers)):
                x = self.layers[i](x)
            for i, (head, m) in enumerate(zip(self.heads, masks)):
                x = head(x, m)
            while x.sum() > 0:
                x = x - 1
            return x
    """
    a = arch(src)
    assert a.forward is not None
    loops = [s for s in a.forward.body if isinstance(s, Loop)]
    assert [(lp.over, lp.targets) for lp in loops] == [
        ("self.layers", ("layer",)),
        ("self.layers", ("i", "layer")),
        ("self.heads", ("head", "m")),
        (None, ("i",)),
        ("self.heads", ("i", "head", "m")),
        (None, ()),
    ]
    targets = [o.target for lp in loops[:5] for o in ops(lp.body) if o.kind == OpKind.MODULE]
    assert targets == ["self.layers[*]", "self.layers[*]", "self.heads[*]", "self.layers[*]", "self.heads[*]"]
    assert loops[3].iterable == "range(len(self.layers))" and loops[5].iterable == "x.sum() > 0"


def test_local_alias_of_submodule_and_super_forward() -> None:
    src = """
    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            return self.proj(x)

    class Child(Base):
        def forward(self, x):
            proj = self.proj
            y = super().forward(x)
            return proj(y)
    """
    a = arch(src, "Child")
    assert a.init is not None and a.init.bindings[0].attr == "proj"  # inherited __init__
    assert a.forward is not None
    got = ops(a.forward.body)
    assert [(o.target, o.via) for o in got] == [("self.proj", ("super().forward",)), ("self.proj", ())]


def test_kwargs_and_defaults_bound_when_inlining() -> None:
    src = """
    class M(nn.Module):
        def attn(self, q, k, scale=None, *, causal=False):
            return torch.softmax(q @ k * scale, dim=-1)

        def forward(self, q, k):
            return self.attn(q, k=k)
    """
    a = arch(src)
    assert a.forward is not None
    got = ops(a.forward.body)
    # the keys, a forward input, are read through two transposes (`product_layouts`): `q @ transpose(transpose(k))`
    assert [o.target for o in got[:2]] == ["transpose", "transpose"] and got[0].args[0] == Ref("k")
    got = got[2:]
    assert got[0].args == (Ref("q"), Ref(ops(a.forward.body)[1].outputs[0]))
    assert got[1].args == (Ref("%1"), Expr("None"))
    assert got[2].kwargs == (Kwarg("dim", Expr("-1")),)


def test_op_budget_gives_a_problem() -> None:
    body = "\n".join(f"        x = x + {i}" for i in range(4100))
    mf = module(f"class M(nn.Module):\n    def forward(self, x):\n{body}\n        return x\n")
    assert any(p.code == "analysis-limit" for p in mf.problems)
    fwd = mf.architectures[0].forward
    assert fwd is not None and 3900 < len(list(walk(fwd.body))) <= 4000


def test_nesting_budget_gives_a_problem() -> None:
    lines = []
    for depth in range(16):
        lines.append("    " * (depth + 2) + f"if x > {depth}:")
    lines.append("    " * 18 + "x = self.f(x)")
    mf = module("class M(nn.Module):\n    def forward(self, x):\n" + "\n".join(lines) + "\n        return x\n")
    assert any(p.code == "analysis-limit" for p in mf.problems)


def test_module_functions_and_toplevel_code() -> None:
    src = """
    from model import Net

    def train(model, lr=1e-3):
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return optimizer

    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=0.1)
    """
    mf = module(src)
    by_name = {f.name: f for f in mf.functions}
    assert set(by_name) == {"train", "<module>"}
    train = [o for o in ops(by_name["train"].body)]
    assert [(o.target, o.outputs) for o in train] == [("parameters", ("%1",)), ("torch.optim.AdamW", ("optimizer",))]
    top = ops(by_name["<module>"].body)
    assert [o.target for o in top] == ["model.Net", "parameters", "torch.optim.Adam"]


def test_closures_are_inlined_with_captured_names() -> None:
    src = """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = nn.Linear(4, 4)

        def forward(self, x, n):
            def shape(states):
                return states.view(n, -1)

            def project(h, layer):
                return shape(layer(h))

            k = project(x, self.k)
            return k
    """
    a = arch(src)
    assert a.forward is not None
    got = ops(a.forward.body)
    assert [(o.target, o.via, o.outputs) for o in got] == [
        ("self.k", ("project",), ("%1",)),
        ("view", ("project", "shape"), ("k",)),
    ]
    assert got[1].args == (Ref("%1"), Ref("n"), Expr("-1"))


def test_staticmethods_and_classmethods_bind_parameters_right() -> None:
    src = """
    class M(nn.Module):
        @staticmethod
        def bucket(pos, n=32):
            return pos * n

        @classmethod
        def make(cls, pos):
            return pos + 1

        def forward(self, x):
            return self.bucket(x, n=4) + self.make(x)
    """
    assert forward_lines(src) == ["%1 = operator *(x, 4)", "%2 = operator +(x, 1)", "%3 = operator +(%1, %2)"]


def test_method_passed_as_callback_is_inlined_with_the_tensors_after_it() -> None:
    src = """
    from ...pytorch_utils import apply_chunking_to_forward
    from torch.utils.checkpoint import checkpoint

    class M(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ffn = nn.Linear(4, 8)
            self.act = nn.GELU()
            self.chunk_size = config.chunk_size

        def ff_chunk(self, attention_output):
            h = self.ffn(attention_output)
            return self.act(h)

        def forward(self, x, mask=None):
            out = apply_chunking_to_forward(self.ff_chunk, self.chunk_size, 1, x)
            again = checkpoint(self.ff_chunk, out, use_reentrant=False)
            return again
    """
    a = arch(src)
    assert a.forward is not None
    got = ops(a.forward.body)
    assert [(o.target, o.args, o.outputs, o.via) for o in got] == [
        ("self.ffn", (Ref("x"),), ("h",), ("self.ff_chunk",)),
        ("torch.nn.functional.gelu", (Ref("h"),), ("out",), ("self.ff_chunk",)),
        ("self.ffn", (Ref("out"),), (got[2].outputs[0],), ("self.ff_chunk",)),
        ("torch.nn.functional.gelu", (got[2].outputs[0] and Ref(got[2].outputs[0]),), ("again",), ("self.ff_chunk",)),
    ]


def test_a_submodule_passed_to_a_function_is_not_a_callback() -> None:
    src = """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Linear(4, 4)

        def forward(self, x):
            return torch.utils.checkpoint.checkpoint(self.block, x)
    """
    a = arch(src)
    assert a.forward is not None
    got = ops(a.forward.body)
    assert [(o.kind, o.target) for o in got] == [(OpKind.FUNCTION, "torch.utils.checkpoint.checkpoint")]


def test_a_staticmethod_called_through_its_class_is_inlined() -> None:
    # torchtitan's CosSinRoPE: `CosSinRoPE._rotate_half(query_f)` in a staticmethod of the same class.
    src = """
    class M(nn.Module):
        @staticmethod
        def half(pos, n=32):
            return pos * n

        @classmethod
        def make(cls, pos):
            return pos + 1

        def forward(self, x):
            return M.half(x, n=4) + M.make(x)
    """
    assert forward_lines(src) == ["%1 = operator *(x, 4)", "%2 = operator +(x, 1)", "%3 = operator +(%1, %2)"]


def test_a_plain_method_called_through_its_class_is_not_inlined() -> None:
    # `M.scale(self, x)`: the instance is the first argument; inlining as a bound call would drop it.
    src = """
    class M(nn.Module):
        def scale(self, pos):
            return pos * 2

        def forward(self, x):
            return M.scale(self, x)
    """
    assert forward_lines(src) == ["%1 = function M.scale(self, x)"]
