"""The user's own GELU and LayerNorm modules, read as `nn.GELU` / `nn.LayerNorm` (`idioms.formula_layers`, same
file; `crossfile.written_layers` through `reach`, a sibling file): a module whose forward writes the GELU formula
(exact or tanh) or a LayerNorm over the last axis out is that layer wherever an instance is used in a chain, so
Linear→own GELU is a family-6 site and dropout→add→own LayerNorm a family-5 site, both without an automatic fix.

Shaped on (each rewritten small, never imported):
- bert-pytorch 0.0.1a4, `bert_pytorch/model/utils/gelu.py:12` (tanh GELU module) used by
  `bert_pytorch/model/utils/feed_forward.py:16` (`self.w_2(self.dropout(self.activation(self.w_1(x))))`,
  `from .gelu import GELU`);
- sagar-neuron-gpt2 0.1.9, `sagar_neuron_gpt2/transfomer/feed_forward_NN.py:9` (`nn.Sequential(nn.Linear, GELU(),
  nn.Linear)`, the GELU of `transfomer/gelu.py`: `torch.sqrt(torch.tensor(2.0 / torch.pi))`) and
  `transfomer/transformer_architecture.py:27` (pre-LN block: `drop_shortcut` → `x + shortcut` → `self.norm2`, the
  package's `transfomer/layer_norm.py` LayerNorm: mean, `var(unbiased=False)`, `/ sqrt(var + eps)`, scale, shift);
- texar-pytorch 0.2.4, `texar/torch/custom/activation.py:24` (`BertGELU`, the erf form) and `:32` (`GPTGELU`, the
  tanh form with `math.sqrt(2 / math.pi)`);
- transformers' `NewGELUActivation` form (a local `cdf`-free one-line return with `math.pow(x, 3.0)`).

Refused (each beside its site twin): a "GELU" module computing another activation (a sigmoid GELU, a tanh of
its input), one reading its own attribute, a LayerNorm over another axis, with the unbiased std plus eps
(bert-pytorch's `layer_norm.py:15`, labelled not a site), eps added outside the root, statistics without
`keepdim`, a weight that is no `nn.Parameter`, and a class that cannot be read (its file missing).
"""

from __future__ import annotations

from pathlib import Path

from adopter.analysis import analyse
from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, check, load_rules
from adopter.session import RuleContext, Session

ENV = Environment("cuda", frozenset(), "2.13.0")
RULES = tuple(r for r in load_rules().rules if r.family in (5, 6, 14))

BERT_GELU = """
class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))
"""

SAGAR_GELU = """
class GELU(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(
            torch.sqrt(torch.tensor(2.0 / torch.pi)) *
            (x + 0.044715 * torch.pow(x, 3))
        ))
"""

TEXAR_BERT_GELU = """
class GELU(nn.Module):
    def forward(self, input):
        return input * 0.5 * (1.0 + torch.erf(input / math.sqrt(2.0)))
"""

CDF_GELU = """
class GELU(nn.Module):
    def forward(self, x):
        cdf = 0.5 * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
        return x * cdf
"""

NOT_GELUS = {
    "sigmoid GELU": "return x * torch.sigmoid(1.702 * x)",
    "tanh of the input": "return 0.5 * x * (1 + torch.tanh(x))",
    "its own attribute": "return self.alpha * 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))",
    "a ReLU": "return torch.relu(x)",
}

FFN = """
{gelu}

class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = GELU()

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))
"""

SEQUENTIAL_FFN = """
{gelu}

class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]),
            GELU(),
            nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]),
        )

    def forward(self, x):
        return self.layers(x)
"""

SAGAR_NORM = """
class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)
        return self.scale * norm_x + self.shift
"""

# the forward lines of SAGAR_NORM each refusal replaces
NOT_NORMS = {
    "another axis": ("x.mean(dim=-1, keepdim=True)", "x.mean(dim=1, keepdim=True)"),
    "unbiased std plus eps (bert-pytorch)": ("norm_x = (x - mean) / torch.sqrt(var + self.eps)",
                                             "norm_x = (x - mean) / (x.std(-1, keepdim=True) + self.eps)"),
    "eps outside the root": ("torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)"),
    "the unbiased variance": ("keepdim=True, unbiased=False)", "keepdim=True)"),
    "statistics without keepdim": ("x.mean(dim=-1, keepdim=True)", "x.mean(dim=-1).unsqueeze(-1)"),
    "a weight that is no Parameter": ("self.scale = nn.Parameter(torch.ones(emb_dim))",
                                      "self.scale = torch.ones(emb_dim)"),
}

BLOCK = """
{norm}

class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ff = nn.Linear(cfg["emb_dim"], cfg["emb_dim"])
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        shortcut = x
        x = self.norm1(x)
        x = self.ff(x)
        x = self.drop_shortcut(x)
        x = x + shortcut
        x = self.norm2(x)
        return x
"""


def _sites(code: str) -> list[tuple[str, str, bool, str | None]]:
    found = check(analyse(HEAD + code, "m.py"), list(RULES), ENV).findings
    return sorted((f.rule_id, f.scope_name, f.fixable, f.no_fix_reason) for f in found)


def _gelu(forward: str) -> str:
    return f"class GELU(nn.Module):\n    def forward(self, x):\n        {forward}\n"


