"""WHAM's cost model against published measured GPU training throughputs (no GPU needed).

Usage: nice -n 19 python bench/wham_gpu_published.py [--out FILE] [--json FILE] [--steps]

The template is set to a published GPU (A100 SXM4 80GB and 40GB, V100 SXM2, from NVIDIA's architecture
whitepapers and datasheets); each row's training step is traced at the published configuration (model, batch per GPU,
sequence length) and predicted with the same graph and per-op cost model the search uses, run as a GPU runs a framework's step
(`adopter.wham.gpu`: every kernel on one stream in issue order, so the step is the sum of the kernels'
latencies, with the batch-norm re-reads the trace does not record, and each GEMM as thread-block tiles in
waves of one per SM with split-K: `TILES`, round 4; every GPU's HBM at a copy-like kernel's achieved
bandwidth, read + write counted: round 5). With gradient
accumulation (the BERT pre-training rows) the optimizer runs once per `accumulation` micro-steps, so the
predicted samples/s is batch / (forward+backward + (optimizer + all-reduce) / accumulation); the all-reduce
is the data-parallel ring over NVLink of the multi-GPU rows (per-GPU figure = the table's total / GPUs).
Each row is traced as its run executes it: BERT pre-training with the masked-LM head on masked positions
only (`bert-large-pretrain`), fused or eager as the run's framework settings say. Every measured figure is
cited with its file, table and row; none is typed from memory. The must-hold band is ±25 %; a (model, GPU)
pair counts as within only when every one of its rows is; the must-hold counts A100/H100 pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from adopter.wham import constants as C
from adopter.wham.cost import allreduce_cycles, op_cost
from adopter.wham.cuda_step import autocast, fused_dropout
from adopter.wham.evaluate import Evaluator, segments_flops
from adopter.wham.gpu import GpuStep, TileModel, serial_step
from adopter.wham.graph import Workload, build_workload
from adopter.wham.hardware import Constraints, Design
from adopter.wham.models import WorkloadSpec, load_workload, trace_raw
from adopter.wham.parallel import shard_workload
from adopter.wham.recompute import recompute_attention, recompute_layers
from adopter.wham.sequence_parallel import sequence_parallel
from adopter.wham.vocab_parallel import shard_vocab

# The GPUs as templates, every figure from `constants` (whitepapers and datasheets, cited there): the Tensor
# Cores as arrays (A100: 256 FMA a clock = 16×16; V100: a 4×4×4 FMA = 64 a clock, modelled as 8×8), the FP32
# lanes as vector lanes, L2 as the shared buffer. Rates are *achieved* ones where a published measurement
# exists: the A100's Tensor Cores at its measured best matmul rate (271.2 of 312 TFLOPS: 376 of 432 cores), the
# V100's at a published cuBLAS rate (83 of 125 TFLOPS: 425 of 640 cores, CUDA 9-era cuBLAS); the HBM of every
# part at one definition (round 5): a streaming kernel with one load and one store stream, read + write bytes
# counted, from one benchmark on every part (A100 80GB 1737, A100 40GB 1382, V100 809 GB/s).
A100 = Design(n_tc=C.A100_TENSOR_CORES_ACHIEVED, pe_x=16, pe_y=16, n_vc=C.A100_SMS,
              lanes=C.GPU_FP32_LANES_PER_SM, sram_mib=C.A100_L2_MIB, bandwidth_gbs=C.A100_80GB_HBM_COPY_GBS,
              clock_mhz=C.A100_BOOST_MHZ)
A100_40 = replace(A100, bandwidth_gbs=C.A100_40GB_HBM_COPY_GBS)
V100 = Design(n_tc=C.V100_TENSOR_CORES_ACHIEVED, pe_x=8, pe_y=8, n_vc=C.V100_SMS,
              lanes=C.GPU_FP32_LANES_PER_SM, sram_mib=C.V100_L2_MIB, bandwidth_gbs=C.V100_HBM_COPY_GBS,
              clock_mhz=C.V100_BOOST_MHZ)
GPUS = {"A100 80GB": A100, "A100 40GB": A100_40, "V100 16GB": V100, "V100 32GB": V100}
# Rounds 3 and 4 (wham5, wham6): the same rates but HBM figures of three kinds: a read-only kernel on the A100
# 80GB (1.80 TB/s), cudaMemcpy on a V100 (790 GB/s), the 80GB part's fraction carried to the A100 40GB (1373).
_A100_R4 = replace(A100, bandwidth_gbs=C.A100_80GB_HBM_ACHIEVED_GBS)
_V100_R4 = replace(V100, bandwidth_gbs=C.V100_HBM_ACHIEVED_GBS)
ROUND4_GPUS = {"A100 80GB": _A100_R4, "A100 40GB": replace(A100, bandwidth_gbs=C.A100_40GB_HBM_ACHIEVED_GBS),
               "V100 16GB": _V100_R4, "V100 32GB": _V100_R4}
# Round 2 (wham4): the same rates but the datasheet HBM on the A100 40GB and V100, and WHAM's overlapping
# scheduler (the DAG's makespan) instead of the one-stream sum.
_V100_SHEET = replace(V100, n_tc=C.V100_SMS * C.V100_TENSOR_CORES_PER_SM, bandwidth_gbs=C.V100_HBM_GBS)
ROUND2_GPUS = {**ROUND4_GPUS, "A100 40GB": replace(A100, bandwidth_gbs=C.A100_40GB_HBM_GBS),
               "V100 16GB": _V100_SHEET, "V100 32GB": _V100_SHEET}
# NVLink each way per GPU (constants: the datasheets' both-directions figure / 2): the ring all-reduce's link.
NVLINK_GBS = {"A100 80GB": C.A100_NVLINK_PER_DIRECTION_GBS, "A100 40GB": C.A100_NVLINK_PER_DIRECTION_GBS,
              "V100 16GB": C.V100_NVLINK_PER_DIRECTION_GBS, "V100 32GB": C.V100_NVLINK_PER_DIRECTION_GBS}
# Round 1 (wham3): the datasheet bandwidth everywhere, the fused graph, the zoo BERT (MLM head at every position).
_A100_PEAK = replace(A100, n_tc=C.A100_SMS * C.A100_TENSOR_CORES_PER_SM)
ROUND1_GPUS = {**ROUND2_GPUS, "A100 80GB": replace(_A100_PEAK, bandwidth_gbs=C.A100_80GB_HBM_GBS),
               "A100 40GB": _A100_PEAK}

# Round 4 (wham6): each GEMM as a GPU kernel runs it (`gpu.gemm_kernel_cycles`): thread-block tiles in waves of
# one per SM, a partial tile, k-tile or wave costing a full one; the tile is the fastest of cuBLAS's shapes
# (NVIDIA's Matrix Multiplication Background guide), each at the SM's achieved rate (the A100's MAMF with its
# shape's quantization taken out; the V100's cuBLAS figure) or its share of the L2 read bandwidth; the
# k-tile is CUTLASS's default K-step. `CUTLASS_ONLY` is the range's other end: CUTLASS's default tile
# (128×256, either orientation) for every GEMM.
_A100_TILES = TileModel(C.A100_SMS, C.A100_TILE_MACS_PER_SM_CLOCK, C.A100_L2_BYTES_PER_CLOCK, C.CUTLASS_SM80_TILE[2],
                        C.GPU_CUBLAS_TILES)
_V100_TILES = TileModel(C.V100_SMS, C.V100_TILE_MACS_PER_SM_CLOCK, C.V100_L2_BYTES_PER_CLOCK, C.CUTLASS_SM70_TILE[2],
                        C.GPU_CUBLAS_TILES)
TILES = {"A100 80GB": _A100_TILES, "A100 40GB": _A100_TILES, "V100 16GB": _V100_TILES, "V100 32GB": _V100_TILES}
CUTLASS_ONLY = {name: replace(tm, tiles=(C.CUTLASS_SM80_TILE[:2] if tm is _A100_TILES else C.CUTLASS_SM70_TILE[:2],
                                         (C.CUTLASS_SM80_TILE if tm is _A100_TILES else C.CUTLASS_SM70_TILE)[1::-1]))
                for name, tm in TILES.items()}
# No quantization at the same rates: 1×1 tiles, a 1-deep k-tile and no L2 limit (the roofline the tiles fall short of).
UNQUANTIZED = {name: replace(tm, l2_bytes_per_clock=math.inf, k_tile=1, tiles=((1, 1),)) for name, tm in TILES.items()}

DLE = "NVIDIA/DeepLearningExamples @729963dd"
BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class Published:
    """One measured training throughput and where it is published."""

    model: str
    gpu: str  # a key of GPUS
    batch: int
    seq: int
    accumulation: int
    measured: float  # samples/s on one GPU (of one model replica, `tp` GPUs, for a tensor-parallel row)
    source: str
    fused: bool  # whether the measured run fuses element-wise ops (a JIT/XLA/graph fuser), per its source
    gpus: int = 1  # a multi-GPU row: `measured` is the table's total / gpus
    grad_bytes: int = 2  # bytes per gradient element the data-parallel all-reduce sends
    unmodelled: str = ""  # what the measured run did that the trace does not represent, per its source ("": none)
    precision: str = ""  # how a PyTorch run computes in mixed precision (AUTOCAST, HALF); "": another framework
    tp: int = 1  # tensor-parallel size (Megatron): the traced step is one GPU's shard; the rest is data-parallel
    pp: int = 1  # pipeline-parallel size: the traced step is one stage's; the schedule's bubble is added
    virtual: int = 1  # model chunks a pipeline stage holds (the interleaved schedule); 1: 1F1B
    p2p_bytes: float = 0.0  # bytes of the activation a micro-batch sends from one pipeline stage to the next
    recompute: bool = False  # every transformer layer's forward recomputed in backward (`recompute.recompute_layers`)
    dp_link_gbs: float = 0.0  # each way per GPU on the data-parallel all-reduce's link; 0: the GPU's NVLink
    factory: str = ""  # a bench trace factory (`module:function` under bench/) instead of a zoo model
    selective: bool = False  # each layer's attention core recomputed in backward (`recompute.recompute_attention`)
    sequence_parallel: bool = False  # the residual stream's ops split along the sequence (`sequence_parallel`)
    ddp_tail_bytes: float = 0.0  # PyTorch DDP: the gradient all-reduce overlaps the last micro-batch's backward
    # in buckets (`_dp_exposed_s`) and this many bytes, the last bucket, go after it; 0: all after it (Megatron's
    # local DDP, or a run that all-reduces after accumulation)

    @property
    def traced(self) -> str:
        """The zoo workload the row's run executes: BERT pre-training as NVIDIA's scripts run it (the masked-LM
        head on masked positions only, `zoo.PretrainingLM`), ResNet-50 as it is; or the row's bench factory."""
        if self.factory:
            return self.factory
        return "bert-large-pretrain" if self.model == "bert-large" else self.model

    @property
    def spec(self) -> WorkloadSpec:
        """What to trace: the zoo model, or the bench factory (importable from this directory)."""
        return WorkloadSpec(self.traced, self.batch, self.seq, path=str(BENCH) if self.factory else None)


