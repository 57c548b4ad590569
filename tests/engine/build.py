"""Compact builders for hand-made architectures and rules in engine tests."""

from __future__ import annotations

from adopter.analysis.canonical.normalise import canonical_architecture, canonical_forward
from adopter.dsl.types import (
    Architecture,
    Binding,
    BindingPattern,
    Block,
    Branch,
    Ctor,
    CtorPattern,
    Expr,
    Forward,
    Guard,
    GuardKind,
    Init,
    Kwarg,
    Loop,
    ModuleFile,
    Op,
    OpKind,
    OpPattern,
    PAny,
    Param,
    PKwarg,
    PValue,
    PVar,
    Ref,
    Replacement,
    Return,
    Rule,
    Severity,
    Span,
    Target,
    Value,
)

_line = [0]
_TEMPLATE = Replacement("template", "$out = f($x)")


def sp(line: int, a: int = 8, b: int = 40) -> Span:
    return Span(line, a, line, b)


def val(x: str) -> Value:
    """`"h"` is a Ref, `"=-1"` an Expr with text `-1`."""
    return Expr(x[1:]) if x.startswith("=") else Ref(x)


def op(out: str | None, kind: str, target: str, *args: str, line: int | None = None, via: tuple[str, ...] = (),
       **kwargs: str) -> Op:
    if line is None:
        _line[0] += 1
        line = _line[0]
    return Op(OpKind(kind), target, tuple(val(a) for a in args),
              tuple(Kwarg(k, val(v)) for k, v in kwargs.items()), (out,) if out else (), sp(line, 12, 30),
              sp(line), via)


def branch(*paths: Block, conds: tuple[str, ...] | None = None) -> Branch:
    conds = conds or tuple(f"c{i}" for i in range(len(paths)))
    return Branch(conds, tuple(paths), sp(0))


def loop(body: Block, over: str = "self.layer") -> Loop:
    return Loop(("layer",), over, over, body, sp(0))


def ret(*names: str) -> Return:
    return Return(tuple(val(n) for n in names), sp(0))


def arch(body: Block, bindings: dict[str, Ctor] | None = None, name: str = "M",
         params: tuple[str, ...] = ("hidden", "residual")) -> Architecture:
    binds = tuple(Binding(k, v, sp(100 + i)) for i, (k, v) in enumerate((bindings or {}).items()))
    return Architecture(name, ("torch.nn.Module",), Init((Param("self"),), binds, sp(99)),
                        Forward("forward", (Param("self"), *(Param(p) for p in params)), body, sp(1)), sp(0))


def mfile(*archs: Architecture, functions: tuple[Forward, ...] = ()) -> ModuleFile:
    """A module file of hand-built architectures, in the canonical form the analysis gives the engine."""
    return ModuleFile("m.py", tuple(canonical_architecture(a) for a in archs), (),
                      tuple(canonical_forward(f) for f in functions))


def pv(x: str) -> PValue:
    if x == "_":
        return PAny()
    return PVar(x[1:]) if x.startswith("$") else Expr(x)


def step(out: str | None, targets: str, *args: str, optional: bool = False, extra: bool = False,
         **kwargs: str) -> OpPattern:
    """`targets` like `"module:$ln"` or `"function:torch.matmul|operator:@"`."""
    alts = tuple((OpKind(t.split(":", 1)[0]), t.split(":", 1)[1]) for t in targets.split("|"))
    return OpPattern(alts, tuple(pv(a) for a in args), tuple(PKwarg(k, pv(v)) for k, v in kwargs.items()),
                     (pv(out),) if out else (), optional, extra)


def bind(var: str, *callees: str, lookup: str | None = None) -> BindingPattern:
    return BindingPattern(var, CtorPattern(callees, lookup=pv(lookup) if lookup else None))


def guard(kind: str, *args: str) -> Guard:
    return Guard(GuardKind(kind), tuple(pv(a) for a in args))


def rule(forward: tuple[OpPattern, ...], init: tuple[BindingPattern, ...] = (), guards: tuple[Guard, ...] = (),
         rid: str = "t01", targets: tuple[Target, ...] = (Target("portable", "k"),),
         replacement: Replacement | None = _TEMPLATE, scope: str = "forward",
         family: int = 5) -> Rule:
    return Rule(rid, family, "title", "message", Severity.WARNING, targets, init, forward, guards, replacement,
                (), scope=scope)
