"""One failing analysis, rule match or edit becomes a logged, visible problem; the next run recovers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_session import F05, SNIPPET, analysed, codes, open_doc, start
from pytest_lsp import LanguageClient

from adopter.lsp import pipeline
from adopter.lsp.documents import Analyses
from adopter.lsp.pipeline import analyse_python, load_rule_context
from adopter.lsp.settings import Settings
from adopter.session import OpenText


@pytest.fixture(scope="module")
def context() -> pipeline.Configured:
    return load_rule_context(Settings(), None)


class Exploding(OpenText):
    def module_file(self):  # type: ignore[override]
        raise RuntimeError("boom in analysis")


def test_analysis_exception_is_a_problem(context: pipeline.Configured) -> None:
    snapshot = analyse_python(Exploding(SNIPPET, "/tmp/m.py"), 3, context)
    (problem,) = snapshot.problems
    assert "analysis failed" in problem.message and "boom in analysis" in problem.message
    assert snapshot.version == 3 and snapshot.findings == ()


def test_rule_matching_exception_is_a_problem(context: pipeline.Configured, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object) -> object:
        raise RuntimeError("boom in matching")

    monkeypatch.setattr("adopter.engine.check", explode)
    snapshot = analyse_python(OpenText(SNIPPET, "/tmp/m.py"), 1, context)
    assert snapshot.module_file is not None and snapshot.module_file.architectures
    assert any("rule matching failed" in p.message for p in snapshot.problems)


def test_a_failing_edit_resets_and_the_next_run_recovers(context: pipeline.Configured) -> None:
    analyses = Analyses(lambda: context)
    doc = analyses.open("file:///tmp/m.py", "python", SNIPPET, 1)
    assert F05 in [f.rule_id for f in analyses.compute(doc).findings]

    class Broken(OpenText):
        def apply(self, *args: object) -> None:
            raise RuntimeError("boom in edit")

    doc.model = Broken(SNIPPET, doc.path)
    from lsprotocol import types

    change = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)), text="# edited\n"
    )
    analyses.change(doc.uri, 2, [change])
    failed = analyses.compute(doc)
    assert any("applying the edit failed" in p.message for p in failed.problems)
    recovered = analyses.compute(doc)  # starts over from the client's text
    assert recovered.version == 2 and recovered.text.startswith("# edited\n")
    assert F05 in [f.rule_id for f in recovered.findings]
    analyses.shutdown()


async def test_broken_workspace_rule_file_is_reported_once_and_skipped(client: LanguageClient, tmp_path: Path) -> None:
    rules = tmp_path / ".adopter" / "rules"
    rules.mkdir(parents=True)
    (rules / "mine.adl").write_text("rule broken {\n  family 5\n  title ???\n}\n", encoding="utf-8")
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    assert F05 in codes(await analysed(client, uri, 1))  # the bundled rules still run
    for _ in range(500):
        if any("mine.adl" in m.message for m in client.messages):
            break
        await asyncio.sleep(0.01)
    assert sum("mine.adl" in m.message for m in client.messages) == 1
