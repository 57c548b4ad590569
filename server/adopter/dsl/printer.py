"""Printing architectures, module files and rules as DSL text that parses back to the same values."""

from __future__ import annotations

from collections.abc import Sequence

from adopter.dsl.grammar import keywords
from adopter.dsl.lexical import (
    BINOP_RE,
    IDENT_RE,
    NAME_RE,
    RULE_ID_RE,
    TARGET_PATH_RE,
    TEMP_RE,
    fence,
    quote,
    quote_string,
    spell_text,
)
from adopter.dsl.tree_values import LITERAL_NAMES
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
    Span,
    Stmt,
    Target,
    Value,
)

INDENT = "  "


def format_span(span: Span) -> str:
    """`@12:5-12:30`: a span printed 1-based."""
    return f"@{span.start_line + 1}:{span.start_col + 1}-{span.end_line + 1}:{span.end_col + 1}"


def _text(text: str) -> str:
    return spell_text(text, keywords())


def _texts(texts: Sequence[str]) -> str:
    return ", ".join(_text(text) for text in texts)


# --------------------------------------------------------------------------------------------------
# Architectures
# --------------------------------------------------------------------------------------------------


def format_value(value: Value) -> str:
    """A forward value: a bare name or `%1` is a `Ref`; everything else (or backtick text) an `Expr`."""
    if isinstance(value, Ref):
        name = value.name
        # `_` is the pattern wildcard's word, but where a value is expected it reads as a plain name.
        bare = IDENT_RE.fullmatch(name) and (name == "_" or name not in keywords()) and name not in LITERAL_NAMES
        if bare or TEMP_RE.fullmatch(name):
            return name
        return "%" + quote(name)
    text = value.text
    if NAME_RE.fullmatch(text) and ("." in text or text in LITERAL_NAMES):
        return text
    if NAME_RE.fullmatch(text):
        return quote(text)
    return _text(text)


def _ident(text: str) -> str:
    """A name where the grammar wants a NAME token (kwarg names): bare or backtick-quoted."""
    return text if NAME_RE.fullmatch(text) and text not in keywords() else quote(text)


def _name(name: str) -> str:
    """An output or loop variable name (a `%1` temporary and `_` stay bare)."""
    return name if TEMP_RE.fullmatch(name) or name == "_" else _ident(name)


def _args(args: Sequence[Value], kwargs: Sequence[Kwarg]) -> str:
    parts = [format_value(arg) for arg in args]
    parts += [f"{_ident(kw.name)}={format_value(kw.value)}" for kw in kwargs]
    return ", ".join(parts)


def format_params(params: Sequence[Param]) -> str:
    """A Python-style parameter list; raises ValueError for orders Python cannot write."""
    parts: list[str] = []
    stage = 0  # 0 positional, 1 after * / *args, 2 after **kwargs
    for param in params:
        if stage == 2:
            raise ValueError(f"parameter {param.name!r} follows **kwargs")
        if param.kind is ParamKind.POSITIONAL:
            if stage != 0:
                raise ValueError(f"positional parameter {param.name!r} follows * or *args")
            parts.append(_param_with_default(param))
        elif param.kind is ParamKind.VAR_POSITIONAL:
            if stage != 0 or param.default is not None:
                raise ValueError(f"*{param.name} must come once, before keyword-only parameters, without default")
            parts.append("*" + _text(param.name))
            stage = 1
        elif param.kind is ParamKind.KEYWORD_ONLY:
            if stage == 0:
                parts.append("*")
                stage = 1
            parts.append(_param_with_default(param))
        else:
            if param.default is not None:
                raise ValueError(f"**{param.name} cannot have a default")
            parts.append("**" + _text(param.name))
            stage = 2
    return ", ".join(parts)


def _param_with_default(param: Param) -> str:
    name = _text(param.name)
    return name if param.default is None else f"{name}={_text(param.default)}"


def format_ctor(ctor: Ctor) -> str:
    """`callee[lookup](args){repeat * item, key: item}`, with the parts that are present."""
    out = _text(ctor.callee)
    if ctor.lookup is not None:
        out += f"[{_text(ctor.lookup)}]"
    has_items = bool(ctor.items or ctor.keys or ctor.repeat is not None)
    if ctor.args or ctor.kwargs or (ctor.lookup is None and not has_items):
        out += f"({_args(ctor.args, ctor.kwargs)})"
    if has_items:
        if ctor.keys and len(ctor.keys) != len(ctor.items):
            raise ValueError(f"Ctor {ctor.callee!r} has {len(ctor.keys)} keys for {len(ctor.items)} items")
        entries = [
            (f"{_text(ctor.keys[i])}: " if ctor.keys else "") + format_ctor(item)
            for i, item in enumerate(ctor.items)
        ]
        repeat = f"{_text(ctor.repeat)} * " if ctor.repeat is not None else ""
        out += "{" + repeat + ", ".join(entries) + "}"
    return out


