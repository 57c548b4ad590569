"""Quick fixes per finding and target, `source.fixAll.adopter`; edits computed lazily on resolve.

`textDocument/codeAction` lists a quick fix for a finding only when the session's fix decision says
`adopter fix` rewrites it (the decision is the verified rewrite itself, computed on the analysis thread;
the list reuses a verdict while the finding's class is unchanged, so typing elsewhere does not redo
it); otherwise the action is disabled with the reason. `codeAction/resolve`
takes the decision's text for the version the action was offered on (fix-all: `Session.fix`, to its
fixed point), turns it into minimal edits and returns them as a versioned `documentChanges` edit. A
document that changed in between gets no edit, and the user a message saying why.

Beside each fixable finding's quick fixes, a client that declares the extension's commands
(`experimental.adopterClientCommands`) gets a command action, *Verify and measure*, on the same
diagnostic: it runs `adopter verify` for that finding's fix (the VS Code command shows the result table).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from adopter.dsl.types import Span
from adopter.engine.types import Finding
from adopter.lsp.convert import LspIndex, lsp_range, lsp_text_edits, lsp_workspace_edit
from adopter.lsp.edits import minimal_changes
from adopter.lsp.pipeline import Snapshot, failure
from adopter.session import Decision

if TYPE_CHECKING:
    from adopter.lsp.server import AdopterServer

FIX_ALL = "source.fixAll.adopter"
CLIENT_VERIFY = "adopter.client.verifyFixes"
KINDS: list[types.CodeActionKind | str] = [types.CodeActionKind.QuickFix, FIX_ALL]


def _span_key(span: Span) -> list[int]:
    return [span.start_line, span.start_col, span.end_line, span.end_col]


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    """LSP's `only` filter: a kind matches itself and any of its parent kinds (`source` ⊃ `source.fixAll`)."""
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def _overlaps(span: Span, rng: types.Range, index: LspIndex) -> bool:
    mine = lsp_range(index, span)
    start = (mine.start.line, mine.start.character)
    end = (mine.end.line, mine.end.character)
    return start <= (rng.end.line, rng.end.character) and (rng.start.line, rng.start.character) <= end


def decide(snapshot: Snapshot, rng: types.Range) -> dict[int, Decision]:
    """The fix decisions (preferred target) of the findings under `rng`, by index (analysis thread)."""
    index = LspIndex(snapshot.text)
    out: dict[int, Decision] = {}
    for i, f in enumerate(snapshot.findings):
        if _overlaps(f.span, rng, index):
            if snapshot.session is None or snapshot.analysed is None:
                out[i] = Decision(False, "the rule engine is not available")
            else:
                out[i] = snapshot.session.verdict(snapshot.analysed, f)
    return out


def list_actions(uri: str, snapshot: Snapshot, params: types.CodeActionParams,
                 decisions: dict[int, Decision], *, client_commands: bool = False) -> list[types.CodeAction]:
    """The actions for the findings under the requested range (edits left for resolve), each fixable
    one's *Verify and measure* last when the client has the command."""
    index = LspIndex(snapshot.text)
    only = params.context.only
    actions: list[types.CodeAction] = []
    by_code: dict[tuple[object, ...], types.Diagnostic] = {}
    for d in params.context.diagnostics:
        # Two sites on one forward line (pairs of one Sequential's items) differ in their __init__ lines;
        # a client that drops the related information gets the line's diagnostic.
        related = tuple(r.location.range.start.line for r in d.related_information or ())
        by_code[(d.code, d.range.start.line, *related)] = d
        if not related:
            by_code.setdefault((d.code, d.range.start.line), d)
    if _wanted(only, types.CodeActionKind.QuickFix):
        for i, decision in sorted(decisions.items()):
            finding = snapshot.findings[i]
            line = lsp_range(index, finding.span).start.line
            init_lines = tuple(lsp_range(index, s).start.line for s in finding.init_spans)
            diagnostic = by_code.get((finding.rule_id, line, *init_lines)) or by_code.get((finding.rule_id, line))
            actions.extend(_quick_fixes(uri, snapshot.version, finding, decision, diagnostic))
            if client_commands and decision.fixable and finding.targets:
                actions.append(_verify_action(uri, finding, diagnostic))
    candidates = any(f.fixable and f.targets for f in snapshot.findings)
    if candidates and _wanted(only, FIX_ALL) and (only is not None or decisions):
        data = {"uri": uri, "version": snapshot.version, "all": True}
        actions.append(types.CodeAction(title="Adopter: apply every kernel fix in this file", kind=FIX_ALL, data=data))
    return actions


def _quick_fixes(uri: str, version: int | None, finding: Finding, decision: Decision,
                 diagnostic: types.Diagnostic | None) -> list[types.CodeAction]:
    diagnostics = [diagnostic] if diagnostic is not None else None
    if not decision.fixable or not finding.targets:
        reason = decision.reason or "no kernel for this rule is available in this environment"
        disabled = types.CodeActionDisabled(reason=reason)
        title = f"Adopter: {finding.title} (no automatic fix)"
        return [types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, disabled=disabled)]
    return [
        types.CodeAction(
            title=f"Adopter: {finding.title} → {target}",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=diagnostics,
            is_preferred=i == 0,
            data={"uri": uri, "version": version, "rule": finding.rule_id, "span": _span_key(finding.span),
                  "init": [_span_key(s) for s in finding.init_spans], "target": target},
        )
        for i, target in enumerate(finding.targets)
    ]


