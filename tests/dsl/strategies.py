"""Hypothesis strategies for random DSL values: architectures, module files and rules."""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

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
    ModuleFile,
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
    Stmt,
    Target,
)

KEYWORDISH = ["if", "else", "model", "module", "torch", "None", "True", "_", "for", "in", "via", "stmt", "rule"]

identifiers = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True),
    st.sampled_from(["αβ", "x1", "_", "self", "config", "μ_2", *KEYWORDISH]),
)
pattern_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)

# Opaque text exercising every quoting path: backticks, backslashes, quotes, line breaks, unicode.
odd_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("`\\\"' \t\n\r.-+*/()[]{}@$%#:=,|?~!<>_01aZé中🙂\u2028\x00")),
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
    ),
    max_size=12,
)
simple_texts = st.sampled_from(
    ["config.hidden_size", "self.scale", "-1", "0.5", "1e-05", "None", "True", '"relative_key"', "'x'", "x", "dim"]
)
texts = st.one_of(simple_texts, identifiers, odd_text)
dotted = st.from_regex(r"[a-z_][a-z0-9_]{0,5}(\.[a-z_][a-z0-9_]{0,5}){0,3}", fullmatch=True)


def _fence_ok(text: str) -> bool:
    """Fenced text as the DSL stores it: dedented (or all blank), without carriage returns."""
    if "\r" in text:
        return False
    lines = text.split("\n")
    if not any(line.strip() for line in lines):
        return True
    return any(line.strip() and not line[0].isspace() for line in lines)


fence_texts = st.one_of(
    st.sampled_from(["x = f(y)", "def f():\n    return 1\n", "a\n\n  b", "```\n````", "", "  \n", "\n"]),
    st.text(
        alphabet=st.one_of(st.sampled_from(list("`\n \t#ab\\\"'")), st.characters(codec="utf-8")),
        max_size=30,
    ),
).filter(_fence_ok).map(lambda text: text.replace("$", "S"))

spans = st.builds(
    Span,
    st.integers(0, 3000),
    st.integers(0, 200),
    st.integers(0, 3000),
    st.integers(0, 200),
)
refs = st.builds(Ref, st.one_of(identifiers, st.from_regex(r"%[0-9]{1,3}", fullmatch=True), odd_text))
exprs = st.builds(Expr, texts)
values = st.one_of(refs, exprs)
kwargs = st.builds(Kwarg, st.one_of(identifiers, odd_text), values)


