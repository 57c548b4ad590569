"""Module-level names bound by an import helper (`nn = _safe_import("torch.nn")`) are aliases of the module the
string names, as `import torch.nn as nn` would bind them (`adopter.analysis.names.import_helpers`).

Shaped on: sktime 1.2.0 (dev2) `sktime/libs/lag_llama/model/module.py` lines 18-24 and 395-416 (dev2: `torch`, `nn`, `F`
bound by `_safe_import`, a SwiGLU `MLP`; also `libs/sundial`, `libs/timer`, `libs/timemoe`, `libs/mira`,
`libs/timer_s1` with skbase's helper); deeptime 0.5.0 `deeptime/util/torch.py` lines 3-4 (`torch = try_import("torch")`,
`nn = try_import("torch.nn")`); auto-round 0.16.1 `auto_round/compressors/diffusion/eval.py` line 25 (`LazyImport(
"torchmetrics.multimodal")`); sktime `networks/convtran/_attention.py` line 8 (`NNModule = _safe_import(
"torch.nn.Module")`, a base class). Base f7d282c2 reads these names as unknown values, so no rule matches the
modules built through them (census: 10 gated rows of sktime's vendored models missed, `docs/notes/mech106.md`).

The fix is f14-swiglu's own rewrite on its own form (two `nn.Linear` of one input): only the spelling of `nn`
changed. The equivalence test runs the rewrite with the helper bound to `importlib.import_module` (so the
fixture runs) and compares outputs, input and parameter gradients (`adopter.verify.compare.compare`, float64,
CPU, eval and train mode, seeds 0 and 1; `compare.TOLERANCES`: rtol 1e-4, atol 1e-5 on outputs, 1e-4 on
gradients).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from attention_harness import findings_of, fixed, load, rules_of  # noqa: E402

from adopter.verify.compare import compare  # noqa: E402

RULES = rules_of("f14-swiglu")

# sktime lag_llama's MLP, in its own module's spelling (the helper imported from the package).
SKTIME = '''from sktime.utils.dependencies import _safe_import

torch = _safe_import("torch")
nn = _safe_import("torch.nn")
F = _safe_import("torch.nn.functional")


class MLP(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.c_fc1 = nn.Linear(width, hidden, bias=False)
        self.c_fc2 = nn.Linear(width, hidden, bias=False)
        self.c_proj = nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        x = F.silu(self.c_fc1(x)) * self.c_fc2(x)
        x = self.c_proj(x)
        return x
'''

# The same module with a keyword argument to the helper (sktime kronos/windfm: `return_object="None"`).
KEYWORD = SKTIME.replace('nn = _safe_import("torch.nn")', 'nn = _safe_import("torch.nn", return_object="None")')

# deeptime's helper: only `torch` bound, `torch.nn.Linear` and `torch.nn.functional.silu` written out.
DEEPTIME = '''from deeptime.util.platform import try_import

torch = try_import("torch")


class MLP(torch.nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.w1 = torch.nn.Linear(width, hidden)
        self.w3 = torch.nn.Linear(width, hidden)
        self.w2 = torch.nn.Linear(hidden, width)

    def forward(self, x):
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))
'''

# auto-round's class-style helper, and a path past a module (sktime convtran's `NNModule`).
LAZY = '''from auto_round.utils import LazyImport

nn = LazyImport("torch.nn")
F = LazyImport("torch.nn.functional")
NNModule = LazyImport("torch.nn.Module")


class MLP(NNModule):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(width, hidden)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return self.down(F.gelu(self.gate(x)) * self.up(x))
'''

# Runnable: the helper is importlib's (the standard one; `import_module` names a word `import`).
RUNNABLE = SKTIME.replace("from sktime.utils.dependencies import _safe_import",
                          "from importlib import import_module as _safe_import")

# Refusals: the nearest look-alikes.
# A helper defined in the file: what it returns is its body's business, not read here.
LOCAL_HELPER = SKTIME.replace("from sktime.utils.dependencies import _safe_import", '''def _safe_import(name):
    return None''')
# A dependency check (no `import` word): returns a flag, not the module.
CHECK = SKTIME.replace("from sktime.utils.dependencies import _safe_import",
                       "from skbase.utils.dependencies import _check_soft_dependencies as _safe_check").replace(
    '_safe_import("torch.nn")', '_safe_check("torch.nn")')
# `__import__("torch.nn")` returns the top-level package `torch`, not `torch.nn`.
DUNDER = SKTIME.replace('nn = _safe_import("torch.nn")', 'nn = __import__("torch.nn")')
# The module name computed, not written.
COMPUTED = SKTIME.replace('nn = _safe_import("torch.nn")', 'nn = _safe_import("torch." + "nn")').replace(
    'F = _safe_import("torch.nn.functional")', 'F = _safe_import(f"torch.nn.{NAME}")')
# `importlib_metadata` is a word `importlib`, not `import` (a version lookup).
METADATA = SKTIME.replace("from sktime.utils.dependencies import _safe_import",
                          "from importlib.metadata import version as importlib_metadata").replace(
    '_safe_import("torch.nn")', 'importlib_metadata("torch.nn")')
# A sigmoid gate through the helper's `F` is still not family 14.
SIGMOID = SKTIME.replace("F.silu(self.c_fc1(x))", "F.sigmoid(self.c_fc1(x))")
# Two projections of different inputs.
TWO_INPUTS = SKTIME.replace("def forward(self, x):", "def forward(self, x, y):").replace(
    "self.c_fc2(x)", "self.c_fc2(y)")


def _lines(source: str) -> list[tuple[str, int]]:
    return [(f.rule_id, f.span.start_line + 1) for f in findings_of(source, RULES)]


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize("source", [SKTIME, KEYWORD, RUNNABLE], ids=["sktime", "keyword", "importlib"])
def test_names_bound_by_an_import_helper_are_the_modules_they_name(source: str) -> None:
    assert _lines(source) == [("f14-swiglu", _line(source, "x = F.silu(self.c_fc1(x))"))]


def test_a_helper_binding_only_torch_and_a_class_style_helper() -> None:
    assert _lines(DEEPTIME) == [("f14-swiglu", _line(DEEPTIME, "return self.w2("))]
    assert _lines(LAZY) == [("f14-swiglu", _line(LAZY, "return self.down("))]


@pytest.mark.parametrize("source", [LOCAL_HELPER, CHECK, DUNDER, COMPUTED, METADATA, SIGMOID, TWO_INPUTS],
                         ids=["local-helper", "check", "dunder", "computed", "metadata", "sigmoid", "two-inputs"])
def test_look_alikes_are_not_read_as_nn_linear(source: str) -> None:
    # (`__import__`'s `nn.Linear` is an unknown callable: f14-gated-passed-in's form, as on base.)
    assert [rule for rule, _ in _lines(source) if rule != "f14-gated-passed-in" or source is not DUNDER] == []


def test_the_fix_is_f14_swiglu_s_and_equivalent_in_float64() -> None:
    new = fixed(RUNNABLE, RULES, 1)
    assert "gated_activation(self.c_fc1_c_fc2(x), F.silu)" in new
    assert 'nn = _safe_import("torch.nn")' in new
    torch.manual_seed(0)
    original, rewritten = load(RUNNABLE, "orig")["MLP"](8, 12), load(new, "new")["MLP"](8, 12)
    rewritten.load_state_dict(original.state_dict(), strict=True)
    original.double()
    rewritten.double()
    for train in (False, True):
        original.train(train)
        rewritten.train(train)
        for seed in (0, 1):
            torch.manual_seed(seed)
            inputs = ((torch.randn(3, 5, 8, dtype=torch.float64),), {})
            result = compare(original, rewritten, inputs, seed=seed, dtype=torch.float64)
            assert result.equivalent, (train, seed, result)
