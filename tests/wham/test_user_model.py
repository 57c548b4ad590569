"""Building the class in the editor for the search (adopter.wham.workload.user_model), and the search
worker's handling of it: a transformers-style package with a config module, default-argument
constructors, inputs from `forward`, and the explanations when it cannot."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adopter.lsp.search_worker import build_request, explain_error, pyproject_factory, user_class

pytestmark = pytest.mark.torch

CONFIG = '''
class TinyBertConfig:
    def __init__(self, vocab_size=120, hidden_size=32, num_layers=2, max_position_embeddings=64):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.max_position_embeddings = max_position_embeddings
'''

MODELING = '''
import torch
from torch import nn

from .configuration_tinybert import TinyBertConfig


class TinyBertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = nn.MultiheadAttention(config.hidden_size, 2, batch_first=True)
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden_states):
        out, _ = self.attn(hidden_states, hidden_states, hidden_states)
        return self.norm(hidden_states + out)


class TinyBertModel(nn.Module):
    def __init__(self, config: TinyBertConfig):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([TinyBertLayer(config) for _ in range(config.num_layers)])

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None):
        h = self.embed(input_ids)
        for layer in self.layers:
            h = layer(h)
        return h


class Mlp(nn.Module):
    def __init__(self, width: int = 16, depth: int = 2):
        super().__init__()
        self.net = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])

    def forward(self, x):
        return self.net(x)


class NeedsDim(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return self.lin(x)


class OddInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, routing_table):
        return self.lin(x)
'''


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A transformers-style package: models/tinybert/{configuration,modeling}_tinybert.py."""
    pkg = tmp_path / "models" / "tinybert"
    pkg.mkdir(parents=True)
    (tmp_path / "models" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "configuration_tinybert.py").write_text(textwrap.dedent(CONFIG))
    (pkg / "modeling_tinybert.py").write_text(textwrap.dedent(MODELING))
    return pkg / "modeling_tinybert.py"


