"""Shared machinery of families 1–3: serve an attention class through a synthesized SDPA subclass.

The rewrite adds, once per file, `class Sdpa<Base>(<Base>)` whose `forward` uses
`torch.nn.functional.scaled_dot_product_attention` and falls back to `super().forward` where the
kernel cannot express the eager computation, then rebinds the matched submodule to that subclass.
The subclass defines no parameters of its own, so `state_dict()` keys are unchanged and a checkpoint
of the original loads with `strict=True`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from adopter.dsl.types import Binding, Ctor
from adopter.parsed import IMPORT_KINDS, ParsedText, Unit
from adopter.synth.registry import ImportEdit, SynthContext

# Synthesized classes carry this phrase in their docstring: a second finding in the same file (the
# GPT-2 block binds two attentions) reuses the class instead of adding another copy.
MARKER = "Added by Adopter (rule "


@dataclass(frozen=True, slots=True)
class SubclassSpec:
    """What one attention family needs from its base class, and the subclass it synthesizes."""

    base: str  # the class name the rule matches, e.g. "BertSelfAttention"
    prefix: str  # name of the subclass = prefix + base
    template: str  # class source with {name}, __BASE__, __RULE__, __TORCH__ placeholders
    forward_params: tuple[str, ...]  # the base forward's parameter names the template relies on
    methods: tuple[str, ...] = ()  # helper methods of the base the template calls
    attributes: tuple[str, ...] = ()  # attributes (submodules, buffers, settings) the template reads


def rewrite_with_subclass(ctx: SynthContext, spec: SubclassSpec) -> None:
    """Record the edits of a family 1–3 fix for `ctx.finding`, or decline with the reason."""
    binding = _matched_binding(ctx, spec.base)
    if binding is None:
        ctx.decline(f"no __init__ binding of a {spec.base} submodule belongs to this match")
        return
    statement = ctx.statement_text(binding.span)
    callee = _callee_text(statement, spec.base)
    if callee is None:
        ctx.decline(
            f"the {spec.base} constructor is not written in the binding itself "
            f"(`{statement.splitlines()[0].strip()}`); rebind it by hand to the SDPA subclass"
        )
        return
    parsed = ctx.text_index
    try:
        parsed.module([])  # a text read whole raises here when it does not parse
    except SyntaxError as err:
        ctx.decline(f"the file does not parse ({err.msg}, line {err.lineno})")
        return
    problem = _base_problem(parsed, callee, spec)
    if problem is not None:
        ctx.decline(problem)
        return
    name = _existing_subclass(parsed, callee)
    if name is None:
        torch_name = torch_module_name(ctx)
        code = (
            spec.template.replace("__BASE__", callee)
            .replace("__RULE__", ctx.rule.id)
            .replace("__TORCH__", torch_name)
        )
        local_base = callee.rsplit(".", 1)[-1]
        defined_here = any(isinstance(n, ast.ClassDef) and n.name == local_base
                           for n in parsed.top_level(lambda unit: unit.defines("class_definition", local_base)))
        name = ctx.add_module_code(
            code, name=spec.prefix + local_base, after_class=local_base if defined_here else None
        )
    ctx.replace_binding(binding.span, _rebind(statement, callee, name))


def torch_module_name(ctx: SynthContext) -> str:
    """The local name of the `torch` module, importing it when the file binds no name for it.

    `from torch import nn` does not bind `torch`, so a plain `import torch` is added then (the
    registry's collision check would pick an alias just because the word appears in the file).
    """
    parsed = ctx.text_index
    for (module, name), local in parsed.imports().items():
        if module == "torch" and name is None:
            return local.split(".")[0] if local.startswith("torch.") else local
    try:
        nodes = parsed.nodes(parsed.module())
    except SyntaxError:
        return ctx.add_import("torch")
    bound = (
        {n.id for n in nodes if isinstance(n, ast.Name)}
        | {n.arg for n in nodes if isinstance(n, ast.arg)}
        | {
            n.name
            for n in nodes
            if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        }
        | {
            a.asname or a.name.split(".")[0]
            for n in nodes
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
    )
    if "torch" in bound:
        return ctx.add_import("torch")
    if not any(e.module == "torch" and e.name is None for e in ctx.edits.imports):
        ctx.edits.imports.append(ImportEdit("torch", None, None))
    return "torch"


def _matched_binding(ctx: SynthContext, base: str) -> Binding | None:
    """The binding of the match whose constructor is `base` (qualified or not)."""
    for binding in ctx.finding.match.bindings:
        # The constructor itself, or an item of a container (`nn.ModuleList([Base(c) for _ in ...])`).
        stack = [binding.value] if isinstance(binding.value, Ctor) else []
        while stack:
            ctor = stack.pop()
            if ctor.callee.rsplit(".", 1)[-1] == base:
                return binding
            stack.extend(ctor.items)
    return None


def _callee_text(statement: str, base: str) -> str | None:
    """The constructor as written in the binding statement (`BertSelfAttention`, `mb.BertSelfAttention`)."""
    found = re.search(rf"(?<![\w.])((?:[A-Za-z_]\w*\.)*{re.escape(base)})\s*\(", statement)
    return found.group(1) if found else None


def _rebind(statement: str, callee: str, name: str) -> str:
    """The binding statement with its constructor replaced by the subclass."""
    return re.sub(rf"(?<![\w.]){re.escape(callee)}(?=\s*\()", name, statement, count=1)


def _existing_subclass(parsed: ParsedText, callee: str) -> str | None:
    """The name of a subclass of `callee` that an earlier fix synthesized in this file."""

    def may_be(unit: Unit) -> bool:  # a docstring holding the marker: in the text, or written escaped
        text = "\n".join(parsed.lines[unit.start : unit.end + 1])
        return unit.defines("class_definition") and (MARKER in text or "\\" in text)

    for node in parsed.top_level(may_be):
        if (
            isinstance(node, ast.ClassDef)
            and [ast.unparse(b) for b in node.bases] == [callee]
            and MARKER in (ast.get_docstring(node) or "")
        ):
            return node.name
    return None


def _base_problem(parsed: ParsedText, callee: str, spec: SubclassSpec) -> str | None:
    """Why the base class is not the one the template was written for, or None when it is."""
    local = callee.rsplit(".", 1)[-1]
    for node in parsed.top_level(lambda unit: unit.defines("class_definition", local)):
        if isinstance(node, ast.ClassDef) and node.name == local:
            return _class_problem(node, spec)
    for node in parsed.top_level(lambda unit: not IMPORT_KINDS.isdisjoint(unit.kinds)):
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == local for a in node.names):
            if "transformers" in (node.module or "") or node.level > 0:
                return None
            return f"{local} is imported from {node.module}, not transformers: its interface is unknown"
        if isinstance(node, ast.Import) and "." in callee:
            root = callee.split(".", 1)[0]
            if any(
                (a.asname or a.name.split(".")[0]) == root and "transformers" in a.name for a in node.names
            ):
                return None
    return f"the definition of {local} is not in this file nor imported from transformers"


def _class_problem(node: ast.ClassDef, spec: SubclassSpec) -> str | None:
    """Check that a class defined in the file has the forward signature, methods and attributes used."""
    methods = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
    forward = methods.get("forward")
    if forward is None:
        return f"{node.name} defines no forward of its own"
    params = tuple(a.arg for a in forward.args.posonlyargs + forward.args.args)
    if params != spec.forward_params or forward.args.vararg or forward.args.kwonlyargs:
        return (
            f"{node.name}.forward takes ({', '.join(params)}), not the transformers signature "
            f"({', '.join(spec.forward_params)}) the SDPA subclass is written for"
        )
    missing = [m for m in spec.methods if m not in methods]
    init = methods.get("__init__")
    assigned = set(_assigned_attributes(init)) if init is not None else set()
    missing += [a for a in spec.attributes if a not in assigned]
    if missing:
        return f"{node.name} lacks {', '.join(missing)}, which the SDPA subclass relies on"
    return None


def _assigned_attributes(init: ast.FunctionDef) -> Iterator[str]:
    """Attributes `__init__` sets: `self.x = ...` targets and registered buffers/parameters."""
    for node in ast.walk(init):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_buffer", "register_parameter", "add_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value
        for target in targets:
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    yield sub.attr
