"""Lark callbacks that build rules: header fields, targets, init and forward patterns, guards, rewrites."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lark import Token, Transformer, v_args
from lark.tree import Meta

from adopter.dsl.lexical import unquote
from adopter.dsl.tree_values import (
    EXTRA,
    FAMILY_RANGE,
    Args,
    Call,
    Field,
    fail,
    fence_of,
    fence_start,
    meta_span,
    severity_of,
    string_of,
    text_of,
    token_span,
    tokens_of,
)
from adopter.dsl.types import (
    BindingPattern,
    CtorPattern,
    Example,
    Expr,
    Guard,
    GuardKind,
    OpKind,
    OpPattern,
    PAny,
    PKwarg,
    PValue,
    PVar,
    Replacement,
    Rule,
    Severity,
    Span,
    Target,
)


@dataclass(frozen=True)
class ParsedRule:
    """A rule with the positions of its parts that the semantic check reports against."""

    rule: Rule
    where: dict[str, Span] = field(default_factory=dict)


def pattern_call(targets: tuple[tuple[OpKind, str], ...], receiver: tuple[PValue, ...], args: Args | None) -> Call:
    """A step's call: its targets, the receiver (for `$x.method(...)`) prepended to the arguments."""
    call = args if args is not None else Args((), (), False)
    return Call(targets, receiver + call.args, call.kwargs, call.extra)


