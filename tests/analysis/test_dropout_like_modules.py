"""A module of the file whose forward is a dropout of its input or the input itself is read as `nn.Dropout`
(`adopter.analysis.idioms.layer_subclasses.dropout_like`): fairseq's `FairseqDropout`, vendored with fairseq's
multi-head attention into ablang, funasr and s3prl, made f10's optional dropout step fail, so that attention was
not reported. Its sites are reported without an automatic fix: the module drops out under a condition of its own
(`apply_during_inference`), which `scaled_dot_product_attention(dropout_p=...)` would not keep."""

from __future__ import annotations

import textwrap

from adopter.analysis.idioms.layer_subclasses import DROPOUT_LIKE
from adopter.analysis.incremental import DocumentAnalysis
from adopter.dsl.types import Ctor, ModuleFile
from adopter.engine import Environment, check, load_rules

from .helpers import HEADER, arch, module, reanalysed_after

# fairseq's FairseqDropout and the shape of its MultiheadAttention's probabilities, written small
ATTENTION = """
class FairseqDropout(nn.Module):
    def __init__(self, p, module_name=None):
        super().__init__()
        self.p = p
        self.apply_during_inference = False

    def forward(self, x, inplace: bool = False):
        \"\"\"Dropout while training, or when asked to at inference.\"\"\"
        if self.p > 0 and (self.training or self.apply_during_inference):
            return F.dropout(x, p=self.p, training=True, inplace=inplace)
        else:
            return x


{extra}


class Attention(nn.Module):
    def __init__(self, dim, heads, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.scaling = (dim // heads) ** -0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.dropout_module = {drop}(dropout)

    def forward(self, x):
        q = self.q_proj(x) * self.scaling
        k = self.k_proj(x)
        v = self.v_proj(x)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_probs = self.dropout_module(attn_weights)
        return torch.bmm(attn_probs, v)
"""

EXTRA = """
class Scaled(nn.Module):  # does something else besides the dropout
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        x = x * 2
        return F.dropout(x, self.p, self.training)


class OtherInput(nn.Module):  # drops out another tensor than its input
    def __init__(self, p):
        super().__init__()
        self.p = p
        self.mask = None

    def forward(self, x):
        return F.dropout(self.mask, self.p, self.training)


class Identity(nn.Module):  # never drops out
    def forward(self, x):
        return x


class OnLinear(nn.Linear):  # another layer's subclass
    def forward(self, x):
        return F.dropout(x, 0.1, self.training)
"""


def _f10_of(mf: ModuleFile) -> list[tuple[bool, str | None]]:
    env = Environment("cpu", frozenset(), "2.13.0")
    return [(f.fixable, f.no_fix_reason) for f in check(mf, load_rules().rules, env).findings if f.family == 10]


def _f10(drop: str) -> list[tuple[bool, str | None]]:
    return _f10_of(module(ATTENTION.format(extra=EXTRA, drop=drop)))


def test_a_dropout_like_module_is_bound_as_dropout() -> None:
    net = arch(ATTENTION.format(extra="", drop="FairseqDropout"), "Attention")
    assert net.init is not None
    (value,) = [b.value for b in net.init.bindings if b.attr == "dropout_module"]
    assert isinstance(value, Ctor) and value.callee == "torch.nn.Dropout" and value.args == ()
    assert (value.origin or "").startswith("FairseqDropout") and (value.origin or "").endswith(DROPOUT_LIKE + ")")


def test_fairseq_style_attention_with_its_own_dropout_is_found_without_a_fix() -> None:
    ((fixable, reason),) = _f10("FairseqDropout")
    assert not fixable and reason is not None and "FairseqDropout" in reason and "condition" in reason


def test_with_nn_dropout_the_same_attention_stays_fixable() -> None:
    assert _f10("nn.Dropout") == [(True, None)]


def test_modules_that_are_not_a_plain_dropout_stay_as_written() -> None:
    for name in ("Scaled", "OtherInput", "Identity"):
        net = arch(ATTENTION.format(extra=EXTRA, drop=name), "Attention")
        assert net.init is not None
        (value,) = [b.value for b in net.init.bindings if b.attr == "dropout_module"]
        assert isinstance(value, Ctor) and value.callee == name, name
        assert _f10(name) == [], name
    net = arch(ATTENTION.format(extra=EXTRA, drop="OnLinear"), "Attention")
    assert net.init is not None
    (value,) = [b.value for b in net.init.bindings if b.attr == "dropout_module"]
    assert isinstance(value, Ctor) and value.callee != "torch.nn.Dropout"


