"""Every physical constant of the WHAM model, with its source and technology node (one place, by design).

Areas in µm² or mm², energies in pJ, at 22 nm unless said otherwise. Each constant has an entry in
`SOURCES`: the paper, datasheet or named tool table (with its table or row) it comes from, or the
derivation from cited ones; a test fails when one has none. Where no published figure was found the part
is left out of the model (said in `LEFT_OUT` and docs/wham.md), never filled with a guess.
"""

from __future__ import annotations

# --- Operating point (WHAM's code: TPUv2's clock and HBM bandwidth, 16-bit data). -----------------------
CLOCK_MHZ = 700.0
BANDWIDTH_GBS = 700.0  # the reference designs' off-chip bandwidth; the search's grid is BANDWIDTH_GRID_GBS
BYTES_PER_ELEMENT = 2
AREA_CAP_MM2 = 606.7
# Off-chip bandwidth is a design parameter: WHAM's 700 GB/s × 2^k, k = −2 … 2 (powers of two, like every
# other axis of the grid).
BANDWIDTH_GRID_GBS: tuple[float, ...] = tuple(BANDWIDTH_GBS * 2.0**k for k in range(-2, 3))

# --- Technology scaling 45 nm → 22 nm. -------------------------------------------------------------------
NODE_SCALE_AREA_45_TO_22 = (22.0 / 45.0) ** 2
NODE_SCALE_ENERGY_45_TO_22 = 22.0 / 45.0

# --- Arithmetic: Horowitz, "Computing's energy problem", ISSCC 2014, the 45 nm operation table. -----------
FP16_MUL_45NM_AREA_UM2, FP16_MUL_45NM_ENERGY_PJ = 1640.0, 1.1
FP16_ADD_45NM_AREA_UM2, FP16_ADD_45NM_ENERGY_PJ = 1360.0, 0.4
MAC16_AREA_UM2 = (FP16_MUL_45NM_AREA_UM2 + FP16_ADD_45NM_AREA_UM2) * NODE_SCALE_AREA_45_TO_22  # ≈ 717 µm²
MAC16_ENERGY_PJ = (FP16_MUL_45NM_ENERGY_PJ + FP16_ADD_45NM_ENERGY_PJ) * NODE_SCALE_ENERGY_45_TO_22  # ≈ 0.733
PE_AREA_UM2 = MAC16_AREA_UM2
PE_ENERGY_PJ = MAC16_ENERGY_PJ
LANE_AREA_UM2 = MAC16_AREA_UM2
LANE_ENERGY_PJ = MAC16_ENERGY_PJ

# --- SRAM. --------------------------------------------------------------------------------------------
SRAM_2MIB_AREA_MM2 = 3.10
SRAM_AREA_MM2_PER_MIB = SRAM_2MIB_AREA_MM2 / 2.0
SRAM_8KB_READ_64BIT_45NM_PJ = 10.0
SRAM_ENERGY_PJ_PER_BYTE = SRAM_8KB_READ_64BIT_45NM_PJ / 8.0 * NODE_SCALE_ENERGY_45_TO_22  # ≈ 0.61 pJ/B

# --- Off-chip memory. ----------------------------------------------------------------------------------
HBM2_PJ_PER_BIT = 3.9
DRAM_ENERGY_PJ_PER_BYTE = HBM2_PJ_PER_BIT * 8

# --- Reference designs and published chips. -----------------------------------------------------------------
TPUV2_DIE_MM2 = 611.0
TPUV2_TDP_W = 280.0
TPUV2_MXU = 128
TPUV2_CORES = 2
TPUV2_VPU_LANES = 8 * 128
TPUV2_ONCHIP_MIB = 32.0
TPUV3_MXUS = 4
TPUV3_CLOCK_MHZ = 940.0
TPUV3_BANDWIDTH_GBS = 900.0
NVDLA_MAC_ATOMIC_C, NVDLA_MAC_ATOMIC_K = 64, 32
NVDLA_FP16_MACS = NVDLA_MAC_ATOMIC_C * NVDLA_MAC_ATOMIC_K // 2  # 1024: FP16 runs at half the INT8 MAC count
NVDLA_CBUF_MIB = 16 * 64 * 512 / 2**20  # 16 banks × 64 B × 512 entries = 0.5 MiB
NVDLA_SDP_LANES = 16

