"""The accelerator template (`Design`), its area and TDP model, the search space and reference designs."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from adopter.wham import constants as C


@dataclass(frozen=True, slots=True)
class Design:
    """One accelerator: `n_tc` tensor cores of `pe_x × pe_y` MACs, `n_vc` vector cores of `lanes` lanes,
    `sram_mib` MiB of global buffer, `bandwidth_gbs` off-chip bandwidth, `clock_mhz` clock."""

    n_tc: int
    pe_x: int
    pe_y: int
    n_vc: int
    lanes: int
    sram_mib: float
    bandwidth_gbs: float = C.BANDWIDTH_GBS
    clock_mhz: float = C.CLOCK_MHZ

    @property
    def macs(self) -> int:
        """MAC units over all tensor cores."""
        return self.n_tc * self.pe_x * self.pe_y

    @property
    def lanes_total(self) -> int:
        """Vector lanes over all vector cores."""
        return self.n_vc * self.lanes

    @property
    def peak_flops(self) -> float:
        """Peak tensor FLOP/s (2 per MAC per cycle)."""
        return 2.0 * self.macs * self.clock_mhz * 1e6

    @property
    def bytes_per_cycle(self) -> float:
        """Off-chip bytes per clock cycle."""
        return self.bandwidth_gbs * 1e9 / (self.clock_mhz * 1e6)

    def key(self) -> tuple[float, ...]:
        """A hashable tuple of every parameter."""
        return tuple(float(getattr(self, f.name)) for f in fields(self))

    def to_json(self) -> dict[str, Any]:
        """Every template parameter."""
        return asdict(self)

    def label(self) -> str:
        """Compact human-readable form."""
        return (f"{self.n_tc}×TC {self.pe_x}×{self.pe_y}, {self.n_vc}×VC {self.lanes}L, "
                f"{self.sram_mib:g} MiB, {self.bandwidth_gbs:g} GB/s")


@dataclass(frozen=True, slots=True)
class Constraints:
    """Limits a design must meet: area, TDP and (for Perf/TDP) a minimum throughput in samples/s."""

    area_mm2: float
    tdp_w: float
    min_throughput: float = 0.0


def area_mm2(d: Design) -> float:
    """Chip area: PEs + vector lanes + SRAM (constants.py; the parts in `LEFT_OUT` have no cited figure)."""
    pe = d.macs * C.PE_AREA_UM2 * 1e-6
    lanes = d.lanes_total * C.LANE_AREA_UM2 * 1e-6
    return pe + lanes + d.sram_mib * C.SRAM_AREA_MM2_PER_MIB


def tdp_w(d: Design) -> float:
    """Thermal design power: every unit busy every cycle, plus the SRAM traffic feeding them and off-chip I/O
    at the design's full bandwidth.

    dynamic = f · (MACs·E_pe + lanes·E_lane + SRAM bytes/cycle·E_sram); SRAM bytes/cycle = each tensor
    core reading one operand row and column (PE_x + PE_y elements) plus each lane reading one operand and
    writing one result; memory I/O = bandwidth · E_dram/byte. Leakage and the uncore are `LEFT_OUT`.
    """
    f = d.clock_mhz * 1e6
    sram_bytes_per_cycle = (d.n_tc * (d.pe_x + d.pe_y) + 2 * d.lanes_total) * C.BYTES_PER_ELEMENT
    dynamic = f * 1e-12 * (d.macs * C.PE_ENERGY_PJ + d.lanes_total * C.LANE_ENERGY_PJ
                           + sram_bytes_per_cycle * C.SRAM_ENERGY_PJ_PER_BYTE)
    io = d.bandwidth_gbs * 1e9 * C.DRAM_ENERGY_PJ_PER_BYTE * 1e-12
    return dynamic + io


def _pow2_range(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1))


@dataclass(frozen=True, slots=True)
class DesignSpace:
    """The grid searched: allowed values of each template parameter (powers of two by default)."""

    n_tc: tuple[int, ...] = _pow2_range(1, 256)
    pe_x: tuple[int, ...] = _pow2_range(4, 256)
    pe_y: tuple[int, ...] = _pow2_range(4, 256)
    n_vc: tuple[int, ...] = _pow2_range(1, 256)
    lanes: tuple[int, ...] = _pow2_range(4, 256)
    # Phaze's 2–128 MiB, extended down to 0.5 MiB so that NVDLA's 512 KiB buffer is a grid value.
    sram_mib: tuple[float, ...] = (0.5, 1.0, *(float(v) for v in _pow2_range(2, 128)))
    bandwidth_gbs: tuple[float, ...] = C.BANDWIDTH_GRID_GBS
    clock_mhz: float = C.CLOCK_MHZ

    def __post_init__(self) -> None:
        for name in PARAMS:
            values = getattr(self, name)
            if not values or any(v <= 0 for v in values) or list(values) != sorted(set(values)):
                raise ValueError(f"design space {name}={values!r}: need a non-empty increasing list of "
                                 "positive values")
        if self.clock_mhz <= 0:
            raise ValueError("design space clock_mhz must be positive")

    def values(self, name: str) -> tuple[float, ...]:
        """Allowed values of one parameter."""
        return tuple(getattr(self, name))

    def size(self) -> int:
        """Number of grid points."""
        return math.prod(len(self.values(p)) for p in PARAMS)

    def design(self, indices: dict[str, int] | tuple[int, ...]) -> Design:
        """The design at grid indices (one per parameter of `PARAMS`)."""
        idx = indices if isinstance(indices, dict) else dict(zip(PARAMS, indices))
        vals = {p: self.values(p)[idx[p]] for p in PARAMS}
        return Design(int(vals["n_tc"]), int(vals["pe_x"]), int(vals["pe_y"]), int(vals["n_vc"]),
                      int(vals["lanes"]), float(vals["sram_mib"]), float(vals["bandwidth_gbs"]), self.clock_mhz)

    def indices(self, d: Design) -> tuple[int, ...]:
        """Grid indices of a design on the grid (nearest value for each parameter otherwise)."""
        out = []
        for p in PARAMS:
            vals = self.values(p)
            v = float(getattr(d, p))
            out.append(min(range(len(vals)), key=lambda i: abs(math.log2(vals[i]) - math.log2(v))))
        return tuple(out)

    def contains(self, d: Design) -> bool:
        """Whether every parameter of `d` is a grid value."""
        return all(float(getattr(d, p)) in self.values(p) for p in PARAMS) and d.clock_mhz == self.clock_mhz

    def reduced(self) -> DesignSpace:
        """A coarse sub-grid (every other power of two) small enough to enumerate exhaustively."""
        def every_other(vals: tuple[Any, ...]) -> tuple[Any, ...]:
            picked = vals[::2]
            return picked if picked[-1] == vals[-1] else (*picked, vals[-1])
        grid: dict[str, Any] = {p: every_other(self.values(p)) for p in PARAMS}
        return replace(self, **grid)


PARAMS = ("n_tc", "pe_x", "pe_y", "n_vc", "lanes", "sram_mib", "bandwidth_gbs")
FLOAT_PARAMS = frozenset({"sram_mib", "bandwidth_gbs"})


def smallest_design(space: DesignSpace) -> Design:
    """The grid's smallest design: every parameter at its lowest value. Area and TDP grow with every
    parameter, so no design of the grid has less area or less TDP: it is the real bound for advice."""
    return space.design(tuple(0 for _ in PARAMS))


def tpuv2_like() -> Design:
    """TPUv2-like (Jouppi et al., CACM 2020): 2 cores, each one 128×128 MXU and a 128 × 8-lane VPU; 32 MiB on
    chip; 700 MHz, 700 GB/s HBM. The template counts only these units: its area and TDP are not the real
    chip's 611 mm² / 280 W (`C.TPUV2_DIE_MM2`, `C.TPUV2_TDP_W`), which include what `C.LEFT_OUT` lists."""
    return Design(n_tc=C.TPUV2_CORES, pe_x=C.TPUV2_MXU, pe_y=C.TPUV2_MXU, n_vc=C.TPUV2_CORES,
                  lanes=C.TPUV2_VPU_LANES, sram_mib=C.TPUV2_ONCHIP_MIB, bandwidth_gbs=C.BANDWIDTH_GBS,
                  clock_mhz=C.CLOCK_MHZ)


