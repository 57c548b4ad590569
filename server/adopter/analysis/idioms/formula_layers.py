"""Same-file modules whose forward writes a GELU or a LayerNorm out, bound as `nn.GELU` / `nn.LayerNorm`.

From-scratch model code (BERT and GPT-2 ports, "GPT from scratch" packages) defines its own layers:

    class GELU(nn.Module):                        # bert-pytorch 0.0.1a4, bert_pytorch/model/utils/gelu.py
        def forward(self, x):
            return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))

    class LayerNorm(nn.Module):                   # sagar-neuron-gpt2 0.1.9, transfomer/layer_norm.py
        def forward(self, x):                     # (`scale`, `shift`: nn.Parameter of `__init__`)
            mean = x.mean(dim=-1, keepdim=True)
            var = x.var(dim=-1, keepdim=True, unbiased=False)
            return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift

An instance computes torch's `nn.GELU(approximate="tanh")` (or `nn.GELU()` for the erf form), or
`nn.LayerNorm` over the last axis: `self.act(self.fc(x))` over one is a Linear→GELU, `norm(x + drop(y))` a
dropout→add→LayerNorm. A binding to such a class (alone or a container's item) becomes that torch layer (no
arguments of the class; `approximate="tanh"`, `bias=False` / `elementwise_affine=False` as the forward says),
with `origin` ending in `FORMULA_GELU` or `FORMULA_NORM`. Their sites are reported without an automatic fix
(`formula_reason`): the fused GELU helper is proven for torch's GELU and the classes of transformers' activation
table only (it recognises them at run time), and a rewrite into torch's LayerNorm would change the module's
parameter names. The canonical pass spells a call of an `nn.GELU` binding `F.gelu`, so the engine hands
`formula_reason` the bindings of the module calls the match's ops were written as (`written_modules`) too.
Another file's class is read the same way by cross-file reach (`crossfile.written_layers`, `Summary.formula`),
but for an entry of an activation registry (`ACT2FN["gelu_pytorch_tanh"]`), which stays the lookup by its key as
before (f06's run-time check).

The test, exactly: the class derives from `nn.Module` (through classes of this file only), and the forward its
instances run is, by `names.formula_functions.gelu_approximation`, the exact GELU or the tanh approximation of
its one input (arithmetic only: nothing of `self`, no other call), or, by `names.formula_norms`, a LayerNorm over
the last axis whose weight and bias `__init__` binds once to `nn.Parameter`. The analysis of a user depends on
those answers (`ModuleSymbols.note_method_gelu` / `note_method_norm`), not on the forward's text; on
`__init__`'s text only when the forward is a LayerNorm.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence

from tree_sitter import Node

from adopter.analysis.crossfile.written_layers import Layer, gelu_layer, norm_layer
from adopter.analysis.idioms.linear_like import plain_module_order
from adopter.analysis.names.formula_functions import FORMULA_GELU, formula_gelu
from adopter.analysis.names.formula_norms import FORMULA_NORM, affine_parameters, formula_norm
from adopter.analysis.parse.source import SourceText
from adopter.analysis.scope.classes import ClassTable
from adopter.dsl.types import MODULE_OP, Binding, Ctor, Expr, Kwarg, Op

_MAX_DEPTH = 6


def written_class(name: str, table: ClassTable) -> Ctor | None:
    """`nn.GELU` or `nn.LayerNorm` as same-file class `name` writes it out (see the module doc), its `origin`
    naming the class; else None."""
    order = plain_module_order(name, table)
    if order is None:
        return None
    symbols = table.symbols
    for cls in order:
        symbols.note_method_exists(cls, "forward")
        forward = table.infos[cls].methods.get("forward")
        if forward is None:
            continue
        symbols.note_method_gelu(cls, "forward")
        approximate = formula_gelu(forward, symbols.src)
        if approximate is not None:
            return _ctor(name, gelu_layer(approximate))
        symbols.note_method_norm(cls, "forward")
        roles = formula_norm(forward, symbols.src)
        if roles is None:
            return None
        found = table.find_method(name, "__init__")
        init = _parsed(found[1], symbols.src) if found is not None else None
        if not affine_parameters(init, roles, symbols.qualify):
            return None
        return _ctor(name, norm_layer(roles))
    return None


def _ctor(name: str, layer: Layer) -> Ctor:
    callee, kwargs, suffix = layer
    origin = f"{name} (a module in this file{suffix})"
    return Ctor(callee, (), tuple(Kwarg(k, Expr(v)) for k, v in kwargs), origin=origin)


def _parsed(method: Node, src: SourceText) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(textwrap.dedent(" " * method.start_point[1] + src.text(method)))
    except (SyntaxError, ValueError):
        return None
    found = tree.body[0] if len(tree.body) == 1 else None
    return found if isinstance(found, ast.FunctionDef) else None


def formula_reason(bindings: Sequence[Binding]) -> str | None:
    """Why a match over a module that writes a GELU or a LayerNorm out (of this file or another) gets no automatic
    fix, else None."""
    for b in bindings:
        found = _formula(b.value, 0) if isinstance(b.value, Ctor) else None
        if found is not None and found.origin is not None:
            name = found.origin.split(" ", 1)[0]
            held = f"`self.{b.attr}` is" if found is b.value else f"`self.{b.attr}` holds"
            if FORMULA_NORM in found.origin:
                return (f"{held} a `{name}`, a module whose forward writes a LayerNorm out, not `nn.LayerNorm`; the "
                        "rewrite would replace it by torch's kernel with other parameter names (its checkpoint keys "
                        "change), so change it by hand (to `nn.LayerNorm`) first")
            return (f"{held} a `{name}`, a module whose forward writes the GELU formula out, not `nn.GELU`; the "
                    "fused helper is proven only for torch's GELU and the activation classes of transformers' table, "
                    "which it recognises at run time, so change it by hand (to `nn.GELU`) first")
    return None


def written_modules(ops: Sequence[Op]) -> tuple[str, ...]:
    """The attributes of the module calls that ops of a match were written as (`activation` of
    `self.activation(h)`, `layers` of `self.layers[1](h)`): the canonical pass turns a call of an `nn.GELU`
    binding into `F.gelu`, so the binding is not among the match's own; `formula_reason` reads these too."""
    out: list[str] = []
    for op in ops:
        written = op.origin
        if written is None or written.kind != MODULE_OP or not written.target.startswith("self."):
            continue
        attr = written.target[5:].split("[", 1)[0].split(".", 1)[0]
        if attr and attr not in out:
            out.append(attr)
    return tuple(out)


def _formula(ctor: Ctor, depth: int) -> Ctor | None:
    if ctor.origin is not None and (FORMULA_GELU in ctor.origin or FORMULA_NORM in ctor.origin):
        return ctor
    if depth >= _MAX_DEPTH:
        return None
    return next((found for i in ctor.items if (found := _formula(i, depth + 1)) is not None), None)