# Fusion, from each source's settings at @729963dd: the PyTorch BERT scripts the model with TorchScript unless
# --disable_jit_fusions (run_pretraining.py line 419: fused); the TensorFlow BERT runs with XLA
# (scripts/run_pretraining_lamb.sh line 24, use_xla true: fused); PaddlePaddle's sets fuse_gemm_epilogue
# (program.py line 63: fused); the PyTorch ResNet-50 runs eagerly (main.py line 311, --jit default "no":
# unfused); the TensorFlow ResNet-50 rows name XLA (fused).
EAGER, FUSER = False, True

# Measurement conditions the traced step does not represent (round 6), each from the row's source. Binned phase 2:
# the PyTorch tables (pytorch:21.11, README "Training performance" headings) were published with a9e2c1d5 ("update
# LDDL + NVFuser + Distillation"), whose scripts/run_pretraining.sh reads phase 2 from
# `pretrain/phase2/bin_size_64/parquet` with `--bin-size 64` (lines 41 and 54 @729963dd): a batch is padded to its
# 64-token bin, not to 512, so the run does less work than the traced 512-token step, by an amount the
# sequence-length distribution sets (not published). PaddlePaddle's current table (a5388a45, "Update base image and
# integrate cuDNN fused MHA", changelog July 2023) ran scripts/run_pretraining.sh with `fuse_mha` true (line 60)
# — cuDNN's fused dot-product attention, which never writes the attention-score tensor the trace records — and
# phase 2 binned the same way (b9178e8a, "Update LDDL": `bin_size_64`, line 38).
BINNED = ("phase 2 binned to 64 tokens (LDDL --bin-size 64, scripts/run_pretraining.sh @729963dd): sequences "
          "padded to their bin, not to 512")
FUSED_MHA = ("cuDNN fused multi-head attention (fuse_mha true, scripts/run_pretraining.sh @729963dd line 60; "
             "README changelog July 2023): no attention-score tensor in memory")
# How each PyTorch run computes in mixed precision (round 7), from its source; both run PyTorch's CUDA dropout kernel
# (`cuda_step.fused_dropout`). AUTOCAST: the ConvNets' image_classification/training.py runs the step under
# `with autocast(enabled=self.amp)` (line 91 @729963dd; native AMP since 097c7ff9, 2021-03-04, before the
# pytorch-21.03 tables) with FP32 parameters and a GradScaler (main.py line 477): `cuda_step.autocast`. HALF: the
# BERT runs hold the model in FP16 — pytorch:21.11 calls `model.half()` when --allreduce_post_accumulation_fp16
# (run_pretraining.py lines 414-417; scripts/run_pretraining.sh line 31 sets it by default) and leaves autocast off
# (line 519); pytorch:20.06 uses apex `amp.initialize(..., opt_level="O2")` (run_pretraining.py line 391
# @78ec6802): FP16 weights, no per-op casts — every op at 16 bits, as the trace counts it (the FP32 master weights
# are the optimizer's, once per accumulated step).
AUTOCAST, HALF = "torch.cuda.amp autocast", "FP16 model (model.half / apex O2)"
PADDLE_V1 = "NVIDIA/DeepLearningExamples @cfdbf4ed"  # PaddlePaddle BERT's initial release (Nov 2022)
PYTORCH_2006 = "NVIDIA/DeepLearningExamples @78ec6802"  # the PyTorch BERT README before LDDL (Aug 2021)
SC21 = ("Narayanan et al., 'Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM', SC21 "
        "(arXiv 2104.04473)")
