"""The strategy registry and `SynthContext`: what a rewrite strategy sees and the edits it may record.

Lifecycle: `adopter.synth.rewrite()` builds one `SynthContext` per finding and calls the strategy named
by `rule.replacement.strategy` with it. The strategy reads the source through the context and records
edits (`replace_statements`, `replace_binding`, `insert_after_binding`, `add_import`,
`add_module_code`) or calls `decline(reason)`. Strategies never touch files and never apply edits
themselves: the framework applies every recorded edit at once (as text splices, never overlapping), adds
imports once, and verifies the result before returning it.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from adopter.dsl.types import Expr, Op, OpKind, Ref, Rule, Span
from adopter.engine.types import Finding
from adopter.parsed import ParsedText

Strategy = Callable[["SynthContext"], None]

STRATEGIES: dict[str, Strategy] = {}


def strategy(name: str) -> Callable[[Strategy], Strategy]:
    """Register a function as the rewrite strategy `name` (used by rules as `rewrite <name> {...}`)."""

    def register(func: Strategy) -> Strategy:
        if name in STRATEGIES and STRATEGIES[name] is not func:
            raise ValueError(f"rewrite strategy {name!r} is registered twice")
        STRATEGIES[name] = func
        return func

    return register


class Declined(Exception):
    """Raised by `SynthContext.decline` to stop a strategy; the framework turns it into a skip."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------------------
# Recorded edits (applied by adopter.synth.apply)
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatementsEdit:
    """Replace the statements covering `spans` (first .. last, same block) with `code`."""

    spans: tuple[Span, ...]
    code: str


@dataclass(frozen=True, slots=True)
class ExpressionEdit:
    """Replace the expression at `span` (inside one statement) with `code`."""

    span: Span
    code: str


@dataclass(frozen=True, slots=True)
class BindingEdit:
    """Replace (`after=False`) or follow (`after=True`) the `__init__` statement at `span` with `code`."""

    span: Span
    code: str
    after: bool = False


@dataclass(frozen=True, slots=True)
class ImportEdit:
    """`import module [as alias]` (name None) or `from module import name [as alias]`."""

    module: str
    name: str | None
    alias: str | None


@dataclass(frozen=True, slots=True)
class ModuleCodeEdit:
    """A new top-level definition, placed after class `after_class` (or after the imports)."""

    code: str
    name: str
    after_class: str | None


@dataclass
class Edits:
    """Everything one strategy call recorded."""

    statements: list[StatementsEdit] = field(default_factory=list)
    expressions: list[ExpressionEdit] = field(default_factory=list)
    bindings: list[BindingEdit] = field(default_factory=list)
    imports: list[ImportEdit] = field(default_factory=list)
    module_code: list[ModuleCodeEdit] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.statements or self.expressions or self.bindings or self.imports or self.module_code)


# ---------------------------------------------------------------------------------------------------
# Source helpers
# ---------------------------------------------------------------------------------------------------


def slice_span(lines: Sequence[str], span: Span) -> str:
    """The source text of `span` (0-based lines, code-point columns, end exclusive)."""
    if span.start_line == span.end_line:
        return lines[span.start_line][span.start_col : span.end_col]
    parts = [lines[span.start_line][span.start_col :]]
    parts.extend(lines[span.start_line + 1 : span.end_line])
    parts.append(lines[span.end_line][: span.end_col])
    return "\n".join(parts)


def _atomic(text: str, node: ast.expr) -> str:
    """The source of `node`, parenthesised when it is not a name, attribute, call, subscript or literal."""
    segment = ast.get_source_segment(text, node) or ""
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)):
        return segment
    return f"({segment})"


def existing_imports(source: str | ParsedText) -> dict[tuple[str, str | None], str]:
    """Top-level imports of `source`: (module, name or None) -> the local name bound."""
    return (source if isinstance(source, ParsedText) else ParsedText.of(source)).imports()


# ---------------------------------------------------------------------------------------------------
# The context
# ---------------------------------------------------------------------------------------------------


class _TakenNames:
    """The words of a text (`ParsedText.takes`: `ParsedText.taken`, asked per word) and the names edits took."""

    __slots__ = ("_added", "_parsed")

    def __init__(self, parsed: ParsedText) -> None:
        self._parsed = parsed
        self._added: set[str] = set()

    def __contains__(self, name: str) -> bool:
        return name in self._added or self._parsed.takes(name)

    def add(self, name: str) -> None:
        self._added.add(name)


