"""Cross-file reach through the server: an imported activation decides a finding of the open file,
and saving the imported file refreshes that finding."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_session import TIMEOUT_S, analysed, codes, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient

ACTS = '''import torch.nn.functional as F
from torch import nn


class FP32Act(nn.Module):
    def forward(self, x):
        return F.{fn}(x.float()).to(x.dtype)
'''

MODEL = '''from torch import nn

from .acts import FP32Act


class Mlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 4 * dim)
        self.act = FP32Act()

    def forward(self, x):
        return self.act(self.fc(x))
'''


async def _until(client: LanguageClient, uri: str, want: bool) -> None:
    async def reached() -> None:
        while ("f06-linear-gelu" in codes(client.diagnostics.get(uri, []))) != want:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(reached(), TIMEOUT_S)


async def test_saving_the_imported_file_refreshes_the_open_file(client: LanguageClient, tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    acts = pkg / "acts.py"
    acts.write_text(ACTS.format(fn="gelu"), encoding="utf-8")
    await start(client, tmp_path)
    uri = open_doc(client, pkg / "model.py", MODEL)
    await analysed(client, uri, 1)
    await _until(client, uri, True)  # FP32Act computes GELU: Linear -> GELU (once jedi has resolved it)

    acts.write_text(ACTS.format(fn="relu"), encoding="utf-8")
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=acts.as_uri())))
    await _until(client, uri, False)  # now a ReLU: the finding is gone without touching model.py

    acts.write_text(ACTS.format(fn="gelu"), encoding="utf-8")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=acts.as_uri(), type=types.FileChangeType.Changed)]))
    await _until(client, uri, True)


def test_the_server_defers_through_its_own_reach_and_leaves_the_process_default_alone(tmp_path: Path) -> None:
    """The server's analyses queue names for jedi through the reach it holds (`Analyses.reach`); an
    analysis elsewhere in the same process (the CLI's, a test's) still resolves on the spot: nothing
    process-wide is switched."""
    from adopter.analysis import analyse
    from adopter.analysis.analyser import default_reach
    from adopter.lsp.documents import Analyses
    from adopter.lsp.pipeline import load_rule_context
    from adopter.lsp.settings import Settings

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "acts.py").write_text(ACTS.format(fn="gelu"), encoding="utf-8")
    model = pkg / "model.py"
    model.write_text(MODEL, encoding="utf-8")

    analyses = Analyses(lambda: context)
    reach = analyses.reach()
    assert reach is not None and reach.deferred and analyses.reach() is reach
    context = load_rule_context(Settings(), tmp_path, reach)
    assert context.session.reach is reach
    doc = analyses.open(model.as_uri(), "python", MODEL, 1)
    analyses.compute(doc)
    assert doc.model is not None and doc.model.reach is reach
    assert reach.has_pending()  # queued, not looked up on the analysis thread

    process_default = default_reach()
    assert process_default is not None and not process_default.deferred
    (mlp,) = analyse(MODEL, str(model)).architectures  # the default reach: resolved now
    act = next(b for b in mlp.init.bindings if b.attr == "act") if mlp.init else None
    assert act is not None and getattr(act.value, "origin", None)
    assert reach.resolve_pending() >= 1
