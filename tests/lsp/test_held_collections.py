"""Young collections are held off from a change's arrival to its diagnostics (`adopter.lsp.held_collections`), and
run once they are published; a threshold another part of the process set meanwhile is left alone."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adopter.lsp.app import build_server
from adopter.lsp.held_collections import HELD_YOUNG, HeldCollections
from adopter.lsp.server import AdopterServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
URI = "file:///w/bert_encoder.py"


class Null:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(200, 10, 10)  # below what one keystroke of the example allocates (570-1,400 containers)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*saved)


def test_hold_raises_the_young_threshold_and_release_restores_it(thresholds: tuple[int, int, int]) -> None:
    held = HeldCollections()
    held.hold()
    held.hold()  # a second change before the first is published: still the one threshold to restore
    assert held.held and gc.get_threshold() == (HELD_YOUNG, 10, 10)
    held.release()
    assert not held.held and gc.get_threshold() == thresholds
    held.release()  # nothing held: nothing changes
    assert gc.get_threshold() == thresholds


def test_a_threshold_set_by_someone_else_is_kept(thresholds: tuple[int, int, int]) -> None:
    held = HeldCollections()
    gc.set_threshold(10_000_000, 10, 10)  # as jedi_lookup does around its pickle loads
    held.hold()
    assert not held.held and gc.get_threshold() == (10_000_000, 10, 10)  # already above: not held
    held.release()
    assert gc.get_threshold() == (10_000_000, 10, 10)
    gc.set_threshold(*thresholds)
    held.hold()
    gc.set_threshold(5, 10, 10)  # changed while held
    held.release()
    assert gc.get_threshold() == (5, 10, 10)


def test_a_keystroke_collects_nothing_until_its_diagnostics_are_published(thresholds: tuple[int, int, int]) -> None:
    """Through the server's own path: the change held, the analysis run on its thread without a young collection
    though it allocates more than the young threshold, the threshold back once the diagnostics are written."""
    server: AdopterServer = build_server()
    written: list[tuple[int, ...]] = []

    class Writer(Null):
        def write(self, data: bytes) -> None:
            written.append(gc.get_threshold())

    server.protocol.set_writer(Writer())
    collected: list[int] = []  # collections while each run analysed
    analysing = [False]

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and analysing[0]:
            collected[-1] += 1

    compute = server.analyses.compute
    allocated: list[int] = []

    def counted(doc: Any) -> Any:
        analysing[0] = True
        collected.append(0)
        before = gc.get_count()[0]
        try:
            return compute(doc)
        finally:
            allocated.append(gc.get_count()[0] - before)
            analysing[0] = False

    server.analyses.compute = counted  # type: ignore[method-assign]
    text = (EXAMPLES / "bert_encoder.py").read_text(encoding="utf-8")
    gc.callbacks.append(seen)
    try:
        async def run() -> None:
            doc = server.analyses.open(URI, "python", text, 1)
            await server.publisher._analyse_and_publish(doc, 0)
            assert not server.analyses.collections.held
            for version in range(2, 6):  # a statement added to a forward: its class analysed again
                server.analyses.change(URI, version, [_insert(text, version)])
                assert server.analyses.collections.held and gc.get_threshold()[0] == HELD_YOUNG
                await server.publisher._analyse_and_publish(doc, 0)
                assert not server.analyses.collections.held and gc.get_threshold() == thresholds
        asyncio.run(run())
    finally:
        gc.callbacks.remove(seen)
        server.analyses.shutdown()
    assert len(allocated) == 5 and min(allocated[1:]) > thresholds[0]  # unheld, each run would have collected
    assert collected[1:] == [0, 0, 0, 0]
    assert len(written) == 5 and all(t[0] == HELD_YOUNG for t in written[1:])  # published while held


def _insert(text: str, version: int) -> Any:
    from lsprotocol import types

    line = text[: text.index("def forward(self, hidden_states")].count("\n") + 1  # SelfAttention's forward
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)),
        text=f"        h{version} = hidden_states * {version}\n")