def _binding(binding: Binding) -> str:
    value = format_ctor(binding.value) if isinstance(binding.value, Ctor) else _binding_expr(binding.value)
    condition = f" if {_text(binding.condition)}" if binding.condition is not None else ""
    line = f"{_text(binding.attr)} = {value}{condition} {format_span(binding.span)}"
    if isinstance(binding.value, Ctor) and binding.value.origin:  # resolved in another file
        line += f"  # from {' '.join(binding.value.origin.split())}"
    return line


def _binding_expr(expr: Expr) -> str:
    # A lone name would read as a constructor callee only with a call; bare tokens are safe here.
    return _text(expr.text)


def _op(op: Op) -> str:
    outputs = ", ".join(_name(name) for name in op.outputs)
    head = f"{outputs} = " if op.outputs else ""
    line = f"{head}{op.kind.value} {_op_target(op.target)}({_args(op.args, op.kwargs)}) {format_span(op.span)}"
    if op.stmt_span != op.span:
        line += f" stmt {format_span(op.stmt_span)}"
    if op.via:
        line += f" via {_texts(op.via)}"
    return line


def _op_target(target: str) -> str:
    path = TARGET_PATH_RE.fullmatch(target)
    if path and path.group(1) not in keywords():
        return target
    if BINOP_RE.fullmatch(target) or target == "|":
        return target
    return quote(target)


def _block(block: Block, indent: str) -> list[str]:
    lines: list[str] = []
    for stmt in block:
        lines.extend(_stmt(stmt, indent))
    return lines


def _braced(block: Block, indent: str) -> tuple[str, list[str]]:
    """The opening of a `{ ... }` block and its body lines (empty blocks print `{}`)."""
    if not block:
        return "{}", []
    return "{", [*_block(block, indent + INDENT), indent + "}"]


def _stmt(stmt: Stmt, indent: str) -> list[str]:
    if isinstance(stmt, Op):
        return [indent + _op(stmt)]
    if isinstance(stmt, Return):
        values = ", ".join(format_value(value) for value in stmt.values)
        return [indent + ("return " + values if values else "return") + " " + format_span(stmt.span)]
    if isinstance(stmt, Loop):
        targets = ", ".join(_name(name) for name in stmt.targets)
        over = f" over {_text(stmt.over)}" if stmt.over is not None else ""
        head = f"for {targets + ' ' if targets else ''}in {_text(stmt.iterable)}{over} "
        return _with_arms([(head, stmt.body)], format_span(stmt.span), indent)
    return _branch(stmt, indent)


def _branch(branch: Branch, indent: str) -> list[str]:
    conditions, paths = branch.conditions, branch.paths
    if not conditions:
        raise ValueError("a Branch needs at least one condition")
    if len(paths) < len(conditions):
        raise ValueError(f"Branch has {len(conditions)} conditions but only {len(paths)} paths")
    implicit_empty = conditions[-1] != "else" and len(paths) == len(conditions) + 1 and not paths[-1]
    if len(paths) == len(conditions) and conditions[-1] != "else":
        raise ValueError("an if without else keeps an (empty) last path: Branch needs one more path")
    arms: list[tuple[str, Block]] = []
    for index, path in enumerate(paths):
        if index == 0:
            arms.append((f"if {_text(conditions[0])} ", path))
        elif index < len(conditions):
            keyword = "else " if conditions[index] == "else" else f"elif {_text(conditions[index])} "
            arms.append((keyword, path))
        elif not implicit_empty:
            arms.append(("otherwise ", path))
    return _with_arms(arms, format_span(branch.span), indent)


def _with_arms(arms: list[tuple[str, Block]], span: str, indent: str) -> list[str]:
    lines: list[str] = []
    current = indent
    for head, body in arms:
        opening, body_lines = _braced(body, indent)
        if body_lines:
            lines.append(current + head + opening)
            lines.extend(body_lines[:-1])
            current = body_lines[-1] + " "
        else:
            current += head + opening + " "
    lines.append(current + span)
    return lines


def _method(keyword: str, name: str | None, params: Sequence[Param], span: Span, body: list[str], indent: str) -> list[str]:
    title = keyword if name is None else f"{keyword} {_text(name)}"
    head = f"{indent}{title}({format_params(params)}) {format_span(span)} "
    if not body:
        return [head + "{}"]
    return [head + "{", *body, indent + "}"]


