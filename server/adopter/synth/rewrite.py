"""Planning one finding's rewrite, and `rewrite()`: apply planned edits at once, verify, return.

A leaf of the fix pipeline: it never analyses or matches a text itself. The caller (`adopter.session`)
passes the reading of the text, each site's plan (`plan_of`, cached by the caller, so a strategy runs once
per site and text) and how to read the rewritten text for the verification (`reanalyse`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from adopter.dsl.types import Rule
from adopter.engine.types import Finding
from adopter.parsed import ParsedText
from adopter.synth.apply import ApplyError, apply_edits
from adopter.synth.registry import STRATEGIES, Declined, Edits, SynthContext
from adopter.synth.strategies import load_all
from adopter.synth.types import Reading, Reanalyse, RewriteFailed, RewriteResult, Rewritten, Skipped
from adopter.synth.verify import verify

Plan = Edits | str  # a site's recorded edits, or why it has none
PlanOf = Callable[[Finding], Plan]


def _choose_target(finding: Finding, target: str | None) -> str | None:
    if target is not None:
        return target if target in finding.targets or not finding.targets else None
    return finding.targets[0] if finding.targets else "portable"


def plan(source: str | ParsedText, finding: Finding, rule: Rule, target: str | None,
         findings: Sequence[Finding] = ()) -> Plan:
    """The edits one finding's strategy records, or the reason it declined. `source`: the text, or its
    `ParsedText` (shared by every finding of the text); `findings`: every finding of `source` (a strategy
    may leave a site to another rule's)."""
    load_all()
    if not finding.fixable:
        return finding.no_fix_reason or "no automatic fix for this site"
    if rule.replacement is None:
        return "this rule has no automatic rewrite"
    chosen = _choose_target(finding, target)
    if chosen is None:
        return f"target {target!r} is not available here (offered: {', '.join(finding.targets) or 'none'})"
    func = STRATEGIES.get(rule.replacement.strategy)
    if func is None:
        return f"unknown rewrite strategy {rule.replacement.strategy!r}"
    parsed = source if isinstance(source, ParsedText) else ParsedText.of(source)
    ctx = SynthContext(parsed.text, finding, rule, chosen, tuple(findings), parsed)
    try:
        func(ctx)
    except Declined as exc:
        return exc.reason
    except Exception as exc:  # a strategy bug must cost one finding, never the file
        return f"rewrite strategy {rule.replacement.strategy} failed: {type(exc).__name__}: {exc}"
    if ctx.edits.empty():
        return "the rewrite strategy made no change"
    return ctx.edits


def splices(source: str | ParsedText, finding: Finding, rule: Rule | None, target: str | None,
            findings: Sequence[Finding] = ()) -> Plan:
    """`finding`'s edits when its strategy plans edits that splice into whole statements of `source`, else
    why it cannot be rewritten: the fix decision without the verification (`rewrite` verifies what it
    writes).

    For `check`'s fixability: a strategy that plans and splices is applied by `fix` unless the rewrite
    fails verification, which would be a strategy bug (`tests/session/test_fix_contract.py` holds the
    two decisions equal over the corpus).
    """
    try:
        parsed = source if isinstance(source, ParsedText) else ParsedText.of(source)
        result = plan(parsed, finding, rule, target, findings) if rule is not None \
            else f"rule {finding.rule_id} is not loaded"
        if isinstance(result, str):
            return result
        apply_edits(parsed, [result])
    except ApplyError as exc:
        return str(exc)
    except Exception as exc:  # the contract: results, not exceptions
        return f"internal error while planning the rewrite: {type(exc).__name__}: {exc}"
    return result


def rewrite(before: Reading, findings: Sequence[Finding], reanalyse: Reanalyse, plan_of: PlanOf) -> RewriteResult:
    """Rewrite the text of `before` to fix `findings` (found in it); verified; never raises.

    `plan_of(finding)`: the site's edits or why it has none (`splices`, cached by the caller); the new
    text is verified with `reanalyse` (`adopter.synth.verify`).
    """
    try:
        return _rewrite(before, findings, reanalyse, plan_of)
    except Exception as exc:  # the contract: results, not exceptions
        return RewriteFailed(f"internal error while rewriting: {type(exc).__name__}: {exc}")


def _rewrite(before: Reading, findings: Sequence[Finding], reanalyse: Reanalyse, plan_of: PlanOf) -> RewriteResult:
    skipped: list[Skipped] = []
    planned: list[tuple[Finding, Edits]] = []
    for f in findings:
        result = plan_of(f)
        if isinstance(result, str):
            skipped.append(Skipped(f, result))
        else:
            planned.append((f, result))
    if not planned:
        return RewriteFailed("nothing to rewrite" if not findings else "no finding could be rewritten",
                             tuple(skipped))
    parsed = before.parsed

    def attempt(batch: list[tuple[Finding, Edits]]) -> str:
        new = apply_edits(parsed, [e for _, e in batch])
        problem = verify(before, new, [f for f, _ in batch], reanalyse=reanalyse)
        if problem is not None:
            raise ApplyError(problem)
        return new

    try:
        return Rewritten(attempt(planned), tuple(f for f, _ in planned), tuple(skipped))
    except ApplyError:
        pass
    # Something in the batch conflicts or fails verification: grow a batch one finding at a time.
    accepted: list[tuple[Finding, Edits]] = []
    new_source = before.text
    for item in planned:
        try:
            new_source = attempt([*accepted, item])
            accepted.append(item)
        except ApplyError as exc:
            skipped.append(Skipped(item[0], str(exc)))
    if not accepted:
        return RewriteFailed("no rewrite could be verified", tuple(skipped))
    return Rewritten(new_source, tuple(f for f, _ in accepted), tuple(skipped))
