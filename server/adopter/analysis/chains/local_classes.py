"""A factory function's own local names for layer classes, read where its `nn.Sequential(...)` calls them.

`def MBConv(dim_in, dim_out): batchnorm_klass = MaybeSyncBatchnorm2d(); return nn.Sequential(nn.Conv2d(...),
batchnorm_klass(hidden), ...)` (lucidrains' metnet3-pytorch): the item `batchnorm_klass(hidden)`
builds the class the local names, as the same spelling does in an `__init__` or a method, whose locals
`InitAnalysis` already reads (a same-file helper returning a class, `partial(...)`, an alias, a conditional
of such). Only names bound one way on every path: a choice under an `if`, a conditional expression or
`a or b` is left to the callers, whose calls the helper reading decides (`InitAnalysis._helper_locals`:
gigagan-pytorch's `proj = partial(nn.Conv2d, kernel_size=1) if channel_first else nn.Linear`). A name also
bound at or after the Sequential (later in the function, or later in a loop that repeats it) is left to the
parameters' defaults alone, as before: which binding the item sees would then depend on the pass.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.names.symbols import dotted_text
from adopter.analysis.parse.source import Field, SourceText
from adopter.analysis.scope.bindings import InitAnalysis
from adopter.analysis.scope.classes import ClassTable

_NESTED = ("function_definition", "class_definition", "decorated_definition", "lambda")


class LocalClasses:
    """The reader of `function`'s locals, for the Sequential calls whose items call a local name."""

    def __init__(self, function: Node, name: str, src: SourceText, table: ClassTable) -> None:
        self.function = function
        self.name = name
        self.src = src
        self.table = table
        self._bound: dict[str, list[Node]] | None = None
        self._reader: InitAnalysis | None = None

    def reader_for(self, call: Node) -> InitAnalysis | None:
        """A reader that knows the function's locals when an item of `call` calls a local name every binding
        of which comes before `call`; else None (the caller's defaults reader)."""
        args = call.child_by_field_id(Field.ARGUMENTS)
        callees = [dotted_text(f, self.src) for a in (args.named_children if args is not None else ())
                   if a.type == "call" and (f := a.child_by_field_id(Field.FUNCTION)) is not None
                   and f.type == "identifier"]
        bound = self._bindings()
        used = [c for c in callees if c is not None and c in bound]
        if not used or not all(self._before(b, call) and self._unchosen(b) for c in used for b in bound[c]):
            return None
        if self._reader is None:
            self._reader = InitAnalysis(self.name, self.table, self.src)
            self._reader.read_locals(self.function, {}, method=False)
        return self._reader

    def _bindings(self) -> dict[str, list[Node]]:
        """Each plain name the function's body assigns (nested definitions excluded) -> its assignments."""
        if self._bound is None:
            self._bound = {}
            body = self.function.child_by_field_id(Field.BODY)
            stack = list(body.named_children) if body is not None else []
            while stack:
                node = stack.pop()
                if node.type in _NESTED:
                    continue
                if node.type in ("assignment", "augmented_assignment", "named_expression", "for_statement"):
                    left = node.child_by_field_id(Field.LEFT) or node.child_by_field_id(Field.NAME)
                    for leaf in _names(left) if left is not None else ():
                        self._bound.setdefault(self.src.text(leaf), []).append(node)
                stack.extend(node.named_children)
        return self._bound

    def _before(self, binding: Node, call: Node) -> bool:
        """Whether `binding` ends before `call` in the source: then, each time `call` runs, the binding it
        sees is one of those before it (a loop around both rebinds the name before each call again)."""
        return binding.end_byte <= call.start_byte


    def _unchosen(self, binding: Node) -> bool:
        """Whether `binding` binds one value on every path: not under an `if`, not a conditional expression or
        `a or b`. A choice on the factory's parameters is its callers' to make (`InitAnalysis._helper_locals`
        reads it with what each call passes); a helper that chooses at run time (`return nn.SyncBatchNorm if
        distributed else nn.BatchNorm2d`) is read as the base reads `helper(...)(c)`."""
        value = binding.child_by_field_id(Field.RIGHT) if binding.type == "assignment" else None
        while value is not None and value.type == "parenthesized_expression" and value.named_child_count == 1:
            value = value.named_children[0]
        if value is None or value.type in ("conditional_expression", "boolean_operator"):
            return False
        node = binding.parent
        while node is not None and node != self.function:
            if node.type in ("if_statement", "elif_clause", "else_clause", "match_statement", "try_statement"):
                return False
            node = node.parent
        return True


def _names(target: Node) -> list[Node]:
    """The identifiers a target binds (`a`, `a, b`, `(a, b)`; not `self.a`, `a[i]`)."""
    if target.type == "identifier":
        return [target]
    if target.type in ("pattern_list", "tuple_pattern", "list_pattern"):
        return [n for c in target.named_children for n in _names(c)]
    return []
