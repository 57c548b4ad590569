"""A site written in a same-file function that a forward calls (`probs = attend(a, -1)`) is rewritten in that
function, so every call of the function runs the rewrite: it is fixable only where each call the file shows is a
match of the same rule at the same ops with the same constants (`adopter.engine.called_elsewhere`). Otherwise it is
still reported, detection-only, with the reason (the call's line, the constant that differs, the use as a value).

Checked as `check` and `fix` see it: the sites `check` calls fixable (`Session.planned`) are exactly those `fix`
applies. Rewrites compared with the original: outputs, input and parameter gradients, float64 on CPU,
`adopter.verify.compare` with its default tolerances (rtol 1e-4, atol 1e-5), eval and train mode, seeds 0 and 1;
Liger's softmax (Triton, not runnable on CPU) replaced by what it computes, `torch.softmax(x, dim=-1)`.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator

import pytest

torch = pytest.importorskip("torch")

from attention_harness import load, rules_of  # noqa: E402

from adopter.engine import Environment  # noqa: E402
from adopter.session import RuleContext, Session  # noqa: E402

pytestmark = pytest.mark.torch

SOFTMAX = rules_of("f04-softmax")
NORMS = rules_of("f11-layernorm")
LIGER = Environment(device="cuda", packages=frozenset({"liger_kernel"}), torch_version="2.13.0")


def _contract(source: str, rules: tuple[object, ...]) -> tuple[str, list[tuple[int, bool, str | None]]]:
    """The fixed text and, per site (its line), whether `check` calls it fixable and why not; asserts that the
    sites called fixable are exactly those `fix` applied."""
    s = Session(RuleContext(rules, (), LIGER))  # type: ignore[arg-type]
    analysed = s.analysed(source, "case.py")
    decided = [(f, s.planned(analysed, f)) for f in analysed.findings]
    out = Session(RuleContext(rules, (), LIGER)).fix(source, "case.py")  # type: ignore[arg-type]
    fixable = sorted(f.span.start_line for f, d in decided if d.fixable)
    assert sorted(f.span.start_line for f in out.applied) == fixable, (
        [(f.span.start_line + 1, d) for f, d in decided], [(f.span.start_line + 1, r) for f, r in out.skipped])
    return out.new_source, [(f.span.start_line + 1, d.fixable, d.reason) for f, d in decided]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.fixture
def liger_stand_in() -> Iterator[None]:
    """`liger_kernel.transformers.functional.liger_softmax` as Liger defines it (the softmax over the last axis)."""
    names = ("liger_kernel", "liger_kernel.transformers", "liger_kernel.transformers.functional")
    saved = {n: sys.modules.get(n) for n in names}
    modules = [types.ModuleType(n) for n in names]
    modules[2].liger_softmax = lambda x: torch.softmax(x, dim=-1)  # type: ignore[attr-defined]
    sys.modules.update(zip(names, modules))
    try:
        yield
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def _equivalent(source: str, new: str, cls: str, make: Callable[[type], object],
                inputs: Callable[[], tuple[object, ...]]) -> None:
    from adopter.verify.compare import compare

    torch.manual_seed(0)
    original = make(load(source, "orig")[cls]).double()  # type: ignore[attr-defined]
    rewritten = make(load(new, "new")[cls]).double()  # type: ignore[attr-defined]
    rewritten.load_state_dict(original.state_dict(), strict=True)
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            result = compare(original, rewritten, (inputs(), {}), seed=seed, dtype=torch.float64)
            assert result.equivalent, (train, seed, result)


def _f64(*shape: int) -> object:
    return torch.randn(*shape, dtype=torch.float64)


# -- softmax (family 4) ----------------------------------------------------------------------------------------

# transformers 4.46.3 models/prophetnet/modeling_prophetnet.py:174-178 (`softmax(hidden_state, dim, onnx_trace)`),
# called at :886 and :948 of ProphetNetNgramSelfAttention.forward, both with dim=-1: the main stream's and the
# predict stream's attention weights. Every call is a site: the helper is rewritten once.
SAME_AXIS = """
import torch
import torch.nn.functional as F
from torch import nn


def softmax(hidden_state, dim):
    return F.softmax(hidden_state, dim=dim)


