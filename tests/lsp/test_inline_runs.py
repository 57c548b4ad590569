"""A keystroke's run goes inline on the event loop while the analysis thread is idle (`Analyses.run`), with the
same findings as a run on the thread, edit after edit; opens, resets and runs while the thread is busy go to the
thread (`adopter.lsp.analysis_executor`)."""

from __future__ import annotations

import asyncio
import threading
import time

from lsprotocol import types

from adopter.lsp.analysis_executor import AnalysisExecutor
from adopter.lsp.documents import Analyses, OpenDocument
from adopter.lsp.pipeline import Snapshot, load_rule_context
from adopter.lsp.settings import Settings

URI = "file:///tmp/lat35_inline/model.py"

# An attention block as transformers writes one (4.35 `modeling_bert.py` `BertSelfAttention.forward`, lines
# 260-330, reduced to fixture size in our own words): scores, a softmax over the last axis, the weighted sum.
SOURCE = '''import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        q = self.query(x)
        k = self.key(x)
        v = self.value(x)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        probs = scores.softmax(dim=-1)
        return torch.matmul(probs, v)
'''

SOFTMAX = "probs = scores.softmax(dim=-1)"


class Recording(Analyses):
    """`Analyses` noting the thread each run computed on."""

    def __init__(self) -> None:
        context = load_rule_context(Settings(debounce_ms=0), None)
        super().__init__(lambda: context)
        self.threads: list[int] = []

    def compute(self, doc: OpenDocument) -> Snapshot:
        self.threads.append(threading.get_ident())
        return super().compute(doc)


def _edit(doc: OpenDocument, old: str, new: str) -> types.TextDocumentContentChangePartial:
    """The change that replaces the first `old` in the document's text with `new`."""
    offset = doc.text.index(old)
    line = doc.text.count("\n", 0, offset)
    col = offset - (doc.text.rfind("\n", 0, offset) + 1)
    end_line = line + old.count("\n")
    end_col = len(old) - (old.rfind("\n") + 1) if "\n" in old else col + len(old)
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, col), types.Position(end_line, end_col)), text=new)


# Edits that change the match: the softmax removed and written back, an attribute the forward reads renamed
# in `forward` only and back, an `__init__` binding the forward uses changed and back, the softmax's dim.
EDITS = [
    (SOFTMAX, "probs = scores"),
    ("probs = scores\n", SOFTMAX + "\n"),
    ("self.key(x)", "self.keys(x)"),
    ("self.keys(x)", "self.key(x)"),
    ("self.value = nn.Linear(dim, dim)", "self.value = nn.Conv1d(dim, dim, 1)"),
    ("self.value = nn.Conv1d(dim, dim, 1)", "self.value = nn.Linear(dim, dim)"),
    ("softmax(dim=-1)", "softmax(dim=1)"),
    ("softmax(dim=1)", "softmax(dim=-1)"),
]


def _findings(snapshot: Snapshot | None) -> list[tuple[object, ...]]:
    assert snapshot is not None
    return sorted((f.rule_id, f.scope_name, f.span.start_line, f.span.start_col, f.fixable) for f in snapshot.findings)


def _replay(inline: bool) -> tuple[list[list[tuple[object, ...]]], list[bool]]:
    """Open SOURCE, then apply EDITS one at a time; each version's findings, and whether its run was inline."""

    async def go() -> tuple[list[list[tuple[object, ...]]], list[bool]]:
        analyses = Recording()
        analyses.inline = inline
        loop_thread = threading.get_ident()
        try:
            doc = analyses.open(URI, "python", SOURCE, 1)
            seen = [_findings(await analyses.run(doc))]
            on_loop = [analyses.threads[-1] == loop_thread]
            for version, (old, new) in enumerate(EDITS, start=2):
                analyses.change(URI, version, [_edit(doc, old, new)])
                await _until_idle(analyses.executor)
                seen.append(_findings(await analyses.run(doc)))
                on_loop.append(analyses.threads[-1] == loop_thread)
            return seen, on_loop
        finally:
            analyses.shutdown()

    return asyncio.run(go())


async def _until_idle(executor: AnalysisExecutor) -> None:
    for _ in range(500):
        if executor.idle:
            return
        await asyncio.sleep(0.002)
    raise AssertionError("the analysis thread did not go idle")


def test_inline_runs_find_what_thread_runs_find_edit_after_edit() -> None:
    inline, inline_where = _replay(True)
    threaded, threaded_where = _replay(False)
    assert inline == threaded
    assert inline_where == [False] + [True] * len(EDITS)  # the open on the thread, every keystroke inline
    assert threaded_where == [False] * (len(EDITS) + 1)


def test_the_edits_change_the_match() -> None:
    """The replay is a real test of invalidation: the findings differ between versions, and come back."""
    seen, _ = _replay(True)
    assert seen[0], "the attention block is found"
    assert seen[1] != seen[0]  # the softmax removed
    assert seen[2] == seen[0]  # and written back
    assert seen[3] != seen[0]  # `self.keys` is no layer `__init__` binds
    assert seen[4] == seen[0]
    assert seen[7] != seen[0]  # softmax over another axis
    assert seen[8] == seen[0]


def test_a_run_while_the_thread_is_busy_goes_to_the_thread() -> None:
    async def go() -> tuple[bool, bool]:
        analyses = Recording()
        loop_thread = threading.get_ident()
        try:
            doc = analyses.open(URI, "python", SOURCE, 1)
            await analyses.run(doc)
            gate = threading.Event()
            blocker = analyses.executor.submit(gate.wait, 5)
            analyses.change(URI, 2, [_edit(doc, SOFTMAX, "probs = scores")])
            run = asyncio.ensure_future(analyses.run(doc))
            await asyncio.sleep(0.01)
            queued = not run.done()  # waits behind the busy thread, not run on the loop
            gate.set()
            await run
            blocker.result()
            return queued, analyses.threads[-1] != loop_thread
        finally:
            analyses.shutdown()

    queued, on_thread = asyncio.run(go())
    assert queued and on_thread


def test_a_reset_document_goes_to_the_thread() -> None:
    async def go() -> bool:
        analyses = Recording()
        loop_thread = threading.get_ident()
        try:
            doc = analyses.open(URI, "python", SOURCE, 1)
            await analyses.run(doc)
            await _until_idle(analyses.executor)
            analyses.change(URI, 2, [types.TextDocumentContentChangeWholeDocument(text=SOURCE + "\n")])
            await analyses.run(doc)
            return analyses.threads[-1] != loop_thread
        finally:
            analyses.shutdown()

    assert asyncio.run(go())


def test_idle_counts_queued_and_running_jobs() -> None:
    executor = AnalysisExecutor(max_workers=1)
    try:
        assert executor.idle
        gate = threading.Event()
        first = executor.submit(gate.wait, 5)
        second = executor.submit(time.sleep, 0)
        assert not executor.idle
        gate.set()
        first.result()
        second.result()
        for _ in range(500):
            if executor.idle:
                break
            time.sleep(0.002)
        assert executor.idle
    finally:
        executor.shutdown()
