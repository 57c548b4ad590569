"""Quick fixes per finding and target, `source.fixAll.adopter`; edits computed lazily on resolve.

`textDocument/codeAction` only lists what can be done (cheap); `codeAction/resolve` runs the verified
rewrite (`adopter.synth.rewrite`) for the version the action was offered on, turns the new text into
minimal edits and returns them as a versioned `documentChanges` edit. A document that changed in
between gets no edit, and the user a message saying why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from adopter.dsl.types import Span
from adopter.engine.types import Finding
from adopter.lsp.convert import LineIndex, lsp_range, lsp_text_edits, lsp_workspace_edit
from adopter.lsp.edits import minimal_changes
from adopter.lsp.pipeline import Snapshot, failure

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer

FIX_ALL = "source.fixAll.adopter"
KINDS: list[types.CodeActionKind | str] = [types.CodeActionKind.QuickFix, FIX_ALL]


def _span_key(span: Span) -> list[int]:
    return [span.start_line, span.start_col, span.end_line, span.end_col]


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    """LSP's `only` filter: a kind matches itself and any of its parent kinds (`source` ⊃ `source.fixAll`)."""
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def _overlaps(span: Span, rng: types.Range, index: LineIndex) -> bool:
    mine = lsp_range(index, span)
    start = (mine.start.line, mine.start.character)
    end = (mine.end.line, mine.end.character)
    return start <= (rng.end.line, rng.end.character) and (rng.start.line, rng.start.character) <= end


def list_actions(uri: str, snapshot: Snapshot, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The actions for the findings under the requested range (edits left for resolve)."""
    index = LineIndex(snapshot.text)
    only = params.context.only
    actions: list[types.CodeAction] = []
    here = [f for f in snapshot.findings if _overlaps(f.span, params.range, index)]
    by_code = {(d.code, d.range.start.line): d for d in params.context.diagnostics}
    if _wanted(only, types.CodeActionKind.QuickFix):
        for finding in here:
            diagnostic = by_code.get((finding.rule_id, lsp_range(index, finding.span).start.line))
            actions.extend(_quick_fixes(uri, snapshot.version, finding, diagnostic))
    fixable = [f for f in snapshot.findings if f.fixable and f.targets]
    if fixable and _wanted(only, FIX_ALL) and (only is not None or here):
        data = {"uri": uri, "version": snapshot.version, "all": True}
        title = f"Adopter: apply all {len(fixable)} kernel fixes in this file"
        actions.append(types.CodeAction(title=title, kind=FIX_ALL, data=data))
    return actions


def _quick_fixes(
    uri: str, version: int | None, finding: Finding, diagnostic: types.Diagnostic | None
) -> list[types.CodeAction]:
    diagnostics = [diagnostic] if diagnostic is not None else None
    if not finding.fixable or not finding.targets:
        reason = finding.no_fix_reason or "no kernel for this rule is available in this environment"
        disabled = types.CodeActionDisabled(reason=reason)
        title = f"Adopter: {finding.title} (no automatic fix)"
        return [types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, disabled=disabled)]
    return [
        types.CodeAction(
            title=f"Adopter: {finding.title} → {target}",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=diagnostics,
            is_preferred=i == 0,
            data={"uri": uri, "version": version, "rule": finding.rule_id, "span": _span_key(finding.span), "target": target},
        )
        for i, target in enumerate(finding.targets)
    ]


def rewrite_edit(snapshot: Snapshot, data: dict[str, Any], path: str | None) -> tuple[str | None, list[Any]]:
    """Run the verified rewrite for the action's findings: (error message or None, text changes)."""
    if data.get("all"):
        findings = [f for f in snapshot.findings if f.fixable and f.targets]
        target = None
    else:
        findings = [f for f in snapshot.findings if f.rule_id == data.get("rule") and _span_key(f.span) == data.get("span")]
        target = data.get("target")
    if not findings:
        return "the finding is no longer there; ask for the fix again", []
    try:
        from adopter.synth import RewriteFailed, rewrite

        result = rewrite(snapshot.text, findings, target=target, path=path)
    except Exception as exc:
        return failure("the rewrite", exc).message, []
    if isinstance(result, RewriteFailed):
        return f"Adopter could not apply this fix safely: {result.reason}", []
    return None, minimal_changes(snapshot.text, result.new_source)


async def code_action(ls: AdopterServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """List quick fixes and fix-all for the range; no edits yet."""
    snapshot = await ls.snapshot(params.text_document.uri)
    if snapshot is None or not snapshot.findings:
        return None
    actions = list_actions(params.text_document.uri, snapshot, params)
    if not _client_resolves_edits(ls):  # such clients apply only what the list carries
        actions = [await resolve_code_action(ls, a) if a.data else a for a in actions]
    return actions or None


def _client_resolves_edits(ls: AdopterServer) -> bool:
    text_document = ls.client_capabilities.text_document
    action = text_document.code_action if text_document else None
    support = action.resolve_support if action else None
    return support is not None and "edit" in support.properties


async def resolve_code_action(ls: AdopterServer, action: types.CodeAction) -> types.CodeAction:
    """Compute the action's edit for the version it was offered on, or refuse if the text moved on."""
    data = action.data if isinstance(action.data, dict) else {}
    uri, version = data.get("uri", ""), data.get("version")
    snapshot = await ls.snapshot(uri)
    if snapshot is None or snapshot.version != version:
        ls.show("Adopter: the document changed since this fix was offered; ask for the fix again.")
        return action
    doc = ls.analyses.documents.get(uri)
    loop = asyncio.get_running_loop()
    error, changes = await loop.run_in_executor(ls.analyses.executor, rewrite_edit, snapshot, data, doc.path if doc else None)
    is_open, current = ls.current_version(uri)
    if not is_open or current != version:
        ls.show("Adopter: the document changed while the fix was computed; ask for the fix again.")
    elif error is not None:
        ls.show(error)
    else:
        action.edit = lsp_workspace_edit(uri, version, lsp_text_edits(changes, LineIndex(snapshot.text)))
    return action


def register(server: AdopterServer) -> None:
    options = types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True)
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, options)(code_action)
    server.feature(types.CODE_ACTION_RESOLVE)(resolve_code_action)