MEGATRON_SC21 = "NVIDIA/Megatron-LM @d98e8a64 examples/academic_paper_scripts/sc21/run_table_1.sh"
SC21_SEQ, SC21_VOCAB = 2048, 51200  # SC21 §5.1: all models use sequence length 2048 and a vocabulary of 51,200
# Pipeline-parallel rows (p > 1): one stage is traced (`wham_gpu_megatron:gpt_stage_<size>`, NLS / p layers with
# the embeddings and the head), and the step is the paper's schedule (§2.2): m micro-batches a step through p
# stages, each stage busy m·(t_f + t_b) and idle for the bubble, (p − 1)/m of that under 1F1B and (p − 1)/(v·m)
# under the interleaved schedule with v model chunks a stage (run_table_1.sh's --num-layers-per-virtual-pipeline-
# stage: v = NLS / (p × that)); each micro-batch sends its activation forward and its gradient back, v times, a
# b·s·h FP16 tensor split over the t GPUs of a stage (the paper's scatter/gather, §4.1) on their InfiniBand ports,
# not overlapped. DDP local (p > 1): the gradient all-reduce after the last micro-batch, as the bench charges it.
# PyTorch DDP (`--DDP-impl torch`, SC21's p = 1 rows): gradient buckets of at most 25 MiB (torch.nn.parallel.
# DistributedDataParallel's `bucket_cap_mb` default), a parameter larger than that in a bucket of its own, buckets
# in reverse parameter order (Li et al., VLDB 2020, §3.2.3). The last ready is the word embedding's: Megatron ties
# the head to it, so its gradient is complete only when the lookup's backward ends. Its shard is V/t × h FP16.
DDP_BUCKET_BYTES = 25 * 2**20


def torch_ddp_tail_bytes(hidden: int, tp: int) -> float:
    """Bytes of the last gradient bucket PyTorch DDP all-reduces after the backward pass ends: the word
    embedding's shard (V/t × h at 2 bytes), or one full bucket if that is larger."""
    return max(DDP_BUCKET_BYTES, SC21_VOCAB / tp * hidden * C.BYTES_PER_ELEMENT)


def sc21_samples_s(tflops: float, layers: int, hidden: int, gpus: int) -> float:
    """Samples/s of one model replica (`gpus` = t·p GPUs) from SC21 Table 1's teraFLOP/s per GPU: the paper's Eq. 3
    counts F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) FLOPs an iteration of B sequences (recomputation included),
    so a GPU's X FLOP/s is X / (F / B) sequences/s per GPU, and t·p of them make one replica's."""
    s, v, h = SC21_SEQ, SC21_VOCAB, hidden
    per_sample = 96 * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))
    return tflops * 1e12 * gpus / per_sample


KORTHIKANTI = ("Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', MLSys 2023 "
               "(arXiv 2205.05198)")
# size, hidden, p, global batch, micro-batch, chunks a stage, seconds an iteration (full recompute, present work):
# Table 3 (heads, layers: `wham_gpu_megatron.SIZES`) and Table 5.
KORTHIKANTI_ROWS = (("22b", 6144, 1, 4, 4, 1, 1.42, 1.10), ("175b", 12288, 8, 64, 1, 3, 18.13, 13.75),
                    ("530b", 20480, 35, 280, 1, 3, 49.05, 37.83), ("1t", 25600, 64, 512, 1, 1, 94.42, 71.49))