# --- Vector-op cycle costs per element (WHAM's code table). --------------------------------------------
VECTOR_CYCLES: dict[str, float] = {
    "add": 1, "sub": 1, "mul": 1, "relu": 1, "threshold_backward": 1, "neg": 1, "where": 1, "masked_fill": 1,
    "div": 10, "reciprocal": 10, "rsqrt": 10, "sqrt": 10, "pow": 10, "exp": 10, "log": 10,
    "_softmax": 10, "_log_softmax": 10, "_softmax_backward_data": 10, "_log_softmax_backward_data": 10,
    "native_layer_norm": 1, "native_layer_norm_backward": 2, "native_batch_norm": 1,
    "native_batch_norm_backward": 2, "_native_batch_norm_legit": 1, "_native_batch_norm_legit_functional": 1,
    "tanh": 27, "tanh_backward": 27, "sigmoid": 12, "sigmoid_backward": 12, "silu": 12, "silu_backward": 12,
    "erf": 15, "gelu": 15, "gelu_backward": 15 + 10,  # gelu = erf-based; its backward adds an exp
    "native_dropout": 2, "native_dropout_backward": 1, "bernoulli": 2,
    # Adam/AdamW foreach ops: element-wise.
    "_foreach_add": 1, "_foreach_mul": 1, "_foreach_lerp": 2, "_foreach_addcmul": 2, "_foreach_sqrt": 10,
    "_foreach_div": 10, "_foreach_addcdiv": 11, "_foreach_sub": 1, "_foreach_maximum": 1,
}
VECTOR_CYCLES_DEFAULT = 1.0  # copies, gathers, adds and anything not in the table
# Ops whose output depends on a whole row: they cannot be fused as an element-wise epilogue.
REDUCTIONS = frozenset({
    "sum", "mean", "amax", "max", "_softmax", "_log_softmax", "_softmax_backward_data",
    "_log_softmax_backward_data", "native_layer_norm", "native_layer_norm_backward", "native_batch_norm",
    "native_batch_norm_backward", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
    "nll_loss_forward", "nll_loss_backward", "embedding", "embedding_dense_backward", "cat", "index_select",
    "max_pool2d_with_indices", "max_pool2d_with_indices_backward", "var_mean", "var", "topk", "sort",
})
NORMALISATIONS = frozenset({"native_layer_norm", "rsqrt", "native_batch_norm", "_native_batch_norm_legit",
                            "_native_batch_norm_legit_functional"})

# --- Distributed training. -----------------------------------------------------------------------------
LINK_GBS = 100.0

# --- Published GPUs (bench/wham_gpu_published.py: the model against measured training throughputs). ---------
A100_SMS, A100_TENSOR_CORES_PER_SM, A100_TC_FP16_FMA_PER_CLOCK = 108, 4, 256
A100_BOOST_MHZ = 1410.0
A100_L2_MIB = 40.0
A100_80GB_HBM_GBS = 2039.0
A100_40GB_HBM_GBS = 1555.0
# Achieved HBM read bandwidth on an A100 SXM4 80GB: the only published measurement found for these parts.
A100_80GB_HBM_ACHIEVED_GBS = 1800.0
# Achieved dense matmul rate on an A100 SXM: the best of a shape search (BF16; FP16 has the same Tensor Core
# rate on A100), out of the 312 TFLOPS peak; the template runs it as fewer Tensor Cores at the same clock.
A100_DENSE_FP16_TFLOPS = 312.0
A100_MAMF_BF16_TFLOPS = 271.2
A100_TENSOR_CORES_ACHIEVED = round(A100_SMS * A100_TENSOR_CORES_PER_SM * A100_MAMF_BF16_TFLOPS / A100_DENSE_FP16_TFLOPS)
V100_SMS, V100_TENSOR_CORES_PER_SM = 80, 8
V100_BOOST_MHZ = 1530.0
V100_L2_MIB = 6.0
V100_HBM_GBS = 900.0
GPU_FP32_LANES_PER_SM = 64
# NVLink per GPU, both directions together (datasheets); a ring all-reduce sends and receives at once, so it
# runs at half of it each way.
A100_NVLINK_GBS = 600.0
V100_NVLINK_GBS = 300.0
A100_NVLINK_PER_DIRECTION_GBS = A100_NVLINK_GBS / 2
V100_NVLINK_PER_DIRECTION_GBS = V100_NVLINK_GBS / 2
# Between DGX A100 nodes (Selene, the SC21 Megatron runs): one 200 Gb/s HDR InfiniBand port per GPU, each way.
DGX_A100_IB_GBITS_PER_GPU = 200.0
DGX_A100_IB_PER_GPU_GBS = DGX_A100_IB_GBITS_PER_GPU / 8

# A GPU's training step as it runs (adopter.wham.gpu): one stream, kernels in issue order; batch norm in
# training reads its input twice forward (statistics, then normalise) and dy and x twice backward.
GPU_STREAMS = 1
BATCHNORM_FORWARD_EXTRA_READS = 1
BATCHNORM_BACKWARD_EXTRA_READS = 2
# Achieved HBM bandwidth on V100: a device-to-device copy on a V100 16GB (the same 900 GB/s HBM2 as the SXM2
# parts). The A100 40GB's: no measurement found; the A100 80GB's measured fraction of its peak, carried over.
V100_HBM_ACHIEVED_GBS = 790.0
# Achieved dense FP16 matmul rate on a V100 (cuBLAS GEMM on Tensor Cores), out of the 125 TFLOPS peak; the
# template runs it as fewer Tensor Cores at the same clock, as the A100's MAMF.
V100_DENSE_FP16_TFLOPS = 125.0
V100_CUBLAS_HGEMM_TFLOPS = 83.0
V100_TENSOR_CORES_ACHIEVED = round(V100_SMS * V100_TENSOR_CORES_PER_SM * V100_CUBLAS_HGEMM_TFLOPS
                                   / V100_DENSE_FP16_TFLOPS)
