"""The hover's short form of an architecture, on constructed values: grouping, branches, loops, plumbing."""

from __future__ import annotations

from adopter.dsl.types import (
    Architecture,
    Binding,
    Branch,
    Ctor,
    Expr,
    Forward,
    Init,
    Loop,
    Op,
    OpKind,
    Ref,
    Return,
    Span,
)
from adopter.lsp.hover_summary import WIDTH, forward_lines, layer_lines

AT = Span(0, 0, 0, 1)


def op(kind: OpKind, target: str, out: str = "x", via: tuple[str, ...] = ()) -> Op:
    return Op(kind, target, (Ref("x"),), (), (out,), AT, AT, via)


def arch(body: tuple[object, ...], bindings: tuple[Binding, ...] = ()) -> Architecture:
    return Architecture("M", ("torch.nn.Module",), Init((), bindings, AT),
                        Forward("forward", (), body, AT), AT)  # type: ignore[arg-type]


def test_layers_group_by_constructor_and_mark_conditional_ones() -> None:
    bindings = (
        Binding("q", Ctor("torch.nn.Linear"), AT), Binding("k", Ctor("torch.nn.Linear"), AT),
        Binding("drop", Ctor("torch.nn.Dropout"), AT), Binding("scale", Expr("0.5"), AT),
        Binding("rel", Ctor("torch.nn.Embedding"), AT, condition="self.relative"),
        Binding("layers", Ctor("torch.nn.ModuleList", items=(Ctor("Block"),), repeat="n"), AT),
    )
    assert layer_lines(arch((), bindings)) == [  # wrapped at WIDTH, a separator ending the first line
        "q, k: Linear · drop: Dropout · rel?: Embedding ·", "layers: ModuleList{n × Block}"]


def test_forward_hides_plumbing_collapses_helpers_and_prints_branches_and_loops() -> None:
    body = (
        op(OpKind.MODULE, "self.q"),
        op(OpKind.METHOD, "view"), op(OpKind.OPERATOR, "getitem"),  # plumbing: counted, not shown
        op(OpKind.METHOD, "permute", via=("self.split_heads",)), op(OpKind.METHOD, "view", via=("self.split_heads",)),
        op(OpKind.FUNCTION, "torch.matmul"),
        Branch(("mask is not None",), ((op(OpKind.OPERATOR, "+"),), ()), AT),
        Branch(("a", "else"), ((op(OpKind.FUNCTION, "torch.nn.functional.softmax"),), (op(OpKind.METHOD, "sigmoid"),)), AT),
        Loop(("layer",), "self.layers", "self.layers", (op(OpKind.MODULE, "self.layers[*]"),), AT),
        Return((Ref("x"),), AT),
    )
    assert forward_lines(arch(body)) == [
        "q → split_heads() → matmul → [+]? → [softmax | .sigmoid] → for[layers[*]]",
        "(2 shape and indexing steps not shown)",
    ]


def test_a_wide_branch_is_summarised_and_lines_wrap() -> None:
    arm = tuple(op(OpKind.FUNCTION, f"torch.function_number_{i}") for i in range(6))
    body = (Branch(("c",), (arm, ()), AT), *arm, *arm)
    lines = forward_lines(arch(body))
    assert lines[0] == "[optional: function_number_0, function_number_1, function_number_2, …] →"
    assert all(len(line) <= WIDTH for line in lines)
    assert len(lines) > 2