def _build(path: Path, name: str, batch: int = 2, seq: int = 16) -> dict[str, object]:
    """Build in a subprocess (the search does it in the tracing process): shapes of the inputs, or the error."""
    code = textwrap.dedent(f"""
        import json, sys
        from adopter.wham.workload.user_model import build, UserModelError
        try:
            model, inputs, _ = build({str(path)!r}, {name!r}, {batch}, {seq})
        except UserModelError as exc:
            print(json.dumps({{"error": str(exc)}})); sys.exit(0)
        print(json.dumps({{"class": type(model).__name__,
                           "device": next(model.parameters()).device.type,
                           "inputs": {{k: list(v.shape) for k, v in inputs.items()}}}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_transformers_style_config_from_the_imported_configuration_class(package: Path) -> None:
    built = _build(package, "TinyBertModel", seq=16)
    assert built == {"class": "TinyBertModel", "device": "meta",
                     "inputs": {"input_ids": [2, 16], "attention_mask": [2, 16]}}


def test_sequence_length_is_capped_by_the_config(package: Path) -> None:
    assert _build(package, "TinyBertModel", seq=4096)["inputs"] == {"input_ids": [2, 64], "attention_mask": [2, 64]}


def test_inner_layer_takes_hidden_states_sized_from_the_config(package: Path) -> None:
    assert _build(package, "TinyBertLayer")["inputs"] == {"hidden_states": [2, 16, 32]}


def test_default_argument_constructor_and_generic_input(package: Path) -> None:
    assert _build(package, "Mlp")["inputs"] == {"x": [2, 16]}


def test_required_constructor_argument_is_explained(package: Path) -> None:
    error = str(_build(package, "NeedsDim")["error"])
    assert "NeedsDim.__init__ needs `dim`" in error
    assert "[tool.adopter.search]" in error and "module:factory" in error


def test_unknown_forward_argument_is_explained(package: Path) -> None:
    error = str(_build(package, "OddInput")["error"])
    assert "forward needs `routing_table`" in error and "[tool.adopter.search]" in error


def test_missing_class_is_explained(package: Path) -> None:
    assert "no nn.Module class Nope" in str(_build(package, "Nope")["error"])


def test_a_lone_file_is_imported_by_path(tmp_path: Path) -> None:
    lone = tmp_path / "types.py"  # a name that would shadow the standard library if imported by name
    lone.write_text("from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.conv = nn.Conv2d(3, 8, 3)\n    def forward(self, images):\n        return self.conv(images)\n")
    assert _build(lone, "Net", seq=32)["inputs"] == {"images": [2, 3, 32, 32]}


def test_pyproject_factory_for_the_class(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.adopter.search]\nfactory = "pkg.any:make"\nfactories = { NeedsDim = "pkg.models:make_needs_dim" }\n')
    assert pyproject_factory(str(tmp_path), "NeedsDim") == "pkg.models:make_needs_dim"
    assert pyproject_factory(str(tmp_path), "Other") == "pkg.any:make"
    assert pyproject_factory(str(tmp_path / "nowhere"), "NeedsDim") is None
    request = build_request({"model": f"{tmp_path}/m.py:NeedsDim", "workspace": str(tmp_path)})
    assert (request.model, request.model_path) == ("pkg.models:make_needs_dim", str(tmp_path))


def test_user_class_spec() -> None:
    assert user_class("/w/modeling_bert.py:BertModel") == ("/w/modeling_bert.py", "BertModel")
    assert user_class("bert-base") is None and user_class("pkg.mod:make") is None


def test_explained_error_has_no_tracer_wrapping() -> None:
    raw = ("WorkloadError: tracing /w/m.py:NeedsDim failed: UserModelError: NeedsDim.__init__ needs `dim` "
           "(at /x/adopter/wham/workload/user_model.py:120)")
    said = explain_error(raw, "/w/m.py:NeedsDim")
    assert said.startswith("The search could not build NeedsDim from m.py: NeedsDim.__init__ needs `dim`")
    assert "user_model.py" not in said and "Traceback" not in said and "[tool.adopter.search]" in said


def test_missing_torch_is_said_plainly() -> None:
    said = explain_error("tracing gpt2 failed: ModuleNotFoundError: No module named 'torch' (at /x/trace.py:3)", "gpt2")
    assert said.startswith("The accelerator search traces the model with PyTorch, which is not installed")
    assert sys.executable in said and "adopter.interpreter" in said
    missing = ("tracing /w/m.py:Net failed: the accelerator search (tracing the model) needs torch, which is not "
               "installed: pip install 'adopter[wham]'")
    assert explain_error(missing, "/w/m.py:Net").startswith("The accelerator search traces the model with PyTorch")


@pytest.mark.slow
def test_search_for_a_class_of_the_file_end_to_end(package: Path, tmp_path: Path) -> None:
    """The search worker, as the server runs it: the report's workload is the class in the file."""
    request = {"model": f"{package}:TinyBertModel", "budget": 8, "batch": 2, "seq": 16, "workers": 1,
               "executor": "serial", "workspace": str(tmp_path)}
    import os

    env = {**os.environ, "ADOPTER_CACHE_DIR": str(tmp_path / "cache")}
    # stdin stays open while the search runs: closing it asks the worker to stop.
    with subprocess.Popen([sys.executable, "-m", "adopter.lsp.search_worker"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        lines = [line for line in proc.stdout if "progress" not in json.loads(line)]
        proc.stdin.close()
    final = json.loads(lines[-1])
    assert "report" in final, final
    report = final["report"]
    assert report["error"] is None, report["error"]
    assert report["workload"]["model"].endswith("modeling_tinybert.py:TinyBertModel")
    assert report["workload"]["params"] == 120 * 32 + 2 * (4 * 32 * 32 + 4 * 32 + 2 * 32)
    assert report["best"]["throughput"] > 0