def test_a_linear_into_the_users_own_gelu_module_is_a_family_6_site_without_a_fix() -> None:
    for gelu in (BERT_GELU, SAGAR_GELU, TEXAR_BERT_GELU, CDF_GELU):
        ((rule, scope, fixable, reason),) = _sites(FFN.format(gelu=gelu))
        assert (rule, scope, fixable) == ("f06-linear-gelu", "PositionwiseFeedForward", False), gelu
        assert reason is not None and "`self.activation` is a `GELU`" in reason and "GELU formula" in reason


def test_the_same_feed_forward_with_nn_gelu_stays_fixable() -> None:
    assert _sites(FFN.format(gelu="GELU = nn.GELU")) == [("f06-linear-gelu", "PositionwiseFeedForward", True, None)]


def test_the_users_gelu_as_a_sequential_item_is_a_site() -> None:
    ((rule, scope, fixable, _),) = _sites(SEQUENTIAL_FFN.format(gelu=SAGAR_GELU))
    assert (rule, scope, fixable) == ("f06-linear-gelu", "FeedForward", False)


def test_a_gelu_module_computing_something_else_is_no_gelu() -> None:
    for why, forward in NOT_GELUS.items():
        assert _sites(FFN.format(gelu=_gelu(forward))) == [], why
        assert _sites(SEQUENTIAL_FFN.format(gelu=_gelu(forward))) == [], why


def test_dropout_add_into_the_users_own_layer_norm_is_a_family_5_site_without_a_fix() -> None:
    ((rule, scope, fixable, reason),) = _sites(BLOCK.format(norm=SAGAR_NORM))
    assert (rule, scope, fixable) == ("f05-dropout-add-layernorm", "TransformerBlock", False)
    assert reason is not None and "`self.norm2` is a `LayerNorm`" in reason and "writes a LayerNorm out" in reason


def test_a_norm_module_the_fused_kernel_does_not_compute_is_no_layer_norm() -> None:
    for why, (old, new) in NOT_NORMS.items():
        assert old in SAGAR_NORM, why
        assert _sites(BLOCK.format(norm=SAGAR_NORM.replace(old, new))) == [], why


# -- a sibling file ---------------------------------------------------------------------------------------------

FFN_USER = """import torch.nn as nn
from .gelu import GELU


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = GELU()

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))
"""

BLOCK_USER = BLOCK.replace("{norm}", "").replace("\n\n\nclass", "\n\nclass")
HEAD = "import math\nimport torch\nfrom torch import nn\n"


def _package(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    for file, text in files.items():
        (pkg / file).write_text(text, encoding="utf-8")
    return pkg


def _imported(tmp_path: Path, model: Path) -> list[tuple[str, str, bool, str]]:
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path))
    session = Session(RuleContext(RULES, (), ENV), reach=reach)
    analysed = session.analysed(model.read_text(encoding="utf-8"), str(model))
    out = []
    for f in analysed.findings:
        planned = session.planned(analysed, f)
        out.append((f.rule_id, f.scope_name, planned.fixable, f.no_fix_reason or ""))
    return sorted(out)


def test_the_users_gelu_imported_from_a_sibling_file_is_a_site_without_a_fix(tmp_path: Path) -> None:
    for i, gelu in enumerate((BERT_GELU, SAGAR_GELU, TEXAR_BERT_GELU)):
        pkg = _package(tmp_path, f"gelu{i}", {"gelu.py": HEAD + gelu, "feed_forward.py": FFN_USER})
        ((rule, scope, fixable, reason),) = _imported(tmp_path, pkg / "feed_forward.py")
        assert (rule, scope, fixable) == ("f06-linear-gelu", "PositionwiseFeedForward", False)
        assert "GELU formula" in reason


def test_an_imported_gelu_that_is_none_or_cannot_be_read_is_no_site(tmp_path: Path) -> None:
    for i, forward in enumerate(NOT_GELUS.values()):
        pkg = _package(tmp_path, f"other{i}", {"gelu.py": HEAD + _gelu(forward), "feed_forward.py": FFN_USER})
        assert _imported(tmp_path, pkg / "feed_forward.py") == [], forward
    pkg = _package(tmp_path, "missing", {"feed_forward.py": FFN_USER})  # `.gelu` is not there
    assert _imported(tmp_path, pkg / "feed_forward.py") == []


def test_the_users_layer_norm_imported_from_a_sibling_file_is_a_site_without_a_fix(tmp_path: Path) -> None:
    user = "import torch\nfrom torch import nn\nfrom .layer_norm import LayerNorm\n" + BLOCK_USER
    pkg = _package(tmp_path, "norm", {"layer_norm.py": HEAD + SAGAR_NORM, "block.py": user})
    ((rule, scope, fixable, reason),) = _imported(tmp_path, pkg / "block.py")
    assert (rule, scope, fixable) == ("f05-dropout-add-layernorm", "TransformerBlock", False)
    assert "writes a LayerNorm out" in reason
    for i, (old, new) in enumerate(NOT_NORMS.values()):
        pkg = _package(tmp_path, f"nonorm{i}", {"layer_norm.py": HEAD + SAGAR_NORM.replace(old, new), "block.py": user})
        assert _imported(tmp_path, pkg / "block.py") == [], new
