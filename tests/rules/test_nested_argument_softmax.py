"""A softmax whose input is an expression written inside the call (`F.softmax(self.linear_layer(emb), dim=1)`,
`(logits / t).softmax(dim=-1)`), under the `liger` target (CUDA, `liger_kernel` importable): the analysis
gives that value a temporary no op of the match produces, and the `template` rewrite used to decline
("the rewrite template uses $x, which this match did not bind") while the engine called the site fixable.

Now the written argument moves into `liger_softmax(...)` where that is the same computation (one statement of
the scope itself, the variable used once: `synth/strategies/nested_arguments.py`), and elsewhere the site is
reported without a fix, with the reason. In every case `check`'s fixable (`Session.planned`) is what `fix`
applies (`Session.fix`). Each rewrite is compared with the original (outputs, input and parameter gradients;
float64 on CPU; `adopter.verify.compare` with its default tolerances rtol 1e-4, atol 1e-5; eval and train mode;
seeds 0 and 1) with a stand-in for `liger_kernel.transformers.functional.liger_softmax` that computes what Liger
defines it to, `torch.softmax(x, dim=-1)` (Liger's kernel is Triton, not runnable on CPU).
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

RULES = rules_of("f04-softmax")
LIGER = Environment(device="cuda", packages=frozenset({"liger_kernel"}), torch_version="2.13.0")


def _session() -> Session:
    return Session(RuleContext(RULES, (), LIGER))


def _contract(source: str) -> tuple[str, list[tuple[int, bool, str | None]]]:
    """The fixed text and, per f04 site of `source` (its line), whether `check` calls it fixable and why
    not; asserts that the sites called fixable are exactly those `fix` applied."""
    s = _session()
    analysed = s.analysed(source, "case.py")
    decided = [(f, s.planned(analysed, f)) for f in analysed.findings]
    out = _session().fix(source, "case.py")
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


# -- fixed: the argument as written moves into liger_softmax(...) -------------------------------------------------

# deepinv 0.5.0 deepinv/models/third_party/promptir.py:39-42 (PromptGenBlock): the Linear's call written inside the
# softmax's; the features averaged over their two spatial axes are 2-D, so dim=1 is the last axis.
PROMPT = """
import torch
import torch.nn.functional as F
from torch import nn


class PromptWeights(nn.Module):
    def __init__(self, channels, prompts):
        super().__init__()
        self.linear_layer = nn.Linear(channels, prompts)
        self.prompt_param = nn.Parameter(torch.randn(prompts, channels))

    def forward(self, x):
        B, C, H, W = x.shape
        emb = x.mean(dim=(-2, -1))
        prompt_weights = F.softmax(self.linear_layer(emb), dim=1)
        return prompt_weights @ self.prompt_param
"""

# lightly 1.6.0 lightly/loss/dino_loss.py:143-145 (DINOLoss): the centred, sharpened teacher logits written across
# lines inside the call; vit-pytorch 1.8.9 vit_pytorch/dino.py:51-52: the method on a parenthesised quotient.
TEACHER = """
import torch
import torch.nn.functional as F
from torch import nn


class Teacher(nn.Module):
    def __init__(self, dim, temp):
        super().__init__()
        self.center = nn.Parameter(torch.zeros(1, dim))
        self.temp = temp

    def forward(self, teacher_out, student_logits):
        t_out = F.softmax(
            (teacher_out - self.center) / self.temp, dim=-1
        )
        s_out = (student_logits / self.temp).softmax(dim=-1)
        return t_out, s_out
"""

# granite-tsfm 0.3.11 tsfm_public/models/tspulse/modeling_tspulse.py:104-106 (gated attention): an `nn.Softmax(dim=-1)`
# submodule called on a Linear's call; torchgan 0.1.0 torchgan/layers/selfattention.py:58: a bmm inside the call, returned.
GATED = """
import torch
from torch import nn


