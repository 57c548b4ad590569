"""Runs one accelerator search in its own process, so the server process never imports torch.

Protocol: the request is one JSON line on stdin; any further line (or stdin closing, e.g. when the
server dies) asks the search to stop. Progress goes out as JSON lines `{"progress": f, "message": s}`,
the result as one line `{"report": {...}}` or `{"error": "..."}`. Everything else the search prints
is sent to stderr so it cannot corrupt the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import threading
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
        emit({"report": report.to_json()})
    except Exception as exc:  # report, never hang the server waiting for a result
        emit({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
