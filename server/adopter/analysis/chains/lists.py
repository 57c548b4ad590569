"""Layers appended to a list in a loop and then run as `nn.Sequential(*layers)`, read as chains.

MLP and conv-stack builders write

    layers = []
    for d_in, d_out in zip(dims[:-1], dims[1:]):
        layers.append(nn.Linear(d_in, d_out))
        layers.append(nn.BatchNorm1d(d_out))
        layers.append(nn.ReLU())
    self.net = nn.Sequential(*layers)

(or `layers += [nn.Linear(...), nn.BatchNorm1d(...), nn.ReLU()]`, `layers.extend([...])`). Within one
iteration the items follow each other in the Sequential, so each run of items added in order in one loop
body is a chain (`adopter.analysis.chains.sequential_classes.chain_of`: bindings with the constructors' own spans,
reported without an automatic fix). An addition under a condition the parameters' defaults decide (`if bn:`
with `bn=True`) is read on their branch; a nested loop, `with` or `try` that adds cuts the run. A condition
they leave open (`if v == "M": layers += [pool] else: layers += [conv, bn, relu]`, the VGG builders of
super-gradients and mmagic; `layers.append(linear)` then `if batch_norm and not bn_only_once:
layers.append(bn)`, fuxictr's `MLP_Block`) is read on each of its paths (one branch, or none without an
`else`): the runs of every path are chains, as a layer bound under a condition is a site on the path that
binds it (the labelling convention, `bench/data/dev2/LABELLING.md`). Nothing pairs across branches, nor
across iterations. Lists filled without a loop are not read here: the canonical pass unrolls `nn.Sequential(*layers)` of those, and
of a list filled in loops in an evident order bound to an attribute nothing indexes (one pass of each loop,
`InitAnalysis.unrolled_lists`), whose chains are then not reported here as well.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tree_sitter import Node

from adopter.analysis.canonical.spellings import SEQUENTIAL
from adopter.analysis.chains.default_branches import clauses, taken_block
from adopter.analysis.chains.list_items import added_items
from adopter.analysis.chains.sequential_classes import chain_of
from adopter.analysis.names.symbols import ModuleSymbols, dotted_text
from adopter.analysis.parse.code_text import code_bytes
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.dsl.types import Architecture

MIN_CHILDREN = 2
MAX_CHAINS = 32  # per function: a bound on generated code
MAX_PATHS = 16  # paths through the `if`s of one loop body read together: a bound on the runs
_NESTED = ("function_definition", "class_definition", "decorated_definition", "lambda")
_LOOPS = ("for_statement", "while_statement")
_LITERALS = ("string", "integer", "float", "true", "false", "none")
_ENDS = ("continue_statement", "break_statement", "return_statement", "raise_statement")
_PARENT_INIT = re.compile(r"super\((?:\w+,self)?\)\.__init__")


def splatted_lists(function: Node, src: SourceText, symbols: ModuleSymbols, parent_init: bool = False) -> list[str]:
    """The local names run as `nn.Sequential(*name)` in `function` (nested definitions excluded); with
    `parent_init` (`function` is the `__init__` of an `nn.Sequential` subclass) also those it hands to the
    Sequential as `super().__init__(*name)`."""
    body = function.child_by_field_id(Field.BODY)
    raw = code_bytes(src, body).replace(b" ", b"") if body is not None else b""
    if body is None or (b"Sequential(*" not in raw and not (parent_init and b".__init__(*" in raw)):
        return []
    names: list[str] = []
    stack = list(body.named_children)
    while stack:
        node = stack.pop()
        if node.type in _NESTED:
            continue
        if node.type == "call":
            func = node.child_by_field_id(Field.FUNCTION)
            dotted = dotted_text(func, src) if func is not None else None
            args = node.child_by_field_id(Field.ARGUMENTS)
            parts = [a for a in (args.named_children if args is not None else ()) if a.type != "comment"]
            sequential = dotted is not None and dotted.endswith("Sequential") and symbols.qualify(dotted) == SEQUENTIAL
            if parent_init and func is not None and not sequential:
                sequential = _PARENT_INIT.fullmatch(src.text(func).replace(" ", "")) is not None
            if sequential and len(parts) == 1 and parts[0].type == "list_splat":
                inner = parts[0].named_children[0] if parts[0].named_child_count else None
                if inner is not None and inner.type == "identifier" and src.text(inner) not in names:
                    names.append(src.text(inner))
        stack.extend(node.named_children)
    return names


def list_chains(function: Node, name: str, src: SourceText, symbols: ModuleSymbols,
                reader: InitAnalysis, parent_init: bool = False) -> tuple[Architecture, ...]:
    """The chains of layers added to a list in one loop body of `function`, for each list the function runs
    as `nn.Sequential(*list)` (or hands to its Sequential base, `parent_init`: see `splatted_lists`);
    `reader` reads the constructors (its locals are the function's)."""
    lists = splatted_lists(function, src, symbols, parent_init)
    if not lists:
        return ()
    chains: list[Architecture] = []
    body = function.child_by_field_id(Field.BODY)
    loops: list[Node] = []
    stack = list(body.named_children) if body is not None else []
    while stack:
        node = stack.pop(0)
        if node.type in _NESTED:
            continue
        if node.type in _LOOPS:
            loops.append(node)
        stack.extend(node.named_children)
    for loop in loops:
        block = loop.child_by_field_id(Field.BODY)
        if block is None:
            continue
        for target in lists:
            if target in reader.unrolled_lists:
                continue  # a Sequential binding holds one pass of its loops: the forward's call shows its layers
            for run in _runs(block, target, src, function.child_by_field_id(Field.BODY), reader.defaults):
                if len(run) >= MIN_CHILDREN and len(chains) < MAX_CHAINS:
                    chains.append(chain_of(run, name, src, reader, function, run[0]))
    return tuple(chains)


def _runs(block: Node, target: str, src: SourceText, body: Node | None = None,
          defaults: Mapping[str, str | None] | None = None) -> list[list[Node]]:
    """Runs of items added to `target` by consecutive statements of `block` on one path through it (other
    statements are skipped; a compound statement that adds to it cuts the run, unless it is an `if`: the branch
    the parameters' `defaults` decide is read in place, `adopter.analysis.chains.default_branches`, and an `if`
    they leave open is read on each of its paths, `_paths`; `body` is the function's body). Each run once."""
    runs: list[list[Node]] = []
    seen: set[tuple[int, ...]] = set()
    going, ended = _paths(block, target, src, body, defaults)
    for path in going + ended:
        run: list[Node] = []
        for item in [*path, None]:
            if item is not None:
                run.append(item)
                continue
            key = tuple(n.start_byte for n in run)
            if run and key not in seen:
                seen.add(key)
                runs.append(run)
            run = []
    return runs


def _paths(block: Node, target: str, src: SourceText, body: Node | None,
           defaults: Mapping[str, str | None] | None) -> tuple[list[list[Node | None]], list[list[Node | None]]]:
    """The items `block` adds to `target` on each path through its `if`s (None: a cut), as the paths that run on
    past it and those that end in it (`continue`, `break`, `return`, `raise`). An `if` the defaults leave open
    (`if v == "M": pool else: [conv, bn, relu]`, VGG's builders; `if batch_norm and not bn_only_once:
    append(bn)` after `append(linear)`) runs one branch, or none without an `else`, so each alternative continues
    the path that reaches it: the layers one path adds follow each other. Past `MAX_PATHS` the alternatives are
    read apart, cut from what comes before and after."""
    paths: list[list[Node | None]] = [[]]
    ended: list[list[Node | None]] = []
    for stmt in block.named_children:
        if stmt.type == "comment":
            continue
        if stmt.type in _ENDS:
            return [], ended + [[*path, None] for path in paths]
        items = added_items(stmt, target, src)
        if items is not None:
            for path in paths:
                path.extend(items)
            continue
        if stmt.type == "expression_statement" or target.encode() not in code_bytes(src, stmt):
            continue
        taken = taken_block(stmt, body, src, defaults) if body is not None and defaults else None
        if isinstance(taken, str):
            continue  # no branch runs with the defaults: nothing is added
        branches = [taken] if taken is not None else _branches(stmt)
        if not branches or (taken is None and body is not None and _literal_bound(stmt, body, src)):
            # a loop, `with` or `try` that adds: not read; an `if` whose test reads a name the function binds to
            # a literal (`norm = "ln"` before `if norm == "ln": ... elif norm == "bn": ...`): its paths are
            # decided by code this does not evaluate, one may never run: cut, as before
            for path in paths:
                path.append(None)
            continue
        going: list[list[Node | None]] = []
        stopping: list[list[Node | None]] = []
        for branch in branches:
            on, off = _paths(branch, target, src, body, defaults)
            going += on
            stopping += off
        if taken is None and not any(c.type == "else_clause" for c in stmt.children_by_field_name("alternative")):
            going.append([])  # no branch taken
        if len(paths) * (len(going) + len(stopping)) > MAX_PATHS:
            ended.extend([None, *alt, None] for alt in going + stopping)
            for path in paths:
                path.append(None)
            continue
        ended += [[*path, *alt] for path in paths for alt in stopping]
        paths = [[*path, *alt] for path in paths for alt in going]
    return paths, ended


def _literal_bound(stmt: Node, body: Node, src: SourceText) -> bool:
    """Whether a name the tests of `if_statement` `stmt` read is assigned a literal anywhere in `body`."""
    tests = [stmt.child_by_field_id(Field.CONDITION)] + [
        c.child_by_field_id(Field.CONDITION) for c in stmt.children_by_field_name("alternative")
        if c.type == "elif_clause"]
    names: set[str] = set()
    stack = [t for t in tests if t is not None]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            names.add(src.text(n))
        stack.extend(n.named_children)
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "assignment":
            left, right = n.child_by_field_id(Field.LEFT), n.child_by_field_id(Field.RIGHT)
            if (left is not None and right is not None and left.type == "identifier" and src.text(left) in names
                    and right.type in _LITERALS):
                return True
        if n.type not in _NESTED:
            stack.extend(n.named_children)
    return False


def _branches(stmt: Node) -> list[Node]:
    """The blocks of `if_statement` `stmt` (its body, each `elif`'s and the `else`'s); none for another statement."""
    if stmt.type != "if_statement":
        return []
    return [block for _, _, block in clauses(stmt) if block is not None]