@v_args(meta=True)
class RuleTransformer(Transformer[Token, Any]):
    """Callbacks for the rule half of the grammar; `template_starts` collects code-block positions."""

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
                raise fail(f"`{item.name}` appears twice in rule {rule_id}", item.span)
            single[item.name] = item.value
            where[item.name] = item.span
        for required in ("family", "title", "message", "forward"):
            if required not in single:
                raise fail(f"rule {rule_id} has no `{required}`", where["id"])
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

    def family(self, meta: Meta, children: list[Any]) -> Field:
        token = children[0]
        text = str(token)
        if not text.isdigit():
            raise fail(f"a family is a whole number from {FAMILY_RANGE.start} to {FAMILY_RANGE.stop - 1}", token_span(token))
        return Field("family", int(text), token_span(token))

    def title(self, meta: Meta, children: list[Any]) -> Field:
        return Field("title", string_of(children[0]), meta_span(meta))

    def message(self, meta: Meta, children: list[Any]) -> Field:
        return Field("message", string_of(children[0]), meta_span(meta))

    def severity(self, meta: Meta, children: list[Any]) -> Field:
        return Field("severity", severity_of(children[0]), meta_span(meta))

    def scope(self, meta: Meta, children: list[Any]) -> Field:
        token = children[0]
        if str(token) not in ("forward", "function"):
            raise fail(f"unknown scope {str(token)!r}; expected forward or function", token_span(token))
        return Field("scope", str(token), token_span(token))

    def target_def(self, meta: Meta, children: list[Any]) -> Field:
        name, *fields = children
        values: dict[str, Any] = {}
        for item in fields:
            if item.name in values:
                raise fail(f"`{item.name}` appears twice in target {text_of(name)}", item.span)
            values[item.name] = item.value
        if "kernel" not in values:
            raise fail(f"target {text_of(name)} has no `kernel`", meta_span(meta))
        target = Target(
            name=text_of(name),
            kernel=values["kernel"],
            devices=values.get("devices", ("cpu", "cuda")),
            packages=values.get("packages", ()),
            torch=values.get("torch"),
            preferred=values.get("preferred", False),
        )
        return Field("target", target, meta_span(meta))

    def kernel(self, meta: Meta, children: list[Any]) -> Field:
        return Field("kernel", string_of(children[0]), meta_span(meta))

    def devices(self, meta: Meta, children: list[Any]) -> Field:
        return Field("devices", tuple(text_of(t) for t in children if t is not None), meta_span(meta))

    def packages(self, meta: Meta, children: list[Any]) -> Field:
        return Field("packages", tuple(text_of(t) for t in children if t is not None), meta_span(meta))

    def torch_spec(self, meta: Meta, children: list[Any]) -> Field:
        return Field("torch", string_of(children[0]), meta_span(meta))

    def preferred(self, meta: Meta, children: list[Any]) -> Field:
        return Field("preferred", True, meta_span(meta))

    def init_patterns(self, meta: Meta, children: list[Any]) -> Field:
        return Field("init", tuple(c for c in children if isinstance(c, BindingPattern)), meta_span(meta))

    def binding_pattern(self, meta: Meta, children: list[Any]) -> BindingPattern:
        var, ctor = children
        return BindingPattern(str(var)[1:], ctor, meta_span(meta))

    def ctor_pattern_alts(self, meta: Meta, children: list[Any]) -> CtorPattern:
        alts = [child for child in children if isinstance(child, tuple)]
        lookups = {lookup for _, lookup, _ in alts if lookup is not None}
        calls = {call for _, _, call in alts if call is not None and call != Args((), (), True)}
        if len(lookups) > 1 or len(calls) > 1:
            raise fail(
                "alternatives share one argument list; write `(A | B)[lookup](args)`", meta_span(meta)
            )
        call = calls.pop() if calls else Args((), (), True)
        return CtorPattern(
            callees=tuple(callee for callee, _, _ in alts),
            args=call.args,
            kwargs=call.kwargs,
            extra_args=call.extra,
            lookup=lookups.pop() if lookups else None,
        )

    def ctor_pattern_grouped(self, meta: Meta, children: list[Any]) -> CtorPattern:
        *callees, lookup, call = children
        call = call if call is not None else Args((), (), True)
        return CtorPattern(
            callees=tuple(text_of(tok) for tok in tokens_of(callees)),
            args=call.args,
            kwargs=call.kwargs,
            extra_args=call.extra,
            lookup=lookup,
        )

    def ctor_alt(self, meta: Meta, children: list[Any]) -> tuple[str, PValue | None, Args | None]:
        callee, lookup, call = children
        return text_of(callee), lookup, call

    def ctor_plookup(self, meta: Meta, children: list[Any]) -> PValue:
        value: PValue = children[0]
        return value

    def ctor_pcall(self, meta: Meta, children: list[Any]) -> Args:
        (args,) = children
        return args if args is not None else Args((), (), False)

    def forward_patterns(self, meta: Meta, children: list[Any]) -> Field:
        return Field("forward", tuple(c for c in children if isinstance(c, OpPattern)), meta_span(meta))

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

    def call_function(self, meta: Meta, children: list[Any]) -> Call:
        name, args = children
        return pattern_call(((OpKind.FUNCTION, str(name)),), (), args)

    def call_module(self, meta: Meta, children: list[Any]) -> Call:
        var, args = children
        return pattern_call(((OpKind.MODULE, str(var)),), (), args)

    def call_method(self, meta: Meta, children: list[Any]) -> Call:
        var, name, args = children
        return pattern_call(((OpKind.METHOD, str(name)),), (PVar(str(var)[1:]),), args)

    def call_binop(self, meta: Meta, children: list[Any]) -> Call:
        left, symbol, right = children
        return Call(((OpKind.OPERATOR, str(symbol)),), (left, right), (), False)

    def call_alts(self, meta: Meta, children: list[Any]) -> Call:
        *alts, args = children
        targets = tuple(alt for alt in alts if isinstance(alt, tuple))
        return pattern_call(targets, (), args)

    def call_kind(self, meta: Meta, children: list[Any]) -> Call:
        kind, target, args = children
        return pattern_call(((kind, target),), (), args)

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

    def pargs(self, meta: Meta, children: list[Any]) -> Args:
        extras = [child for child in children if child is EXTRA]
        if len(extras) > 1:
            raise fail("`...` appears more than once", meta_span(meta))
        args = tuple(c for c in children if c is not EXTRA and not isinstance(c, PKwarg))
        kwargs = tuple(c for c in children if isinstance(c, PKwarg))
        return Args(args, kwargs, bool(extras))

    def pkwarg(self, meta: Meta, children: list[Any]) -> PKwarg:
        name, value = children
        return PKwarg(text_of(name), value)

    def extra_args(self, meta: Meta, children: list[Any]) -> object:
        return EXTRA

    def pvalue_var(self, meta: Meta, children: list[Any]) -> PValue:
        return PVar(str(children[0])[1:])

    def pvalue_any(self, meta: Meta, children: list[Any]) -> PValue:
        return PAny()

    def pvalue_literal(self, meta: Meta, children: list[Any]) -> PValue:
        return Expr(str(children[0]))

    def pvalue_quoted(self, meta: Meta, children: list[Any]) -> PValue:
        return Expr(unquote(str(children[0])))

    def guards(self, meta: Meta, children: list[Any]) -> Field:
        return Field("where", tuple(c for c in children if isinstance(c, Guard)), meta_span(meta))

    def guard(self, meta: Meta, children: list[Any]) -> Guard:
        name, *args = children
        try:
            kind = GuardKind(str(name))
        except ValueError:
            known = ", ".join(kind.value for kind in GuardKind)
            raise fail(f"unknown guard {str(name)!r}; known guards: {known}", token_span(name)) from None
        return Guard(kind, tuple(arg for arg in args if arg is not None), meta_span(meta))

    def rewrite(self, meta: Meta, children: list[Any]) -> Field:
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
                    raise fail("a rewrite has one `forward` template", item.span)
                forward = item.value
            elif item.name == "init":
                if any(var == item.value[0] for var, _ in init):
                    raise fail(f"`init ${item.value[0]}` appears twice", item.span)
                init.append(item.value)
            else:
                imports.append(item.value)
        return Field(
            "rewrite", Replacement(text_of(strategy), forward, tuple(init), tuple(imports)), meta_span(meta)
        )

    def rewrite_forward(self, meta: Meta, children: list[Any]) -> Field:
        return Field("forward", fence_of(children[0]), fence_start(children[0]))

    def rewrite_init(self, meta: Meta, children: list[Any]) -> Field:
        var, code = children
        return Field("init", (str(var)[1:], fence_of(code)), fence_start(code))

    def rewrite_import(self, meta: Meta, children: list[Any]) -> Field:
        return Field("import", string_of(children[0]), meta_span(meta))

    def docs(self, meta: Meta, children: list[Any]) -> Field:
        return Field("docs", fence_of(children[0]), meta_span(meta))

    def example(self, meta: Meta, children: list[Any]) -> Field:
        kind, code, expected, target = children
        should_match = kind == "match"
        if expected is not None and not should_match:
            raise fail("only `example match` can show an expected rewrite (`=> ```...````)", meta_span(meta))
        example = Example(
            code=fence_of(code),
            should_match=should_match,
            expected=fence_of(expected) if expected is not None else None,
            target=text_of(target) if target is not None else None,
            span=meta_span(meta),
        )
        return Field("example", example, meta_span(meta))

    def example_kind(self, meta: Meta, children: list[Any]) -> str:
        return str(children[0])

