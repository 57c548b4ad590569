"""The generic `template` strategy: the rule's forward/init templates with `$var` filled in."""

from __future__ import annotations

import re

from adopter.dsl.types import Op, Ref, Span
from adopter.synth.registry import SynthContext, strategy
from adopter.synth.strategies.nested_arguments import nested_argument_texts

_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+(\w+)|import\s+([\w.]+))(?:\s+as\s+(\w+))?\s*$")


def fill(ctx: SynthContext, template: str, renames: dict[str, str], nested: dict[str, str] | None = None) -> str:
    """`template` with every `$var` replaced by the source text it bound and imports renamed; `nested`: the
    written text of a nested argument a variable is bound to (`nested_argument_texts`)."""

    def sub(m: re.Match[str]) -> str:
        try:
            return ctx.env_text(m.group(1))
        except KeyError:
            if nested and m.group(1) in nested:
                return nested[m.group(1)]
            if ctx.binding(m.group(1)) is not None:
                ctx.decline(f"the rewrite template uses ${m.group(1)}, an expression written inside another call "
                            "that the rewrite cannot move exactly (in an inlined helper, across statements, or "
                            "beside another such argument)")
            ctx.decline(f"the rewrite template uses ${m.group(1)}, which this match did not bind")

    text = _VAR.sub(sub, template)
    for wanted, local in renames.items():
        if wanted != local:
            text = re.sub(rf"(?<![\w.]){re.escape(wanted)}\b", local, text)
    return text


def add_imports(ctx: SynthContext, specs: tuple[str, ...]) -> dict[str, str]:
    """Add the template's imports; map each name the template uses to the local name to write."""
    renames: dict[str, str] = {}
    for spec in specs:
        m = _IMPORT.match(spec if spec.startswith(("import ", "from ")) else f"import {spec}")
        if m is None:
            ctx.decline(f"bad import in rule template: {spec!r}")
            continue
        from_mod, name, mod, alias = m.groups()
        if from_mod:
            renames[alias or name] = ctx.add_import(from_mod, name, alias)
        else:
            renames[alias or mod] = ctx.add_import(mod, None, alias)
    return renames


def _start(s: Span) -> tuple[int, int]:
    return (s.start_line, s.start_col)


def _outer_op_text(ctx: SynthContext, ops: list[Op]) -> str | None:
    """The text of the op in `ops` whose call contains all others (the statement's value)."""
    for op in ops:
        if all(op.span.contains(o.span) for o in ops):
            return ctx.text(op.span)
    return None


def _check_statement(ctx: SynthContext, stmt: Span, ops: list[Op], last: bool) -> str:
    """Decline unless the statement only computes matched ops; return 'assign' or 'return'."""
    text = ctx.statement_text(stmt)
    value = _outer_op_text(ctx, ops)
    if value is None:
        ctx.decline("a statement of the match computes several separate values")
    if last and re.fullmatch(rf"return\s+\(?\s*{re.escape(value)}\s*\)?", text, re.S):
        return "return"
    # Plain names on the left (inlined helpers rename locals, so compare the shape, not the names).
    if not re.fullmatch(rf"\(?\s*[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s*,?\s*\)?\s*(?::[^=]+)?=\s*\(?\s*"
                        rf"{re.escape(value)}\s*\)?", text, re.S):
        ctx.decline("a statement of the match does more than compute the matched operations")
    return "assign"


@strategy("template")
def template(ctx: SynthContext) -> None:
    """Replace the matched forward statements by the rule's forward template; rebind init templates."""
    repl = ctx.rule.replacement
    if repl is None:
        ctx.decline("the rule has no rewrite")
        return
    renames = add_imports(ctx, repl.imports)
    if repl.forward:
        _rewrite_forward(ctx, repl.forward, renames, nested_argument_texts(ctx))
    for var, code in repl.init:
        try:
            attr = ctx.env_text(var.lstrip("$")) if ctx.binding(var) is not None else None
        except KeyError:  # bound to no text the match writes (`env_text`)
            attr = None
        if attr is None or not attr.startswith("self."):
            ctx.decline(f"the init template for ${var.lstrip('$')} has no submodule to rebind")
            return
        name = attr[5:]
        binding = next((b for b in ctx.finding.match.bindings if b.attr == name), None)
        if binding is None:
            ctx.decline(f"no __init__ binding of {attr} belongs to this match")
            return
        value = fill(ctx, code, renames).strip()
        ctx.replace_binding(binding.span, value if value.startswith("self.") else f"{attr} = {value}")