def _init(init: Init, indent: str) -> list[str]:
    body = [indent + INDENT + _binding(binding) for binding in init.bindings]
    return _method("init", None, init.params, init.span, body, indent)


def _forward(forward: Forward, indent: str, keyword: str = "forward") -> list[str]:
    body = _block(forward.body, indent + INDENT)
    name = None if keyword == "forward" and forward.name == "forward" else forward.name
    return _method(keyword, name, forward.params, forward.span, body, indent)


def format_architecture(arch: Architecture) -> str:
    """An architecture as a `model` block (ends with a newline)."""
    head = f"model {_text(arch.name)}({_texts(arch.bases)}) {format_span(arch.span)} "
    body: list[str] = []
    if arch.init is not None:
        body += _init(arch.init, INDENT)
    if arch.forward is not None:
        body += _forward(arch.forward, INDENT)
    if not body:
        return head + "{}\n"
    return "\n".join([head + "{", *body, "}"]) + "\n"


def _problem(problem: Problem) -> str:
    parts = ["problem", problem.severity.value, quote_string(problem.message)]
    if problem.span is not None:
        parts.append(format_span(problem.span))
    if problem.code is not None:
        parts.append("code " + _text(problem.code))
    if problem.path is not None:
        parts.append("path " + _text(problem.path))
    return " ".join(parts)


def format_module_file(mf: ModuleFile) -> str:
    """A module file: its path, models, functions and problems."""
    chunks: list[str] = []
    if mf.path is not None:
        chunks.append(f"file {_text(mf.path)}\n")
    chunks += [format_architecture(arch) for arch in mf.architectures]
    chunks += ["\n".join(_forward(fn, "", keyword="function")) + "\n" for fn in mf.functions]
    if mf.problems:
        chunks.append("".join(_problem(problem) + "\n" for problem in mf.problems))
    return "\n".join(chunks)


# --------------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------------


def _pvar(name: str) -> str:
    if not IDENT_RE.fullmatch(name):
        raise ValueError(f"pattern variable name {name!r} is not an identifier")
    return "$" + name


def format_pvalue(value: PValue) -> str:
    """A pattern value: `$x`, `_`, or a literal (bare when it reads back unchanged)."""
    if isinstance(value, PVar):
        return _pvar(value.name)
    if isinstance(value, PAny):
        return "_"
    return _text(value.text)


def _pargs(args: Sequence[PValue], kwargs: Sequence[PKwarg], extra: bool) -> str:
    parts = [format_pvalue(arg) for arg in args]
    parts += [f"{_ident(kw.name)}={format_pvalue(kw.value)}" for kw in kwargs]
    if extra:
        parts.append("...")
    return ", ".join(parts)


def _is_bare_name(text: str) -> bool:
    return bool(NAME_RE.fullmatch(text)) and text not in keywords()


def _alt(kind: OpKind, target: str) -> str:
    if kind is OpKind.FUNCTION and _is_bare_name(target):
        return target
    if kind is OpKind.MODULE and target.startswith("$") and IDENT_RE.fullmatch(target[1:]):
        return target
    if kind is OpKind.METHOD and _is_bare_name(target):
        return "." + target
    if kind is OpKind.OPERATOR and BINOP_RE.fullmatch(target):
        return target
    return f"{kind.value} {_op_target(target)}"


def format_step(step: OpPattern) -> str:
    """One forward pattern step, in the most natural form that reads back as the same value."""
    outputs = ", ".join(format_pvalue(out) for out in step.outputs)
    prefix = ("? " if step.optional else "") + (f"{outputs} = " if step.outputs else "")
    if not step.targets:
        raise ValueError("a forward pattern step needs at least one target")
    args = _pargs(step.args, step.kwargs, step.extra_args)
    if len(step.targets) > 1:
        alts = " | ".join(_alt(kind, target) for kind, target in step.targets)
        return f"{prefix}({alts})({args})"
    kind, target = step.targets[0]
    if kind is OpKind.FUNCTION and _is_bare_name(target):
        return f"{prefix}{target}({args})"
    if kind is OpKind.MODULE and target.startswith("$") and IDENT_RE.fullmatch(target[1:]):
        return f"{prefix}{target}({args})"
    if kind is OpKind.METHOD and step.args and isinstance(step.args[0], PVar) and _is_bare_name(target):
        rest = _pargs(step.args[1:], step.kwargs, step.extra_args)
        return f"{prefix}{format_pvalue(step.args[0])}.{target}({rest})"
    binary = (BINOP_RE.fullmatch(target) or target == "|") and len(step.args) == 2
    if kind is OpKind.OPERATOR and binary and not step.kwargs and not step.extra_args:
        return f"{prefix}{format_pvalue(step.args[0])} {target} {format_pvalue(step.args[1])}"
    return f"{prefix}{kind.value} {_op_target(target)}({args})"