class Gated(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn_layer = nn.Linear(dim, dim)
        self.attn_activation_layer = nn.Softmax(dim=-1)

    def forward(self, inputs, keys, queries):
        attn_weight = self.attn_activation_layer(self.attn_layer(inputs))
        return inputs * attn_weight, torch.softmax(torch.bmm(keys, queries), dim=-1)
"""


@pytest.mark.usefixtures("liger_stand_in")
def test_the_linear_inside_the_softmax_is_moved_into_liger_softmax() -> None:
    new, sites = _contract(PROMPT)
    assert sites == [(_line(PROMPT, "F.softmax"), True, None)]
    assert "prompt_weights = liger_softmax(self.linear_layer(emb))" in new, new
    _equivalent(PROMPT, new, "PromptWeights", lambda cls: cls(6, 5), lambda: (_f64(3, 6, 4, 4),))


@pytest.mark.usefixtures("liger_stand_in")
def test_a_compound_argument_keeps_its_meaning_without_extra_parentheses() -> None:
    new, sites = _contract(TEACHER)
    assert [fixable for _, fixable, _ in sites] == [True, True], sites
    assert "t_out = liger_softmax((teacher_out - self.center) / self.temp)" in new, new
    assert "s_out = liger_softmax(student_logits / self.temp)" in new, new
    _equivalent(TEACHER, new, "Teacher", lambda cls: cls(7, 0.5), lambda: (_f64(4, 7), _f64(4, 7)))


@pytest.mark.usefixtures("liger_stand_in")
def test_a_submodule_call_and_a_returned_softmax_take_the_nested_argument() -> None:
    new, sites = _contract(GATED)
    assert [fixable for _, fixable, _ in sites] == [True, True], sites
    assert "attn_weight = liger_softmax(self.attn_layer(inputs))" in new, new
    assert "return inputs * attn_weight, liger_softmax(torch.bmm(keys, queries))" in new, new
    _equivalent(GATED, new, "Gated", lambda cls: cls(5),
                lambda: (_f64(2, 3, 5), _f64(2, 4, 6), _f64(2, 6, 4)))


# -- not fixed, and not called fixable: moving the text would not be the same computation --------------------------

# transformers 4.46.3 models/wav2vec2/modeling_wav2vec2.py:1226-1228 (GumbelVectorQuantizer): the match reads
# through the `.float()` cast, so $x is the view; writing the view alone would drop the cast.
CAST = """
import torch
from torch import nn


class Quantizer(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.num_groups = groups

    def forward(self, hidden_states, batch_size, sequence_length):
        codevector_soft_dist = torch.softmax(
            hidden_states.view(batch_size * sequence_length, self.num_groups, -1).float(), dim=-1
        )
        return codevector_soft_dist
"""

# dalle2-pytorch 1.15.6 dalle2_pytorch/vqgan_vae.py:101-104 (`stable_softmax`), inlined at its call: the edit would be
# in the helper, which other calls may reach with another axis.
HELPER = """
import torch
from torch import nn


def stable_softmax(t, dim=-1, alpha=32 ** 2):
    t = t / alpha
    t = t - torch.amax(t, dim=dim, keepdim=True).detach()
    return (t * alpha).softmax(dim=dim)


class Attend(nn.Module):
    def forward(self, sim):
        return stable_softmax(sim, dim=-1)
"""

# The same helper reached by two calls that disagree (one softmax over the last axis, one over axis 1): a
# rewrite of the helper would change the second; the nested argument is the caller's.
TWO_CALLS = """
import torch
from torch import nn


def attend(scores, dim):
    probs = scores.softmax(dim)
    return probs


class Mask(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.proj = nn.Linear(c, c)

    def forward(self, x):
        m = attend(self.proj(x), -1)
        s = attend(self.proj(x), 1)
        return m, s
"""


# The two calls' case is refused first because the helper's other call is not the site (`engine.called_elsewhere`,
# before any strategy plans the nested argument).
@pytest.mark.parametrize(("source", "why"), [(CAST, "cannot move exactly"), (HELPER, "cannot move exactly"),
                                             (TWO_CALLS, "its call at line 18 in this scope is not the same site")],
                         ids=["cast-read-through", "inlined-helper", "helper-two-calls"])
def test_a_nested_argument_that_cannot_move_exactly_is_reported_without_a_fix(source: str, why: str) -> None:
    new, sites = _contract(source)
    assert new == source
    assert sites and all(not fixable and why in (reason or "") for _, fixable, reason in sites), sites


def test_on_cpu_the_nested_form_stays_information_only() -> None:
    s = Session(RuleContext(RULES, (), Environment(device="cpu", packages=frozenset(), torch_version="2.13.0")))
    analysed = s.analysed(PROMPT, "case.py")
    assert [s.planned(analysed, f).fixable for f in analysed.findings] == [False]
    assert s.fix(PROMPT, "case.py").new_source == PROMPT


# The same two calls with the argument bound to a name first: $x is then a name, and the rewrite would edit the
# helper, giving the call with axis 1 the softmax over the last axis. Refused since a helper's site is fixable only
# where every call of the helper is one (`engine.called_elsewhere`, docs/notes/fix32.md; was a strict xfail).
TWO_CALLS_NAMED = TWO_CALLS.replace(
    "        m = attend(self.proj(x), -1)\n        s = attend(self.proj(x), 1)",
    "        a = self.proj(x)\n        m = attend(a, -1)\n        s = attend(a, 1)")


def test_a_helper_whose_calls_disagree_is_not_fixed() -> None:
    assert TWO_CALLS_NAMED != TWO_CALLS
    new, sites = _contract(TWO_CALLS_NAMED)
    assert new == TWO_CALLS_NAMED and not any(fixable for _, fixable, _ in sites), (sites, new)
