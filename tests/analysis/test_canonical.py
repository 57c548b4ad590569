"""The canonical pass: every spelling of one operation gives the same op (table-driven)."""

from __future__ import annotations

import pytest

from adopter.analysis.canonical.normalise import matmul_plan, normalise, product_layout
from adopter.analysis.canonical.spellings import CANONICAL, SIGNATURES, SOFTMAX
from adopter.dsl.types import Branch, Expr, Kwarg, Ref

from .helpers import arch, forward_lines, lines, ops

# (id, __init__ body, forward body (inside `def forward(self, x, y, mask=None):`), expected op lines)
CASES = [
    ("softmax: function, keyword dim", "", "p = F.softmax(x, dim=-1)",
     ["p = function torch.nn.functional.softmax(x, dim=-1)"]),
    ("softmax: positional dim", "", "p = F.softmax(x, -1)", ["p = function torch.nn.functional.softmax(x, dim=-1)"]),
    ("softmax: torch.softmax", "", "p = torch.softmax(x, -1)",
     ["p = function torch.nn.functional.softmax(x, dim=-1)"]),
    ("softmax: tensor method", "", "p = x.softmax(dim=-1)", ["p = function torch.nn.functional.softmax(x, dim=-1)"]),
    ("softmax: nn.Softmax bound in __init__", "self.attend = nn.Softmax(dim=-1)", "p = self.attend(x)",
     ["p = function torch.nn.functional.softmax(x, dim=-1)"]),
    ("softmax: dim=3 on a 4-D tensor is the last axis", "",
     "h = x.view(2, 3, 4, 5)\np = F.softmax(h, dim=3)",
     ["h = method view(x, 2, 3, 4, 5)", "p = function torch.nn.functional.softmax(h, dim=-1)"]),
    ("softmax: dim=1 on a part of a 2-D topk is the last axis", "",
     "h = x.view(-1, 8)\nv, i = torch.topk(h, 2)\np = v.softmax(dim=1)",
     ["h = method view(x, -1, 8)", "v, i = function torch.topk(h, 2)",
      "p = function torch.nn.functional.softmax(v, dim=-1)"]),
    ("softmax: dim=3 on a tensor of unknown rank stays", "", "p = F.softmax(x, dim=3)",
     ["p = function torch.nn.functional.softmax(x, dim=3)"]),
    ("softmax: dim=2 of a bmm product (3-D by contract) is the last axis", "",
     "s = torch.bmm(x.permute(0, 2, 1), y)\np = F.softmax(s, dim=2)",
     ["%1 = method permute(x, 0, 2, 1)", "%2 = method transpose(y, -2, -1)", "%3 = method transpose(%2, -2, -1)", "s = function torch.matmul(%1, %3)",
      "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("softmax: dim=2 of a bmm product in a loop (no later use proves the operands 3-D) is the last axis", "",
     "for i in range(2):\n    s = torch.bmm(x[:, i:], y)\n    p = F.softmax(s, dim=2)",
     ["%1 = operator getitem(x, :, i:)", "%2 = method transpose(y, -2, -1)", "%3 = method transpose(%2, -2, -1)", "s = function torch.matmul(%1, %3)",
      "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("softmax: dim=1 of a bmm product is not the last axis", "",
     "s = torch.bmm(x.permute(0, 2, 1), y)\np = F.softmax(s, dim=1)",
     ["%1 = method permute(x, 0, 2, 1)", "%2 = method transpose(y, -2, -1)", "%3 = method transpose(%2, -2, -1)", "s = function torch.matmul(%1, %3)",
      "p = function torch.nn.functional.softmax(s, dim=-2)"]),
    ("softmax: dim=2 of a matmul of tensors of unknown rank stays", "",
     "s = torch.matmul(x, y)\np = F.softmax(s, dim=2)",
     ["%1 = method transpose(y, -2, -1)", "%2 = method transpose(%1, -2, -1)", "s = function torch.matmul(x, %2)",
      "p = function torch.nn.functional.softmax(s, dim=2)"]),
    ("softmax: a bmm product scaled by a size read from x.shape stays 3-D", "",
     "b, c, t = x.shape\ns = torch.bmm(x.permute(0, 2, 1), y) * c ** -0.5\np = F.softmax(s, dim=2)",
     ["b, c, t = operator getattr(x, shape)", "%1 = method permute(x, 0, 2, 1)", "%4 = method transpose(y, -2, -1)",
      "%5 = method transpose(%4, -2, -1)", "%2 = function torch.matmul(%1, %5)",
      "%3 = method pow(c, -0.5)", "s = operator *(%2, %3)", "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("softmax: a bmm product scaled by a tensor of unknown rank may broadcast: dim=2 stays", "",
     "s = torch.bmm(x.permute(0, 2, 1), y) * mask\np = F.softmax(s, dim=2)",
     ["%1 = method permute(x, 0, 2, 1)", "%3 = method transpose(y, -2, -1)", "%4 = method transpose(%3, -2, -1)",
      "%2 = function torch.matmul(%1, %4)", "s = operator *(%2, mask)",
      "p = function torch.nn.functional.softmax(s, dim=2)"]),
    ("transpose(1, 2) of a tensor flattened from axis 2 (3-D) is its last two axes; shape[-1] is a number", "",
     "q = y.flatten(start_dim=2)\nk = x.flatten(start_dim=2)\ne = k.shape[-1]\n"
     "s = torch.matmul(q, k.transpose(1, 2)) / e ** 0.5\np = F.softmax(s, dim=2)",
     ["q = method flatten(y, start_dim=2)", "k = method flatten(x, start_dim=2)", "%1 = operator getattr(k, shape)",
      "e = operator getitem(%1, -1)", "%2 = method transpose(k, -2, -1)", "%3 = function torch.matmul(q, %2)",
      "%4 = method pow(e, 0.5)", "s = operator /(%3, %4)", "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("a product with queries of unknown rank may broadcast to more axes: dim=2 stays", "",
     "k = x.flatten(start_dim=2)\ns = torch.matmul(y, k.transpose(1, 2))\np = F.softmax(s, dim=2)",
     ["k = method flatten(x, start_dim=2)", "%1 = method transpose(k, -2, -1)", "s = function torch.matmul(y, %1)",
      "p = function torch.nn.functional.softmax(s, dim=2)"]),
    ("transpose(1, 2) of a part unbound from a 4-D tensor (3-D) is its last two axes", "",
     "q, k = x.reshape(2, 3, 4, 5).unbind(0)\nt = k.transpose(1, 2)",
     ["%1 = method reshape(x, 2, 3, 4, 5)", "q, k = method unbind(%1, dim=-4)", "t = method transpose(k, -2, -1)"]),
    ("transpose(1, 2) of a part unpacked from a permute (4-D) is not its last two axes", "",
     "q, k, v = x.reshape(2, 3, 4, 5, 6).permute(2, 0, 3, 1, 4)\nt = k.transpose(1, 2)",
     ["%1 = method reshape(x, 2, 3, 4, 5, 6)", "q, k, v = method permute(%1, 2, 0, 3, 1, 4)",
      "t = method transpose(k, -3, -2)"]),
    ("transpose(1, 2) of a tensor flattened over other axes, or of unknown rank, stays", "",
     "a = x.flatten(1, 2)\nt = a.transpose(1, 2)\nu = y.transpose(1, 2)",
     ["a = method flatten(x, 1, 2)", "t = method transpose(a, 1, 2)", "u = method transpose(y, 1, 2)"]),
    ("x.size(-1) and x[0] of a 3-D tensor: a number and a 2-D tensor", "",
     "h = x.view(2, 3, 4)\nn = h.size(-1)\nr = h[0]\np = F.softmax(r * n, dim=1)",
     ["h = method view(x, 2, 3, 4)", "n = method size(h, -1)", "r = operator getitem(h, 0)", "%1 = operator *(r, n)",
      "p = function torch.nn.functional.softmax(%1, dim=-1)"]),
    ("softmax: dtype kept as a keyword, the cast back is a cast", "",
     "p = F.softmax(x, dim=-1, dtype=torch.float32).to(y.dtype)",
     ["%1 = function torch.nn.functional.softmax(x, dim=-1, dtype=torch.float32)", "p = operator cast(%1, y.dtype)"]),
    ("matmul: @, .matmul, bmm", "", "a = x @ y\nb = x.matmul(y)\nc = torch.bmm(x, y)",
     ["a = function torch.matmul(x, y)", "b = function torch.matmul(x, y)", "c = function torch.matmul(x, y)"]),
    ("transpose: function and method, dims in order", "", "a = torch.transpose(x, -1, -2)\nb = x.transpose(-2, -1)",
     ["a = method transpose(x, -2, -1)", "b = method transpose(x, -2, -1)"]),
    ("einsum q·kᵀ is transpose + matmul", "", 's = torch.einsum("b h i d, b h j d -> b h i j", x, y)',
     ["%1 = method transpose(y, -2, -1)", "s = function torch.matmul(x, %1)"]),
    ("einsum probs·v is matmul", "", 'o = torch.einsum("bhij,bhjd->bhid", x, y)', ["o = function torch.matmul(x, y)"]),
    ("einsum of another shape stays", "", 'o = torch.einsum("bhld,lrd->bhlr", x, y)',
     ['o = function torch.einsum("bhld,lrd->bhlr", x, y)']),
    ("baddbmm: matmul, scale, add", "", "s = torch.baddbmm(mask, x, y, beta=0.5, alpha=0.5)",
     ["%1 = function torch.matmul(x, y)", "%2 = operator *(%1, 0.5)", "%3 = operator *(mask, 0.5)",
      "s = operator +(%2, %3)"]),
    # beta=0: torch ignores the input (nan and inf in it are not propagated), so nothing is added (GPT-2's
    # `baddbmm(torch.empty(...), q, k, beta=0, alpha=scale)`)
    ("baddbmm with beta=0: matmul and scale", "", "s = torch.baddbmm(mask, x, y, beta=0, alpha=0.5)",
     ["%1 = function torch.matmul(x, y)", "s = operator *(%1, 0.5)"]),
    ("baddbmm with beta=0.0 and no alpha: the product", "", "s = torch.baddbmm(mask, x, y, beta=0.0)",
     ["s = function torch.matmul(x, y)"]),
    # An input made as zeros adds nothing at any beta (GPT-NeoX's `_attn`: `torch.zeros(...)`, `beta=1.0`) ...
    ("baddbmm over zeros: matmul and scale", "", "z = torch.zeros(2, 3, 3)\ns = torch.baddbmm(z, x, y, beta=1.0, alpha=0.5)",
     ["z = function torch.zeros(2, 3, 3)", "%1 = function torch.matmul(x, y)", "s = operator *(%1, 0.5)"]),
    # ... not one bound on another path too (it may hold something else there) ...
    ("baddbmm over zeros on one path: the add stays", "",
     "z = mask\nif y is None:\n    z = torch.zeros(2, 3, 3)\ns = torch.baddbmm(z, x, y, beta=1.0)",
     # (`z = mask` names the argument again: passed on by a choose, `flow.aliases`)
     ["z = operator choose(mask)", "z = function torch.zeros(2, 3, 3)", "%1 = function torch.matmul(x, y)", "%2 = operator *(z, 1.0)",
      "s = operator +(%1, %2)"]),
    # ... and ones (or any other input) are added.
    ("baddbmm over ones: the add stays", "", "z = torch.ones(2, 3, 3)\ns = torch.baddbmm(z, x, y, beta=1.0)",
     ["z = function torch.ones(2, 3, 3)", "%1 = function torch.matmul(x, y)", "%2 = operator *(z, 1.0)",
      "s = operator +(%1, %2)"]),
    ("casts, copies and layout are one transparent op", "",
     "a = x.float()\nb = x.to(torch.bfloat16)\nc = x.type_as(y)\nd = x.contiguous()",
     ["a = operator cast(x)", "b = operator cast(x, torch.bfloat16)", "c = operator cast(x, y)", "d = operator cast(x)"]),
    ("GELU / SiLU modules are their functions", "self.a = nn.GELU(approximate='tanh')\nself.b = nn.SiLU()",
     "h = self.a(x)\ng = self.b(y)",
     ["h = function torch.nn.functional.gelu(x, approximate='tanh')", "g = function torch.nn.functional.silu(y)"]),
    ("nn.Identity is a cast", "self.skip = nn.Identity()", "h = self.skip(x)", ["h = operator cast(x)"]),
    ("a Sequential call is its children in order",
     "self.net = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4))", "h = self.net(x)",
     ["%1 = module self.net[0](x)", "%2 = function torch.nn.functional.gelu(%1)", "h = module self.net[2](%2)"]),
    ("a conditionally bound module is left as a call", "self.act = nn.GELU() if mask else nn.ReLU()",
     "h = self.act(x)", ["h = module self.act(x)"]),
    ("k.mT is transpose(-2, -1)", "", "s = x @ y.mT",
     ["%1 = method transpose(y, -2, -1)", "s = function torch.matmul(x, %1)"]),
    ("einops.einsum takes the equation last", "", 's = einops.einsum(x, y, "b h i d, b h j d -> b h i j")',
     ["%1 = method transpose(y, -2, -1)", "s = function torch.matmul(x, %1)"]),
    ("keys permuted d-before-n are a permute and a transpose", "",
     "k = y.view(2, 3, 4, 5).permute(0, 2, 3, 1)\ns = x @ k",
     ["%1 = method view(y, 2, 3, 4, 5)", "%2 = method permute(%1, 0, 2, 1, 3)", "k = method transpose(%2, -2, -1)",
      "s = function torch.matmul(x, k)"]),
    ("keys rearranged d-before-n, through a scale", "",
     'k = einops.rearrange(y, "b n (h d) -> b h d n", h=4) * 0.5\ns = x @ k',
     ['%2 = function einops.rearrange(y, "b n (h d) -> b h n d", h=4)', "%1 = method transpose(%2, -2, -1)",
      "k = operator *(%1, 0.5)", "s = function torch.matmul(x, k)"]),
    ("a permute that is not a right operand of a product stays", "", "k = x.permute(0, 2, 3, 1)\ns = k @ y",
     ["k = method permute(x, 0, 2, 3, 1)", "s = function torch.matmul(k, y)"]),
    ("a permute with the last two axes in order stays", "", "k = y.permute(0, 2, 1, 3)\ns = x @ k",
     ["k = method permute(y, 0, 2, 1, 3)", "s = function torch.matmul(x, k)"]),
    ("the stable-softmax shift before a softmax is a cast", "",
     "s = x - x.amax(dim=-1, keepdim=True).detach()\np = s.softmax(dim=-1)",
     ["%1 = method amax(x, dim=-1, keepdim=True)", "%2 = method detach(%1)", "s = operator cast(x)",
      "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("the shift by max(...)[0] is a cast too", "",
     "s = x - torch.max(x, -1, keepdim=True)[0]\np = F.softmax(s, -1)",
     ["%1 = function torch.max(x, -1, keepdim=True)", "%2 = operator getitem(%1, 0)", "s = operator cast(x)",
      "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("the shift not followed by a softmax stays a subtraction", "",
     "s = x - x.amax(dim=-1, keepdim=True)\np = s.exp()",
     ["%1 = method amax(x, dim=-1, keepdim=True)", "s = operator -(x, %1)", "p = method exp(s)"]),
    ("a shift by another value's maximum stays", "",
     "s = x - y.amax(dim=-1, keepdim=True)\np = s.softmax(dim=-1)",
     ["%1 = method amax(y, dim=-1, keepdim=True)", "s = operator -(x, %1)",
      "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("einsum with heads third (a list of operands): permutes, transpose, matmul", "",
     's = torch.einsum("nqhd,nkhd->nhqk", [x, y])',
     ["%1 = operator list(x, y)", "%2 = method permute(x, 0, 2, 1, 3)", "%3 = method permute(y, 0, 2, 1, 3)",
      "%4 = method transpose(%3, -2, -1)", "s = function torch.matmul(%2, %4)"]),
    ("einsum probs·v back to (b, l, h, d): matmul then permute", "", 'o = torch.einsum("bhls,bshd->blhd", x, y)',
     ["%1 = method permute(y, 0, 2, 1, 3)", "%2 = function torch.matmul(x, %1)", "o = method permute(%2, 0, 2, 1, 3)"]),
    ("a rank survives an op that redefines its input: softmax dim=3 is the last axis", "",
     "s = x.view(2, 3, 4, 5)\ns = s.masked_fill(mask, 0)\np = s.softmax(dim=3)",
     ["s = method view(x, 2, 3, 4, 5)", "s = method masked_fill(s, mask, 0)",
      "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    ("an einsum without `...` gives its product's rank: softmax dim=3 is the last axis", "",
     's = torch.einsum("bhid,bhjd->bhij", x, y)\np = s.softmax(dim=3)',
     ["%1 = method transpose(y, -2, -1)", "s = function torch.matmul(x, %1)",
      "p = function torch.nn.functional.softmax(s, dim=-1)"]),
    # taming-transformers-rom1504 0.0.6, taming/modules/diffusionmodules/model.py (VQGAN/LDM AttnBlock)
    # (the keys are laid out (b, c, n) by the reshape: the scores read them through two transposes, q @ (kᵀ)ᵀ)
    ("a product scaled by a Python number keeps its rank: softmax dim=2 of a 3-D bmm is the last axis", "",
     "b, c, n = x.shape\nq = x.permute(0, 2, 1)\nk = y.reshape(b, c, n)\nw = torch.bmm(q, k)\nw = w * (int(c) ** (-0.5))\n"
     "p = torch.nn.functional.softmax(w, dim=2)",
     ["b, c, n = operator getattr(x, shape)", "q = method permute(x, 0, 2, 1)", "k = method reshape(y, b, c, n)",
      "%3 = method transpose(k, -2, -1)", "%4 = method transpose(%3, -2, -1)", "w = function torch.matmul(q, %4)",
      "%1 = function int(c)", "%2 = method pow(%1, -0.5)", "w = operator *(w, %2)",
      "p = function torch.nn.functional.softmax(w, dim=-1)"]),
    # (a product read by a softmax reads an untransposed local right operand through two transposes, the
    # same tensor: harmless where the softmax is over another axis, which no attention rule matches)
    ("a product scaled by an unknown tensor forgets its rank", "",
     "q = x.reshape(b, c, n)\nw = torch.bmm(q, q)\nw = w * mask\np = torch.nn.functional.softmax(w, dim=2)",
     ["q = method reshape(x, b, c, n)", "%1 = method transpose(q, -2, -1)", "%2 = method transpose(%1, -2, -1)",
      "w = function torch.matmul(q, %2)", "w = operator *(w, mask)",
      "p = function torch.nn.functional.softmax(w, dim=2)"]),
    ("an f-string equation without a placeholder is the same equation", "",
     'p = torch.einsum(f"b h i j, b h j d -> b h i d", x, y)\nq = torch.einsum(f"b h i j, {e} -> b h i d", x, y)',
     ["p = function torch.matmul(x, y)", 'q = function torch.einsum(f"b h i j, {e} -> b h i d", x, y)']),
    ("a stateless module built and called in one expression is its function", "",
     "p = nn.Softmax(dim=-1)(x)\nq = nn.Softmax(-1)(y)\ng = nn.GELU(approximate='tanh')(x)",
     ["p = function torch.nn.functional.softmax(x, dim=-1)", "q = function torch.nn.functional.softmax(y, dim=-1)",
      "g = function torch.nn.functional.gelu(x, approximate='tanh')"]),
    ("a module built in the call with arguments it does not know stays a call", "",
     "p = nn.Softmax(dim=-1, foo=1)(x)",
     ["%1 = function torch.nn.Softmax(dim=-1, foo=1)", "p = call %1(x)"]),
    ("softmax without dim: torch's implicit axis, written out where the rank is known (1 of 2-D, 0 of 3-D)", "",
     "h = x.view(6, 4)\np = nn.Softmax()(h)\ng = x.view(2, 3, 4)\nq = F.softmax(g)\nr = F.log_softmax(h, dim=None)",
     ["h = method view(x, 6, 4)", "p = function torch.nn.functional.softmax(h, dim=-1)",
      "g = method view(x, 2, 3, 4)", "q = function torch.nn.functional.softmax(g, dim=-3)",
      "r = function torch.nn.functional.log_softmax(h, dim=-1)"]),
    ("softmax without dim of a bound nn.Softmax(): 1 of 4-D; of unknown rank it stays without dim",
     "self.sm = nn.Softmax()", "h = x.view(2, 3, 4, 5)\np = self.sm(h)\nq = self.sm(y)",
     ["h = method view(x, 2, 3, 4, 5)", "p = function torch.nn.functional.softmax(h, dim=-3)",
      "q = function torch.nn.functional.softmax(y)"]),
    ("a product with a parameter defaulting to a number keeps the tensor's rank", "",
     "h = x.view(6, 4)\np = nn.Softmax()(h * smooth)",
     ["h = method view(x, 6, 4)", "%2 = operator *(h, smooth)", "p = function torch.nn.functional.softmax(%2, dim=-1)"]),
    ("mean, pow: one signature", "", "a = torch.mean(x, -1, True)\nb = x.mean(dim=-1, keepdim=True)\nc = x ** 2",
     ["a = method mean(x, -1, keepdim=True)", "b = method mean(x, -1, keepdim=True)", "c = method pow(x, 2)"]),
    ("x * x is x.pow(2); x * y stays", "", "a = x * x\nb = x * y",
     ["a = method pow(x, 2)", "b = operator *(x, y)"]),
    ("x.square() and torch.square(x) are x.pow(2); x.square(y) stays", "",
     "a = x.square()\nb = torch.square(x)\nc = x.square(y)",
     ["a = method pow(x, 2)", "b = method pow(x, 2)", "c = method square(x, y)"]),
    ("numpy's axis= and keepdims= are dim= and keepdim=", "",
     "a = torch.mean(x, axis=-1, keepdims=True)\nb = x.mean(axis=1)\nc = x.foo(axis=1)",
     ["a = method mean(x, -1, keepdim=True)", "b = method mean(x, 1)", "c = method foo(x, axis=1)"]),
]


@pytest.mark.parametrize(("init", "code", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_canonical_ops(init: str, code: str, expected: list[str]) -> None:
    body = "\n".join("        " + ln for ln in code.splitlines())
    init_body = "\n".join("        " + ln for ln in init.splitlines()) or "        pass"
    src = (f"class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n{init_body}\n"
           f"    def forward(self, x, y, mask=None, smooth=1):\n{body}\n")
    assert forward_lines(src) == expected


def test_a_layer_or_identity_by_condition_is_an_if_whose_identity_path_passes_the_value_on() -> None:
    a = arch("""
    class M(nn.Module):
        def __init__(self, d, scale=None):
            super().__init__()
            if scale is None:
                self.ls = nn.Identity()
            else:
                self.ls = nn.Linear(d, d)

        def forward(self, x):
            return self.ls(x)
    """)
    assert a.forward is not None
    branch = a.forward.body[0]
    assert isinstance(branch, Branch) and branch.conditions == ("not (scale is None)", "else")
    assert [lines(path) for path in branch.paths] == [["%1 = module self.ls(x)"], ["%1 = operator choose(x)"]]


def test_respelled_op_keeps_its_source_and_what_was_written() -> None:
    a = arch("""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.attend = nn.Softmax(dim=-1)

        def forward(self, x):
            return self.attend(x)
    """)
    assert a.forward is not None
    (op,) = ops(a.forward.body)
    assert op.target == SOFTMAX[1] and op.origin is not None and op.origin.target == "self.attend"
    assert op.span == op.origin.span  # the rewrite still lands on the call the user wrote


@pytest.mark.parametrize(("equation", "plan"), [
    ('"bhid,bhjd->bhij"', (False, True, 4)),
    ('"b i d, b j d -> b i j"', (False, True, 3)),
    ('"...id,...dj->...ij"', (False, False, 3)),
    ('"bhdi,bhjd->bhij"', (True, True, 4)),
    ('"bhid,bhjd->bhji"', None),  # the product transposed
    ('"bhid,bhid->bhi"', None),  # no free index on the right
    ("f'{a},{b}->bij'", None),  # an f-string: not known statically
    ('"...c,...c->..."', None),  # a batched dot product (torchaudio's beamforming): the output has rank < 2
])
def test_matmul_plan(equation: str, plan: tuple[bool, bool, int] | None) -> None:
    assert matmul_plan(equation) == plan


@pytest.mark.parametrize(("equation", "layout"), [
    ('"nqhd,nkhd->nhqk"', ((0, 2, 1, 3), (0, 2, 1, 3), True, None, 4)),
    ('"nhql,nlhd->nqhd"', (None, (0, 2, 1, 3), False, (0, 2, 1, 3), 4)),
    ('"blhe,bshe->bhls"', ((0, 2, 1, 3), (0, 2, 1, 3), True, None, 4)),
    ('"ihd,jhd->hij"', ((1, 0, 2), (1, 0, 2), True, None, 3)),
    ('"bhid,bhjd->bhij"', (None, None, True, None, 4)),  # the plain form (matmul_plan's) reads the same
    ('"...id,...jd->...ij"', None),  # `...`: the rank is unknown
    ('"bhld,lrd->bhlr"', None),  # l is in all three but not a batch axis of both: not one product
    ('"bij,bjk,bkl->bil"', None),
    ('"bi,bi->b"', None),
])
def test_product_layout(equation: str, layout: object) -> None:
    assert product_layout(equation) == layout


def test_every_spelling_maps_to_a_canonical_op_with_its_own_row() -> None:
    # A canonical op is never itself respelled (the table has no chains), so one pass suffices.
    assert not set(CANONICAL.values()) & {k for k, v in CANONICAL.items() if k != v}


def test_normalise_does_not_touch_starred_arguments() -> None:
    args = (Ref("x"), Expr("*dims"))
    assert normalise(SOFTMAX, args, (), {}) == (args, ())
    assert SOFTMAX in SIGNATURES
    assert normalise(SOFTMAX, (Ref("x"), Expr("1")), (), {"x": 2}) == ((Ref("x"),), (Kwarg("dim", Expr("-1")),))
