"""Same-file modules whose forward writes the GELU formula out, bound as `nn.GELU`.

From-scratch model code (BERT and GPT-2 ports, "GPT from scratch" packages) defines its activation as a module:

    class GELU(nn.Module):                        # bert-pytorch 0.0.1a4, bert_pytorch/model/utils/gelu.py
        def forward(self, x):
            return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))

An instance computes torch's `nn.GELU(approximate="tanh")` (or `nn.GELU()` for the erf form), so
`self.act(self.fc(x))` over one is a Linear→GELU and `act(self.gate(x)) * self.up(x)` a gated MLP. A binding
to such a class becomes `torch.nn.GELU` (with `approximate="tanh"` for the tanh form; no arguments of the
class), with `origin` ending in `FORMULA_GELU`: the fused helpers recognise torch's GELU classes at run time and
would run the user's module unfused, so the engine reports those sites without an automatic fix
(`formula_reason`; the canonical pass spells a call of the binding `F.gelu`, so the engine hands it the bindings
of the module calls the match's ops were written as, `written_modules`). Another file's class is read the same way by cross-file reach (`Summary.formula`).

The test, exactly: the class derives from `nn.Module` (through classes of this file only), and the forward its
instances run is, by `names.formula_functions.gelu_approximation`, the exact GELU or the tanh approximation of
its one input (arithmetic only: nothing of `self`, no other call). The analysis of a user depends on that
answer (`ModuleSymbols.note_method_gelu`), not on the forward's text.
"""

from __future__ import annotations

from collections.abc import Sequence

from adopter.analysis.idioms.linear_like import plain_module_order
from adopter.analysis.names.formula_functions import FORMULA_GELU, formula_gelu
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import Binding, Ctor, Expr, Kwarg, Op, OpKind

GELU = "torch.nn.GELU"
_MAX_DEPTH = 6


def gelu_class(name: str, table: ClassTable) -> Ctor | None:
    """`nn.GELU` as same-file class `name` computes it (see the module doc), with no `origin`; else None."""
    order = plain_module_order(name, table)
    if order is None:
        return None
    for cls in order:
        table.symbols.note_method_exists(cls, "forward")
        forward = table.infos[cls].methods.get("forward")
        if forward is not None:
            table.symbols.note_method_gelu(cls, "forward")
            return gelu_ctor(formula_gelu(forward, table.symbols.src))
    return None


def gelu_ctor(approximate: str | None) -> Ctor | None:
    """The `nn.GELU` constructor of a written-out GELU (`"none"` or `"tanh"`), else None."""
    if approximate is None:
        return None
    kwargs = (Kwarg("approximate", Expr('"tanh"')),) if approximate == "tanh" else ()
    return Ctor(GELU, (), kwargs)


def formula_reason(bindings: Sequence[Binding]) -> str | None:
    """Why a match over a module that writes the GELU formula out (of this file or another) gets no automatic
    fix, else None."""
    for b in bindings:
        found = _formula(b.value, 0) if isinstance(b.value, Ctor) else None
        if found is not None and found.origin is not None:
            name = found.origin.split(" ", 1)[0]
            held = f"`self.{b.attr}` is" if found is b.value else f"`self.{b.attr}` holds"
            return (f"{held} a `{name}`, a module whose forward writes the GELU formula out, not `nn.GELU`; the "
                    "fused helper recognises torch's GELU at run time and would run this module unfused, so change "
                    "it by hand (to `nn.GELU`) first")
    return None


def written_modules(ops: Sequence[Op]) -> tuple[str, ...]:
    """The attributes of the module calls that ops of a match were written as (`activation` of
    `self.activation(h)`, `layers` of `self.layers[1](h)`): the canonical pass turns a call of an `nn.GELU`
    binding into `F.gelu`, so the binding is not among the match's own; `formula_reason` reads these too."""
    out: list[str] = []
    for op in ops:
        written = op.origin
        if written is None or written.kind != OpKind.MODULE or not written.target.startswith("self."):
            continue
        attr = written.target[5:].split("[", 1)[0].split(".", 1)[0]
        if attr and attr not in out:
            out.append(attr)
    return tuple(out)


def _formula(ctor: Ctor, depth: int) -> Ctor | None:
    if ctor.origin is not None and FORMULA_GELU in ctor.origin:
        return ctor
    if depth >= _MAX_DEPTH:
        return None
    return next((found for i in ctor.items if (found := _formula(i, depth + 1)) is not None), None)
