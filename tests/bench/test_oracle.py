"""The recall oracle finds each family's ops in a traced model with torch's pattern matcher and places
them at the model's source lines; library ops (nn.LayerNorm, F.gelu, SDPA) never count as hand-written."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from adopter.construction import Built, construct  # noqa: E402
from oracle.match import find_sites  # noqa: E402
from oracle.report import finding_lines  # noqa: E402
from oracle.trace import trace_step  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

MODEL = '''import math
import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.h = heads
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, 64, bias=False)
        self.up = nn.Linear(dim, 64, bias=False)
        self.down = nn.Linear(64, dim, bias=False)
        self.w = nn.Parameter(torch.ones(dim))
        self.ln = nn.LayerNorm(dim)
        self.conv = nn.Conv2d(dim, dim, 3, padding=1)
        self.bn = nn.BatchNorm2d(dim)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.h, -1).transpose(1, 2)
        k = self.k(x).view(B, T, self.h, -1).transpose(1, 2)
        v = self.v(x).view(B, T, self.h, -1).transpose(1, 2)
        cos, sin = torch.ones_like(q), torch.zeros_like(q)
        q = q * cos + rotate_half(q) * sin
        a = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(C // self.h)
        a = F.softmax(a, dim=-1)
        o = torch.matmul(a, v).transpose(1, 2).reshape(B, T, C)
        u = o.mean(-1, keepdim=True)
        s = (o - u).pow(2).mean(-1, keepdim=True)
        o = (o - u) / torch.sqrt(s + 1e-5) * self.w
        r = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-6)
        g = r * 0.5 * (1.0 + torch.erf(r / math.sqrt(2.0)))
        h = self.down(F.silu(self.gate(g)) * self.up(g))
        h = self.ln(h) + F.gelu(h) + F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        img = h.transpose(1, 2).reshape(B, C, T, 1)
        return self.bn(self.conv(img))
'''


def _load(tmp_path: Path) -> tuple[ModuleType, str]:
    path = tmp_path / "oracle_model.py"
    path.write_text(MODEL, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("oracle_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path.resolve())


def _line(text: str) -> int:
    return next(i for i, ln in enumerate(MODEL.splitlines(), 1) if text in ln)


def test_each_family_at_its_lines(tmp_path: Path) -> None:
    module, path = _load(tmp_path)
    built = construct(module.Block, module)
    assert isinstance(built, Built), built
    traced = trace_step(built.model, built.args, built.kwargs)
    assert traced.backward
    sites = find_sites(traced.forward, lambda f: f == path)
    by_family: dict[int, set[int]] = {}
    for s in sites:
        by_family.setdefault(s.family, set()).update(ln for f, ln in s.lines)
    assert _line("self.q(x).view") in by_family[9] and _line("self.v(x).view") in by_family[9]
    assert _line("F.softmax(a, dim=-1)") in by_family[4]
    assert {_line("a = torch.matmul(q, k"), _line("o = torch.matmul(a, v)")} <= by_family[10]
    assert _line("torch.sqrt(s + 1e-5)") in by_family[11]
    assert _line("torch.rsqrt(o.pow(2)") in by_family[12]
    assert _line("torch.erf(r /") in by_family[13]
    assert _line("self.down(F.silu") in by_family[14]
    assert _line("rotate_half(q) * sin") in by_family[15]
    assert _line("self.bn(self.conv(img))") in by_family[7]
    # Library ops are not hand-written formulas, and SDPA's own softmax is not the user's attention.
    ln_line, sdpa_line = _line("self.ln(h) + F.gelu(h)"), _line("self.ln(h) + F.gelu(h)")
    assert ln_line not in by_family.get(11, set()) and ln_line not in by_family.get(13, set())
    assert sdpa_line not in by_family.get(10, set()) and sdpa_line not in by_family.get(4, set())
    assert 5 not in by_family and 6 not in by_family  # no dropout here; the GELU follows no Linear


def test_finding_lines_cover_statements_and_init() -> None:
    finding = {"statements": [[10, 11]], "init": [[3, 3]], "range": {"start": {"line": 10}, "end": {"line": 11}}}
    assert finding_lines(finding) == {3, 10, 11}


def test_the_oracle_excludes_every_held_out_distribution_and_every_fresh_slice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from oracle.install import excluded

    monkeypatch.delenv("ADOPTER_ORACLE_HELDOUT", raising=False)
    spec = importlib.util.spec_from_file_location("heldout_corpus", REPO / "bench" / "heldout_corpus.py")
    assert spec is not None and spec.loader is not None
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    from oracle.fresh import SLICES

    slices = {n for s in SLICES.values() for n in s.names()}
    assert set(excluded()) == {dist for dist, _, _ in corpus.MANIFEST} | slices and len(excluded()) >= 24 + 59
    names = tmp_path / "names.txt"
    names.write_text("a-dist\n\nb-dist\n", encoding="utf-8")
    monkeypatch.setenv("ADOPTER_ORACLE_HELDOUT", str(names))
    assert excluded() == ("a-dist", "b-dist")


FORMS = '''import math

import torch
import torch.nn.functional as F
from torch import nn


class PrescaledAttention(nn.Module):
    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.h, self.scale = heads, (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, dim * 2, bias=False)
        self.rel = nn.Parameter(torch.zeros(heads, 1, 1))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        B, T, C = x.shape
        q = self.to_q(x).view(B, T, self.h, -1).transpose(1, 2)
        k, v = (t.reshape(B, T, self.h, -1).transpose(1, 2) for t in self.to_kv(x).chunk(2, dim=-1))
        q *= self.scale
        sim = torch.einsum("bhid,bhjd->bhij", q, k)
        sim += self.rel
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        sim = sim.masked_fill(causal, -1e9)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", self.drop(attn), v)
        return out.transpose(1, 2).reshape(B, T, C), attn


class ChunkedGLU(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.proj = nn.Linear(dim, dim * 4)
        self.out = nn.Linear(dim * 2, dim)

    def forward(self, x):
        h, gate = self.proj(x).chunk(2, dim=-1)
        return self.out(h * F.gelu(gate))


class QuickGeluMlp(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        return h * torch.sigmoid(1.702 * h)


class GeluMlp(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        return F.gelu(h)


class ScaledNormRMS(nn.Module):
    # ||x|| * d**-0.5 is the root mean square: an RMSNorm written with torch.norm (PaLM-style code)
    def __init__(self, dim=8):
        super().__init__()
        self.scale = dim ** -0.5
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        norm = torch.norm(x, dim=-1, keepdim=True) * self.scale
        return x / norm.clamp(min=1e-8) * self.g


class UnexpandedNormRMS(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.scaling = dim ** 0.5

    def forward(self, x):
        denom = x.norm(p=2, dim=-1, keepdim=True).clamp_min(1e-12)
        return (x / denom) * self.scaling


class GainFirstRMS(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.scale = dim ** 0.5
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.g * self.scale


class ScaleNorm(nn.Module):
    # g * x / ||x|| with a learned scalar g (Nguyen & Salazar 2019): RMSNorm with the weight g / sqrt(d)
    def __init__(self, dim=8):
        super().__init__()
        self.g = nn.Parameter(torch.ones(1))

    def forward(self, x):
        n = torch.norm(x, dim=-1, keepdim=True).clamp(min=1e-5)
        return x / n * self.g


class ClassesFirstLM(nn.Module):
    def __init__(self, dim=8, vocab=16):
        super().__init__()
        self.to_logits = nn.Linear(dim, vocab, bias=False)

    def forward(self, x, labels):
        logits = self.to_logits(x)
        return F.cross_entropy(logits.permute(0, 2, 1), labels)


class GaussianGate(nn.Module):
    # the Gaussian CDF: 0.5 * (1 + erf(x / sqrt 2)), not multiplied by x: not GELU
    def forward(self, x):
        return x.mean() + 0.5 * (1 + torch.erf(x / math.sqrt(2)))


class ErfGelu(nn.Module):
    def forward(self, x):
        return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


class ChannelsLastMLP(nn.Module):
    # ConvNeXt's pointwise Linear on a permuted feature map, then GELU
    def __init__(self, dim=8):
        super().__init__()
        self.pw = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        return self.act(self.pw(x))


class NormOnly(nn.Module):
    def forward(self, x):
        return x.norm(dim=-1, keepdim=True) + x.mean()


class WeightNormConv(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim))

    def forward(self, x):
        w = F.normalize(self.weight, dim=-1) * 2.0
        y = F.linear(x, w)
        return y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)
'''


def _sites_of(tmp_path: Path, name: str, args: tuple[torch.Tensor, ...]) -> tuple[dict[int, set[int]], list[str]]:
    path = tmp_path / "oracle_forms.py"
    path.write_text(FORMS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("oracle_forms", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):  # as the oracle builds them: no weights
        model = getattr(module, name)()
    traced = trace_step(model, tuple(a.to("meta") for a in args), {})
    where = str(path.resolve())
    by_family: dict[int, set[int]] = {}
    for s in find_sites(traced.forward, lambda f: f == where):
        by_family.setdefault(s.family, set()).update(ln for f, ln in s.lines)
    return by_family, FORMS.splitlines()


def _form_line(lines: list[str], text: str) -> int:
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


def test_attention_with_scaled_q_bias_mask_dropout_and_returned_probabilities(tmp_path: Path) -> None:
    # In-place scale and bias, a masked_fill, dropout, and the probabilities returned beside the output
    # (inductor's own patterns ask each inner node to have one user; the oracle asks what is computed).
    by_family, lines = _sites_of(tmp_path, "PrescaledAttention", (torch.randn(2, 8, 32),))
    expected = {_form_line(lines, t) for t in ("q *= self.scale", 'sim = torch.einsum("bhid', "sim += self.rel",
                                                  "sim.masked_fill(causal", "attn = sim.softmax",
                                                  'out = torch.einsum("bhij')}
    assert expected <= by_family[10]


def test_a_chunked_gated_mlp_on_two_dimensional_input(tmp_path: Path) -> None:
    # The gate is the second half and the product's left operand is the first: diffusers' GEGLU form.
    by_family, lines = _sites_of(tmp_path, "ChunkedGLU", (torch.randn(4, 32),))
    assert _form_line(lines, "return self.out(h * F.gelu(gate))") in by_family[14]


def test_rms_normalisation_of_a_weight_is_not_rmsnorm(tmp_path: Path) -> None:
    by_family, lines = _sites_of(tmp_path, "WeightNormConv", (torch.randn(2, 4, 8),))
    assert _form_line(lines, "torch.rsqrt(y.pow(2)") in by_family[12]
    assert _form_line(lines, "F.normalize(self.weight") not in by_family[12]


def test_gelu_written_with_erf_needs_the_product_with_its_input(tmp_path: Path) -> None:
    by_family, lines = _sites_of(tmp_path, "ErfGelu", (torch.randn(2, 4, 8),))
    assert _form_line(lines, "return x * 0.5 * (1.0 + torch.erf") in by_family[13]
    by_family, _ = _sites_of(tmp_path, "GaussianGate", (torch.randn(2, 4, 8),))
    assert 13 not in by_family


def test_linear_gelu_on_a_permuted_feature_map(tmp_path: Path) -> None:
    by_family, lines = _sites_of(tmp_path, "ChannelsLastMLP", (torch.randn(2, 8, 4, 4),))
    assert _form_line(lines, "return self.act(self.pw(x))") in by_family[6]


def test_lm_head_cross_entropy_with_classes_first(tmp_path: Path) -> None:
    by_family, lines = _sites_of(tmp_path, "ClassesFirstLM", (torch.randn(2, 4, 8), torch.randint(0, 16, (2, 4))))
    assert {_form_line(lines, "logits = self.to_logits(x)"), _form_line(lines, "F.cross_entropy(logits.permute")} <= \
        by_family[16]


def test_rmsnorm_written_with_torch_norm(tmp_path: Path) -> None:
    by_family, lines = _sites_of(tmp_path, "ScaledNormRMS", (torch.randn(2, 4, 8),))
    assert _form_line(lines, "return x / norm.clamp(min=1e-8)") in by_family[12]
    by_family, lines = _sites_of(tmp_path, "UnexpandedNormRMS", (torch.randn(2, 4, 8),))
    assert _form_line(lines, "return (x / denom) * self.scaling") in by_family[12]
    by_family, lines = _sites_of(tmp_path, "GainFirstRMS", (torch.randn(2, 4, 8),))
    assert _form_line(lines, "return F.normalize(x, dim=-1) * self.g * self.scale") in by_family[12]
    by_family, lines = _sites_of(tmp_path, "ScaleNorm", (torch.randn(2, 4, 8),))
    assert _form_line(lines, "return x / n * self.g") in by_family[12]
    by_family, _ = _sites_of(tmp_path, "NormOnly", (torch.randn(2, 4, 8),))
    assert 12 not in by_family  # a norm that divides nothing is no normalisation


CPU_ONLY = '''import torch
from torch import nn


class MakesCpuTensors(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.register_buffer("temperature", torch.tensor(2.0))

    def forward(self, x):
        steps = int(self.temperature.item())  # a value read out of a buffer: no meta tensor has one
        bias = torch.linspace(0, 1, x.shape[-1], device="cpu")
        for _ in range(steps):
            x = self.fc(x) + bias
        return torch.softmax(x, dim=-1)


class BranchesOnValues(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if (x > 100).any():  # a branch on the input's values: make_fx cannot follow it, dynamo breaks there
            x = x.clamp(max=100)
        return torch.softmax(self.fc(x), dim=-1)
'''


def test_a_class_that_needs_real_tensors_is_traced_on_the_cpu(tmp_path: Path) -> None:
    from adopter.construction import candidates
    from oracle.trace import needs_real_tensors
    from oracle.worker import _on_cpu, _trace_any

    path = tmp_path / "oracle_cpu.py"
    path.write_text(CPU_ONLY, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("oracle_cpu", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = construct(module.MakesCpuTensors, module, generic_inputs=True)
    assert isinstance(built, Built)
    record: dict[str, object] = {}
    with pytest.raises(Exception) as failed:
        _trace_any(trace_step, built, candidates, record)
    assert needs_real_tensors(failed.value)
    traced = _on_cpu(failed.value, module.MakesCpuTensors, module, construct, trace_step, record)
    assert record["device"] == "cpu" and traced.backward
    where = str(path.resolve())
    assert any(s.family == 4 for s in find_sites(traced.forward, lambda f: f == where))
    # A model that rejects its input is not retried on the CPU.
    assert not needs_real_tensors(RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"))
    with pytest.raises(RuntimeError):
        _on_cpu(RuntimeError("shape '[2, 3]' is invalid"), module.MakesCpuTensors, module, construct, trace_step, {})
    # A forward that branches on its input's values: on the CPU, through dynamo's graphs.
    built = construct(module.BranchesOnValues, module, generic_inputs=True)
    assert isinstance(built, Built)
    with pytest.raises(Exception) as failed:
        _trace_any(trace_step, built, candidates, {})
    record = {}
    traced = _on_cpu(failed.value, module.BranchesOnValues, module, construct, trace_step, record)
    assert record["device"] == "cpu, dynamo"
    softmax = next(i for i, ln in enumerate(CPU_ONLY.splitlines(), 1) if "softmax(self.fc(x)" in ln)
    assert any(s.family == 4 and s.anchor == (where, softmax) for g in traced.graphs for s in find_sites(g, lambda f: f == where))


ACTS = '''import torch.nn.functional as F
from torch import nn


class GELUActivation(nn.Module):
    def forward(self, x):
        return F.gelu(x)
'''
BLOCKS = '''import torch
from torch import nn

from oracle_acts import GELUActivation


class Intermediate(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.dense = nn.Linear(dim, 4 * dim)
        self.act = GELUActivation()

    def forward(self, x):
        h = self.dense(x)
        return self.act(h)


class ScaledQuery(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.h = heads
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q = (self.q_proj(x) * 0.5).view(B, T, self.h, -1).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, -1).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, -1).transpose(1, 2)
        return torch.cat([q, k, v], dim=-1)
'''


def test_a_site_through_a_helper_in_another_file_is_placed_at_the_model_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "oracle_acts.py").write_text(ACTS, encoding="utf-8")
    (tmp_path / "oracle_blocks.py").write_text(BLOCKS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import oracle_blocks  # type: ignore[import-not-found]

    files = {str((tmp_path / n).resolve()) for n in ("oracle_acts.py", "oracle_blocks.py")}
    blocks = str((tmp_path / "oracle_blocks.py").resolve())
    lines = BLOCKS.splitlines()
    with torch.device("meta"):
        model = oracle_blocks.Intermediate()
    traced = trace_step(model, (torch.randn(2, 4, 16, device="meta"),), {})
    site = next(s for s in find_sites(traced.forward, lambda f: f in files) if s.family == 6)
    out = site.to_json()
    assert (out["file"], out["line"]) == (blocks, _form_line(lines, "return self.act(h)"))
    assert _form_line(lines, "h = self.dense(x)") in out["lines"]
    acts = str((tmp_path / "oracle_acts.py").resolve())
    assert out["elsewhere"] == {acts: [_form_line(ACTS.splitlines(), "return F.gelu(x)")]}
    # A query projection scaled before its head split is still one of the three projections.
    with torch.device("meta"):
        model = oracle_blocks.ScaledQuery()
    traced = trace_step(model, (torch.randn(2, 4, 16, device="meta"),), {})
    qkv = [s for s in find_sites(traced.forward, lambda f: f == blocks) if s.family == 9]
    assert len(qkv) == 1 and _form_line(lines, "q = (self.q_proj(x) * 0.5)") in {ln for _, ln in qkv[0].lines}


def test_quick_gelu_after_a_linear_is_family_13_not_family_6(tmp_path: Path) -> None:
    """QuickGELU (`h * sigmoid(1.702 h)`, CLIP's; diffusers 0.31 `ApproximateGELU`, piq 0.8 `QuickGELU`) is
    not the GELU the f06 rewrite computes: family 13's sigmoid form counts it, family 6 does not. A Linear
    followed by `F.gelu` stays a family-6 site."""
    by_family, lines = _sites_of(tmp_path, "QuickGeluMlp", (torch.randn(2, 8, 32),))
    line = _form_line(lines, "return h * torch.sigmoid(1.702 * h)")
    assert line in by_family[13]
    assert line not in by_family.get(6, set())
    by_family, lines = _sites_of(tmp_path, "GeluMlp", (torch.randn(2, 8, 32),))
    assert _form_line(lines, "return F.gelu(h)") in by_family[6]


def test_the_report_leaves_out_sites_of_a_retired_pattern(tmp_path: Path) -> None:
    """Results traced before `linear_quick_gelu` was retired still hold its sites: the report scores them
    as a fresh trace would (without them); other family-6 patterns' sites stay."""
    from oracle.report import Dist, score

    model = tmp_path / "m.py"
    model.write_text("x = 1\n" * 20, encoding="utf-8")
    site = {"family": 6, "file": str(model), "line": 3, "lines": [3]}
    cls = {"class": "M", "file": str(model), "traced": True, "executed": {str(model): [3, 9]},
           "sites": [{**site, "pattern": "linear_quick_gelu_3d"}, {**site, "line": 9, "lines": [9], "pattern": "linear_gelu_3d"}]}
    d = Dist("pkg", "1", classes=[cls], files={str(model)})
    table = score({"pkg": d})
    assert table["families"][6]["sites"] == 1
    assert [m["line"] for m in table["misses"]] == [9]