def _verify_action(uri: str, finding: Finding, diagnostic: types.Diagnostic | None) -> types.CodeAction:
    """A command action: run this finding's fix (the one `fix` writes) against the original, and measure it."""
    target = {"uri": uri, "class": finding.scope_name, "rule": finding.rule_id, "line": finding.span.start_line + 1}
    return types.CodeAction(
        title=f"Adopter: Verify and measure the fix of {finding.title}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic] if diagnostic is not None else None,
        command=types.Command("Verify and measure", CLIENT_VERIFY, arguments=[target]),
    )


def rewrite_edit(snapshot: Snapshot, data: dict[str, Any]) -> tuple[str | None, list[Any]]:
    """The verified rewrite for the action, from the session: (error message or None, text changes)."""
    session, analysed = snapshot.session, snapshot.analysed
    if session is None or analysed is None:
        return "Adopter: the rule engine is not available", []
    try:
        if data.get("all"):
            new_source = session.fix(snapshot.text, analysed.path).new_source
            if new_source == snapshot.text:
                return "Adopter: no fix in this file could be applied safely", []
            return None, minimal_changes(snapshot.text, new_source)
        found = [f for f in snapshot.findings if f.rule_id == data.get("rule") and _span_key(f.span) == data.get("span")]
        # Two pairs of one Sequential's items called in one statement share the span: their __init__ lines differ.
        found = [f for f in found if [_span_key(s) for s in f.init_spans] == data["init"]] if "init" in data else found
        if not found:
            return "the finding is no longer there; ask for the fix again", []
        target = data.get("target")
        if found[0].targets[:1] == (target,):
            target = None  # the preferred target, the one `fix` uses: decided when the action was listed
        decision = session.decision(analysed, found[0], target)
    except Exception as exc:
        return failure("the rewrite", exc).message, []
    if not decision.fixable or decision.new_source is None:
        return f"Adopter could not apply this fix safely: {decision.reason}", []
    return None, minimal_changes(snapshot.text, decision.new_source)


async def code_action(ls: AdopterServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """List quick fixes and fix-all for the range; no edits yet."""
    snapshot = await ls.publisher.snapshot(params.text_document.uri)
    if snapshot is None or not snapshot.findings:
        return None
    decisions = await asyncio.get_running_loop().run_in_executor(ls.analyses.executor, decide, snapshot, params.range)
    is_open, current = ls.current_version(params.text_document.uri)
    if not is_open or current != snapshot.version:
        return None  # the text moved on while deciding: actions for a stale version are never offered
    actions = list_actions(params.text_document.uri, snapshot, params, decisions,
                           client_commands=_has_client_commands(ls))
    if not _client_resolves_edits(ls):  # such clients apply only what the list carries
        actions = [await resolve_code_action(ls, a) if a.data else a for a in actions]
    return actions or None


def _has_client_commands(ls: AdopterServer) -> bool:
    from adopter.lsp.server import has_client_commands  # the server module is imported for types only here

    return has_client_commands(ls)


def _client_resolves_edits(ls: AdopterServer) -> bool:
    text_document = ls.client_capabilities.text_document
    action = text_document.code_action if text_document else None
    support = action.resolve_support if action else None
    return support is not None and "edit" in support.properties


async def resolve_code_action(ls: AdopterServer, action: types.CodeAction) -> types.CodeAction:
    """Compute the action's edit for the version it was offered on, or refuse if the text moved on.
    A command action (*Verify and measure*) has nothing to resolve: VS Code resolves it anyway."""
    if action.command is not None and action.data is None:
        return action
    data = action.data if isinstance(action.data, dict) else {}
    uri, version = data.get("uri", ""), data.get("version")
    snapshot = await ls.publisher.snapshot(uri)
    if snapshot is None or snapshot.version != version:
        ls.show("Adopter: the document changed since this fix was offered; ask for the fix again.")
        return action
    loop = asyncio.get_running_loop()
    error, changes = await loop.run_in_executor(ls.analyses.executor, rewrite_edit, snapshot, data)
    is_open, current = ls.current_version(uri)
    if not is_open or current != version:
        ls.show("Adopter: the document changed while the fix was computed; ask for the fix again.")
    elif error is not None:
        ls.show(error)
    else:
        edits = lsp_text_edits(changes, LspIndex(snapshot.text))
        doc = ls.analyses.documents.get(uri)
        if doc is not None and not all(doc.owns(e.range) for e in edits):
            action.disabled = types.CodeActionDisabled(reason=OTHER_CELL)
        else:
            action.edit = lsp_workspace_edit(uri, version, edits)
    return action


OTHER_CELL = "Adopter: this fix also changes another cell of the notebook; apply it in a .py file"


def register(server: AdopterServer) -> None:
    options = types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True)
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, options)(code_action)
    server.feature(types.CODE_ACTION_RESOLVE)(resolve_code_action)