def tpuv3_like() -> Design:
    """TPUv3-like (Jouppi et al., CACM 2020): 4 MXUs of 128×128 at 940 MHz (123 TFLOPS), 900 GB/s; the
    vector units and on-chip memory as TPUv2's."""
    return Design(n_tc=C.TPUV3_MXUS, pe_x=C.TPUV2_MXU, pe_y=C.TPUV2_MXU, n_vc=C.TPUV2_CORES,
                  lanes=C.TPUV2_VPU_LANES, sram_mib=C.TPUV2_ONCHIP_MIB, bandwidth_gbs=C.TPUV3_BANDWIDTH_GBS,
                  clock_mhz=C.TPUV3_CLOCK_MHZ)


def nvdla_like() -> Design:
    """NVDLA-like (nvdla/hw nv_large): 1024 FP16 MACs as one 64×16 array, a 16-lane SDP, a 512 KiB
    convolution buffer; at WHAM's 700 MHz and 700 GB/s."""
    return Design(n_tc=1, pe_x=C.NVDLA_MAC_ATOMIC_C, pe_y=C.NVDLA_FP16_MACS // C.NVDLA_MAC_ATOMIC_C, n_vc=1,
                  lanes=C.NVDLA_SDP_LANES, sram_mib=C.NVDLA_CBUF_MIB, bandwidth_gbs=C.BANDWIDTH_GBS,
                  clock_mhz=C.CLOCK_MHZ)


REFERENCE_DESIGNS = {"TPUv2-like": tpuv2_like, "TPUv3-like": tpuv3_like, "NVDLA-like": nvdla_like}
