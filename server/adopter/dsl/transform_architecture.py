"""Lark callbacks that build architecture values: models, bindings, ops, branches, loops."""

from __future__ import annotations

from typing import Any

from lark import Token, Transformer, v_args
from lark.tree import Meta

from adopter.dsl.lexical import unquote
from adopter.dsl.tree_values import (
    LITERAL_NAMES,
    Args,
    Arm,
    Field,
    fail,
    meta_span,
    parse_span,
    severity_of,
    string_of,
    text_of,
)
from adopter.dsl.types import (
    Architecture,
    Binding,
    Block,
    Branch,
    Ctor,
    Expr,
    Forward,
    Init,
    Kwarg,
    Loop,
    Op,
    OpKind,
    Param,
    ParamKind,
    Problem,
    Ref,
    Return,
    Span,
    Value,
)


@v_args(meta=True)
class ArchitectureTransformer(Transformer[Token, Any]):
    """Callbacks for the architecture half of the grammar (and the op targets patterns share)."""

    def file_header(self, meta: Meta, children: list[Any]) -> Field:
        return Field("file", text_of(children[0]), meta_span(meta))

    def problem(self, meta: Meta, children: list[Any]) -> Problem:
        severity_token, message, span, code, path = children
        return Problem(
            message=string_of(message),
            span=parse_span(span) if span is not None else None,
            path=text_of(path) if path is not None else None,
            severity=severity_of(severity_token),
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
                raise fail("no parameter may follow **kwargs", span)
            if kind == "plain":
                kind_of = ParamKind.KEYWORD_ONLY if keyword_only else ParamKind.POSITIONAL
                params.append(Param(name, kind_of, default))
            elif kind == "star":
                if keyword_only:
                    raise fail("only one `*` or `*args` per signature", span)
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
        call = Args((), (), False)
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

    def ctor_call(self, meta: Meta, children: list[Any]) -> tuple[str, Args]:
        (args,) = children
        return "call", args if args is not None else Args((), (), False)

    def ctor_items(self, meta: Meta, children: list[Any]) -> tuple[str, tuple[Any, ...]]:
        repeat, *entries = children
        entries = [entry for entry in entries if entry is not None]
        keyed = [key for key, _ in entries if key is not None]
        if keyed and len(keyed) != len(entries):
            raise fail("either every item of a container has a key or none has", meta_span(meta))
        return "items", (repeat, tuple(keyed), tuple(ctor for _, ctor in entries))

    def ctor_repeat(self, meta: Meta, children: list[Any]) -> str:
        return text_of(children[0])

    def ctor_item(self, meta: Meta, children: list[Any]) -> tuple[str | None, Ctor]:
        key, ctor = children
        return (text_of(key) if key is not None else None), ctor

    def op(self, meta: Meta, children: list[Any]) -> Op:
        outputs, kind, target, args, span, stmt_span, *via = children
        call = args if args is not None else Args((), (), False)
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

    def args(self, meta: Meta, children: list[Any]) -> Args:
        args = tuple(child for child in children if not isinstance(child, Kwarg))
        kwargs = tuple(child for child in children if isinstance(child, Kwarg))
        return Args(args, kwargs, False)

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
        paths: list[Block] = [tuple(child for child in rest[:-1] if not isinstance(child, Arm))]
        unconditioned = 0
        for arm in (child for child in rest[:-1] if isinstance(child, Arm)):
            if arm.condition is None:
                unconditioned += 1
            elif unconditioned:
                raise fail("`otherwise` paths come after every `elif` and `else`", arm.span)
            else:
                conditions.append(arm.condition)
            paths.append(arm.body)
        # `if c { ... }` alone stands for an if without else: its implicit empty last path.
        if unconditioned == 0 and conditions[-1] != "else" and len(paths) == len(conditions):
            paths.append(())
        return Branch(tuple(conditions), tuple(paths), span)

    def arm_elif(self, meta: Meta, children: list[Any]) -> Arm:
        condition, *body = children
        return Arm(text_of(condition), tuple(body), meta_span(meta))

    def arm_else(self, meta: Meta, children: list[Any]) -> Arm:
        return Arm("else", tuple(children), meta_span(meta))

    def arm_otherwise(self, meta: Meta, children: list[Any]) -> Arm:
        return Arm(None, tuple(children), meta_span(meta))

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
