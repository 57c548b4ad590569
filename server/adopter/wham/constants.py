"""Every physical constant of the WHAM model, with its source and technology node (one place, by design).

Areas in µm² or mm², energies in pJ, at 22 nm unless said otherwise. Where we derive a number the
derivation is written next to it; `docs/wham.md` explains the TDP formula, which neither the paper nor
its code gives.
"""

from __future__ import annotations

# --- Operating point (WHAM's code: TPUv2's clock and HBM bandwidth, 16-bit data). -----------------------
CLOCK_MHZ = 700.0  # WHAM code (TPUv2 clock)
BANDWIDTH_GBS = 700.0  # WHAM code (TPUv2 HBM bandwidth)
BYTES_PER_ELEMENT = 2  # 16-bit data (WHAM code)
AREA_CAP_MM2 = 606.7  # WHAM code: area budget just under TPUv2's ~611 mm² die

# --- Published 22 nm figures (CATransformers, Accelergy 22 nm tables, 8-bit). ---------------------------
MAC8_AREA_UM2 = 379.85  # CATransformers, 22 nm, 8-bit MAC
MAC8_ENERGY_PJ = 0.469  # CATransformers, 22 nm, 8-bit MAC
SRAM_2MIB_AREA_MM2 = 3.10  # CATransformers, 22 nm, 2 MiB SRAM
DRAM_ACCESS_PJ = 256.0  # CATransformers: one DRAM access; we read it as one 64-byte burst (see below)
DRAM_BURST_BYTES = 64  # our reading of the access size behind DRAM_ACCESS_PJ

# --- 45 nm 32-bit MAC (Horowitz, ISSCC 2014 as quoted by WHAM.md): 3632 µm², 3.2 pJ. ----------------------
MAC32_45NM_AREA_UM2 = 3632.0
MAC32_45NM_ENERGY_PJ = 3.2
NODE_SCALE_AREA_45_TO_22 = (22.0 / 45.0) ** 2  # area scales with feature size squared
NODE_SCALE_ENERGY_45_TO_22 = 22.0 / 45.0  # dynamic energy ~ capacitance ~ feature size (same voltage)

# 16-bit MAC at 22 nm: geometric mean of the 8-bit (22 nm) and the 32-bit (scaled to 22 nm) MAC,
# since multiplier cost grows between linearly and quadratically with width.
MAC32_22NM_AREA_UM2 = MAC32_45NM_AREA_UM2 * NODE_SCALE_AREA_45_TO_22  # ≈ 868 µm²
MAC32_22NM_ENERGY_PJ = MAC32_45NM_ENERGY_PJ * NODE_SCALE_ENERGY_45_TO_22  # ≈ 1.56 pJ
MAC16_AREA_UM2 = (MAC8_AREA_UM2 * MAC32_22NM_AREA_UM2) ** 0.5  # ≈ 574 µm²
MAC16_ENERGY_PJ = (MAC8_ENERGY_PJ * MAC32_22NM_ENERGY_PJ) ** 0.5  # ≈ 0.855 pJ
# A systolic processing element also holds operand/partial-sum pipeline registers: +30 % area/energy
# (our assumption, the usual PE overhead over a bare MAC in Eyeriss/Accelergy PE breakdowns).
PE_OVERHEAD = 1.3
PE_AREA_UM2 = MAC16_AREA_UM2 * PE_OVERHEAD
PE_ENERGY_PJ = MAC16_ENERGY_PJ * PE_OVERHEAD

# A vector lane is a 16-bit FP ALU (add/mul/compare, special functions iterated) plus a small register
# file: we take one 16-bit MAC plus 50 % for the register file and special-function sequencing.
LANE_AREA_UM2 = MAC16_AREA_UM2 * 1.5
LANE_ENERGY_PJ = MAC16_ENERGY_PJ * 1.5

# --- SRAM. --------------------------------------------------------------------------------------------
SRAM_AREA_MM2_PER_MIB = SRAM_2MIB_AREA_MM2 / 2.0  # 1.55 mm²/MiB (linear in capacity)
SRAM_ENERGY_PJ_PER_BYTE = 0.6  # 22 nm, 64-bit port of a multi-MiB SRAM bank ≈ 5 pJ / 8 B (CACTI-class)
SRAM_LEAKAGE_W_PER_MIB = 0.05  # 22 nm high-density SRAM leakage ≈ 50 mW/MiB (CACTI-class, our assumption)
# Per-core local buffers (operand staging): a tensor core stages one row and one column of 256 entries
# per PE edge (double-buffered) — 2 × (PE_x + PE_y) × 256 × 2 B; a vector core 4 KiB per lane.
TC_LOCAL_ENTRIES_PER_EDGE = 256
VC_LOCAL_BYTES_PER_LANE = 4096

# --- Off-chip memory and fixed on-chip infrastructure. -----------------------------------------------------
DRAM_ENERGY_PJ_PER_BYTE = DRAM_ACCESS_PJ / DRAM_BURST_BYTES  # 4 pJ/B ≈ HBM2's 3.9 pJ/bit·8 / 8 order
HBM_PHY_AREA_MM2_PER_100GBS = 4.0  # HBM2 PHY ≈ 12-15 mm² per ~300 GB/s stack (published PHY die shots)
UNCORE_AREA_MM2 = 20.0  # control, NoC, host and chip-to-chip interfaces (our assumption, fixed)
UNCORE_POWER_W = 10.0  # their power (our assumption, fixed)

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
LINK_GBS = 100.0  # default chip-to-chip link for tensor-parallel all-reduce (TPUv2 ICI-class, stated)