A100_40GB_HBM_ACHIEVED_GBS = A100_40GB_HBM_GBS * A100_80GB_HBM_ACHIEVED_GBS / A100_80GB_HBM_GBS
# Achieved HBM bandwidth as the per-op cost uses it (round 5): bytes read + bytes written over time, for a
# streaming kernel with one load and one store stream (an element-wise kernel reads and writes), from one
# benchmark run the same way on every part; the read-only (A100 80GB), cudaMemcpy (V100) and carried-over
# (A100 40GB) figures above are rounds 2-4's, kept for their columns.
A100_80GB_HBM_COPY_GBS = 1737.0
A100_40GB_HBM_COPY_GBS = 1382.0
V100_HBM_COPY_GBS = 809.0

# A GEMM (or an implicit-GEMM convolution: M = N·P·Q, N = K, K = C·R·S) as a GPU kernel runs it
# (adopter.wham.gpu.gemm_kernel_cycles): the output is cut into thread-block tiles, each tile runs on one SM
# stepping through K a k-tile at a time, and tiles are scheduled in waves of one tile per SM; a partial tile
# (M or N not a multiple of the tile), a partial k-tile and a partial last wave each cost a full one.
# The tile shapes cuBLAS chooses from (its heuristic picks one per problem; the model takes the fastest):
GPU_CUBLAS_TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256),
                                                  (128, 64), (64, 128), (64, 64))