ROWS = (
    Published("bert-large", "A100 80GB", 256, 128, 32, 580.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x A100 "
              "80GB)', row GPUs 1, seq 128, mixed precision", FUSER, precision=HALF),
    Published("bert-large", "A100 80GB", 32, 512, 128, 210.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x A100 "
              "80GB)', row GPUs 1, seq 512, mixed precision", FUSER, unmodelled=BINNED, precision=HALF),
    Published("bert-large", "A100 80GB", 256, 128, 32, 694.0,
              f"{DLE} PaddlePaddle/LanguageModeling/BERT/README.md, table 'Training performance: NVIDIA DGX "
              "A100 (8x A100 80GB)', row GPUs 1, seq 128, mixed precision", FUSER, unmodelled=FUSED_MHA),
    Published("bert-large", "A100 80GB", 32, 512, 128, 264.0,
              f"{DLE} PaddlePaddle/LanguageModeling/BERT/README.md, table 'Training performance: NVIDIA DGX "
              "A100 (8x A100 80GB)', row GPUs 1, seq 512, mixed precision", FUSER,
              unmodelled=f"{FUSED_MHA}; {BINNED}"),
    Published("resnet50", "A100 80GB", 256, 224, 1, 2470.0,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 80GB)', row GPUs 1, mixed precision (batch 256, the script's default)", EAGER, precision=AUTOCAST),
    Published("bert-large", "A100 40GB", 64, 128, 1024, 356.845,
              f"{DLE} TensorFlow/LanguageModeling/BERT/README.md, table 'Pre-training training performance: "
              "single-node on DGX A100 40GB', row GPUs 1, seq 128, mixed precision (batch 64, accumulation 1024)", FUSER),
    Published("bert-large", "A100 40GB", 16, 512, 2048, 70.856,
              f"{DLE} TensorFlow/LanguageModeling/BERT/README.md, table 'Pre-training training performance: "
              "single-node on DGX A100 40GB', row GPUs 1, seq 512, mixed precision (batch 16, accumulation 2048)", FUSER),
    Published("resnet50", "A100 40GB", 256, 224, 1, 2375.0,
              f"{DLE} TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 40GB)', row GPUs 1, mixed precision + XLA (batch 256)", FUSER),
    Published("bert-large", "V100 32GB", 64, 128, 64, 224.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX-1 With 32G', row "
              "GPUs 1, seq 128, mixed precision (4096 accumulated over 64 steps: batch 64)", FUSER, precision=HALF),
    Published("bert-large", "V100 32GB", 8, 512, 256, 75.0,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX-1 With 32G', row "
              "GPUs 1, seq 512, mixed precision (2048 accumulated over 256 steps: batch 8)", FUSER,
              unmodelled=BINNED, precision=HALF),
    Published("resnet50", "V100 16GB", 256, 224, 1, 1200.0,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 16GB (8x V100 16GB)', row GPUs 1, mixed precision (batch 256, the script's default)", EAGER, precision=AUTOCAST),
    Published("resnet50", "V100 32GB", 256, 224, 1, 1156.0,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 32GB (8x V100 32GB)', row GPUs 1, mixed precision (batch 256, the script's default)", EAGER, precision=AUTOCAST),
    Published("resnet50", "V100 16GB", 256, 224, 1, 1270.0,
              f"{DLE} TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 (8x V100 16G)', row GPUs 1, mixed precision + XLA (batch 256)", FUSER),
    # ResNeXt-101 32x4d and SE-ResNeXt-101 32x4d (PyTorch ConvNets, as configs.yml runs them with AMP: batch 128
    # on DGX A100; on DGX-1V 128 and 112; memory_format nhwc; eager, like the ResNet-50 rows: the same main.py).
    *(Published(m, gpu, b, 224, 1, meas,
                f"{DLE} PyTorch/Classification/ConvNets/{m}/README.md, table 'Training performance: {table}', row GPUs "
                f"1, mixed precision (batch {b}: configs.yml, {m}, {plat} AMP)", EAGER, precision=AUTOCAST)
      for m, gpu, b, meas, table, plat in (
          ("resnext101-32x4d", "A100 80GB", 128, 1211.0, "NVIDIA DGX A100 (8x A100 80GB)", "DGXA100"),
          ("resnext101-32x4d", "V100 16GB", 128, 587.0, "NVIDIA DGX-1 16GB (8x V100 16GB)", "DGX1V"),
          ("resnext101-32x4d", "V100 32GB", 128, 565.0, "NVIDIA DGX-1 32GB (8x V100 32GB)", "DGX1V"),
          ("se-resnext101-32x4d", "A100 80GB", 128, 855.0, "NVIDIA DGX A100 (8x A100 80GB)", "DGXA100"),
          ("se-resnext101-32x4d", "V100 16GB", 112, 443.0, "NVIDIA DGX-1 16GB (8x V100 16GB)", "DGX1V"),
          ("se-resnext101-32x4d", "V100 32GB", 112, 427.0, "NVIDIA DGX-1 32GB (8x V100 32GB)", "DGX1V"))),
    # ResNeXt-101 32x4d in TensorFlow (ConvNets/model/resnet.py: the same layers, widths, expansion and
    # cardinality as the PyTorch definition): DGX A100 40GB with AMP + XLA at batch 256 (fused); DGX-1 16G with
    # AMP and no XLA at batch 128 (taken as unfused: TF's graph optimiser fuses a few patterns, not chains).
    # The TF SE-ResNeXt squeezes to C/16 channels where the zoo model (PyTorch's) squeezes to 16: left out.
    Published("resnext101-32x4d", "A100 40GB", 256, 224, 1, 1132.0,
              f"{DLE} TensorFlow/Classification/ConvNets/resnext101-32x4d/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 40GB)', row GPUs 1, mixed precision + XLA (batch 256)", FUSER),
    Published("resnext101-32x4d", "V100 16GB", 128, 224, 1, 566.0,
              f"{DLE} TensorFlow/Classification/ConvNets/resnext101-32x4d/README.md, table 'Training performance: "
              "NVIDIA DGX-1 (8x V100 16G)', row GPUs 1, mixed precision (batch 128, no XLA)", EAGER),
    # Per-GPU figures of the same tables' 8-GPU rows (the table's total / 8), with the data-parallel ring
    # all-reduce over NVLink once per optimizer step: the PyTorch BERT all-reduces FP16 gradients after
    # accumulation (scripts/run_pretraining.sh line 31, allreduce_post_accumulation_fp16 true: 2 bytes); the
    # PyTorch ResNet-50 (AMP, FP32 parameters) all-reduces FP32 gradients (4 bytes), taken as not overlapped
    # with the backward pass (an upper bound on its cost).
    Published("bert-large", "A100 80GB", 256, 128, 32, 4591.0 / 8,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x A100 "
              "80GB)', row GPUs 8, seq 128, mixed precision (4591 / 8)", FUSER, gpus=8, precision=HALF),
    Published("bert-large", "A100 80GB", 32, 512, 128, 1657.0 / 8,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x A100 "
              "80GB)', row GPUs 8, seq 512, mixed precision (1657 / 8)", FUSER, gpus=8, unmodelled=BINNED, precision=HALF),
    Published("resnet50", "A100 80GB", 256, 224, 1, 16621.0 / 8,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 80GB)', row GPUs 8, mixed precision (16621 / 8)", EAGER, gpus=8,
              grad_bytes=4, precision=AUTOCAST),
    Published("bert-large", "V100 32GB", 64, 128, 64, 1746.0 / 8,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX-1 With 32G', row "
              "GPUs 8, seq 128, mixed precision (1746 / 8)", FUSER, gpus=8, precision=HALF),
    Published("bert-large", "V100 32GB", 8, 512, 256, 586.0 / 8,
              f"{DLE} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX-1 With 32G', row "
              "GPUs 8, seq 512, mixed precision (586 / 8)", FUSER, gpus=8, unmodelled=BINNED, precision=HALF),
    Published("resnet50", "V100 16GB", 256, 224, 1, 8322.0 / 8,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 16GB (8x V100 16GB)', row GPUs 8, mixed precision (8322 / 8)", EAGER, gpus=8,
              grad_bytes=4, precision=AUTOCAST),
    Published("resnet50", "V100 32GB", 256, 224, 1, 8056.0 / 8,
              f"{DLE} PyTorch/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 32GB (8x V100 32GB)', row GPUs 8, mixed precision (8056 / 8)", EAGER, gpus=8,
              grad_bytes=4, precision=AUTOCAST),
    # TensorFlow ConvNets 8-GPU rows (Horovod's DistributedOptimizer with no compression: FP32 gradients of the
    # AMP graph's FP32 variables, 4 bytes).
    Published("resnet50", "A100 40GB", 256, 224, 1, 17400.0 / 8,
              f"{DLE} TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 40GB)', row GPUs 8, mixed precision + XLA (17400 / 8)", FUSER, gpus=8,
              grad_bytes=4),
    Published("resnet50", "V100 16GB", 256, 224, 1, 9510.0 / 8,
              f"{DLE} TensorFlow/Classification/ConvNets/resnet50v1.5/README.md, table 'Training performance: "
              "NVIDIA DGX-1 (8x V100 16G)', row GPUs 8, mixed precision + XLA (9510 / 8)", FUSER, gpus=8,
              grad_bytes=4),
    Published("resnext101-32x4d", "A100 40GB", 256, 224, 1, 8500.0 / 8,
              f"{DLE} TensorFlow/Classification/ConvNets/resnext101-32x4d/README.md, table 'Training performance: "
              "NVIDIA DGX A100 (8x A100 40GB)', row GPUs 8, mixed precision + XLA (8500 / 8)", FUSER, gpus=8,
              grad_bytes=4),
    Published("resnext101-32x4d", "V100 16GB", 128, 224, 1, 4160.0 / 8,
              f"{DLE} TensorFlow/Classification/ConvNets/resnext101-32x4d/README.md, table 'Training performance: "
              "NVIDIA DGX-1 (8x V100 16G)', row GPUs 8, mixed precision (4160 / 8, no XLA)", EAGER, gpus=8,
              grad_bytes=4),
    *(Published(m, gpu, b, 224, 1, total / 8,
                f"{DLE} PyTorch/Classification/ConvNets/{m}/README.md, table 'Training performance: {table}', row GPUs "
                f"8, mixed precision ({total:g} / 8)", EAGER, gpus=8, grad_bytes=4, precision=AUTOCAST)
      for m, gpu, b, total, table in (
          ("resnext101-32x4d", "A100 80GB", 128, 7925.0, "NVIDIA DGX A100 (8x A100 80GB)"),
          ("resnext101-32x4d", "V100 16GB", 128, 4065.0, "NVIDIA DGX-1 16GB (8x V100 16GB)"),
          ("resnext101-32x4d", "V100 32GB", 128, 3863.0, "NVIDIA DGX-1 32GB (8x V100 32GB)"),
          ("se-resnext101-32x4d", "A100 80GB", 128, 5779.0, "NVIDIA DGX A100 (8x A100 80GB)"),
          ("se-resnext101-32x4d", "V100 16GB", 112, 2971.0, "NVIDIA DGX-1 16GB (8x V100 16GB)"),
          ("se-resnext101-32x4d", "V100 32GB", 112, 2925.0, "NVIDIA DGX-1 32GB (8x V100 32GB)"))),
    # PaddlePaddle BERT's initial release, the same table before binning and fused attention (round 6): the
    # PaddlePaddle:22.08-py3 container (README line 872), phase 2 from the HDF5 set padded to 512
    # (`hdf5_..._seq_len_512_...`, scripts/run_pretraining.sh line 38), the encoder unfused (modeling.py line 150,
    # `self.fuse = False`) and no fuse_gemm_epilogue (program.py's create_strategy sets none: eager), AMP without
    # --use-pure-fp16 (FP32 gradients, 4 bytes, all-reduced fused: fuse_all_reduce_ops).
    *(Published("bert-large", "A100 80GB", b, seq, acc, total / gpus,
                f"{PADDLE_V1} PaddlePaddle/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x "
                f"A100 80GB)', row GPUs {gpus}, seq {seq}, mixed precision ({total:g} / {gpus}; PaddlePaddle:22.08, "
                "HDF5 data padded to the sequence length)", EAGER, gpus=gpus, grad_bytes=4)
      for gpus, b, seq, acc, total in ((1, 256, 128, 32, 529.0), (1, 32, 512, 128, 103.0),
                                       (8, 256, 128, 32, 4200.0), (8, 32, 512, 128, 823.0))),
    # PyTorch BERT before LDDL (README @78ec6802, line 848: pytorch:20.06-py3 on DGX A100 40GB): phase 2 from the
    # HDF5 set padded to 512 (scripts/run_pretraining.sh line 40); the model eager but for a scripted bias-GeLU
    # and apex's LayerNorm kernel (modeling.py lines 123, 300: taken as unfused); FP16 gradients all-reduced after
    # accumulation (run_pretraining.sh line 31). The table's first column is the accumulated batch per GPU (65536
    # over 1024 steps: 64).
    *(Published("bert-large", "A100 40GB", b, seq, acc, total / gpus,
                f"{PYTORCH_2006} PyTorch/LanguageModeling/BERT/README.md, table 'Pre-training NVIDIA DGX A100 (8x A100 "
                f"40GB)', row GPUs {gpus}, seq {seq}, mixed precision ({total:g} / {gpus}; pytorch:20.06, HDF5 data "
                "padded to the sequence length)", EAGER, gpus=gpus, precision=HALF)
      for gpus, b, seq, acc, total in ((1, 64, 128, 1024, 415.0), (1, 16, 512, 2048, 78.0),
                                       (8, 64, 128, 128, 3231.0), (8, 16, 512, 256, 620.0))),
    # GPT training on DGX A100 80GB (Selene), Narayanan et al. SC21 Table 1 (round 10, wham12): every row of the table,
    # chosen before any prediction. The runs' settings: NVIDIA/Megatron-LM @d98e8a64
    # examples/academic_paper_scripts/sc21/run_table_1.sh (micro-batch MBS, --activations-checkpoint-method
    # uniform, DDP torch for p = 1) and CONFIG.sh (--fp16, seq 2048); SRUN.sh: nvcr.io pytorch:20.12. Fused as
    # Megatron runs (fused scale-mask-softmax, bias-GELU and bias-dropout-add kernels, apex fused LayerNorm);
    # an FP16 model (Float16Module, FP32 master weights in the optimizer) with PyTorch's CUDA dropout kernel.
    # Tensor parallelism `tp` within a node over NVLink (`parallel.shard_workload`); data parallel over the
    # remaining n / t GPUs, whose FP16 gradient all-reduce crosses the nodes' HDR InfiniBand (one port per GPU):
    # with PyTorch DDP (p = 1) overlapped with the last micro-batch's backward but for its last bucket
    # (`_dp_exposed_s`, round 11); with Megatron's local DDP (p > 1) after the schedule (Megatron-LM @de7dc40f,
    # the scripts' commit, megatron/training.py lines 369-373; its hooks only accumulate, model/distributed.py
    # lines 168-177).
    *(Published(f"gpt-{size}", "A100 80GB", mbs, SC21_SEQ, gbs // (n // (t * p) * mbs),
                sc21_samples_s(tflops, layers, hidden, t * p),
                f"{SC21} Table 1, row {size.upper()} (t {t}, p {p}, {n} GPUs, batch {gbs}): {tflops} teraFLOP/s per "
                f"GPU; {MEGATRON_SC21} (MBS {mbs}, uniform recomputation{f', {v} chunks a stage' if v > 1 else ''}); "
                f"samples/s of one replica = {tflops}e12 × t·p / (96·s·l·h²·(1 + s/6h + V/16lh)), the paper's Eq. 3 "
                "per sample", FUSER, gpus=n, precision=HALF, tp=t, pp=p, virtual=v, recompute=True,
                p2p_bytes=mbs * SC21_SEQ * hidden * C.BYTES_PER_ELEMENT,
                dp_link_gbs=C.DGX_A100_IB_PER_GPU_GBS,
                factory=f"wham_gpu_megatron:gpt_{'stage_' if p > 1 else ''}{size.replace('.', '_')}",
                ddp_tail_bytes=torch_ddp_tail_bytes(hidden, t) if p == 1 else 0.0)
      for size, layers, hidden, t, p, n, gbs, mbs, v, tflops in (
          ("1.7b", 24, 2304, 1, 1, 32, 512, 16, 1, 137), ("3.6b", 30, 3072, 2, 1, 64, 512, 16, 1, 138),
          ("7.5b", 36, 4096, 4, 1, 128, 512, 16, 1, 142), ("18b", 40, 6144, 8, 1, 256, 1024, 8, 1, 135),
          ("39b", 48, 8192, 8, 2, 512, 1536, 4, 1, 138), ("76b", 60, 10240, 8, 4, 1024, 1792, 2, 3, 140),
          ("145b", 80, 12288, 8, 8, 1536, 2304, 2, 2, 148), ("310b", 96, 16384, 8, 16, 1920, 2160, 1, 2, 155),
          ("530b", 105, 20480, 8, 35, 2520, 2520, 1, 3, 163), ("1t", 128, 25600, 8, 64, 3072, 3072, 1, 1, 163))),
    # GPT on Selene (A100 80GB), Korthikanti et al. 2022 Table 5 (round 11, wham13): every row, both columns, chosen
    # before any prediction. Configurations from its Table 3 and §6 (t = 8; no data parallelism, so no gradient
    # all-reduce; the interleaved schedule with 3 chunks a stage for 175B and 530B; s = 2048, V = 51,200; mixed
    # precision). Measured: the iteration's samples (the global batch) ÷ its seconds, of the one replica. The full-
    # recomputation column runs without sequence parallelism; the "present work" column with sequence parallelism
    # (§4.2.2: the residual stream's LayerNorms and dropout-adds split along the sequence; reduce-scatter +
    # all-gather for each all-reduce, the same bytes) and selective recomputation (§5: Q·Kᵀ, softmax, its dropout
    # and the attention over V recomputed in backward). Both columns overlap the backward's tensor-parallel
    # all-reduce with the weight-gradient GEMM (§6.2), which the trace does not: marked.
    *(Published(f"gpt-{size}", "A100 80GB", mbs, SC21_SEQ, gbs // mbs, gbs / seconds,
                f"{KORTHIKANTI} Table 5, row {size.upper()}, {column} {seconds} s an iteration; Table 3 row "
                f"{size.upper()} (t {t}, p {p}, {t * p} GPUs, global batch {gbs}, micro-batch {mbs}"
                f"{f', {v} interleaved chunks a stage (§6)' if v > 1 else ''}); samples/s = {gbs} / {seconds}",
                FUSER, gpus=t * p, precision=HALF, tp=t, pp=p, virtual=v, recompute=full, selective=not full,
                sequence_parallel=not full,
                p2p_bytes=mbs * SC21_SEQ * hidden * C.BYTES_PER_ELEMENT, dp_link_gbs=C.DGX_A100_IB_PER_GPU_GBS,
                factory=f"wham_gpu_megatron:gpt_{'stage_' if p > 1 else ''}{size}",
                unmodelled="the backward's tensor-parallel all-reduce overlapped with the weight-gradient GEMM (§6.2)")
      for size, hidden, p, gbs, mbs, v, full_s, present_s in KORTHIKANTI_ROWS
      for full, column, seconds in ((True, "full recompute", full_s), (False, "present work", present_s))
      for t in (8,)),
)


