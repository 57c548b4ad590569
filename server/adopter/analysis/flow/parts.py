"""The interface the four parts of one flow analysis call each other through.

The flow analysis of a function is split by what it reads (`forward.py` says which part reads what):
expressions (`values.ExpressionFlow`), calls (`calls.CallFlow`), statements (`statements.StatementFlow`)
and control flow (`control.ControlFlow`). They recurse into each other: an expression may be a call, an
inlined call has a body of statements, an `if` holds statements, a statement holds expressions. Each part
implements one of the classes below and holds the others typed as these classes only, so no part module
imports another part's class (`control` and `statements` import module-level helpers of `calls`, which
imports neither): the import graph has no cycle. `FlowAnalysis` (`forward.py`)
builds the parts and links them; nothing else does.

Plain base classes rather than `typing.Protocol`: mypyc (the native build) compiles a call through a base
class into a direct virtual call, where a protocol would fall back to a generic Python call.
"""

from __future__ import annotations

from tree_sitter import Node

from adopter.analysis.flow.state import EnvVal
from adopter.analysis.parse.source import SourceText
from adopter.dsl.types import Kwarg, Value


class Expressions:
    """Evaluates an expression of the current frame: emits the ops it performs, returns its value."""

    src: SourceText  # the file being read (a base's, while its method is inlined: `flow.foreign`)

    def value(self, node: Node, outs: tuple[str, ...] | None = None) -> EnvVal:
        """The value `node` yields; `outs` are the names the caller binds it to, when it binds any."""
        raise NotImplementedError

    def index(self, node: Node) -> Value:
        """The value of a subscript's index (`x[i]`, `x[a:b]`)."""
        raise NotImplementedError


class Calls:
    """Evaluates a call of the current frame: emits its op, or inlines a same-file callee's body."""

    def call(self, node: Node, outs: tuple[str, ...] | None) -> EnvVal:
        raise NotImplementedError

    def inline(self, function: Node, label: str, node: Node, outs: tuple[str, ...] | None,
               call_args: tuple[list[Value], list[Kwarg]]) -> EnvVal:
        """A same-file function called with values already evaluated (`map(f, (q, k))`)."""
        raise NotImplementedError


class Statements:
    """Walks a body of the current frame, binding names and emitting ops."""

    src: SourceText
    control: Control

    def run(self, stmts: list[Node]) -> None:
        """Walk `stmts` until they end or the current path stops (a `return` or `raise`)."""
        raise NotImplementedError


class Control:
    """Walks `if` statements and loops of the current frame into `Branch` and `Loop` statements."""

    src: SourceText

    def branch(self, stmt: Node, rest: list[Node]) -> bool:
        """The `if` at `stmt` as a `Branch`; `rest` are the statements after it in the same body. True
        when the branch walked `rest` itself (see `ControlFlow.branch`)."""
        raise NotImplementedError

    def loop(self, stmt: Node) -> None:
        raise NotImplementedError