class TwoStreams(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.main = nn.Linear(c, c)
        self.predict = nn.Linear(c, c)

    def forward(self, x):
        main_scores = self.main(x)
        predict_scores = self.predict(x)
        main_probs = softmax(main_scores, dim=-1)
        predict_probs = softmax(predict_scores, dim=-1)
        return main_probs * predict_probs
"""

ONE_CALL = SAME_AXIS.replace("        predict_probs = softmax(predict_scores, dim=-1)\n", "").replace(
    "main_probs * predict_probs", "main_probs + predict_scores")

# transformers 4.46.3 models/groupvit/modeling_groupvit.py:59-60 (`hard_softmax(logits, dim)`: `logits.softmax(dim)`),
# called at :182 by GroupViTAssignAttention.get_attn with dim=-2 (over the groups); here a second class calls the
# same helper over the last axis. Rewriting the helper would move the first class's softmax to the last axis.
TWO_CLASSES = """
import torch
from torch import nn


def normalise(logits, dim):
    probs = logits.softmax(dim)
    return probs


class OverGroups(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.proj = nn.Linear(c, c)

    def forward(self, x):
        attn = self.proj(x)
        return normalise(attn, -2)


class OverTokens(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.proj = nn.Linear(c, c)

    def forward(self, x):
        attn = self.proj(x)
        return normalise(attn, -1)
"""

# transformers 4.46.3 activations.py (ACT2FN: a table from names to functions and classes): the helper is also a
# value of a table, called wherever the table is read (not seen); asteroid 0.7.0 masknn/activations.py:35
# (`softmax(dim=None)`, a factory handed on to the mask networks) the same as an argument.
IN_A_TABLE = SAME_AXIS.replace("\n\nclass TwoStreams", '\n\nNORMALISERS = {"softmax": softmax}\n\n\nclass TwoStreams')
HANDED_ON = ONE_CALL.replace("        return main_probs + predict_scores",
                             "        return main_probs + torch.utils.checkpoint.checkpoint(softmax, predict_scores, -1)")
STORED = ONE_CALL.replace("        self.predict = nn.Linear(c, c)\n",
                          "        self.predict = nn.Linear(c, c)\n        self.normaliser = softmax\n")
EXPORTED = ONE_CALL.replace("\n\ndef softmax", '\n__all__ = ["softmax", "TwoStreams"]\n\n\ndef softmax')


def test_a_helper_every_call_of_which_is_the_site_is_rewritten_once_and_computes_the_same(liger_stand_in: None) -> None:
    new, sites = _contract(SAME_AXIS, SOFTMAX)
    assert sites == [(_line(SAME_AXIS, "return F.softmax"), True, None)], sites
    assert new.count("liger_softmax(hidden_state)") == 1 and "F.softmax" not in new, new
    _equivalent(SAME_AXIS, new, "TwoStreams", lambda c: c(8), lambda: (_f64(2, 5, 8),))


def test_a_helper_called_once_stays_fixable(liger_stand_in: None) -> None:
    new, sites = _contract(ONE_CALL, SOFTMAX)
    assert sites == [(_line(ONE_CALL, "return F.softmax"), True, None)], sites
    _equivalent(ONE_CALL, new, "TwoStreams", lambda c: c(8), lambda: (_f64(2, 5, 8),))


def test_a_helper_two_classes_call_at_different_axes_is_not_fixed() -> None:
    new, sites = _contract(TWO_CLASSES, SOFTMAX)
    assert new == TWO_CLASSES
    other = _line(TWO_CLASSES, "return normalise(attn, -2)")
    assert [(line, fixable) for line, fixable, _ in sites] == [(_line(TWO_CLASSES, "logits.softmax(dim)"), False)]
    assert f"the call of `normalise` at line {other} is not the same site" in (sites[0][2] or ""), sites


@pytest.mark.parametrize(("source", "why"), [
    (IN_A_TABLE, "uses `softmax` as a value"), (HANDED_ON, "uses `softmax` as a value"),
    (STORED, "uses `softmax` as a value"), (EXPORTED, "the file exports `softmax` (`__all__`)")],
    ids=["in-a-table", "handed-on", "stored", "exported"])
def test_a_helper_used_as_a_value_is_not_fixed(source: str, why: str) -> None:
    new, sites = _contract(source, SOFTMAX)
    assert new == source
    assert sites and all(not fixable and why in (reason or "") for _, fixable, reason in sites), sites



@pytest.mark.pure_python  # patches a module function, which compiled callers bypass
def test_a_failing_check_of_other_calls_leaves_the_helper_detection_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the file-wide check raises (a bug in it, as the compiled `_Uses` once did), the helper's site is still
    reported but never called fixable: an unknown caller may be another site."""
    from adopter.engine import sites as engine_sites

    def broken(*args: object) -> None:
        raise KeyError("visit_FunctionDef")

    monkeypatch.setattr(engine_sites, "with_unseen_calls", broken)
    new, sites = _contract(SAME_AXIS, SOFTMAX)
    assert new == SAME_AXIS
    assert [(line, fixable) for line, fixable, _ in sites] == [(_line(SAME_AXIS, "return F.softmax"), False)]
    assert "the check of its other calls failed (KeyError" in (sites[0][2] or ""), sites


def test_a_helper_called_from_an_async_def_at_another_axis_is_not_fixed() -> None:
    """An `async def` is visited as a function too (its calls and the class around it are read)."""
    source = TWO_CLASSES.replace("    def forward(self, x):\n        attn = self.proj(x)\n        return normalise(attn, -2)",
                                 "    def forward(self, x):\n        attn = self.proj(x)\n        return normalise(attn, -1)"
                                 "\n\n    async def later(self, x):\n        return normalise(x, -2)")
    assert "async def later" in source
    new, sites = _contract(source, SOFTMAX)
    assert new == source
    assert [fixable for _, fixable, _ in sites] == [False], sites
    assert f"the call of `normalise` at line {_line(source, 'normalise(x, -2)')} is not" in (sites[0][2] or ""), sites


# -- written-out LayerNorm (family 11) -------------------------------------------------------------------------

# asteroid 0.7.0 masknn/norms.py:13-29 (`z_norm(x, dims, eps)`: mean and biased variance over `dims`), reached with
# the channel axes (`_glob_norm`) and the feature axes (`_feat_glob_norm`); timm 1.0 layers/norm.py:85-96 the
# channels-first LayerNorm over dim=1. Here one class normalises tokens over the last axis, another channels over
# axis 1: the rewrite (`layer_norm(x, x.shape[-1:])`) is right for the first call only.
TWO_AXES_NORM = """
import torch
from torch import nn


def z_norm(x, weight, bias, eps, dim):
    mean = x.mean(dim, keepdim=True)
    var = (x - mean).pow(2).mean(dim, keepdim=True)
    x = (x - mean) / torch.sqrt(var + eps)
    return weight * x + bias


class TokenNorm(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))

    def forward(self, x):
        return z_norm(x, self.weight, self.bias, 1e-6, -1)


class ChannelNorm(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c, 1, 1))
        self.bias = nn.Parameter(torch.zeros(c, 1, 1))

    def forward(self, x):
        return z_norm(x, self.weight, self.bias, 1e-6, 1)
"""

SAME_AXIS_NORM = TWO_AXES_NORM.replace("1e-6, 1)", "1e-6, -1)").replace(
    "torch.ones(c, 1, 1)", "torch.ones(c)").replace("torch.zeros(c, 1, 1)", "torch.zeros(c)")

# The same helper where the two classes pass another eps: the rewrite writes the site's eps into the helper.
OTHER_EPS_NORM = SAME_AXIS_NORM.replace("self.bias, 1e-6, -1)\n\n\nclass", "self.bias, 1e-5, -1)\n\n\nclass", 1)


def test_a_norm_helper_two_classes_run_at_different_axes_is_not_fixed() -> None:
    new, sites = _contract(TWO_AXES_NORM, NORMS)
    assert new == TWO_AXES_NORM
    other = _line(TWO_AXES_NORM, "self.bias, 1e-6, 1)")
    assert sites and all(not fixable for _, fixable, _ in sites), sites
    assert f"the call at line {other} in `ChannelNorm` runs it with dim = 1 where this site has dim = -1" in (
        sites[0][2] or ""), sites


def test_a_norm_helper_two_classes_run_with_other_constants_is_not_fixed() -> None:
    new, sites = _contract(OTHER_EPS_NORM, NORMS)
    assert new == OTHER_EPS_NORM
    assert sites and all(not fixable and "eps = 1e-6 where this site has eps = 1e-5" in (reason or "")
                         for _, fixable, reason in sites), sites


def test_a_norm_helper_two_classes_run_alike_is_rewritten_once_and_computes_the_same() -> None:
    new, sites = _contract(SAME_AXIS_NORM, NORMS)
    assert [fixable for _, fixable, _ in sites] == [True], sites
    assert new.count("layer_norm(") == 1, new
    for cls in ("TokenNorm", "ChannelNorm"):
        _equivalent(SAME_AXIS_NORM, new, cls, lambda c: c(8), lambda: (_f64(2, 5, 8),))
