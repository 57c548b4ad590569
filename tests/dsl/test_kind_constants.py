"""The Enum members read once in `dsl.types` (`MODULE_OP`, `POSITIONAL`, `SINGLE_USE_GUARD`, ...) are the members themselves."""

from __future__ import annotations

from adopter.analysis.flow import state
from adopter.dsl import types
from adopter.dsl.types import GuardKind, OpKind, ParamKind

_OPS = {"MODULE_OP": OpKind.MODULE, "FUNCTION_OP": OpKind.FUNCTION, "METHOD_OP": OpKind.METHOD,
        "OPERATOR_OP": OpKind.OPERATOR, "CALL_OP": OpKind.CALL}


def test_every_op_kind_has_its_constant() -> None:
    assert set(_OPS.values()) == set(OpKind)
    for name, member in _OPS.items():
        assert getattr(types, name) is member
        assert getattr(state, name) is member


def test_every_param_kind_has_its_constant() -> None:
    for member in ParamKind:
        assert getattr(types, member.name) is member
        assert getattr(state, member.name) is member


def test_every_guard_kind_has_its_constant() -> None:
    for member in GuardKind:
        assert getattr(types, f"{member.name}_GUARD") is member
