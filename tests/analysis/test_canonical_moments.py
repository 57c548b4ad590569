"""`torch.var_mean` read as its two reductions by the canonical pass (`adopter.analysis.canonical.moments`, mech94).

The rule tests are `tests/rules/test_layernorm_moment_spellings.py` (timm, rec-pangu, deepmd-kit shapes).
"""

from __future__ import annotations

from adopter.analysis.canonical.moments import split_var_mean
from adopter.dsl.types import Expr, Kwarg, Op, OpKind, Ref, Span


def _call(*args: str, outputs: tuple[str, ...] = ("v", "m"), **kwargs: str) -> Op:
    span = Span(1, 0, 1, 10)
    return Op(OpKind.FUNCTION, "torch.var_mean", tuple(Ref(a) if a == "x" else Expr(a) for a in args),
              tuple(Kwarg(k, Expr(v)) for k, v in kwargs.items()), outputs, span, span)


def test_var_mean_is_split_into_its_two_reductions() -> None:
    split = split_var_mean(_call("x", "-1", "False", "True"))
    assert split is not None
    var, mean = split
    assert (var.target, var.outputs, [(k.name, k.value) for k in var.kwargs]) == (
        "var", ("v",), [("dim", Expr("-1")), ("unbiased", Expr("False")), ("keepdim", Expr("True"))])
    assert (mean.target, mean.outputs, [(k.name, k.value) for k in mean.kwargs]) == (
        "mean", ("m",), [("dim", Expr("-1")), ("keepdim", Expr("True"))])
    assert var.args == mean.args == (Ref("x"),)
    # `correction` is the variance's alone
    var, mean = split_var_mean(_call("x", dim="1", correction="0", keepdim="True")) or (None, None)
    assert var is not None and mean is not None
    assert [k.name for k in var.kwargs] == ["dim", "correction", "keepdim"]
    assert [k.name for k in mean.kwargs] == ["dim", "keepdim"]


def test_var_mean_not_read_when_not_unpacked_or_not_torchs_signature() -> None:
    assert split_var_mean(_call("x", "-1", outputs=("stats",))) is None
    assert split_var_mean(_call("x", "-1", dim="1")) is None  # `dim` twice
    assert split_var_mean(_call("x", "-1", "False", "True", "0")) is None  # too many positional arguments
    assert split_var_mean(_call("x", out="o")) is None  # an argument torch does not take
    assert split_var_mean(_call("*xs")) is None
