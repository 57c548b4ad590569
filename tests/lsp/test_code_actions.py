"""Quick fixes: listed without edits, resolved into verified versioned edits, refused when stale."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_session import F05, SNIPPET, analysed, apply_edit, change, codes, open_doc, start
from lsprotocol import types
from pytest_lsp import LanguageClient


async def actions_for(client: LanguageClient, uri: str, diagnostics: list[types.Diagnostic],
                      only: list[str] | None = None) -> list[types.CodeAction]:
    finding = next(d for d in diagnostics if d.code == F05)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=finding.range,
        context=types.CodeActionContext(diagnostics=[finding], only=only),
    )
    result = await client.text_document_code_action_async(params)
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def only_edit(action: types.CodeAction, uri: str, version: int) -> list[types.TextEdit]:
    assert action.edit is not None and action.edit.document_changes
    (document_change,) = action.edit.document_changes
    assert isinstance(document_change, types.TextDocumentEdit)
    assert document_change.text_document.uri == uri and document_change.text_document.version == version
    return [e for e in document_change.edits if isinstance(e, types.TextEdit)]


def expected_rewrite(text: str, path: Path) -> str:
    """The same rewrite computed in-process: the server must deliver exactly this text."""
    from adopter.analysis import analyse
    from adopter.engine import detect_environment, find, load_rules
    from adopter.session import rewrite

    findings = [f for f in find(analyse(text, str(path)), load_rules().rules, detect_environment("auto")) if f.rule_id == F05]
    result = rewrite(text, findings, target=findings[0].targets[0], path=str(path))
    return result.new_source  # type: ignore[union-attr]


async def test_quick_fix_round_trip(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    path = tmp_path / "model.py"
    uri = open_doc(client, path, SNIPPET)
    actions = [a for a in await actions_for(client, uri, await analysed(client, uri, 1)) if a.kind == "quickfix"]
    assert actions and actions[0].is_preferred and all(a.edit is None for a in actions)
    assert not any(a.is_preferred for a in actions[1:])
    resolved = await client.code_action_resolve_async(actions[0])
    new_text = apply_edit(SNIPPET, only_edit(resolved, uri, 1))
    assert new_text == expected_rewrite(SNIPPET, path)
    # The edit is minimal: the untouched class keeps its lines, so no edit covers the whole file.
    assert all(e.range.end.line - e.range.start.line < 10 for e in only_edit(resolved, uri, 1))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
    ))
    assert F05 not in codes(await analysed(client, uri, 2))


async def test_stale_version_is_refused_with_a_message(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    actions = await actions_for(client, uri, await analysed(client, uri, 1))
    change(client, uri, 2, [((0, 0), (0, 0), "# typed meanwhile\n")])
    resolved = await client.code_action_resolve_async(actions[0])
    assert resolved.edit is None
    for _ in range(500):
        if any("changed" in m.message for m in client.messages):
            break
        await asyncio.sleep(0.01)
    assert any("changed" in m.message for m in client.messages)


async def test_fix_all_source_action(client: LanguageClient, tmp_path: Path) -> None:
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", SNIPPET)
    diagnostics = await analysed(client, uri, 1)
    (action,) = await actions_for(client, uri, diagnostics, only=["source.fixAll"])
    assert action.kind == "source.fixAll.adopter" and action.edit is None
    resolved = await client.code_action_resolve_async(action)
    new_text = apply_edit(SNIPPET, only_edit(resolved, uri, 1))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
    ))
    assert F05 not in codes(await analysed(client, uri, 2))


RELU_RULE = (Path(__file__).resolve().parents[1] / "cli" / "relu_twice.adl").read_text(encoding="utf-8")

RELU_MODEL = (Path(__file__).resolve().parents[1] / "cli" / "relu_twice_model.py").read_text(encoding="utf-8")


async def test_a_rule_from_rule_paths_gets_its_verified_quick_fix(client: LanguageClient, tmp_path: Path) -> None:
    """Issue 16: the quick fix used to rewrite without the server's rules, so a `rule_paths` rule had
    a diagnostic and no fix."""
    (tmp_path / "team-rules").mkdir()
    (tmp_path / "team-rules" / "relu.adl").write_text(RELU_RULE, encoding="utf-8")
    await start(client, tmp_path, {"rule_paths": ["team-rules"]})
    uri = open_doc(client, tmp_path / "model.py", RELU_MODEL)
    diagnostics = await analysed(client, uri, 1)
    finding = next(d for d in diagnostics if d.code == "user-relu-twice")
    params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uri), range=finding.range,
                                    context=types.CodeActionContext(diagnostics=[finding]))
    actions = [a for a in await client.text_document_code_action_async(params) or []
               if isinstance(a, types.CodeAction) and a.kind == "quickfix"]
    assert actions and actions[0].disabled is None, actions
    resolved = await client.code_action_resolve_async(actions[0])
    assert apply_edit(RELU_MODEL, only_edit(resolved, uri, 1)) == RELU_MODEL.replace(
        "        a = torch.relu(x)\n        b = torch.relu(a)\n", "        b = torch.relu(x)\n")


async def test_a_site_fix_would_not_rewrite_offers_no_quick_fix(client: LanguageClient, tmp_path: Path) -> None:
    """The action list follows the fix decision: the engine calls this site fixable, the rewrite
    declines it (a statement shares its line), so the action is disabled with the rewrite's reason."""
    text = SNIPPET.replace("        hidden_states = self.dropout(hidden_states)\n",
                           "        hidden_states = self.dropout(hidden_states)  ;  x = 1\n")
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", text)
    diagnostics = await analysed(client, uri, 1)
    actions = [a for a in await actions_for(client, uri, diagnostics) if a.kind == "quickfix"]
    from adopter.engine import detect_environment, load_rules
    from adopter.session import RuleContext, Session

    s = Session(RuleContext(tuple(load_rules().rules), (), detect_environment("auto")))
    a = s.analysed(text, str(tmp_path / "model.py"))
    decision = s.decision(a, next(f for f in a.findings if f.rule_id == F05))
    assert not decision.fixable and decision.reason
    assert actions[0].disabled is not None and actions[0].disabled.reason == decision.reason


