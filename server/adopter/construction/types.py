"""The result of building a class: `Built` (the model and its inputs) or `NotBuilt` (why not)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Built:
    """A constructed model with positional and keyword example inputs for its `forward`.

    `arguments` are the constructor's keyword arguments as they were chosen (a config object appears as
    its class name), `guessed` the names whose values were inferred rather than given or defaulted.
    """

    model: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    arguments: dict[str, str] = field(default_factory=dict)
    guessed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NotBuilt:
    """A class that could not be built or given inputs: `missing` names the argument (constructor or
    `forward`) that no default, name or factory supplied, when that is the reason; `stage` is
    "factory", "arguments", "construct" or "inputs"."""

    class_name: str
    stage: str
    reason: str
    missing: str | None = None

    def render(self) -> str:
        what = f" (missing `{self.missing}`)" if self.missing else ""
        return f"{self.class_name}: {self.stage}{what}: {self.reason}"


Construction = Built | NotBuilt
