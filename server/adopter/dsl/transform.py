"""Turns Lark parse trees of the DSL into the frozen values of `adopter.dsl.types`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lark import Token, Transformer, v_args
from lark.tree import Meta

from adopter.dsl.errors import error_problem
from adopter.dsl.lexical import FenceError, fence_origin, unfence, unquote, unquote_string
from adopter.dsl.types import (
    Architecture,
    Binding,
    BindingPattern,
    Block,
    Branch,
    Ctor,
    CtorPattern,
    Example,
    Expr,
    Forward,
    Guard,
    GuardKind,
    Init,
    Kwarg,
    Loop,
    Op,
    OpKind,
    OpPattern,
    PAny,
    Param,
    ParamKind,
    PKwarg,
    Problem,
    PValue,
    PVar,
    Ref,
    Replacement,
    Return,
    Rule,
    Severity,
    Span,
    Target,
    Value,
)

LITERAL_NAMES = frozenset({"None", "True", "False"})
FAMILY_RANGE = range(1, 100)


class TransformProblem(Exception):
    """A positioned problem found while building values (raised out of the transformer)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass(frozen=True)
class ParsedRule:
    """A rule with the positions of its parts that the semantic check reports against."""

    rule: Rule
    where: dict[str, Span] = field(default_factory=dict)


@dataclass(frozen=True)
class Document:
    """Everything one DSL text holds, in source order per kind."""

    path: str | None
    path_span: Span | None
    architectures: tuple[tuple[Architecture, Span], ...]
    functions: tuple[Forward, ...]
    problems: tuple[Problem, ...]
    rules: tuple[ParsedRule, ...]


def meta_span(meta: Meta) -> Span:
    """The 0-based span of a tree node (Lark counts lines and columns from 1)."""
    if getattr(meta, "empty", True):
        return Span(0, 0, 0, 0)
    return Span(meta.line - 1, meta.column - 1, meta.end_line - 1, meta.end_column - 1)


def token_span(token: Token) -> Span:
    """The 0-based span of a token."""
    line = (token.line or 1) - 1
    col = (token.column or 1) - 1
    end_line = (token.end_line or token.line or 1) - 1
    end_col = (token.end_column or token.column or 1) - 1
    return Span(line, col, end_line, end_col)


def parse_span(token: Token) -> Span:
    """`@12:5-12:30` (1-based) as a 0-based `Span`."""
    start, end = str(token)[1:].split("-")
    start_line, start_col = (int(part) - 1 for part in start.split(":"))
    end_line, end_col = (int(part) - 1 for part in end.split(":"))
    if min(start_line, start_col, end_line, end_col) < 0:
        raise TransformProblem(error_problem("span lines and columns count from 1", token_span(token), None))
    return Span(start_line, start_col, end_line, end_col)


def text_of(token: Token) -> str:
    """Opaque text from a NAME, NUMBER, STRING, RULE_ID or QUOTED token."""
    return unquote(str(token)) if token.type == "QUOTED" else str(token)


def string_of(token: Token) -> str:
    """The value of a double- or single-quoted DSL string."""
    try:
        return unquote_string(str(token))
    except ValueError as exc:
        raise TransformProblem(error_problem(str(exc), token_span(token), None)) from None


def fence_of(token: Token) -> str:
    """The text of a ``` code block."""
    try:
        return unfence(str(token))
    except FenceError as exc:
        line = (token.line or 1) - 1 + exc.line
        raise TransformProblem(error_problem(str(exc), Span(line, 0, line, 1), None)) from None


def fence_start(token: Token) -> Span:
    """The position of the first character of a fence's text (an empty span there)."""
    below, column = fence_origin(str(token))
    line = (token.line or 1) - 1 + below
    col = column + ((token.column or 1) - 1 if below == 0 else 0)
    return Span(line, col, line, col)


def _fail(message: str, span: Span) -> TransformProblem:
    return TransformProblem(error_problem(message, span, None))