TWO_PAIRS = '''import torch
from torch import nn


class Enc(nn.Module):
    def __init__(self, c, w):
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(c, w, kernel_size=3, padding=1),
            nn.BatchNorm2d(w),
            nn.ReLU(inplace=True),
            nn.Conv2d(w, w, kernel_size=3, padding=1),
            nn.BatchNorm2d(w),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.block1(x)
'''


async def test_two_sites_on_one_forward_line_get_their_own_diagnostics_and_fixes(
        client: LanguageClient, tmp_path: Path) -> None:
    """Two Conv -> BN pairs of one Sequential called in one statement: two diagnostics on that line, each
    pointing at its own pair's lines in __init__, each with a quick fix that resolves to a verified edit
    (either builds the Sequential as the folding class, which folds both pairs)."""
    await start(client, tmp_path)
    uri = open_doc(client, tmp_path / "model.py", TWO_PAIRS)
    diagnostics = [d for d in await analysed(client, uri, 1) if d.code == "f07-conv-bn"]
    assert [d.range.start.line for d in diagnostics] == [17, 17]
    assert [[r.location.range.start.line for r in d.related_information or ()] for d in diagnostics] == [[8, 9], [11, 12]]
    assert [r.message for r in diagnostics[1].related_information or ()] == [
        "`self.block1[3]` is built here, in __init__", "`self.block1[4]` is built here, in __init__"]
    params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
                                    context=types.CodeActionContext(diagnostics=diagnostics))
    actions = [a for a in await client.text_document_code_action_async(params) or []
               if isinstance(a, types.CodeAction) and a.kind == "quickfix" and a.data]
    # Each action names its own site's __init__ lines, and its own diagnostic.
    assert [a.data["init"][0][0] for a in actions] == [8, 11]
    assert [list(a.diagnostics or ()) for a in actions] == [[diagnostics[0]], [diagnostics[1]]]
    edits = []
    for action in actions:
        resolved = await client.code_action_resolve_async(action)
        edits.append(apply_edit(TWO_PAIRS, only_edit(resolved, uri, 1)))
    assert edits[0] == edits[1] and "self.block1 = FoldedConvBnSequential(" in edits[0]