@dataclass
class SynthContext:
    """What a strategy gets for one finding; strategies never touch files."""

    source: str  # the whole file being rewritten (current text, after earlier fixes)
    finding: Finding
    rule: Rule
    target: str  # the chosen Target.name, e.g. "portable", "liger"
    # Every finding of `source` (the session's), for a strategy that leaves a site to another rule.
    findings: tuple[Finding, ...] = ()
    # The text's lines, imports and trees, shared by every finding of the text (built when not given).
    parsed: ParsedText | None = field(default=None, repr=False)
    edits: Edits = field(default_factory=Edits)
    _lines: Sequence[str] = field(default=(), repr=False)
    _taken: _TakenNames = field(init=False, repr=False)
    _imports_read: dict[tuple[str, str | None], str] | None = field(default=None, repr=False)
    _arg_cache: dict[Span, dict[int | str, str]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.parsed is None or self.parsed.text != self.source:
            self.parsed = ParsedText.of(self.source)
        # Shared with the text's other findings, not copied: most strategies decline before they name
        # anything, and the file's words (`taken`) and imports are read only when one does.
        self._lines = self.parsed.lines
        self._taken = _TakenNames(self.parsed)

    @property
    def _imports(self) -> dict[tuple[str, str | None], str]:
        """The file's top-level imports plus those this context's edits add."""
        if self._imports_read is None:
            assert self.parsed is not None
            self._imports_read = self.parsed.imports()
        return self._imports_read

    @property
    def lines(self) -> Sequence[str]:
        """The lines of `source` (`source.split("\\n")`), split once per text and shared: read-only."""
        return self._lines

    @property
    def text_index(self) -> ParsedText:
        """The shared `ParsedText` of `source` (its trees, imports and statement blocks)."""
        assert self.parsed is not None
        return self.parsed

    # -- reading -------------------------------------------------------------------------------

    def text(self, span: Span) -> str:
        """The source text of any span."""
        return slice_span(self._lines, span)

    def statement_text(self, span: Span) -> str:
        """The source text of a statement span (as found in `finding.stmt_spans` / `init_spans`)."""
        return slice_span(self._lines, span)

    def line_indent(self, span: Span) -> str:
        """The indentation of the line where `span` starts."""
        line = self._lines[span.start_line]
        return line[: len(line) - len(line.lstrip())]

    def binding(self, var: str) -> Ref | Expr | str | None:
        """What pattern variable `var` (without `$`) bound, or None when it is not bound."""
        for name, value in self.finding.match.env:
            if name == var.lstrip("$"):
                return value
        return None

    def env_text(self, var: str) -> str:
        """Source text a pattern variable bound: a name, `self.query`, or the expression of a temporary."""
        value = self.binding(var)
        if value is None:
            raise KeyError(f"pattern variable ${var.lstrip('$')} is not bound in this match")
        if isinstance(value, str):
            return value
        if isinstance(value, Expr):
            return value.text
        if value.name.startswith("%"):
            # A hoisted temporary has no name in the source: use the expression that produced it.
            for op in self.finding.match.ops:
                if value.name in op.outputs:
                    return self.text(op.span)
            raise KeyError(f"temporary {value.name} bound by ${var} is not produced by the match")
        # Inlined helpers see renamed locals (`h_2`): the text written where the match uses the value
        # is what an edit at that place must say.
        for op in self.finding.match.ops:
            written = self.argument_text(op, value)
            if written is not None:
                return written
        for op in self.finding.match.ops:
            if value.name in op.outputs and len(op.outputs) == 1:
                target = re.match(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=[^=]", self.text(op.stmt_span))
                if target is not None:
                    return target.group(1)
        if any(op.via for op in self.finding.match.ops):
            # In an inlined helper a name written nowhere in the match is the caller's (the helper's parameter
            # bound to it, read through a shift or cast): not a name the helper's text can say.
            raise KeyError(f"`{value.name}` bound by ${var.lstrip('$')} is not written where the match is")
        return value.name

    def argument_text(self, op: Op, value: Ref | Expr) -> str | None:
        """The source text of the argument of `op` that is `value` (parenthesised unless atomic)."""
        sources = self._arg_sources(op)
        for key, arg in [*enumerate(op.args), *((k.name, k.value) for k in op.kwargs)]:
            if arg == value and key in sources:
                return sources[key]
        return None

    def _arg_sources(self, op: Op) -> dict[int | str, str]:
        cached = self._arg_cache.get(op.span)
        if cached is not None:
            return cached
        text = self.text(op.span)
        out: dict[int | str, str] = {}
        try:
            node = ast.parse(text.strip(), mode="eval").body
            text = text.strip()
        except SyntaxError:
            self._arg_cache[op.span] = out
            return out
        parts: list[ast.expr] = []
        keywords: list[ast.keyword] = []
        if isinstance(node, ast.Call):
            if (op.origin or op).kind == OpKind.METHOD and isinstance(node.func, ast.Attribute):
                parts = [node.func.value, *node.args]
            else:
                parts = list(node.args)
            keywords = node.keywords
        elif isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, ast.Subscript):
            parts = [node.value, node.slice]
        elif isinstance(node, ast.Attribute):
            parts = [node.value]
        for i, part in enumerate(parts):
            if not isinstance(part, ast.Starred):
                out[i] = _atomic(text, part)
        for kw in keywords:
            if kw.arg is not None:
                out[kw.arg] = _atomic(text, kw.value)
        self._arg_cache[op.span] = out
        return out

    # -- recording edits ---------------------------------------------------------------------------

    def replace_statements(self, spans: Sequence[Span], code: str) -> None:
        """Replace the forward statements covering `spans` (first .. last) with `code`, indented to fit."""
        if not spans:
            raise ValueError("replace_statements needs at least one span")
        self.edits.statements.append(StatementsEdit(tuple(spans), textwrap.dedent(code).strip("\n")))

    def replace_expression(self, span: Span, code: str) -> None:
        """Replace one expression (an op's `span`) with `code`, leaving the rest of its statement."""
        self.edits.expressions.append(ExpressionEdit(span, code.strip()))

    def replace_binding(self, span: Span, code: str) -> None:
        """Replace one `self.x = ...` statement in `__init__` with `code`."""
        self.edits.bindings.append(BindingEdit(span, textwrap.dedent(code).strip("\n"), after=False))

    def insert_after_binding(self, span: Span, code: str) -> None:
        """Insert `code` right after the `__init__` statement at `span`."""
        self.edits.bindings.append(BindingEdit(span, textwrap.dedent(code).strip("\n"), after=True))

    def add_import(self, module: str, name: str | None = None, alias: str | None = None) -> str:
        """Ensure `module` (or `name` from it) is imported; return the local name to use in code."""
        key = (module, name)
        if key in self._imports:
            return self._imports[key]
        if name is None and alias is None:
            # `import a.b.c` binds `a`; the dotted path works only if `a` is not used for something else.
            root = module.split(".")[0]
            if root in self._taken and not any(
                m.split(".")[0] == root and n is None for m, n in self._imports
            ):
                alias = self.fresh_name(module.split(".")[-1])
            else:
                self.edits.imports.append(ImportEdit(module, None, None))
                self._imports[key] = module
                self._taken.add(root)
                return module
        wanted = alias or name or module.split(".")[-1]
        local = wanted if wanted not in self._taken else self.fresh_name(wanted)
        self._taken.add(local)
        self.edits.imports.append(ImportEdit(module, name, None if local == (name or module) else local))
        self._imports[key] = local
        return local

    def add_module_code(self, code: str, *, name: str, after_class: str | None = None) -> str:
        """Add a new top-level class/function named (freshly, from) `name`; return the name used.

        Write the definition with the placeholder `{name}` where its name goes, or with the literal
        `name`; it is renamed when that name is taken.
        """
        fresh = name if name not in self._taken else self.fresh_name(name)
        self._taken.add(fresh)
        body = textwrap.dedent(code).strip("\n")
        body = body.replace("{name}", fresh) if "{name}" in body else re.sub(rf"\b{re.escape(name)}\b", fresh, body)
        self.edits.module_code.append(ModuleCodeEdit(body, fresh, after_class))
        return fresh

    def fresh_name(self, base: str) -> str:
        """A name starting with `base` used nowhere in the file nor by earlier edits."""
        if base not in self._taken:
            self._taken.add(base)
            return base
        i = 1
        while f"{base}_{i}" in self._taken:
            i += 1
        self._taken.add(f"{base}_{i}")
        return f"{base}_{i}"

    def decline(self, reason: str) -> NoReturn:
        """No automatic fix for this site; `reason` is shown to the user. Does not return."""
        raise Declined(reason)