def _tokens(children: list[Any]) -> list[Token]:
    return [child for child in children if isinstance(child, Token) and child.type != "PIPE"]


@dataclass(frozen=True)
class _Field:
    """One `name value` line inside a rule, target or rewrite block."""

    name: str
    value: Any
    span: Span


@dataclass(frozen=True)
class _Call:
    """The target part of a forward pattern step."""

    targets: tuple[tuple[OpKind, str], ...]
    args: tuple[PValue, ...]
    kwargs: tuple[PKwarg, ...]
    extra: bool


@dataclass(frozen=True)
class _Arm:
    """One `elif`/`else`/`otherwise` arm of a branch; `condition` None for `otherwise`."""

    condition: str | None
    body: Block
    span: Span


@dataclass(frozen=True)
class _Args:
    args: tuple[Any, ...]
    kwargs: tuple[Any, ...]
    extra: bool


@v_args(meta=True)
class DslTransformer(Transformer[Token, Document]):
    """Bottom-up construction of DSL values; raises `TransformProblem` for malformed parts."""

    # ----------------------------------------------------------------------- documents

    def start(self, meta: Meta, items: list[Any]) -> Document:
        path: str | None = None
        path_span: Span | None = None
        archs: list[tuple[Architecture, Span]] = []
        functions: list[Forward] = []
        problems: list[Problem] = []
        rules: list[ParsedRule] = []
        for item in items:
            if isinstance(item, _Field):
                if path_span is not None:
                    raise _fail("a document has at most one `file` line", item.span)
                path, path_span = item.value, item.span
            elif isinstance(item, tuple):
                archs.append(item)
            elif isinstance(item, Forward):
                functions.append(item)
            elif isinstance(item, Problem):
                problems.append(item)
            else:
                rules.append(item)
        return Document(path, path_span, tuple(archs), tuple(functions), tuple(problems), tuple(rules))

    def file_header(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("file", text_of(children[0]), meta_span(meta))

    def problem(self, meta: Meta, children: list[Any]) -> Problem:
        severity_token, message, span, code, path = children
        return Problem(
            message=string_of(message),
            span=parse_span(span) if span is not None else None,
            path=text_of(path) if path is not None else None,
            severity=_severity(severity_token),
            code=text_of(code) if code is not None else None,
        )

    # ----------------------------------------------------------------------- architectures

    def model(self, meta: Meta, children: list[Any]) -> tuple[Architecture, Span]:
        name, *rest = children
        init, forward = rest[-2], rest[-1]
        span = parse_span(rest[-3])
        bases = tuple(text_of(tok) for tok in rest[:-3] if tok is not None)
        return Architecture(text_of(name), bases, init, forward, span), meta_span(meta)

    def init(self, meta: Meta, children: list[Any]) -> Init:
        params, span, *bindings = children
        return Init(params or (), tuple(bindings), parse_span(span))

    def forward(self, meta: Meta, children: list[Any]) -> Forward:
        name, params, span, *body = children
        return Forward(text_of(name) if name is not None else "forward", params or (), tuple(body), parse_span(span))

    def function_def(self, meta: Meta, children: list[Any]) -> Forward:
        name, params, span, *body = children
        return Forward(text_of(name), params or (), tuple(body), parse_span(span))

    def params(self, meta: Meta, children: list[Any]) -> tuple[Param, ...]:
        params: list[Param] = []
        keyword_only = False
        seen_var_keyword = False
        for kind, name, default, span in children:
            if seen_var_keyword:
                raise _fail("no parameter may follow **kwargs", span)
            if kind == "plain":
                kind_of = ParamKind.KEYWORD_ONLY if keyword_only else ParamKind.POSITIONAL
                params.append(Param(name, kind_of, default))
            elif kind == "star":
                if keyword_only:
                    raise _fail("only one `*` or `*args` per signature", span)
                keyword_only = True
                if name is not None:
                    params.append(Param(name, ParamKind.VAR_POSITIONAL))
            else:
                seen_var_keyword = True
                params.append(Param(name, ParamKind.VAR_KEYWORD))
        return tuple(params)

    def param_plain(self, meta: Meta, children: list[Any]) -> tuple[str, str, str | None, Span]:
        name, default = children
        return "plain", text_of(name), text_of(default) if default is not None else None, meta_span(meta)

    def param_star(self, meta: Meta, children: list[Any]) -> tuple[str, str | None, None, Span]:
        (name,) = children
        return "star", text_of(name) if name is not None else None, None, meta_span(meta)

    def param_double_star(self, meta: Meta, children: list[Any]) -> tuple[str, str, None, Span]:
        (name,) = children
        return "double_star", text_of(name), None, meta_span(meta)

    def binding(self, meta: Meta, children: list[Any]) -> Binding:
        attr, value, condition, span = children
        if isinstance(value, Token):
            value = Expr(text_of(value))
        return Binding(
            text_of(attr), value, parse_span(span), text_of(condition) if condition is not None else None
        )

    def binding_expr(self, meta: Meta, children: list[Any]) -> Expr:
        return Expr(text_of(children[0]))

    def ctor(self, meta: Meta, children: list[Any]) -> Ctor:
        callee = text_of(children[0])
        lookup: str | None = None
        call = _Args((), (), False)
        items: tuple[Ctor, ...] = ()
        keys: tuple[str, ...] = ()
        repeat: str | None = None
        for part in children[1:]:
            if part is None:
                continue
            kind, payload = part
            if kind == "lookup":
                lookup = payload
            elif kind == "call":
                call = payload
            else:
                repeat, keys, items = payload
        return Ctor(callee, call.args, call.kwargs, items, keys, repeat, lookup)

    def ctor_lookup(self, meta: Meta, children: list[Any]) -> tuple[str, str]:
        return "lookup", text_of(children[0])

    def ctor_call(self, meta: Meta, children: list[Any]) -> tuple[str, _Args]:
        (args,) = children
        return "call", args if args is not None else _Args((), (), False)

    def ctor_items(self, meta: Meta, children: list[Any]) -> tuple[str, tuple[Any, ...]]:
        repeat, *entries = children
        entries = [entry for entry in entries if entry is not None]
        keyed = [key for key, _ in entries if key is not None]
        if keyed and len(keyed) != len(entries):
            raise _fail("either every item of a container has a key or none has", meta_span(meta))
        return "items", (repeat, tuple(keyed), tuple(ctor for _, ctor in entries))

    def ctor_repeat(self, meta: Meta, children: list[Any]) -> str:
        return text_of(children[0])

    def ctor_item(self, meta: Meta, children: list[Any]) -> tuple[str | None, Ctor]:
        key, ctor = children
        return (text_of(key) if key is not None else None), ctor

    def op(self, meta: Meta, children: list[Any]) -> Op:
        outputs, kind, target, args, span, stmt_span, *via = children
        call = args if args is not None else _Args((), (), False)
        op_span = parse_span(span)
        return Op(
            kind=kind,
            target=target,
            args=call.args,
            kwargs=call.kwargs,
            outputs=outputs or (),
            span=op_span,
            stmt_span=parse_span(stmt_span) if stmt_span is not None else op_span,
            via=tuple(text_of(tok) for tok in via if tok is not None),
        )

    def op_outputs(self, meta: Meta, children: list[Any]) -> tuple[str, ...]:
        return tuple(text_of(tok) for tok in children)

    def op_kind(self, meta: Meta, children: list[Any]) -> OpKind:
        return OpKind(str(children[0]))

    def target_path(self, meta: Meta, children: list[Any]) -> str:
        return "".join(str(tok) for tok in children)

    def target_symbol(self, meta: Meta, children: list[Any]) -> str:
        return str(children[0])

    def target_pipe(self, meta: Meta, children: list[Any]) -> str:
        return "|"

    def target_quoted(self, meta: Meta, children: list[Any]) -> str:
        return unquote(str(children[0]))

    def args(self, meta: Meta, children: list[Any]) -> _Args:
        args = tuple(child for child in children if not isinstance(child, Kwarg))
        kwargs = tuple(child for child in children if isinstance(child, Kwarg))
        return _Args(args, kwargs, False)

    def kwarg(self, meta: Meta, children: list[Any]) -> Kwarg:
        name, value = children
        return Kwarg(text_of(name), value)

    def value_name(self, meta: Meta, children: list[Any]) -> Value:
        text = str(children[0])
        if "." in text or text in LITERAL_NAMES:
            return Expr(text)
        return Ref(text)

    def value_temp(self, meta: Meta, children: list[Any]) -> Value:
        return Ref(str(children[0]))

    def value_qref(self, meta: Meta, children: list[Any]) -> Value:
        return Ref(unquote(str(children[0])[1:]))

    def value_literal(self, meta: Meta, children: list[Any]) -> Value:
        return Expr(str(children[0]))

    def value_quoted(self, meta: Meta, children: list[Any]) -> Value:
        return Expr(unquote(str(children[0])))

    def branch(self, meta: Meta, children: list[Any]) -> Branch:
        condition, *rest = children
        span = parse_span(rest[-1])
        conditions = [text_of(condition)]
        paths: list[Block] = [tuple(child for child in rest[:-1] if not isinstance(child, _Arm))]
        unconditioned = 0
        for arm in (child for child in rest[:-1] if isinstance(child, _Arm)):
            if arm.condition is None:
                unconditioned += 1
            elif unconditioned:
                raise _fail("`otherwise` paths come after every `elif` and `else`", arm.span)
            else:
                conditions.append(arm.condition)
            paths.append(arm.body)
        # `if c { ... }` alone stands for an if without else: its implicit empty last path.
        if unconditioned == 0 and conditions[-1] != "else" and len(paths) == len(conditions):
            paths.append(())
        return Branch(tuple(conditions), tuple(paths), span)

    def arm_elif(self, meta: Meta, children: list[Any]) -> _Arm:
        condition, *body = children
        return _Arm(text_of(condition), tuple(body), meta_span(meta))

    def arm_else(self, meta: Meta, children: list[Any]) -> _Arm:
        return _Arm("else", tuple(children), meta_span(meta))

    def arm_otherwise(self, meta: Meta, children: list[Any]) -> _Arm:
        return _Arm(None, tuple(children), meta_span(meta))

    def loop(self, meta: Meta, children: list[Any]) -> Loop:
        targets, iterable, over, *rest = children
        return Loop(
            targets=targets or (),
            iterable=text_of(iterable),
            over=text_of(over) if over is not None else None,
            body=tuple(rest[:-1]),
            span=parse_span(rest[-1]),
        )

    def loop_targets(self, meta: Meta, children: list[Any]) -> tuple[str, ...]:
        return tuple(text_of(tok) for tok in children)

    def return_stmt(self, meta: Meta, children: list[Any]) -> Return:
        *values, span = children
        return Return(tuple(value for value in values if value is not None), parse_span(span))

    # ----------------------------------------------------------------------- rules

    def __init__(self) -> None:
        super().__init__()
        self.template_starts: dict[str, Span] = {}

    def rule(self, meta: Meta, children: list[Any]) -> ParsedRule:
        rule_id_token, *fields = children
        rule_id = text_of(rule_id_token)
        where: dict[str, Span] = {"id": token_span(rule_id_token), "rule": meta_span(meta)}
        where.update({f"template:{key}": span for key, span in self.template_starts.items()})
        self.template_starts = {}
        single: dict[str, Any] = {}
        targets: list[Target] = []
        examples: list[Example] = []
        for item in fields:
            if item.name in ("target", "example"):
                (targets if item.name == "target" else examples).append(item.value)
                where[f"{item.name}:{len(targets if item.name == 'target' else examples) - 1}"] = item.span
                continue
            if item.name in single:
                raise _fail(f"`{item.name}` appears twice in rule {rule_id}", item.span)
            single[item.name] = item.value
            where[item.name] = item.span
        for required in ("family", "title", "message", "forward"):
            if required not in single:
                raise _fail(f"rule {rule_id} has no `{required}`", where["id"])
        rule = Rule(
            id=rule_id,
            family=single["family"],
            title=single["title"],
            message=single["message"],
            severity=single.get("severity", Severity.WARNING),
            targets=tuple(targets),
            init=single.get("init", ()),
            forward=single["forward"],
            guards=single.get("where", ()),
            replacement=single.get("rewrite"),
            examples=tuple(examples),
            docs=single.get("docs", ""),
            scope=single.get("scope", "forward"),
            span=meta_span(meta),
        )
        return ParsedRule(rule, where)

    def family(self, meta: Meta, children: list[Any]) -> _Field:
        token = children[0]
        text = str(token)
        if not text.isdigit():
            raise _fail(f"a family is a whole number from {FAMILY_RANGE.start} to {FAMILY_RANGE.stop - 1}", token_span(token))
        return _Field("family", int(text), token_span(token))

    def title(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("title", string_of(children[0]), meta_span(meta))

    def message(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("message", string_of(children[0]), meta_span(meta))

    def severity(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("severity", _severity(children[0]), meta_span(meta))

    def scope(self, meta: Meta, children: list[Any]) -> _Field:
        token = children[0]
        if str(token) not in ("forward", "function"):
            raise _fail(f"unknown scope {str(token)!r}; expected forward or function", token_span(token))
        return _Field("scope", str(token), token_span(token))

    def target_def(self, meta: Meta, children: list[Any]) -> _Field:
        name, *fields = children
        values: dict[str, Any] = {}
        for item in fields:
            if item.name in values:
                raise _fail(f"`{item.name}` appears twice in target {text_of(name)}", item.span)
            values[item.name] = item.value
        if "kernel" not in values:
            raise _fail(f"target {text_of(name)} has no `kernel`", meta_span(meta))
        target = Target(
            name=text_of(name),
            kernel=values["kernel"],
            devices=values.get("devices", ("cpu", "cuda")),
            packages=values.get("packages", ()),
            torch=values.get("torch"),
            preferred=values.get("preferred", False),
        )
        return _Field("target", target, meta_span(meta))

    def kernel(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("kernel", string_of(children[0]), meta_span(meta))

    def devices(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("devices", tuple(text_of(t) for t in children if t is not None), meta_span(meta))

    def packages(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("packages", tuple(text_of(t) for t in children if t is not None), meta_span(meta))

    def torch_spec(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("torch", string_of(children[0]), meta_span(meta))

    def preferred(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("preferred", True, meta_span(meta))

    def init_patterns(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("init", tuple(c for c in children if isinstance(c, BindingPattern)), meta_span(meta))

    def binding_pattern(self, meta: Meta, children: list[Any]) -> BindingPattern:
        var, ctor = children
        return BindingPattern(str(var)[1:], ctor, meta_span(meta))

    def ctor_pattern_alts(self, meta: Meta, children: list[Any]) -> CtorPattern:
        alts = [child for child in children if isinstance(child, tuple)]
        lookups = {lookup for _, lookup, _ in alts if lookup is not None}
        calls = {call for _, _, call in alts if call is not None and call != _Args((), (), True)}
        if len(lookups) > 1 or len(calls) > 1:
            raise _fail(
                "alternatives share one argument list; write `(A | B)[lookup](args)`", meta_span(meta)
            )
        call = calls.pop() if calls else _Args((), (), True)
        return CtorPattern(
            callees=tuple(callee for callee, _, _ in alts),
            args=call.args,
            kwargs=call.kwargs,
            extra_args=call.extra,
            lookup=lookups.pop() if lookups else None,
        )

    def ctor_pattern_grouped(self, meta: Meta, children: list[Any]) -> CtorPattern:
        *callees, lookup, call = children
        call = call if call is not None else _Args((), (), True)
        return CtorPattern(
            callees=tuple(text_of(tok) for tok in _tokens(callees)),
            args=call.args,
            kwargs=call.kwargs,
            extra_args=call.extra,
            lookup=lookup,
        )

    def ctor_alt(self, meta: Meta, children: list[Any]) -> tuple[str, PValue | None, _Args | None]:
        callee, lookup, call = children
        return text_of(callee), lookup, call

    def ctor_plookup(self, meta: Meta, children: list[Any]) -> PValue:
        value: PValue = children[0]
        return value

    def ctor_pcall(self, meta: Meta, children: list[Any]) -> _Args:
        (args,) = children
        return args if args is not None else _Args((), (), False)

    def forward_patterns(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("forward", tuple(c for c in children if isinstance(c, OpPattern)), meta_span(meta))

    def step(self, meta: Meta, children: list[Any]) -> OpPattern:
        optional, outputs, call = children
        return OpPattern(
            targets=call.targets,
            args=call.args,
            kwargs=call.kwargs,
            outputs=outputs or (),
            optional=optional is not None,
            extra_args=call.extra,
            span=meta_span(meta),
        )

    def step_outputs(self, meta: Meta, children: list[Any]) -> tuple[PValue, ...]:
        return tuple(children)

    def call_function(self, meta: Meta, children: list[Any]) -> _Call:
        name, args = children
        return _call(((OpKind.FUNCTION, str(name)),), (), args)

    def call_module(self, meta: Meta, children: list[Any]) -> _Call:
        var, args = children
        return _call(((OpKind.MODULE, str(var)),), (), args)

    def call_method(self, meta: Meta, children: list[Any]) -> _Call:
        var, name, args = children
        return _call(((OpKind.METHOD, str(name)),), (PVar(str(var)[1:]),), args)

    def call_binop(self, meta: Meta, children: list[Any]) -> _Call:
        left, symbol, right = children
        return _Call(((OpKind.OPERATOR, str(symbol)),), (left, right), (), False)

    def call_alts(self, meta: Meta, children: list[Any]) -> _Call:
        *alts, args = children
        targets = tuple(alt for alt in alts if isinstance(alt, tuple))
        return _call(targets, (), args)

    def call_kind(self, meta: Meta, children: list[Any]) -> _Call:
        kind, target, args = children
        return _call(((kind, target),), (), args)

    def alt_function(self, meta: Meta, children: list[Any]) -> tuple[OpKind, str]:
        return OpKind.FUNCTION, str(children[0])

    def alt_module(self, meta: Meta, children: list[Any]) -> tuple[OpKind, str]:
        return OpKind.MODULE, str(children[0])

    def alt_method(self, meta: Meta, children: list[Any]) -> tuple[OpKind, str]:
        return OpKind.METHOD, str(children[0])

    def alt_operator(self, meta: Meta, children: list[Any]) -> tuple[OpKind, str]:
        return OpKind.OPERATOR, str(children[0])

    def alt_kind(self, meta: Meta, children: list[Any]) -> tuple[OpKind, str]:
        kind, target = children
        return kind, target

    def pargs(self, meta: Meta, children: list[Any]) -> _Args:
        extras = [child for child in children if child is _EXTRA]
        if len(extras) > 1:
            raise _fail("`...` appears more than once", meta_span(meta))
        args = tuple(c for c in children if c is not _EXTRA and not isinstance(c, PKwarg))
        kwargs = tuple(c for c in children if isinstance(c, PKwarg))
        return _Args(args, kwargs, bool(extras))

    def pkwarg(self, meta: Meta, children: list[Any]) -> PKwarg:
        name, value = children
        return PKwarg(text_of(name), value)

    def extra_args(self, meta: Meta, children: list[Any]) -> object:
        return _EXTRA

    def pvalue_var(self, meta: Meta, children: list[Any]) -> PValue:
        return PVar(str(children[0])[1:])

    def pvalue_any(self, meta: Meta, children: list[Any]) -> PValue:
        return PAny()

    def pvalue_literal(self, meta: Meta, children: list[Any]) -> PValue:
        return Expr(str(children[0]))

    def pvalue_quoted(self, meta: Meta, children: list[Any]) -> PValue:
        return Expr(unquote(str(children[0])))

    def guards(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("where", tuple(c for c in children if isinstance(c, Guard)), meta_span(meta))

    def guard(self, meta: Meta, children: list[Any]) -> Guard:
        name, *args = children
        try:
            kind = GuardKind(str(name))
        except ValueError:
            known = ", ".join(kind.value for kind in GuardKind)
            raise _fail(f"unknown guard {str(name)!r}; known guards: {known}", token_span(name)) from None
        return Guard(kind, tuple(arg for arg in args if arg is not None), meta_span(meta))

    def rewrite(self, meta: Meta, children: list[Any]) -> _Field:
        strategy, *fields = children
        forward: str | None = None
        init: list[tuple[str, str]] = []
        imports: list[str] = []
        for item in fields:
            if item is None:
                continue
            # Template positions let the check point at a placeholder inside the code block.
            self.template_starts[item.name if item.name != "init" else f"init:{item.value[0]}"] = item.span
            if item.name == "forward":
                if forward is not None:
                    raise _fail("a rewrite has one `forward` template", item.span)
                forward = item.value
            elif item.name == "init":
                if any(var == item.value[0] for var, _ in init):
                    raise _fail(f"`init ${item.value[0]}` appears twice", item.span)
                init.append(item.value)
            else:
                imports.append(item.value)
        return _Field(
            "rewrite", Replacement(text_of(strategy), forward, tuple(init), tuple(imports)), meta_span(meta)
        )

    def rewrite_forward(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("forward", fence_of(children[0]), fence_start(children[0]))

    def rewrite_init(self, meta: Meta, children: list[Any]) -> _Field:
        var, code = children
        return _Field("init", (str(var)[1:], fence_of(code)), fence_start(code))

    def rewrite_import(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("import", string_of(children[0]), meta_span(meta))

    def docs(self, meta: Meta, children: list[Any]) -> _Field:
        return _Field("docs", fence_of(children[0]), meta_span(meta))

    def example(self, meta: Meta, children: list[Any]) -> _Field:
        kind, code, expected, target = children
        should_match = kind == "match"
        if expected is not None and not should_match:
            raise _fail("only `example match` can show an expected rewrite (`=> ```...````)", meta_span(meta))
        example = Example(
            code=fence_of(code),
            should_match=should_match,
            expected=fence_of(expected) if expected is not None else None,
            target=text_of(target) if target is not None else None,
            span=meta_span(meta),
        )
        return _Field("example", example, meta_span(meta))

    def example_kind(self, meta: Meta, children: list[Any]) -> str:
        return str(children[0])


_EXTRA = object()


def _call(targets: tuple[tuple[OpKind, str], ...], receiver: tuple[PValue, ...], args: _Args | None) -> _Call:
    call = args if args is not None else _Args((), (), False)
    return _Call(targets, receiver + call.args, call.kwargs, call.extra)


def _severity(token: Token) -> Severity:
    try:
        return Severity(str(token))
    except ValueError:
        known = ", ".join(s.value for s in Severity)
        raise _fail(f"unknown severity {str(token)!r}; expected one of {known}", token_span(token)) from None