# CUTLASS's default FP16 Tensor Core thread-block tile (M × N × K-step) per architecture; the K-step is the
# model's k-tile, and the M × N tile is the pessimistic end of the tile range (one tile shape for every GEMM).
CUTLASS_SM80_TILE = (128, 256, 64)
CUTLASS_SM70_TILE = (128, 256, 32)
TILES_PER_SM_WAVE = 1
# Split-K (a GEMM with too few output tiles to fill the SMs cuts K into slices run as extra thread blocks, then
# reduces the slices' partial sums in a second kernel): the partials are the FP32 accumulators.
SPLIT_K_PARTIAL_BYTES = 4
# L2 read bandwidth a clock (the tiles' operands stream from L2): each SM's share feeds its tile's A and B
# panels, (M_t + N_t) · k-tile elements for M_t · N_t · k-tile MACs, so a small tile can be L2-bound.
A100_L2_BYTES_PER_CLOCK = 5120
V100_L2_BYTES_PER_CLOCK = 2048
# The best shape of the A100 MAMF measurement (A100_MAMF_BF16_TFLOPS), M × N × K: the measured rate includes
# that shape's own quantization, taken out to give the rate of a full tile (A100_TILE_MACS_PER_SM_CLOCK).
A100_MAMF_SHAPE = (1024, 10240, 5120)
_MAMF_TILES = -(-A100_MAMF_SHAPE[0] // CUTLASS_SM80_TILE[0]) * -(-A100_MAMF_SHAPE[1] // CUTLASS_SM80_TILE[1])
A100_TILE_MACS_PER_SM_CLOCK = (A100_MAMF_BF16_TFLOPS * 1e12 / 2 / (A100_BOOST_MHZ * 1e6) / A100_SMS
                               * (-(-_MAMF_TILES // A100_SMS) * A100_SMS) / _MAMF_TILES)
V100_TILE_MACS_PER_SM_CLOCK = V100_CUBLAS_HGEMM_TFLOPS * 1e12 / 2 / (V100_BOOST_MHZ * 1e6) / V100_SMS

# Parts of a real chip the template leaves out because no cited figure was found (docs/wham.md says so):
# they are absent, not guessed, so area and TDP are lower bounds on a real chip's.
LEFT_OUT = ("systolic PE operand/partial-sum registers", "vector-lane register files", "SRAM leakage",
            "per-core local buffers", "HBM PHY and controller area", "uncore (control, NoC, host and "
            "chip-to-chip interfaces)")

_HOROWITZ = "Horowitz, 'Computing's energy problem (and what we can do about it)', ISSCC 2014, Fig. 1.1.9 (45 nm)"
# How PyTorch's CUDA backend runs a mixed-precision step (adopter.wham.cuda_step; bench/wham_gpu_published.py).
DROPOUT_MASK_BYTES = 1  # native_dropout's mask, one bool an element
AUTOCAST_FP32_BYTES = 4  # parameters, their gradients, optimizer state and the FP32-list ops under autocast

SOURCES: dict[str, str] = {
    "CLOCK_MHZ": "WHAM's code (Adnan et al. 2024, microsoft/Phaze): TPUv2's 700 MHz",
    "BANDWIDTH_GBS": "WHAM's code: TPUv2's 700 GB/s HBM",
    "BYTES_PER_ELEMENT": "WHAM's code: 16-bit data",
    "AREA_CAP_MM2": "WHAM's code: area budget 606.7 mm², just under TPUv2's die (TPUV2_DIE_MM2)",
    "BANDWIDTH_GRID_GBS": "derived: BANDWIDTH_GBS × 2^k, k = -2..2 (a grid axis of powers of two, as Phaze's)",
    "NODE_SCALE_AREA_45_TO_22": "derived: Dennard et al., IEEE JSSC 1974, constant-field scaling: area ∝ λ², "
                                "(22/45)²",
    "NODE_SCALE_ENERGY_45_TO_22": "derived: Dennard et al. 1974: C ∝ λ, E = C·V² at the same V: 22/45",
    "FP16_MUL_45NM_AREA_UM2": f"{_HOROWITZ}, row '16b FP mult': 1640 µm²",
    "FP16_MUL_45NM_ENERGY_PJ": f"{_HOROWITZ}, row '16b FP mult': 1.1 pJ",
    "FP16_ADD_45NM_AREA_UM2": f"{_HOROWITZ}, row '16b FP add': 1360 µm²",
    "FP16_ADD_45NM_ENERGY_PJ": f"{_HOROWITZ}, row '16b FP add': 0.4 pJ",
    "MAC16_AREA_UM2": "derived: (FP16 mult + FP16 add) area × NODE_SCALE_AREA_45_TO_22",
    "MAC16_ENERGY_PJ": "derived: (FP16 mult + FP16 add) energy × NODE_SCALE_ENERGY_45_TO_22",
    "PE_AREA_UM2": "derived: a systolic PE is one FP16 MAC (its registers have no cited figure: LEFT_OUT)",
    "PE_ENERGY_PJ": "derived: one FP16 MAC per PE per cycle (registers LEFT_OUT)",
    "LANE_AREA_UM2": "derived: a vector lane is one FP16 multiplier + adder (register file LEFT_OUT)",
    "LANE_ENERGY_PJ": "derived: one FP16 multiply + add per lane per cycle",
    "SRAM_2MIB_AREA_MM2": "CATransformers (Wang et al., arXiv 2505.01386), Accelergy/CACTI 22 nm component "
                          "table, row '2 MiB SRAM': 3.10 mm² (as quoted in the project's WHAM design note)",
    "SRAM_AREA_MM2_PER_MIB": "derived: SRAM_2MIB_AREA_MM2 / 2 (linear in capacity)",
    "SRAM_8KB_READ_64BIT_45NM_PJ": f"{_HOROWITZ}, row '8 KB SRAM, 64-bit read': 10 pJ",
    "SRAM_ENERGY_PJ_PER_BYTE": "derived: 10 pJ / 8 B × NODE_SCALE_ENERGY_45_TO_22 (a multi-MiB buffer built "
                               "of 8 KB banks; wires between banks left out)",
    "HBM2_PJ_PER_BIT": "O'Connor et al., 'Fine-Grained DRAM', MICRO 2017, HBM2 energy per bit (array + I/O) "
                       "3.9 pJ/bit",
    "DRAM_ENERGY_PJ_PER_BYTE": "derived: HBM2_PJ_PER_BIT × 8",
    "TPUV2_DIE_MM2": "Jouppi et al., 'A Domain-Specific Supercomputer for Training DNNs', CACM 2020, the "
                     "TPUv2 column of its chip table: die < 611 mm²",
    "TPUV2_TDP_W": "Jouppi et al., CACM 2020, TPUv2 column of its chip table: TDP 280 W",
    "TPUV2_MXU": "Jouppi et al., CACM 2020: each TPUv2 core has one 128×128 MXU",
    "TPUV2_CORES": "Jouppi et al., CACM 2020: two TensorCores per TPUv2 chip",
    "TPUV2_VPU_LANES": "Jouppi et al., CACM 2020: the VPU is a 2D SIMD unit of 128 lanes × 8 sublanes",
    "TPUV2_ONCHIP_MIB": "Jouppi et al., CACM 2020: 32 MiB of on-chip vector memory (16 MiB per core)",
    "TPUV3_MXUS": "Jouppi et al., CACM 2020, TPUv3 column: two cores of two 128×128 MXUs each (4 × 128² × 2 × "
                  "940 MHz = 123 TFLOPS, the table's peak)",
    "TPUV3_CLOCK_MHZ": "Jouppi et al., CACM 2020, TPUv3 column: 940 MHz",
    "TPUV3_BANDWIDTH_GBS": "Jouppi et al., CACM 2020, TPUv3 column: HBM 900 GB/s",
    "NVDLA_MAC_ATOMIC_C": "nvdla/hw spec/defs/nv_large.spec, row MAC_ATOMIC_C_SIZE_64",
    "NVDLA_MAC_ATOMIC_K": "nvdla/hw spec/defs/nv_large.spec, row MAC_ATOMIC_K_SIZE_32 (64 × 32 = 2048 INT8 MACs)",
    "NVDLA_FP16_MACS": "derived: NVDLA hardware architecture spec (nvdla.org/hw/v1/hwarch.html, 'Data Types "
                       "and Precision'): FP16 runs at half the INT8 MAC count: 2048 / 2",
    "NVDLA_CBUF_MIB": "derived: nvdla/hw spec/defs/nv_large.spec rows CBUF_BANK_NUMBER_16, CBUF_BANK_WIDTH_64, "
                      "CBUF_BANK_DEPTH_512: 16 × 64 B × 512 = 512 KiB",
    "NVDLA_SDP_LANES": "nvdla/hw spec/defs/nv_large.spec, row SDP_BS_THROUGHPUT_16 (16 elements per cycle)",
    "VECTOR_CYCLES": "WHAM's code (microsoft/Phaze), its table of vector-op cycles per element",
    "VECTOR_CYCLES_DEFAULT": "WHAM's code: an element-wise op not in the table costs as an add (1 cycle)",
    "REDUCTIONS": "op semantics (ATen): ops whose output depends on a whole row; not a measurement",
    "NORMALISATIONS": "op semantics (ATen): normalisation ops (replicated under tensor parallelism)",
    "LINK_GBS": "stated default of --link-gbs, not a measured link: the user gives their chip-to-chip "
                "bandwidth (docs/wham.md's sensitivity table moves it ±50 %)",
    "A100_SMS": "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), table 'NVIDIA A100 Tensor Core GPU "
                "compared to V100': 108 SMs",
    "A100_TENSOR_CORES_PER_SM": "A100 whitepaper, same table: 432 Tensor Cores = 4 per SM",
    "A100_TC_FP16_FMA_PER_CLOCK": "A100 whitepaper, section 'Third-generation Tensor Cores': 256 FP16/FP32 FMA per "
                                  "clock per Tensor Core (432 × 256 × 2 × 1.41 GHz = 312 TFLOPS, the table's dense "
                                  "FP16 peak)",
    "A100_BOOST_MHZ": "A100 whitepaper, comparison table: GPU boost clock 1410 MHz",
    "A100_L2_MIB": "A100 whitepaper, comparison table: L2 cache 40 MB (the template's shared buffer)",
    "A100_80GB_HBM_GBS": "NVIDIA A100 Tensor Core GPU datasheet (2021), column 'A100 80GB SXM': GPU memory bandwidth "
                         "2,039 GB/s",
    "A100_40GB_HBM_GBS": "NVIDIA A100 datasheet, column 'A100 40GB SXM': GPU memory bandwidth 1,555 GB/s",
    "A100_80GB_HBM_ACHIEVED_GBS": "NVIDIA developer forum, 'Trouble to Reach Peak Bandwidth of A100' "
                                  "(forums.developer.nvidia.com/t/339083): a read kernel on an A100 80GB SXM "
                                  "reaches 1.80 TB/s, which Nsight Compute reports as 88 % of peak; the thread "
                                  "cites a GTC talk where no kernel exceeded about 90 %",
    "A100_DENSE_FP16_TFLOPS": "A100 whitepaper, comparison table: peak FP16 Tensor TFLOPS with FP32 accumulate 312 "
                              "(dense; 624 with sparsity); BF16 the same",
    "A100_MAMF_BF16_TFLOPS": "stas00/ml-engineering @b9e29720 compute/accelerator/README.md, 'Maximum Achievable "
                             "Matmul FLOPS comparison table', BF16, row 'NVIDIA A100 SXM': 271.2 TFLOPS of 312 "
                             "(86.9 %), best shape 1024x10240x5120, torch 2.6.0+cu126 (mamf-finder.py, mean of 100 "
                             "iterations after 50 warm-up)",
    "A100_TENSOR_CORES_ACHIEVED": "derived: round(432 × A100_MAMF_BF16_TFLOPS / A100_DENSE_FP16_TFLOPS) = 376 Tensor "
                                  "Cores at 1410 MHz = 271.4 TFLOPS: the achieved matmul rate as a core count",
    "V100_SMS": "NVIDIA Tesla V100 GPU Architecture whitepaper (2017), table 'Comparison of NVIDIA Tesla GPUs': "
                "80 SMs",
    "V100_TENSOR_CORES_PER_SM": "V100 whitepaper, same table: 640 Tensor Cores = 8 per SM, each a 4×4×4 FMA "
                                "(64 FMA) per clock (640 × 64 × 2 × 1.53 GHz = 125 TFLOPS, the table's figure)",
    "V100_BOOST_MHZ": "V100 whitepaper, comparison table: GPU boost clock 1530 MHz",
    "V100_L2_MIB": "V100 whitepaper, comparison table: L2 cache 6144 KB",
    "V100_HBM_GBS": "V100 whitepaper, comparison table: memory bandwidth 900 GB/s (16 GB and 32 GB alike, V100 "
                    "datasheet)",
    "DGX_A100_IB_GBITS_PER_GPU": "NVIDIA DGX A100 datasheet, row Networking: 8x single-port Mellanox ConnectX-6 "
                                 "VPI 200 Gb/s HDR InfiniBand for 8 A100 GPUs (one port per GPU); Narayanan et al., "
                                 "SC21 (arXiv 2104.04473), §5: Selene's nodes have eight 200 Gbps HDR InfiniBand HCAs "
                                 "for application communication",
    "DGX_A100_IB_PER_GPU_GBS": "derived: DGX_A100_IB_GBITS_PER_GPU / 8 bits a byte (HDR's 200 Gb/s is each way)",
    "A100_NVLINK_GBS": "NVIDIA A100 datasheet, column 'A100 80GB SXM', row Interconnect: NVLink 600 GB/s (12 "
                       "third-generation links, A100 whitepaper)",
    "V100_NVLINK_GBS": "NVIDIA V100 datasheet, column 'V100 SXM2', row Interconnect Bandwidth: 300 GB/s (6 NVLink 2 "
                       "links, V100 whitepaper)",
    "A100_NVLINK_PER_DIRECTION_GBS": "derived: A100_NVLINK_GBS / 2 (the datasheet adds both directions)",
    "V100_NVLINK_PER_DIRECTION_GBS": "derived: V100_NVLINK_GBS / 2 (the datasheet adds both directions; DGX-1's "
                                     "hybrid cube-mesh gives each GPU its 6 links, used by NCCL's rings together)",
    "GPU_FP32_LANES_PER_SM": "A100 and V100 whitepapers: 64 FP32 cores per SM (the template's vector lanes)",
    "GPU_STREAMS": "PyTorch documentation, 'CUDA semantics', section 'CUDA streams': each device has a default "
                   "stream and operations are enqueued on the current stream, serialized in issue order (the DLE "
                   "BERT and ResNet-50 training scripts create no other compute stream); NVIDIA CUDA C++ "
                   "Programming Guide, section 'Streams': commands of one stream execute in order",
    "BATCHNORM_FORWARD_EXTRA_READS": "derived from the algorithm (Ioffe & Szegedy, 'Batch Normalization', ICML 2015, "
                                     "Algorithm 1): y = (x − μ_B)/σ_B needs the mean and variance over the whole "
                                     "mini-batch of each channel before any output, so an input larger than the "
                                     "on-chip memory is read once for the statistics and once to normalise; "
                                     "PyTorch's CUDA batch norm runs a statistics pass, then batch_norm_elementwise "
                                     "(aten/src/ATen/native/cuda/Normalization.cu): one read more than the trace "
                                     "records",
    "BATCHNORM_BACKWARD_EXTRA_READS": "derived from the algorithm (Ioffe & Szegedy 2015, the backward of Algorithm 1): "
                                      "dx = (γ/σ)(dy − mean(dy) − x̂·mean(dy·x̂)) needs the channel sums Σdy and "
                                      "Σdy·x̂ before any dx, so dy and x are read once for the sums and again for dx; "
                                      "PyTorch exposes the two passes as the ops batch_norm_backward_reduce and "
                                      "batch_norm_backward_elemt (SyncBatchNorm runs them); two reads more than the "
                                      "trace records (dy and x once each)",
    "V100_HBM_ACHIEVED_GBS": "paranumal.com, 'Rough-n-Ready Roofline: NVIDIA V100 edition' (2018-02-08): on a V100 "
                             "16GB PCI-E, 'using cudaMemcpy we measure achievable memory bandwidth of 790GB/s' of "
                             "900 (the SXM2 16GB and 32GB parts have the same 900 GB/s HBM2, V100 whitepaper)",
    "V100_DENSE_FP16_TFLOPS": "V100 whitepaper, comparison table: peak Tensor TFLOPS 125 (V100 SXM2)",
    "V100_CUBLAS_HGEMM_TFLOPS": "Markidis, Chien, Laure, Peng, Vetter, 'NVIDIA Tensor Core Programmability, "
                                "Performance & Precision', IPDPSW 2018 (doi 10.1109/IPDPSW.2018.00091), abstract: "
                                "'NVIDIA Tensor Cores can deliver up to 83 Tflops/s in mixed precision on a Tesla "
                                "V100 GPU' (cuBLAS GEMM, of the 125 Tflops/s peak it quotes; CUDA 9-era cuBLAS: a "
                                "newer library may reach more, so the V100 rows are pessimistic by that much)",
    "V100_TENSOR_CORES_ACHIEVED": "derived: round(640 × V100_CUBLAS_HGEMM_TFLOPS / V100_DENSE_FP16_TFLOPS) = 425 Tensor "
                                  "Cores at 1530 MHz = 83.2 TFLOPS: the achieved matmul rate as a core count",
    "A100_40GB_HBM_ACHIEVED_GBS": "derived: A100_40GB_HBM_GBS × A100_80GB_HBM_ACHIEVED_GBS / A100_80GB_HBM_GBS "
                                  "(1555 × 1800/2039 = 1373 GB/s): no measurement on the 40GB part was found; the "
                                  "80GB part's measured fraction of peak (88 %, same memory controllers, HBM2 "
                                  "instead of HBM2e) is carried over — an assumption, said so in docs/wham.md",
    "A100_80GB_HBM_COPY_GBS": "RRZE-HPC/gpu-benches @1038c5d0 gpu-stream/a100_80.txt (device 'NVIDIA A100-SXM4-80GB', "
                              "device_order.py), column 'scale' (A[i] = B[i] * 1.2: one load and one store stream) at "
                              "1024-thread blocks, 2 per SM = 100 % occupancy: 1737 GB/s; gpu-stream/main.cu counts 2 "
                              "streams × 256 Mi doubles (2 GiB an array, far beyond the 40 MB L2) × 8 B over the "
                              "median of 31 runs, so read + write bytes. Same file: the read-only kernel 1776 GB/s "
                              "(the forum's 1.80 TB/s read figure, A100_80GB_HBM_ACHIEVED_GBS, agrees)",
    "A100_40GB_HBM_COPY_GBS": "RRZE-HPC/gpu-benches @1038c5d0 gpu-stream/a100_40.txt (device 'NVIDIA A100-SXM4-40G', "
                              "device_order.py), column 'scale' at 2048 threads per SM (100 % occupancy): 1382 GB/s, "
                              "counted as A100_80GB_HBM_COPY_GBS; a measurement on the 40GB part, replacing the "
                              "carried-over 88 % (A100_40GB_HBM_ACHIEVED_GBS, 1373). Cross-check: pc2/GPUInspector.jl "
                              "docs/src/devices/a100_sxm2.md, A100-SXM4-40GB in a DGX A100, memory_bandwidth() "
                              "(cudaMemcpy of 0.5 GiB, read + write counted: src/utility.jl _perform_memcpy, "
                              "DtoDfactor): 1220.7 GiB/s = 1311 GB/s",
    "V100_HBM_COPY_GBS": "RRZE-HPC/gpu-benches @1038c5d0 gpu-stream/v100.txt (device 'Tesla V100', form factor not "
                         "named; every V100 has the same 900 GB/s HBM2, V100 whitepaper and datasheet), column 'scale' "
                         "at 1024-thread blocks, 2 per SM (100 % occupancy): 809 GB/s, counted as "
                         "A100_80GB_HBM_COPY_GBS. Cross-checks, both read + write: paranumal.com's cudaMemcpy 790 GB/s "
                         "(V100_HBM_ACHIEVED_GBS) and pc2/GPUInspector.jl docs/src/devices/v100_sxm2.md, "
                         "V100-SXM2-32GB, memory_bandwidth() 722.31 GiB/s = 776 GB/s (0.5 GiB), 794.6 GB/s (1.4 GiB)",
    "GPU_CUBLAS_TILES": "NVIDIA, 'Matrix Multiplication Background User's Guide' (docs.nvidia.com/deeplearning/"
                        "performance/dl-performance-matrix-multiplication), section 'GPU Implementation': cuBLAS "
                        "tiles 256x128 and 128x256 (most efficient), 128x128, 256x64 and 64x256, 128x64 and 64x128, "
                        "64x64 (least efficient); section 'Dimension Quantization Effects': a partial tile and a "
                        "partial last wave of tiles cost as full ones. Each shape is also a value of cuBLASLt's "
                        "cublasLtMatmulTile_t (docs.nvidia.com/cuda/nvmath-python, nvmath.bindings.cublasLt."
                        "MatmulTile: TILE_64x64 … TILE_256x128, among others such as 64x512 and 96x128 that the "
                        "guide does not list and the model leaves out)",
    "CUTLASS_SM80_TILE": "NVIDIA/cutlass @044405ce include/cutlass/gemm/device/default_gemm_configuration.h, "
                         "DefaultGemmConfiguration<OpClassTensorOp, Sm80, …>: ThreadblockShape = GemmShape<128, 256, 64>",
    "CUTLASS_SM70_TILE": "NVIDIA/cutlass @044405ce include/cutlass/gemm/device/default_gemm_configuration.h, "
                         "DefaultGemmConfiguration<OpClassTensorOp, Sm70, …>: ThreadblockShape = GemmShape<128, 256, 32>",
    "TILES_PER_SM_WAVE": "NVIDIA 'Matrix Multiplication Background User's Guide', section 'Wave Quantization': with "
                         "256x128 thread-block tiles an A100 runs one thread block per SM, a wave of 108 tiles "
                         "(taken for every tile of GPU_CUBLAS_TILES: the guide gives no occupancy for the others)",
    "SPLIT_K_PARTIAL_BYTES": "NVIDIA/cutlass media/docs/efficient_gemm.md, 'Parallelized Reductions: Split K - "
                             "reduction across threadblocks': for small problems 'there are too few threadblocks "
                             "to efficiently occupy the entire GPU'; CUTLASS partitions K, runs a partitionedK "
                             "GEMM then a batched reduction kernel; the partials are the accumulators, FP32 for "
                             "FP16 inputs with FP32 accumulate (A100 whitepaper, the Tensor Core rate table): 4 "
                             "bytes",
    "A100_L2_BYTES_PER_CLOCK": "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): L2 cache read bandwidth "
                               "5120 bytes/clk (V100 2048); as GB/s, 7219 = 5120 × 1.41 GHz in Table 3 of "
                               "doi 10.1016/j.ultsonch.2023.106546 (pmc.ncbi.nlm.nih.gov/articles/PMC10448217)",
    "V100_L2_BYTES_PER_CLOCK": "A100 whitepaper, the V100 figure beside A100's: 2048 bytes/clk; 3133 GB/s = 2048 × "
                               "1.53 GHz in Table 3 of doi 10.1016/j.ultsonch.2023.106546",
    "A100_MAMF_SHAPE": "stas00/ml-engineering @b9e29720 compute/accelerator/README.md, MAMF table, BF16, row 'NVIDIA "
                       "A100 SXM': best shape 1024x10240x5120",
    "A100_TILE_MACS_PER_SM_CLOCK": "derived: A100_MAMF_BF16_TFLOPS / 2 / 1410 MHz / 108 SMs = 890.6 MACs a clock "
                                   "per SM, divided by the MAMF shape's own wave efficiency under the same model "
                                   "(128x256 tiles: 8 × 40 = 320 tiles in 3 waves of 108 = 324: 0.988; 256x128 "
                                   "and a K of 5120, a multiple of 64, give the same): 901.7 a full tile",
    "V100_TILE_MACS_PER_SM_CLOCK": "derived: V100_CUBLAS_HGEMM_TFLOPS / 2 / 1530 MHz / 80 SMs = 339.0 MACs a clock "
                                   "per SM (Markidis et al. give no shape, so its quantization is not taken out: "
                                   "a large square GEMM loses about 1 %)",
    "DROPOUT_MASK_BYTES": "pytorch/pytorch aten/src/ATen/native/Dropout.cpp: `dropout` takes `at::native_dropout` "
                          "when `is_fused_kernel_acceptable` (a CUDA input, 0 < p < 1), else decomposes to "
                          "bernoulli_, div_ and mul (the meta tensors the tracer runs on); "
                          "aten/src/ATen/native/cuda/Dropout.cu: `dropout_cuda` allocates the mask with "
                          "`at::empty_like(self, ... kBool)` and one `fused_dropout_kernel` writes the output and "
                          "the mask; `masked_scale_cuda` (native_dropout_backward) reads the gradient and the mask "
                          "in one kernel. 1 byte an element (the earlier `_fused_dropout` used a uint8 mask: the same)",
    "AUTOCAST_FP32_BYTES": "PyTorch docs, Automatic Mixed Precision package (torch.amp), 'Autocast Op Reference': "
                           "'CUDA Ops that can autocast to float16' (matmul, mm, bmm, addmm, baddbmm, conv*d, "
                           "linear, ...) and 'CUDA Ops that can autocast to float32' (softmax, log_softmax, "
                           "layer_norm, group_norm, nll_loss, the other losses, pow, exp, log, rsqrt, sum, prod, "
                           "cumsum, ...); 'other ops' run in the type of their inputs (promotion); 'the model's "
                           "parameters' stay float32 (the 'Typical Mixed Precision Training' example); "
                           "aten/src/ATen/autocast_mode.cpp `cached_cast`: an FP32 leaf tensor that requires grad "
                           "(a parameter) is cast once and cached until the outermost autocast region exits, other "
                           "tensors on each use; the cast is `_to_copy`, whose backward casts the gradient back; "
                           "torch/amp/grad_scaler.py `unscale_`: `_amp_foreach_non_finite_check_and_unscale_` "
                           "reads and writes every FP32 gradient once a step. FP32: 4 bytes",
    "LEFT_OUT": "the parts with no cited figure, listed so reports can say what area and TDP leave out",
}