def run_workload(row: Published) -> Workload:
    """The row's step as its run executes it: traced, then (a PyTorch run) with CUDA's dropout kernel and, under
    autocast, FP32 parameters and ops with their casts (`adopter.wham.cuda_step`), fused as the run fuses; then
    one GPU's shard of a tensor-parallel run (`parallel.shard_workload`; the embedding and the head along the
    vocabulary, `vocab_parallel.shard_vocab`) and every layer's forward recomputed in
    the backward pass where the run checkpoints its layers (`recompute.recompute_layers`)."""
    raw = trace_raw(row.spec)
    if row.precision:
        raw = fused_dropout(raw)
    if row.precision == AUTOCAST:
        raw = autocast(raw)
    work = build_workload(raw, model=row.traced, batch=row.batch, seq=row.seq, fuse=row.fused)
    whole, work = work, shard_vocab(shard_workload(work, row.tp), row.tp)
    if row.sequence_parallel:
        work = sequence_parallel(work, row.tp, whole)
    if row.selective:
        work = recompute_attention(work)
    return recompute_layers(work) if row.recompute else work


def _allreduce_s(work_params: int, row: Published, d: Design) -> float:
    """Ring all-reduce of the gradients over the `gpus / tp` data-parallel replicas: 2 (n−1)/n × one GPU's
    gradient bytes (its 1/tp shard of the parameters) each way on the link (NVLink, or the row's `dp_link_gbs`)."""
    link = row.dp_link_gbs or NVLINK_GBS[row.gpu]
    return allreduce_cycles(work_params / row.tp * row.grad_bytes, row.gpus // (row.tp * row.pp), link,
                            d.clock_mhz) / (d.clock_mhz * 1e6)