# An edit of the dropout module's forward re-analyses the classes that bind it only when the answer (is it a
# dropout of its input, by which callee) changes, not on every keystroke in its text
# (`ModuleSymbols.note_method_dropout`).
FAIRSEQ = ATTENTION.format(extra="", drop="FairseqDropout")


def test_an_edit_that_keeps_the_forward_a_dropout_does_not_reanalyse_its_users() -> None:
    for old, new in (
        ("        if self.p > 0 and (self.training or self.apply_during_inference):", "if self.training:"),
        ("            return F.dropout(x, p=self.p, training=True, inplace=inplace)",
         "return F.dropout(x, p=self.p * 0.5, training=self.training)"),
        ('        """Dropout while training, or when asked to at inference."""', '"""Dropout."""'),
    ):
        units, same = reanalysed_after(FAIRSEQ, old, new)
        assert "class FairseqDropout" in units and "class Attention" not in units and same, (new, units)


def test_an_edit_that_makes_the_forward_no_dropout_reanalyses_its_users_and_the_site_is_gone() -> None:
    for old, new in (
        ("            return x", "return x * 2"),  # another computation on one path
        ("            return F.dropout(x, p=self.p, training=True, inplace=inplace)",
         "return F.dropout2d(x, p=self.p, training=True)"),  # a channel dropout: not nn.Dropout
    ):
        text = HEADER + textwrap.dedent(FAIRSEQ)
        doc = DocumentAnalysis(text, "m.py")
        assert len(_f10_of(doc.result())) == 1
        i = text.index(old)
        line = text[:i].count("\n")
        indent = len(old) - len(old.lstrip())
        doc.edit((line, indent), (line, len(old)), new)
        result = doc.result()
        assert "class Attention" in doc.reanalysed, new
        assert result == module(doc.text, header=False, path="m.py") and _f10_of(result) == [], new


def test_the_dropout_callee_is_read_through_the_imports() -> None:
    # `F` bound to another module: `F.dropout` is not torch's, and a user depends on that binding.
    units, same = reanalysed_after(FAIRSEQ, "import torch.nn.functional as F", "import mylib.functional as F")
    assert "class Attention" in units and same
    net = arch(FAIRSEQ.replace("F.dropout(x", "G.dropout(x").replace("F.softmax", "torch.softmax"), "Attention")
    assert net.init is not None
    (value,) = [b.value for b in net.init.bindings if b.attr == "dropout_module"]
    assert isinstance(value, Ctor) and value.callee == "FairseqDropout"
    net = arch(FAIRSEQ.replace("F.dropout(x", "torch.dropout(x"), "Attention")
    assert net.init is not None
    (value,) = [b.value for b in net.init.bindings if b.attr == "dropout_module"]
    assert isinstance(value, Ctor) and value.callee == "torch.nn.Dropout"


def test_carried_dropout_fingerprints_equal_fresh_ones_through_edits() -> None:
    # the carried `METHOD_DROPOUT` answers stay those a fresh symbol table computes, edit after edit
    from .test_fingerprint_carry import _check

    text = HEADER + textwrap.dedent(FAIRSEQ)
    doc = DocumentAnalysis(text, "m.py")
    doc.result()
    for old, new in (
        ("return x\n", "return x * 2\n"),
        ("return x * 2\n", "return x\n"),
        ("F.dropout(x, p=self.p", "F.dropout2d(x, p=self.p"),
        ("F.dropout2d(x, p=self.p", "torch.dropout(x, p=self.p"),
        ("class FairseqDropout(nn.Module):", "class FairseqDropout(nn.Linear):"),
        ("class FairseqDropout(nn.Linear):", "class FairseqDropout(nn.Module):"),
        ("    def forward(self, x, inplace: bool = False):", "    def forward_(self, x, inplace: bool = False):"),
    ):
        assert old in text, old
        text = text.replace(old, new, 1)
        doc.update(text)
        _check(doc, text)
    assert any(k.startswith("method-dropout:") for k in doc._analyser._fingerprints)