@st.composite
def params(draw: st.DrawFn) -> tuple[Param, ...]:
    """A signature in an order Python allows."""
    defaults = st.one_of(st.none(), texts)
    out = [Param(draw(texts), ParamKind.POSITIONAL, draw(defaults)) for _ in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        out.append(Param(draw(texts), ParamKind.VAR_POSITIONAL))
    out += [Param(draw(texts), ParamKind.KEYWORD_ONLY, draw(defaults)) for _ in range(draw(st.integers(0, 2)))]
    if draw(st.booleans()):
        out.append(Param(draw(texts), ParamKind.VAR_KEYWORD))
    return tuple(out)


def ctors(depth: int = 2) -> st.SearchStrategy[Ctor]:
    children = st.lists(ctors(depth - 1), max_size=2) if depth > 0 else st.just([])

    @st.composite
    def build(draw: st.DrawFn) -> Ctor:
        items = tuple(draw(children))
        keys = tuple(draw(texts) for _ in items) if items and draw(st.booleans()) else ()
        return Ctor(
            callee=draw(st.one_of(dotted, texts)),
            args=tuple(draw(st.lists(values, max_size=3))),
            kwargs=tuple(draw(st.lists(kwargs, max_size=2))),
            items=items,
            keys=keys,
            repeat=draw(st.one_of(st.none(), texts)),
            lookup=draw(st.one_of(st.none(), texts)),
        )

    return build()


bindings = st.builds(
    Binding,
    attr=texts,
    value=st.one_of(ctors(), exprs),
    span=spans,
    condition=st.one_of(st.none(), texts),
)
names = st.one_of(identifiers, st.from_regex(r"%[0-9]{1,3}", fullmatch=True), odd_text)
ops = st.builds(
    Op,
    kind=st.sampled_from(list(OpKind)),
    target=st.one_of(dotted, st.sampled_from(["self.layer[*]", "+", "@", "**", "neg", "getitem", "|", "//"]), texts),
    args=st.lists(values, max_size=3).map(tuple),
    kwargs=st.lists(kwargs, max_size=2).map(tuple),
    outputs=st.lists(names, max_size=2).map(tuple),
    span=spans,
    stmt_span=spans,
    via=st.lists(texts, max_size=2).map(tuple),
)


def blocks(depth: int) -> st.SearchStrategy[Block]:
    return st.lists(stmts(depth), max_size=3 if depth >= 2 else 2).map(tuple)


def stmts(depth: int) -> st.SearchStrategy[Stmt]:
    returns = st.builds(Return, st.lists(values, max_size=2).map(tuple), spans)
    if depth <= 0:
        return st.one_of(ops, returns)
    return st.one_of(ops, returns, branches(depth - 1), loops(depth - 1))


def loops(depth: int) -> st.SearchStrategy[Loop]:
    return st.builds(
        Loop,
        targets=st.lists(names, max_size=2).map(tuple),
        iterable=texts,
        over=st.one_of(st.none(), dotted, texts),
        body=blocks(depth),
        span=spans,
    )


def branches(depth: int) -> st.SearchStrategy[Branch]:
    @st.composite
    def build(draw: st.DrawFn) -> Branch:
        conditions = draw(st.lists(texts, min_size=1, max_size=3))
        if draw(st.booleans()):
            conditions.append("else")
        extra = draw(st.integers(0 if conditions[-1] == "else" else 1, 2))
        paths = tuple(draw(blocks(depth)) for _ in range(len(conditions) + extra))
        return Branch(tuple(conditions), paths, draw(spans))

    return build()


forwards = st.builds(
    Forward,
    name=st.one_of(st.just("forward"), texts),
    params=params(),
    body=blocks(2),
    span=spans,
)
inits = st.builds(Init, params=params(), bindings=st.lists(bindings, max_size=4).map(tuple), span=spans)
architectures = st.builds(
    Architecture,
    name=texts,
    bases=st.lists(st.one_of(dotted, texts), max_size=2).map(tuple),
    init=st.one_of(st.none(), inits),
    forward=st.one_of(st.none(), forwards),
    span=spans,
)
problems = st.builds(
    Problem,
    message=texts,
    span=st.one_of(st.none(), spans),
    path=st.one_of(st.none(), texts),
    severity=st.sampled_from(list(Severity)),
    code=st.one_of(st.none(), texts),
)
module_files = st.builds(
    ModuleFile,
    path=st.one_of(st.none(), texts),
    architectures=st.lists(architectures, max_size=2).map(tuple),
    problems=st.lists(problems, max_size=2).map(tuple),
    functions=st.lists(forwards, max_size=2).map(tuple),
)

# ------------------------------------------------------------------------------------------- rules

pattern_literals = st.builds(Expr, texts)


def pvalues(variables: list[str]) -> st.SearchStrategy[PValue]:
    return st.one_of(st.sampled_from([PVar(v) for v in variables]), st.just(PAny()), pattern_literals)


@st.composite
def rules(draw: st.DrawFn) -> Rule:
    """A rule that passes the semantic check (variables defined, arities right, scopes consistent)."""
    scope = draw(st.sampled_from(["forward", "function"]))
    module_vars = draw(st.lists(pattern_names, max_size=2, unique=True)) if scope == "forward" else []
    value_vars = draw(st.lists(pattern_names, min_size=1, max_size=4, unique=True))
    variables = value_vars + module_vars
    pv = pvalues(variables)
    pkw = st.builds(PKwarg, st.one_of(identifiers, odd_text), pv)
    init = tuple(
        BindingPattern(
            var,
            CtorPattern(
                callees=tuple(draw(st.lists(st.one_of(dotted, texts), min_size=1, max_size=3))),
                args=tuple(draw(st.lists(pv, max_size=2))),
                kwargs=tuple(draw(st.lists(pkw, max_size=2))),
                extra_args=draw(st.booleans()),
                lookup=draw(st.one_of(st.none(), pv)),
            ),
        )
        for var in module_vars
    )
    target_choices = [
        st.tuples(st.just(OpKind.FUNCTION), st.one_of(dotted, texts)),
        st.tuples(st.just(OpKind.METHOD), st.one_of(identifiers, texts)),
        st.tuples(st.just(OpKind.OPERATOR), st.sampled_from(["+", "@", "*", "/", "|", "**", "neg", "getitem"])),
        st.tuples(st.just(OpKind.CALL), texts),
        st.tuples(st.just(OpKind.MODULE), st.sampled_from(["self.query", "self.layer[*]"])),
    ]
    if module_vars:
        target_choices.append(st.tuples(st.just(OpKind.MODULE), st.sampled_from(["$" + v for v in module_vars])))
    step = st.builds(
        OpPattern,
        targets=st.lists(st.one_of(*target_choices), min_size=1, max_size=3).map(tuple),
        args=st.lists(pv, max_size=3).map(tuple),
        kwargs=st.lists(pkw, max_size=2).map(tuple),
        outputs=st.lists(st.one_of(st.sampled_from([PVar(v) for v in value_vars]), st.just(PAny())), max_size=2).map(tuple),
        optional=st.booleans(),
        extra_args=st.booleans(),
    )
    forward = draw(st.lists(step, min_size=1, max_size=4))
    # An optional step stands for its first argument when absent: it needs one output and a variable there.
    forward = [
        dataclasses.replace(s, outputs=(PVar(draw(st.sampled_from(value_vars))),),
                            args=(PVar(draw(st.sampled_from(value_vars))), *s.args[1:]))
        if s.optional else s
        for s in forward
    ]
    # Every value variable appears in the first step, so guards and templates may use any of them.
    first = forward[0]
    forward[0] = dataclasses.replace(
        first,
        optional=False,
        outputs=(PVar(value_vars[0]),),
        args=(*(PVar(v) for v in value_vars[1:]), *first.args),
    )
    guards = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(list(GuardKind)))
        var = PVar(draw(st.sampled_from(value_vars)))
        if kind is GuardKind.EQUALS:
            args: tuple[PValue, ...] = (var, draw(pv))
        elif kind.value in ("one_of", "no_kwarg", "fix_requires", "key_may_be", "named_activation"):
            args = (var, *draw(st.lists(pattern_literals, min_size=1, max_size=3)))
        elif kind.value in ("query_vector", "probability_vector"):  # variables, then the sides as literals
            names = draw(st.lists(st.sampled_from(value_vars), min_size=2 if kind.value == "query_vector" else 3,
                                  max_size=2 if kind.value == "query_vector" else 3))
            sides = draw(st.lists(pattern_literals, min_size=len(names) - 1, max_size=len(names) - 1))
            args = (*(PVar(v) for v in names), *sides)
        else:
            args = (var, *(PVar(v) for v in draw(st.lists(st.sampled_from(value_vars), max_size=2))))
        guards.append(Guard(kind, args))
    target_names = draw(st.lists(texts, max_size=3, unique=True))
    targets = tuple(
        Target(
            name=name,
            kernel=draw(texts),
            devices=tuple(draw(st.lists(texts, max_size=3))),
            packages=tuple(draw(st.lists(st.one_of(dotted, texts), max_size=2))),
            torch=draw(st.one_of(st.none(), st.sampled_from([">=2.1", "<3", ">=2.1,<3", "~=2.4", "==2.13.*"]))),
            preferred=draw(st.booleans()),
        )
        for name in target_names
    )
    replacement = None
    if draw(st.booleans()):
        placeholders = " ".join("$" + v for v in draw(st.lists(st.sampled_from(variables), max_size=2)))
        replacement = Replacement(
            strategy=draw(st.one_of(st.sampled_from(["template", "sdpa_module"]), texts)),
            forward=draw(st.one_of(st.none(), fence_texts.map(lambda t: t + ("\n" + placeholders if placeholders else "")))),
            init=tuple((var, draw(fence_texts)) for var in draw(st.lists(pattern_names, max_size=2, unique=True))),
            imports=tuple(draw(st.lists(texts, max_size=2))),
        )
    examples = []
    for _ in range(draw(st.integers(0, 3))):
        should_match = draw(st.booleans())
        examples.append(
            Example(
                code=draw(fence_texts),
                should_match=should_match,
                expected=draw(st.one_of(st.none(), fence_texts)) if should_match and replacement else None,
                target=draw(st.one_of(st.none(), st.sampled_from(target_names))) if target_names else None,
            )
        )
    return Rule(
        id=draw(st.one_of(st.from_regex(r"[a-z][a-z0-9_.-]{0,12}", fullmatch=True), texts.filter(bool))),
        family=draw(st.integers(1, 99)),
        title=draw(texts),
        message=draw(texts),
        severity=draw(st.sampled_from(list(Severity))),
        targets=targets,
        init=init,
        forward=tuple(forward),
        guards=tuple(guards),
        replacement=replacement,
        examples=tuple(examples),
        docs=draw(fence_texts),
        scope=scope,
    )


def strip_positions(rule: Rule) -> Rule:
    """A rule without the positions that only parsing can know (spans in the .adl text, its path)."""
    return dataclasses.replace(
        rule,
        span=None,
        path=None,
        init=tuple(dataclasses.replace(b, span=None) for b in rule.init),
        forward=tuple(dataclasses.replace(s, span=None) for s in rule.forward),
        guards=tuple(dataclasses.replace(g, span=None) for g in rule.guards),
        examples=tuple(dataclasses.replace(e, span=None) for e in rule.examples),
    )
