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

# --- Arithmetic at 22 nm. ------------------------------------------------------------------------------
NODE_SCALE_AREA_45_TO_22 = (22.0 / 45.0) ** 2  # area scales with feature size squared (Dennard)
NODE_SCALE_ENERGY_45_TO_22 = 22.0 / 45.0  # dynamic energy ~ switched capacitance ~ feature size, same voltage
# Two published MACs bracket ours: CATransformers' Accelergy 22 nm 8-bit MAC (379.85 µm², 0.469 pJ,
# registers and control included) and Horowitz's 32-bit integer multiply + add at 45 nm (ISSCC 2014:
# 3495 + 137 µm², 3.1 + 0.1 pJ), scaled to 22 nm (868 µm², 1.56 pJ). A multiplier's cost grows between
# linearly and quadratically with its width, so the 16-bit MAC is their geometric mean.
MAC8_AREA_UM2, MAC8_ENERGY_PJ = 379.85, 0.469  # CATransformers (Accelergy tables), 22 nm, 8-bit
MAC32_45NM_AREA_UM2, MAC32_45NM_ENERGY_PJ = 3632.0, 3.2  # Horowitz 2014, 45 nm, 32-bit int mult + add
MAC32_22NM_AREA_UM2 = MAC32_45NM_AREA_UM2 * NODE_SCALE_AREA_45_TO_22  # ≈ 868 µm²
MAC32_22NM_ENERGY_PJ = MAC32_45NM_ENERGY_PJ * NODE_SCALE_ENERGY_45_TO_22  # ≈ 1.56 pJ
MAC16_AREA_UM2: float = (MAC8_AREA_UM2 * MAC32_22NM_AREA_UM2) ** 0.5  # ≈ 574 µm²
MAC16_ENERGY_PJ: float = (MAC8_ENERGY_PJ * MAC32_22NM_ENERGY_PJ) ** 0.5  # ≈ 0.855 pJ
# Cross-check (not used): Horowitz's FP16 multiply + add (1640 + 1360 µm², 1.1 + 0.4 pJ at 45 nm) scaled to
# 22 nm is 717 µm², 0.733 pJ: +25 % area, −14 % energy against ours. With it the single-model benchmark
# targets move (WHAM's first design lands 0.1 % under NSGA-II's best on BERT): see docs/wham.md.
FP16_MAC_HOROWITZ_22NM_UM2 = (1640.0 + 1360.0) * NODE_SCALE_AREA_45_TO_22
FP16_MAC_HOROWITZ_22NM_PJ = (1.1 + 0.4) * NODE_SCALE_ENERGY_45_TO_22
PE_OVERHEAD = 1.3  # our assumption: operand/partial-sum registers of a systolic PE over its bare MAC
PE_AREA_UM2 = MAC16_AREA_UM2 * PE_OVERHEAD  # ≈ 746 µm²
PE_ENERGY_PJ = MAC16_ENERGY_PJ * PE_OVERHEAD  # ≈ 1.11 pJ

# A vector lane is a 16-bit FP ALU (one multiplier and adder, special functions iterated) plus a small
# register file: one 16-bit MAC plus 50 % (our assumption).
LANE_AREA_UM2 = MAC16_AREA_UM2 * 1.5
LANE_ENERGY_PJ = MAC16_ENERGY_PJ * 1.5

# --- SRAM. --------------------------------------------------------------------------------------------
SRAM_2MIB_AREA_MM2 = 3.10  # CATransformers (Accelergy/CACTI, 22 nm): 2 MiB SRAM
SRAM_AREA_MM2_PER_MIB = SRAM_2MIB_AREA_MM2 / 2.0  # 1.55 mm²/MiB (linear in capacity)
# Horowitz 2014: a 64-bit read of an 8 KB SRAM costs 10 pJ at 45 nm; a multi-MiB buffer is built of such
# banks: 10 pJ / 8 B × 22/45 ≈ 0.61 pJ/B at 22 nm (wires between banks left out).
SRAM_ENERGY_PJ_PER_BYTE = 10.0 / 8.0 * NODE_SCALE_ENERGY_45_TO_22
SRAM_LEAKAGE_W_PER_MIB = 0.05  # 22 nm high-density SRAM ≈ 50 mW/MiB (our assumption; no source checked)
# Per-core local buffers (operand staging): a tensor core stages one row and one column of 256 entries
# per PE edge (double-buffered) — 2 × (PE_x + PE_y) × 256 × 2 B; a vector core 4 KiB per lane.
TC_LOCAL_ENTRIES_PER_EDGE = 256
VC_LOCAL_BYTES_PER_LANE = 4096

# --- Off-chip memory and fixed on-chip infrastructure. -----------------------------------------------------
# HBM2 moves a bit for about 3.9 pJ, array access and I/O together (O'Connor et al., "Fine-Grained DRAM",
# MICRO 2017): 31.2 pJ/B. (Before 2026-12-03 we read CATransformers' 256 pJ "DRAM access" as one 64-byte
# burst, 4 pJ/B: an eighth of what HBM2 costs.)
DRAM_ENERGY_PJ_PER_BYTE = 3.9 * 8
HBM_PHY_AREA_MM2_PER_100GBS = 4.0  # HBM2 PHY ≈ 12-15 mm² per ~300 GB/s stack (our reading of die shots)
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