def format_ctor_pattern(pattern: CtorPattern) -> str:
    """`callee[lookup](args)` or `(A | B)[lookup](args)` for alternatives sharing the arguments."""
    if not pattern.callees:
        raise ValueError("a constructor pattern needs at least one callee")
    callees = [_text(callee) for callee in pattern.callees]
    out = callees[0] if len(callees) == 1 else "(" + " | ".join(callees) + ")"
    if pattern.lookup is not None:
        out += f"[{format_pvalue(pattern.lookup)}]"
    if pattern.args or pattern.kwargs or not pattern.extra_args or pattern.lookup is None:
        out += f"({_pargs(pattern.args, pattern.kwargs, pattern.extra_args)})"
    return out


def _binding_pattern(pattern: BindingPattern) -> str:
    return f"{_pvar(pattern.var)} = {format_ctor_pattern(pattern.ctor)}"


def _guard(guard: Guard) -> str:
    return f"{guard.kind.value}({', '.join(format_pvalue(arg) for arg in guard.args)})"


def _target(target: Target, indent: str) -> list[str]:
    inner = indent + INDENT
    lines = [f"{indent}target {_text(target.name)} {{", f"{inner}kernel {quote_string(target.kernel)}"]
    lines.append(f"{inner}devices {_texts(target.devices)}".rstrip())
    if target.packages:
        lines.append(f"{inner}packages {_texts(target.packages)}")
    if target.torch is not None:
        lines.append(f"{inner}torch {quote_string(target.torch)}")
    if target.preferred:
        lines.append(f"{inner}preferred")
    return [*lines, indent + "}"]


def _section(keyword: str, items: list[str], indent: str) -> list[str]:
    if not items:
        return [f"{indent}{keyword} {{}}"]
    return [f"{indent}{keyword} {{", *(indent + INDENT + item for item in items), indent + "}"]


def _replacement(replacement: Replacement, indent: str) -> list[str]:
    inner = indent + INDENT
    lines: list[str] = []
    if replacement.forward is not None:
        lines.append(f"{inner}forward {fence(replacement.forward, inner + INDENT, close=inner)}")
    for var, code in replacement.init:
        lines.append(f"{inner}init {_pvar(var)} {fence(code, inner + INDENT, inline=True)}")
    for module in replacement.imports:
        lines.append(f"{inner}import {quote_string(module)}")
    head = f"{indent}rewrite {_text(replacement.strategy)}"
    if not lines:
        return [head]
    return [head + " {", *lines, indent + "}"]


def _example(example: Example, indent: str) -> str:
    inner = indent + INDENT
    kind = "match" if example.should_match else "nomatch"
    out = f"{indent}example {kind} {fence(example.code, inner, 'python', close=indent)}"
    if example.expected is not None:
        out += f" => {fence(example.expected, inner, 'python', close=indent)}"
    if example.target is not None:
        out += f" for {_text(example.target)}"
    return out


def format_rule(rule: Rule) -> str:
    """A rule as a `rule` block (ends with a newline); `path` and spans are not part of the text."""
    indent = INDENT
    rule_id = rule.id if RULE_ID_RE.fullmatch(rule.id) and rule.id not in keywords() else quote(rule.id)
    lines = [
        f"rule {rule_id} {{",
        f"{indent}family {rule.family}",
        f"{indent}title {quote_string(rule.title)}",
        f"{indent}message {quote_string(rule.message)}",
        f"{indent}severity {rule.severity.value}",
        f"{indent}scope {rule.scope}",
    ]
    if rule.family < 0:
        raise ValueError(f"family {rule.family} cannot be negative")
    if not IDENT_RE.fullmatch(rule.scope):
        raise ValueError(f"scope {rule.scope!r} is not a name")
    for target in rule.targets:
        lines += _target(target, indent)
    if rule.init:
        lines += _section("init", [_binding_pattern(p) for p in rule.init], indent)
    lines += _section("forward", [format_step(step) for step in rule.forward], indent)
    if rule.guards:
        lines += _section("where", [_guard(guard) for guard in rule.guards], indent)
    if rule.replacement is not None:
        lines += _replacement(rule.replacement, indent)
    if rule.docs:
        lines.append(f"{indent}docs {fence(rule.docs, indent + INDENT, close=indent)}")
    lines += [_example(example, indent) for example in rule.examples]
    return "\n".join([*lines, "}"]) + "\n"


def format_rules(rules: Sequence[Rule]) -> str:
    """Several rules as one rule file."""
    return "\n".join(format_rule(rule) for rule in rules)
