"""Runs one accelerator search in its own process, so the server process never imports torch.

Protocol: the request is one JSON line on stdin; any further line (or stdin closing, e.g. when the
server dies) asks the search to stop. Progress goes out as JSON lines `{"progress": f, "message": s}`,
the result as one line `{"report": {...}}` or `{"error": "..."}`. Everything else the search prints
is sent to stderr so it cannot corrupt the protocol.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, TextIO


def _protocol_stream() -> TextIO:
    # Keep the real stdout for the protocol; anything printed by the search goes to stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return out


def _watch_stdin(cancel: threading.Event) -> None:
    sys.stdin.readline()  # returns on a line or on EOF: both mean stop
    cancel.set()


LIMIT_KEYS = ("area_mm2", "tdp_w", "min_throughput")


def pyproject_factory(workspace: str | None, class_name: str) -> str | None:
    """The `module:function` that `[tool.adopter.search]` in the workspace's pyproject.toml gives for a
    class: `factories = { Class = "..." }`, else `factory = "..."`; None when it names none."""
    if not workspace:
        return None
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        return None
    try:
        data = tomllib.loads((Path(workspace) / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    section = data.get("tool", {}).get("adopter", {}).get("search", {})
    if not isinstance(section, dict):
        return None
    factories = section.get("factories", {})
    named = factories.get(class_name) if isinstance(factories, dict) else None
    chosen = named if isinstance(named, str) else section.get("factory")
    return chosen if isinstance(chosen, str) and ":" in chosen else None


def user_class(model: str) -> tuple[str, str] | None:
    """(file, class) when the model is a class of a file (`/path/file.py:Class`)."""
    file, _, name = model.rpartition(":")
    return (file, name) if file.endswith(".py") and name.isidentifier() else None


_WRAPPING = re.compile(r"^(WorkloadError: )?tracing .+? failed: (UserModelError: )?")
_WHERE = re.compile(r" \(at [^()]*user_model\.py:\d+\)$")


def explain_error(error: str, model: str) -> str:
    """The search's error for a class of the user's file, said for a person: without the tracer's
    wrapping, with how to give a factory when the class could not be built."""
    if "No module named 'torch'" in error or re.search(r"needs [^,]*\btorch\b.*not installed", error):
        return (f"The accelerator search traces the model with PyTorch, which is not installed for the server's "
                f"Python ({sys.executable}). Install torch there, or set adopter.interpreter to a Python "
                "environment that has it.")
    found = user_class(model)
    if not found:
        return error
    from adopter.wham.workload.user_model import how_to

    reason = _WHERE.sub("", _WRAPPING.sub("", error))
    hint = "" if "Give a factory" in reason else " " + how_to(found[1])
    return f"The search could not build {found[1]} from {Path(found[0]).name}: {reason}{hint}"


def build_request(raw: dict[str, Any]) -> Any:
    """The wham `SearchRequest` for the command's arguments (wham validates the values).

    `factory` ("module:function", the user's model) is searched like a model name; `limits` holds
    the area/TDP/throughput constraints; `workspace` (set by the server) is where the factory's
    module is imported from.
    """
    from adopter.wham import SearchRequest

    fields = dict(raw)
    factory = fields.pop("factory", None)
    if factory and not fields.get("model"):
        fields["model"] = factory
    limits = fields.pop("limits", None) or {}
    if not isinstance(limits, dict) or set(limits) - set(LIMIT_KEYS):
        raise ValueError(f"limits must be an object with keys among {', '.join(LIMIT_KEYS)}, got {limits!r}")
    fields.update(limits)
    workspace = fields.pop("workspace", None)
    found = user_class(str(fields.get("model", "")))
    factory = pyproject_factory(workspace, found[1]) if found else None
    if factory:  # the user said how to build this class
        fields["model"] = factory
    if workspace and ":" in str(fields.get("model", "")):
        fields.setdefault("model_path", workspace)
    return SearchRequest(**fields)


def main() -> int:
    out = _protocol_stream()

    def emit(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")

    try:
        raw = json.loads(sys.stdin.readline() or "null")
        if not isinstance(raw, dict):
            raise ValueError("the search request must be a JSON object")
        cancel = threading.Event()
        threading.Thread(target=_watch_stdin, args=(cancel,), daemon=True).start()
        from adopter import wham

        report = wham.search(
            build_request(raw),
            progress=lambda fraction, message: emit({"progress": fraction, "message": message}),
            cancelled=cancel.is_set,
        )
        result = report.to_json()
        if result.get("error"):
            result["error"] = explain_error(str(result["error"]), str((result.get("request") or {}).get("model") or ""))
        emit({"report": result})
    except Exception as exc:  # report, never hang the server waiting for a result
        emit({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