def _dp_exposed_s(allreduce_s: float, bwd_s: float, row: Published, d: Design) -> float:
    """The data-parallel all-reduce's seconds the step waits for. PyTorch DDP (a row with `ddp_tail_bytes`)
    all-reduces gradient buckets from autograd hooks while the backward pass runs (Li et al., 'PyTorch
    Distributed', VLDB 2020, §3.2.3), and Megatron runs only the last micro-batch outside `no_sync`
    (Megatron-LM @de7dc40f megatron/schedules.py lines 117-137), so the ring overlaps that micro-batch's backward
    `bwd_s`: the step waits for what does not fit under it, and at least for the last bucket, which is ready only
    when the backward ends. Otherwise (Megatron's local DDP: training.py lines 369-373 after the schedule) the
    whole all-reduce."""
    if not row.ddp_tail_bytes:
        return allreduce_s
    link = row.dp_link_gbs or NVLINK_GBS[row.gpu]
    tail = allreduce_cycles(row.ddp_tail_bytes, row.gpus // (row.tp * row.pp), link, d.clock_mhz) / (d.clock_mhz * 1e6)
    return min(allreduce_s, max(allreduce_s - bwd_s, tail))


def _pipelined(fb_s: float, row: Published) -> float:
    """A micro-batch's share of a pipelined step (SC21 §2.2): the stage's forward + backward `fb_s`, plus the
    schedule's bubble, (p − 1) / (v·m) of it for m = `accumulation` micro-batches and v chunks a stage, plus the
    activation sent forward and its gradient sent back at each of the v chunk boundaries (`p2p_bytes`, split over
    the stage's t GPUs, on the data-parallel link); `fb_s` itself without pipeline parallelism."""
    if row.pp <= 1:
        return fb_s
    bubble = (row.pp - 1) / (row.virtual * row.accumulation)
    p2p = 2 * row.virtual * row.p2p_bytes / row.tp / (row.dp_link_gbs * 1e9)
    return fb_s * (1 + bubble) + p2p


def _overlapped(model: str, row: Published, d: Design, fuse: bool) -> float:
    """Samples/s under WHAM's overlapping scheduler (rounds 1 and 2)."""
    work = load_workload(WorkloadSpec(model, row.batch, row.seq), fuse=fuse)
    ev = Evaluator(work, "throughput", Constraints(math.inf, math.inf), samples=row.batch).evaluate(d)
    return row.batch / (ev.fb_s + (ev.opt_s + _allreduce_s(work.params, row, d)) / row.accumulation)


@dataclass(frozen=True, slots=True)
class Prediction:
    """One row's prediction and what explains it."""

    samples_s: float
    why: str  # seconds of the step per bounding resource, and the batch-norm re-reads' share
    sustained: float  # share of the datasheet peak tensor rate the measured figure implies
    opt_share: float  # optimizer + all-reduce share of the predicted step
    round1: float  # round 1's prediction (zoo model, fused, datasheet rates, overlapping scheduler)
    round2: float  # round 2's (the traced workload, achieved A100 rates, overlapping scheduler)
    round3: float  # round 3's (one stream, batch-norm re-reads, GEMMs at the roofline: no tile quantization)
    round4: float  # round 4's (GEMMs as tiles in waves, split-K; rounds 2-4's HBM figures)
    cutlass: float  # this round with CUTLASS's default tile for every GEMM (the range's pessimistic end)


def predict(row: Published, launch_s: float = 0.0) -> Prediction:
    """Predicted samples/s of the row's training step on its GPU's template: the workload the run executes,
    fused as the run fuses, its kernels one after another on one stream (`gpu.serial_step`); where the step's
    time goes (bounding resource shares, the batch-norm re-reads' share); the share of the GPU's peak tensor
    rate the *measured* figure implies (traced GEMM FLOPs per sample × measured samples/s ÷ datasheet peak:
    what the real run sustained over its whole step); the optimizer's share of the predicted step; and the
    earlier rounds' predictions. `launch_s`: a fixed start-up per kernel (a sensitivity, `--launch-ns`)."""
    d = GPUS[row.gpu]
    work = run_workload(row)
    link = NVLINK_GBS[row.gpu]  # a tensor-parallel all-reduce's link (within a node)
    gs = serial_step(work, d, TILES[row.gpu], launch_s, link)
    tail = (gs.opt_s + _dp_exposed_s(_allreduce_s(work.params, row, d), gs.bwd_s, row, d)) / row.accumulation
    step = _pipelined(gs.fb_s, row) + tail

    def rate(other: GpuStep) -> float:
        exposed = _dp_exposed_s(_allreduce_s(work.params, row, d), other.bwd_s, row, d)
        return row.batch / (_pipelined(other.fb_s, row) + (other.opt_s + exposed) / row.accumulation)

    total = sum(t for _, t in gs.by_bound) or 1.0
    why = ", ".join(f"{r} {t / total:.0%}" for r, t in gs.by_bound if t / total >= 0.01)
    why += f"; {gs.kernels} kernels; batch-norm re-reads {gs.batchnorm_extra_s / total:.0%}"
    flops = segments_flops(work, range(len(work.segments))) / row.batch
    peak = ROUND1_GPUS[row.gpu].peak_flops  # the datasheet's peak, whatever rate the template runs at
    cutlass = rate(serial_step(work, d, CUTLASS_ONLY[row.gpu], link_gbs=link))
    if row.factory:  # rows added after round 4 (the GPT rows): no earlier round predicted them
        return Prediction(row.batch / step, why, row.measured * flops / peak, tail / step,
                          math.nan, math.nan, math.nan, math.nan, cutlass)
    traced = load_workload(row.spec, fuse=row.fused)  # rounds 3-6's step
    return Prediction(row.batch / step, why, row.measured * flops / peak, tail / step,
                      _overlapped(row.model, row, ROUND1_GPUS[row.gpu], True),
                      _overlapped(row.traced, row, ROUND2_GPUS[row.gpu], row.fused),
                      rate(serial_step(traced, ROUND4_GPUS[row.gpu])),
                      rate(serial_step(traced, ROUND4_GPUS[row.gpu], TILES[row.gpu])),
                      cutlass)


def steps_table() -> list[str]:
    """Each row's predicted / measured after each step of rounds 3 to 5: round 2 (overlapping scheduler, round
    2's rates) → one stream (the kernels' `op_cost` summed) → batch-norm re-reads → achieved V100 / A100 40GB
    rates (round 3) → tile and wave quantization (round 4) → every HBM figure a copy-like kernel's (round 5) →
    a PyTorch run's CUDA dropout kernel and autocast (round 7, now); and the range's other end, CUTLASS's default
    tile for every GEMM."""
    out = ["| model | GPU × count | batch × seq | measured | round 2 (overlapped, round-2 rates) | + one stream | "
           "+ batch-norm re-reads | + V100 / A100 40GB achieved rates (round 3) | GEMMs at the tile rate, unquantized "
           "| + tile and wave quantization, split-K (round 4) | + copy-kernel HBM on every GPU (round 5) | "
           "+ PyTorch's CUDA dropout kernel and autocast (round 7, now) | CUTLASS default tile only |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in ROWS:
        if row.factory or row.pp > 1:  # the GPT rows (round 10): no earlier round's model for them
            continue
        work = load_workload(WorkloadSpec(row.traced, row.batch, row.seq), fuse=row.fused)
        d2, d3, d5 = ROUND2_GPUS[row.gpu], ROUND4_GPUS[row.gpu], GPUS[row.gpu]

        def rate(fb: float, opt: float, d: Design, row: Published = row, params: int = work.params) -> float:
            return row.batch / (fb + (opt + _allreduce_s(params, row, d)) / row.accumulation) / row.measured

        hz = d2.clock_mhz * 1e6
        plain = [0.0, 0.0]
        for seg in work.segments:
            for op in work.blocks[seg.block].ops:
                plain[op.phase == "opt"] += op_cost(op, d2).cycles / hz
        with_bn, r3 = serial_step(work, d2), serial_step(work, d3)
        r4, now = serial_step(work, d3, TILES[row.gpu]), serial_step(work, d5, TILES[row.gpu])
        runs = run_workload(row)
        flat, one = serial_step(work, d3, UNQUANTIZED[row.gpu]), serial_step(runs, d5, CUTLASS_ONLY[row.gpu])
        r7 = serial_step(runs, d5, TILES[row.gpu])
        cells = (_overlapped(row.traced, row, d2, row.fused) / row.measured, rate(*plain, d2),
                 rate(with_bn.fb_s, with_bn.opt_s, d2), rate(r3.fb_s, r3.opt_s, d3), rate(flat.fb_s, flat.opt_s, d3),
                 rate(r4.fb_s, r4.opt_s, d3), rate(now.fb_s, now.opt_s, d5), rate(r7.fb_s, r7.opt_s, d5),
                 rate(one.fb_s, one.opt_s, d5))
        out.append(f"| {row.traced} | {row.gpu} ×{row.gpus} | {row.batch} × {row.seq} | {row.measured:g} | "
                   + " | ".join(f"{c:.2f}" for c in cells) + " |")
    return out


WITHIN = 0.25  # the must-hold band: predicted / measured within 1 ± 0.25


def results(launch_s: float = 0.0) -> list[dict[str, object]]:
    """One record per published row: its prediction, or the error that stopped it (the rest go on)."""
    out: list[dict[str, object]] = []
    for row in ROWS:
        rec: dict[str, object] = {"model": row.model, "traced": row.traced, "gpu": row.gpu, "gpus": row.gpus,
                                  "batch": row.batch, "seq": row.seq, "accumulation": row.accumulation,
                                  "fused": row.fused, "measured": row.measured, "source": row.source,
                                  "unmodelled": row.unmodelled, "precision": row.precision, "tp": row.tp,
                                  "pp": row.pp, "recompute": row.recompute, "selective": row.selective,
                                  "sequence_parallel": row.sequence_parallel}
        try:
            p = predict(row, launch_s)
        except Exception as exc:  # a model that cannot be traced is reported; the rest go on
            rec["error"] = str(exc)
        else:
            ratio = p.samples_s / row.measured
            old = [None if math.isnan(x) else x / row.measured for x in (p.round1, p.round2, p.round3, p.round4)]
            rec.update(predicted=p.samples_s, ratio=ratio, within=abs(ratio - 1) <= WITHIN,
                       round1=old[0], round2=old[1], round3=old[2], round4=old[3],
                       cutlass=p.cutlass / row.measured, why=p.why,
                       opt_share=p.opt_share, sustained=p.sustained)
            print(f"{row.traced} {row.gpu} x{row.gpus} {row.batch}x{row.seq}: {ratio:.2f}", file=sys.stderr, flush=True)
        out.append(rec)
    return out


def summary(recs: list[dict[str, object]]) -> dict[str, object]:
    """The counts the must-hold reads: rows within, (model, GPU) pairs with every row within (all, A100/H100,
    single-GPU rows only); a row that failed counts as not within. The `comparable_*` counts are the same over
    the rows whose measured run the trace represents (no `unmodelled` condition: round 6)."""
    pairs: dict[tuple[str, str], list[bool]] = {}
    single: dict[tuple[str, str], list[bool]] = {}
    comparable: dict[tuple[str, str], list[bool]] = {}
    for r in recs:
        key = (str(r["model"]), str(r["gpu"]))
        ok = bool(r.get("within", False))
        pairs.setdefault(key, []).append(ok)
        if r["gpus"] == 1:
            single.setdefault(key, []).append(ok)
        if not r.get("unmodelled"):
            comparable.setdefault(key, []).append(ok)
    a100 = {k: v for k, v in pairs.items() if k[1].startswith(("A100", "H100"))}
    a100_comparable = {k: v for k, v in comparable.items() if k[1].startswith(("A100", "H100"))}
    return {"comparable_rows": sum(len(v) for v in comparable.values()),
            "comparable_rows_within": sum(sum(v) for v in comparable.values()),
            "comparable_pairs_within": [f"{m} on {g}" for (m, g), v in comparable.items() if all(v)],
            "comparable_a100_h100_pairs": len(a100_comparable),
            "comparable_a100_h100_pairs_within": [f"{m} on {g}" for (m, g), v in a100_comparable.items() if all(v)],
            "rows": len(recs), "rows_within": sum(bool(r.get("within", False)) for r in recs),
            "pairs": len(pairs), "pairs_within": [f"{m} on {g}" for (m, g), v in pairs.items() if all(v)],
            "a100_h100_pairs": len(a100), "a100_h100_pairs_within": [f"{m} on {g}" for (m, g), v in a100.items() if all(v)],
            "single_gpu_pairs": len(single),
            "single_gpu_pairs_within": [f"{m} on {g}" for (m, g), v in single.items() if all(v)]}


def table(recs: list[dict[str, object]], summ: dict[str, object]) -> list[str]:
    """The markdown table and the summary line, from the same records as the JSON."""
    lines = ["| model (traced) | GPU × count | batch × seq (accumulation) | fused | measured samples/s | predicted | "
             "predicted / measured | within ±25 % | round 1 pred / meas | round 2 pred / meas | round 3 pred / meas "
             "(no tile quantization) | round 4 pred / meas (read / cudaMemcpy HBM figures) | CUTLASS default tile "
             "only | step time by bound (one stream) | optimizer + all-reduce share | datasheet peak tensor rate the "
             "measurement sustains | measured run's conditions the trace does not represent | source |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        how = ["yes" if r["fused"] else "no (eager)", str(r.get("precision") or "")]
        how += [f"tensor-parallel {r['tp']}" if r.get("tp", 1) != 1 else "",
                f"pipeline-parallel {r['pp']}" if r.get("pp", 1) != 1 else "",
                "every layer recomputed" if r.get("recompute") else "",
                "sequence-parallel" if r.get("sequence_parallel") else "",
                "attention core recomputed" if r.get("selective") else ""]
        head = (f"| {r['traced']} | {r['gpu']} ×{r['gpus']} | {r['batch']} × {r['seq']} ({r['accumulation']}) | "
                f"{'; '.join(h for h in how if h)} | {r['measured']:g} | ")
        if "error" in r:
            lines.append(head + f"failed: {r['error']} | — | no | — | — | — | — | — | — | — | — | "
                         f"{r.get('unmodelled') or 'none known'} | {r['source']} |")
            continue
        lines.append(head + f"{r['predicted']:.4g} | {r['ratio']:.2f} | {'yes' if r['within'] else 'no'} | "
                     + " | ".join("—" if r.get(k) is None else f"{r[k]:.2f}" for k in ("round1", "round2", "round3", "round4"))
                     + f" | {r['cutlass']:.2f} | {r['why']} | "
                     f"{r['opt_share']:.1%} | {r['sustained']:.0%} | {r.get('unmodelled') or 'none known'} | "
                     f"{r['source']} |")

    def names(key: str) -> str:
        got = summ[key]
        assert isinstance(got, list)
        return ", ".join(got) or "none"

    lines += ["", f"{summ['rows_within']} of {summ['rows']} rows within ±25 %; (model, GPU) pairs with every row "
              f"within: {len(summ['pairs_within'])} of {summ['pairs']} ({names('pairs_within')}); A100/H100 pairs "
              f"with every row within: {len(summ['a100_h100_pairs_within'])} of {summ['a100_h100_pairs']}; pairs whose "
              f"single-GPU rows are all within (multi-GPU rows set aside): {len(summ['single_gpu_pairs_within'])} of "
              f"{summ['single_gpu_pairs']} ({names('single_gpu_pairs_within')}). Rows whose measured run the trace "
              f"represents (no condition in the conditions column): {summ['comparable_rows_within']} of "
              f"{summ['comparable_rows']} within; A100/H100 pairs with every such row within: "
              f"{len(summ['comparable_a100_h100_pairs_within'])} of {summ['comparable_a100_h100_pairs']} "
              f"({names('comparable_a100_h100_pairs_within')})."]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    ap.add_argument("--json", type=Path, default=None, help="write every row's record and the summary here")
    ap.add_argument("--steps", action="store_true", help="print each row's ratio after each round-3 to 5 change instead")
    ap.add_argument("--launch-ns", type=float, default=None,
                    help="a sensitivity: every kernel on every GPU costs this many ns more; print the rows and counts")
    args = ap.parse_args()
    if args.steps:
        print("\n".join(steps_table()))
        return 0
    if args.launch_ns is not None:
        recs = results(args.launch_ns * 1e-9)
        print("\n".join(table(recs, summary(recs))))
        return 0
    t0 = time.perf_counter()
    recs = results()
    summ = summary(recs)
    head = [f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
            f"load {os.getloadavg()[0]:.2f}. Command: python bench/wham_gpu_published.py",
            *(f"{name} template: {d.label()}, {d.clock_mhz:g} MHz → {d.peak_flops / 1e12:.0f} TFLOPS dense FP16, "
              f"HBM a copy-like kernel's, read + write; "
              f"GEMMs as {TILES[name].sms} SMs × {TILES[name].macs_per_sm_clock:.1f} MACs a clock a full tile, L2 "
              f"{TILES[name].l2_bytes_per_clock:g} B a clock, k-tile {TILES[name].k_tile}, tiles "
              f"{', '.join(f'{a}×{b}' for a, b in TILES[name].tiles)}." for name, d in GPUS.items()), ""]
    text = "\n".join([*head, *table(recs, summ), f"Whole run {time.perf_counter() - t0:.0f} s."])
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"rows": recs, "summary": summ}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
