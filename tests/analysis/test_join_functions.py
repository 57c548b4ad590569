"""The join of an `if` asks only about locals some path holds a same-file function in (issue 22, helper
`speed10`): `_functions_at_join` found them by asking every path of every merged local (fails on a4fc92e:
it read each path's value of every `Ref` local); the answers are the same."""

from __future__ import annotations

from typing import Any

from adopter.analysis.flow.control import _functions_at_join
from adopter.analysis.flow.state import ModuleFunction
from adopter.dsl.types import Ref


class _CountedEnv(dict[str, Any]):
    """A path's locals, counting the single look-ups made of them."""

    gets = 0

    def get(self, key: str, default: Any = None) -> Any:
        _CountedEnv.gets += 1
        return super().get(key, default)


def test_a_join_reads_only_the_locals_a_path_holds_a_function_in() -> None:
    _CountedEnv.gets = 0
    envs: list[dict[str, Any]] = [_CountedEnv({f"x{i}": Ref(f"x{i}") for i in range(20)}) for _ in range(2)]
    merged: dict[str, Any] = {f"x{i}": Ref(f"x{i}") for i in range(20)}
    _functions_at_join(merged, list(envs), ("cond",))
    assert merged == {f"x{i}": Ref(f"x{i}") for i in range(20)}
    assert _CountedEnv.gets <= 2  # at most one per path, not one per (local, path)
    # The answers where a path holds a function: held under the `if`'s tests on the paths holding it.
    envs = [{"fn": ModuleFunction("eager"), "x": Ref("x")}, {"fn": Ref("other"), "x": Ref("x")}]
    merged: dict[str, Any] = {"fn": Ref("fn"), "x": Ref("x"), "g": ModuleFunction("g")}
    _functions_at_join(merged, envs, ("a is None",))
    assert merged == {"fn": ModuleFunction("eager", ("a is None",), (0,)), "x": Ref("x"), "g": ModuleFunction("g")}
    # conditioned already on some path, or two different functions: unknown stays unknown
    for first in (ModuleFunction("eager", ("t",), (1,)), ModuleFunction("other")):
        merged = {"fn": Ref("fn")}
        _functions_at_join(merged, [{"fn": ModuleFunction("eager")}, {"fn": first}], ("c",))
        assert merged == {"fn": Ref("fn")}