def _rewrite_forward(ctx: SynthContext, template: str, renames: dict[str, str], nested: dict[str, str]) -> None:
    ops = list(ctx.finding.match.ops)
    # The helper's callers (`Finding.call_spans`) run the site but are not its statements: not edited.
    stmts = sorted(set(ctx.finding.stmt_spans) - set(ctx.finding.call_spans), key=_start)
    if len({op.via for op in ops}) > 1:
        ctx.decline("the match spans an inlined helper and its caller")
    single = re.fullmatch(r"\s*\$([A-Za-z_]\w*)\s*=(?!=)\s*(.+?)\s*", template, re.S)
    if len(stmts) == 1 and single is not None and "\n" not in single.group(2):
        # Everything sits in one statement: replace just the matched expression, keep the rest.
        outer = next((o for o in ops if all(o.span.contains(p.span) for p in ops)), None)
        bound = ctx.binding(single.group(1))
        if outer is not None and isinstance(bound, Ref) and bound.name in outer.outputs:
            ctx.replace_expression(outer.span, fill(ctx, single.group(2), renames, nested))
            return
    kinds = [_check_statement(ctx, s, [o for o in ops if o.stmt_span == s], i == len(stmts) - 1)
             for i, s in enumerate(stmts)]
    first, last = stmts[0], stmts[-1]
    if ctx.line_indent(first) != ctx.line_indent(last):
        ctx.decline("the matched statements are in different blocks")
    if kinds[-1] == "return":
        if single is None or "\n" in single.group(2):
            ctx.decline("the matched value is returned directly and the template is not a single assignment")
            return
        code = f"return {fill(ctx, single.group(2), renames, nested)}"
    else:
        code = fill(ctx, template, renames, nested)
    # Keep every line of the region that is not a matched statement (unrelated code, comments) before
    # the new code; that is only right when nothing outside the match reads the chain's intermediates.
    lines = ctx.source.split("\n")
    indent = ctx.line_indent(first)
    covered = {ln for s in stmts for ln in range(s.start_line, s.end_line + 1)}
    _check_intermediates(ctx, stmts, lines, covered)
    kept = [lines[ln] for ln in range(first.start_line, last.end_line + 1) if ln not in covered]
    kept = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in kept]
    ctx.replace_statements([first, last], "\n".join([*kept, code]))


_LHS = re.compile(r"\s*\(?\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*,?\s*\)?\s*(?::[^=]+)?=(?!=)")


def _check_intermediates(ctx: SynthContext, stmts: list[Span], lines: list[str], covered: set[int]) -> None:
    """Decline when a value computed by a removed statement is read outside the match.

    A textual scan from the statement to the end of its function: a use before the name is assigned
    again (by a matched statement or plainly) blocks the rewrite. Rules should guard with
    `single_use`; this keeps a rule that forgot from breaking code.
    """
    for stmt in stmts[:-1]:
        m = _LHS.match(ctx.statement_text(stmt))
        if m is None:
            continue
        indent = len(ctx.line_indent(stmt))
        for name in re.split(r"\s*,\s*", m.group(1)):
            use = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
            assign = re.compile(rf"\s*{re.escape(name)}\s*(?::[^=]+)?=(?!=)")
            for ln in range(stmt.end_line + 1, len(lines)):
                line = lines[ln]
                stripped = line.lstrip()
                if stripped.startswith(("def ", "class ", "async def ")) and len(line) - len(stripped) < indent:
                    break  # the end of the function
                if ln in covered:
                    if assign.match(line):
                        break
                    continue
                if assign.match(line) and not use.search(line.split("=", 1)[1]):
                    break
                if use.search(line.split("#", 1)[0]):
                    ctx.decline(f"`{name}` (line {stmt.start_line + 1}) is also used on line {ln + 1}")
