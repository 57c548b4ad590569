"""Tracing a training step on the meta device: FLOP counts, phases, segments, subprocess, cache, factories."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adopter.wham.graph import build_workload
from adopter.wham.models import ZOO_MODELS, WorkloadError, WorkloadSpec, cache_dir, load_workload

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _trace(name: str, batch: int, seq: int) -> dict:
    from adopter.wham.workload.trace import trace_training_step
    from adopter.wham.workload.zoo import ZOO

    model, inputs, loss = ZOO[name][0](batch, seq)
    return trace_training_step(model, inputs, loss_fn=loss)


def test_mlp_flops_match_the_hand_count() -> None:
    b, w = 16, 64  # Linear(w,4w), Linear(4w,4w), Linear(4w,w)
    raw = _trace("tiny-mlp", b, w)
    fwd = 2 * b * (w * 4 * w + 4 * w * 4 * w + 4 * w * w)
    # backward: weight gradients for all three, data gradients for the last two (the input needs none)
    bwd = 2 * b * (w * 4 * w + 4 * w * 4 * w + 4 * w * w) + 2 * b * (4 * w * 4 * w + 4 * w * w)
    gemm = sum(o["flops"] for o in raw["ops"] if o["kind"] == "gemm")
    assert gemm == pytest.approx(fwd + bwd, rel=0.01)
    assert {o["phase"] for o in raw["ops"]} == {"fwd", "bwd", "opt"}
    # AdamW updates every parameter element
    params = w * 4 * w + 4 * w + 16 * w * w + 4 * w + 4 * w * w + w
    assert raw["params"] == params
    # AdamW's foreach updates are split per layer; together one update covers every parameter once
    assert sum(o["elements"] for o in raw["ops"] if o["name"] == "_foreach_addcdiv") == params
    assert len({o["segment"] for o in raw["ops"] if o["phase"] == "opt"}) == 3


def test_transformer_flops_match_torch_flop_counter() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    from adopter.wham.workload.zoo import ZOO

    raw = _trace("tiny-transformer", 2, 32)
    model, inputs, loss = ZOO["tiny-transformer"][0](2, 32)
    with FlopCounterMode(display=False) as counter:
        loss(model(*inputs)).backward()
    ours = sum(o["flops"] for o in raw["ops"] if o["kind"] == "gemm")
    assert ours == pytest.approx(counter.get_total_flops(), rel=0.01)


def test_transformer_layers_are_recognised_as_repeated() -> None:
    raw = _trace("tiny-transformer", 2, 32)
    w = build_workload(raw, model="tiny-transformer", batch=2, seq=32)
    names = [s.name for s in w.segments]
    assert "layers.0" in names and "layers.1" in names
    assert names.index("embed") < names.index("layers.0") < names.index("layers.1") < names.index("head")
    # every op landed in a named segment and GEMMs absorbed epilogues
    assert any(op.is_gemm and op.vector for b in w.blocks for op in b.ops)


def test_conv_backward_gives_two_gemms() -> None:
    from adopter.wham.workload.trace import trace_training_step

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                    torch.nn.Conv2d(8, 8, 3, padding=1))
        x = torch.zeros(2, 3, 16, 16)
    raw = trace_training_step(model, (x,))
    names = [o["name"] for o in raw["ops"] if o["kind"] == "gemm"]
    assert names.count("convolution") == 2
    assert "convolution_backward:wgrad" in names and "convolution_backward:dgrad" in names
    fwd2 = next(o for o in raw["ops"] if o["name"] == "convolution" and o["n"] == 8 and o["k"] == 72)
    assert (fwd2["m"], fwd2["flops"]) == (2 * 16 * 16, 2.0 * 512 * 8 * 72)


def test_zoo_names_agree() -> None:
    from adopter.wham.workload.zoo import ZOO

    assert set(ZOO) == set(ZOO_MODELS)
    assert all(ZOO[n][1:] == ZOO_MODELS[n][:2] for n in ZOO)


def test_subprocess_trace_is_cached(cache_env: Path) -> None:
    spec = WorkloadSpec("tiny-transformer", 4, 32)  # the graph test_search.py searches: traced once per run
    w1 = load_workload(spec)
    files = list(cache_dir().glob("*.json.gz"))
    assert files
    w2 = load_workload(spec)  # from the cache: same graph
    assert w1 == w2 and len(list(cache_dir().glob("*.json.gz"))) == len(files)


def test_user_factory_and_class(tmp_path: Path, cache_env: Path) -> None:
    (tmp_path / "mymodels.py").write_text(textwrap.dedent("""
        import torch

        def build(batch, seq):
            model = torch.nn.Sequential(torch.nn.Linear(seq, seq), torch.nn.Tanh(), torch.nn.Linear(seq, 4))
            return model, torch.zeros(batch, seq)

        class Net(torch.nn.Module):
            def __init__(self, width=8):
                super().__init__()
                self.fc = torch.nn.Linear(width, width)
            def forward(self, x):
                return self.fc(x).relu()
            @staticmethod
            def example_inputs(batch, seq):
                return (torch.zeros(batch, 8),)

        def broken(batch, seq):
            return 42
    """))
    w = load_workload(WorkloadSpec("mymodels:build", 4, 16, str(tmp_path)))
    assert w.gemm_flops == pytest.approx(2 * 4 * (16 * 16 + 16 * 4) + 2 * 4 * (16 * 16 + 16 * 4) + 2 * 4 * 16 * 4,
                                         rel=0.01)
    assert load_workload(WorkloadSpec("mymodels:Net", 2, 1, str(tmp_path))).params == 72
    with pytest.raises(WorkloadError, match=r"must return \(model, inputs\)"):
        load_workload(WorkloadSpec("mymodels:broken", 2, 1, str(tmp_path)))
    # (a module that does not exist: test_search.py::test_cancel_and_trace_errors)


def test_data_dependent_code_names_the_line(tmp_path: Path, cache_env: Path) -> None:
    (tmp_path / "dyn.py").write_text(textwrap.dedent("""
        import torch

        class Dyn(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)
            def forward(self, x):
                if x.sum().item() > 0:
                    return self.fc(x)
                return x

        def build():
            return Dyn(), torch.zeros(2, 4)
    """))
    with pytest.raises(WorkloadError) as err:
        load_workload(WorkloadSpec("dyn:build", 2, 1, str(tmp_path)))
    assert "dyn.py:9" in str(err.value)


def test_trace_timeout(tmp_path: Path, cache_env: Path) -> None:
    (tmp_path / "slow.py").write_text("import time\ndef build():\n    time.sleep(60)\n")
    with pytest.raises(WorkloadError, match=r"longer than 0\.5 s"):
        load_workload(WorkloadSpec("slow:build", 2, 1, str(tmp_path)), timeout_s=0.5)


def test_wham_imports_without_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "import adopter.wham, adopter.wham.mining, adopter.wham.html, adopter.commands.wham\n"
            "from adopter.wham import search, SearchRequest\n"
            "r = search(SearchRequest(model='bert-base', budget=0)); assert 'budget' in r.error\n"
            "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_bert_pretrain_runs_the_mlm_head_on_masked_positions_only() -> None:
    from adopter.wham.workload.trace import trace_training_step
    from adopter.wham.workload.zoo import ZOO, masked_positions

    # create_pretraining_data.py: min(max_predictions_per_seq, round(0.15 × tokens)); the scripts' caps 20 and 80
    assert (masked_positions(128), masked_positions(512)) == (19, 77)
    forward_rows = {}
    for name in ("bert-base", "bert-base-pretrain"):
        model, inputs, loss_fn = ZOO[name][0](2, 128)
        raw = trace_training_step(model, inputs, loss_fn=loss_fn)
        # the vocabulary projection's forward GEMM: rows = the positions it runs on
        forward_rows[name] = [o["m"] for o in raw["ops"] if o["kind"] == "gemm" and o["n"] == 30522]
    assert forward_rows["bert-base"] == [2 * 128]
    assert forward_rows["bert-base-pretrain"] == [2 * 19]


def test_resnext_models_follow_nvidia_convnets_definitions() -> None:
    from adopter.wham.workload.trace import trace_training_step
    from adopter.wham.workload.zoo import ZOO

    params = {}
    grouped = {}
    for name in ("resnet50", "resnext101-32x4d", "se-resnext101-32x4d"):
        model, inputs, loss_fn = ZOO[name][0](2, 64)
        params[name] = sum(p.numel() for p in model.parameters())
        raw = trace_training_step(model, inputs, loss_fn=loss_fn)
        # the grouped 3x3 convolutions: one GEMM per group (batch = 32), 4 × 9 = 36 deep in the first stage
        grouped[name] = sorted({(o["batch"], o["k"]) for o in raw["ops"] if o["name"] == "convolution"
                                and o["batch"] > 1})
    # ResNet-50 v1.5 25.56 M; ResNeXt-101 32x4d 44.18 M (layers 3/4/23/3, widths 128…1024, expansion 2);
    # SE adds Linear(C→16) + Linear(16→C) per block, as NVIDIA's SqueezeAndExcitation (squeeze = 16)
    assert params["resnet50"] == 25_557_032 and params["resnext101-32x4d"] == 44_177_704
    se_blocks = [(3, 256), (4, 512), (23, 1024), (3, 2048)]
    assert params["se-resnext101-32x4d"] - params["resnext101-32x4d"] == sum(
        n * (c * 16 + 16 + 16 * c + c) for n, c in se_blocks)
    assert grouped["resnet50"] == []
    assert grouped["resnext101-32x4d"] == [(32, 36), (32, 72), (32, 144), (32, 288)]
