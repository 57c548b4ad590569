"""Every constant of the cost model has a source (a paper, datasheet or named tool table) or a derivation."""

from __future__ import annotations

import pytest

from adopter.wham import constants as C


def constant_names() -> list[str]:
    return [n for n in vars(C) if n.isupper() and not n.startswith("_") and n != "SOURCES"]


def test_every_constant_has_a_source_string() -> None:
    missing = [n for n in constant_names() if not str(C.SOURCES.get(n, "")).strip()]
    assert not missing, f"constants without a source string in constants.SOURCES: {missing}"
    stale = sorted(set(C.SOURCES) - set(constant_names()))
    assert not stale, f"SOURCES names constants that do not exist: {stale}"


@pytest.mark.parametrize("name", ["PE_AREA_UM2", "MAC16_ENERGY_PJ", "SRAM_AREA_MM2_PER_MIB", "NVDLA_CBUF_MIB"])
def test_a_derived_constant_says_it_is_derived(name: str) -> None:
    assert C.SOURCES[name].startswith("derived:")


def test_the_16_bit_mac_is_horowitz_fp16_multiply_plus_add() -> None:
    # Horowitz ISSCC 2014 (45 nm): FP16 multiply 1640 µm², 1.1 pJ; FP16 add 1360 µm², 0.4 pJ; scaled to 22 nm.
    assert C.MAC16_AREA_UM2 == pytest.approx(3000 * (22 / 45) ** 2)
    assert C.MAC16_ENERGY_PJ == pytest.approx(1.5 * 22 / 45)
    assert C.NVDLA_FP16_MACS == 1024 and C.NVDLA_CBUF_MIB == 0.5
