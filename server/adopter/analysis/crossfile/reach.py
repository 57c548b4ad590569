"""Reach across files: what a class, function or table imported from another module computes.

A constructor in `__init__` whose callee is imported (`self.act = FP32SiLU()`, `get_act_layer(act)`,
`ACT2FN[config.hidden_act]`, `LayerNorm2d(dim)`) is resolved to the file and line that define it: read
straight from the module's file when it leaves no doubt (`direct`: a plain module that binds the name
once), with jedi's project-aware inference otherwise (the workspace and the installed packages; files
are parsed, never imported or run). That definition is then read (Python's `ast`, never executed) into a frozen `Summary`:

- a *layer*: a subclass of a torch layer that does not override `forward` (`class LayerNorm2d(nn.LayerNorm)`),
  or a module whose `forward` is one elementwise function of its input with casts around it
  (`F.silu(x.float()).to(x.dtype)` is SiLU) — the torch layer it computes; or a class whose forward is a
  linear map of its input by its own (out, in) weight (`linear_forward`: `F.linear(x, quantise(self.weight))`),
  read as `nn.Linear`, its sites without an automatic fix;
- a *registry*: a lookup table of layer classes by name (`{"relu": nn.ReLU, ...}`, or entries added by
  module-level calls such as `Act.add_factory_class("gelu", nn.GELU)`);
- a *factory*: a function that builds the entry of a registry named by its first argument;
- a *config*: the defaults its `__init__` gives each field, where they are evident statically
  (`hidden_act="gelu"`, or `act_info[-1]` of `feed_forward_proj.split("-")`).

Builders are read per call (`builders`), with the call's arguments and the caller's parameter defaults:
a function that returns one torch layer on every path the call leaves open (`create_conv2d(..., 1)` is
`nn.Conv2d`; with the other open paths building the package's own classes, `create_conv2d(..., kernel_size)`
of a required `kernel_size` may be either: two conditional bindings), the `nn.Sequential` a function returns (`conv_bn(...)`), and the items a subclass of
`nn.Sequential` hands to `super().__init__` (`Conv2dNormActivation(...)` is `[Conv2d, BatchNorm2d, ReLU]`).

`CrossFileReach.bind` applies them to one class's `__init__` bindings (the one hook the analysis calls):
a constructor that certainly computes a torch layer becomes that layer's constructor, with `origin`
saying where it came from; anything else stays as written. Results are cached per file and dropped
when that file changes (`changed`). In `deferred` mode (the language server's own reach, fixed when it is
built) a name not resolved yet is queued instead of resolved, so that jedi never costs a keystroke:
`resolve_pending` then runs on another thread and the documents are analysed again.

This module holds the cache and the summaries; its parts: `direct` (definitions read without jedi),
`builders` (what a builder function or Sequential subclass builds for one call),
`jedi_lookup` (jedi), `ast_files` (other files read with the standard library's `ast`), `evaluator`
(constants a config's `__init__` leaves evident), `init_source` (the analysed `__init__`, read for
lookup keys) and `summary` (what is known).
"""

from __future__ import annotations

import ast
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Final

from adopter.analysis.crossfile import reads
from adopter.analysis.crossfile.ast_files import (
    ParsedFile,
    elementwise_layer,
    entry_class,
    imports_of,
    in_stdlib,
    node_at,
    qualify,
    toplevel_of,
)
from adopter.analysis.crossfile.builders import (
    UNKNOWN_VALUE,
    Call,
    built_layer,
    may_hold_sequential,
    possible_layer,
    returned_sequential,
    sequential_items,
)
from adopter.analysis.crossfile.direct import direct_definition
from adopter.analysis.crossfile.eval_norm import EVAL_NORM, eval_norm
from adopter.analysis.crossfile.evaluator import (
    UNKNOWN,
    class_defaults,
    config_defaults,
    getattr_parts,
    literal,
)
from adopter.analysis.crossfile.factories import apply_steps, dict_entries, handed_on, key_steps
from adopter.analysis.crossfile.init_source import InitSource, Scope
from adopter.analysis.crossfile.jedi_lookup import JediLookup
from adopter.analysis.crossfile.linear_forward import LINEAR, LINEAR_FORWARD, linear_forward
from adopter.analysis.crossfile.norm_act import NORM_ACT, norm_then_act
from adopter.analysis.crossfile.passed_fields import passed_fields
from adopter.analysis.crossfile.resolver import ModuleResolver, is_torch_module_class
from adopter.analysis.crossfile.summary import Definition, Summary
from adopter.analysis.crossfile.written_layers import written_layer
from adopter.analysis.names.ast_dotted import dotted_name
from adopter.dsl.types import Binding, Ctor, Expr, Init, Kwarg

MAX_DEPTH = 6


class CrossFileReach:
    """Resolves imported names with jedi and summarises their definitions; thread-safe, cached."""

    def __init__(self, resolver: ModuleResolver, *, deferred: bool = False, root: str | None = None) -> None:
        self.resolver = resolver
        self.deferred: Final = deferred  # set once: the server builds its own deferred reach
        self.root = root
        self._lock = threading.RLock()
        self._files: dict[str, ParsedFile | None] = {}
        # keyed by the name, the folder of a relative import and the file the module is located at from
        # the importing file: two copies of one package (a vendored transformers beside an installed one)
        # name their modules alike, and an answer for one copy must not be given to the other
        self._defs: dict[tuple[str, str, str], tuple[Definition | None, frozenset[str]]] = {}
        self._summaries: dict[tuple[str, str], tuple[Summary | None, frozenset[str]]] = {}
        self._pending: set[tuple[str, str]] = set()
        self._queued = 0  # names queued so far (deferred), counted again when queued again
        # (file, class) -> the class's `__init__` bindings as its subclasses of other files inherit them
        # (`idioms.inherited_layers.read_base`, passed in as `reader`), with the files that reading read
        self._bases: dict[tuple[str, str], tuple[Init | None, frozenset[str]]] = {}
        self.jedi = JediLookup()
        self.resolved = 0  # jedi look-ups done (for tests and benchmarks)

    # -- the hook ------------------------------------------------------------------------------------

    def bind(self, init: Init | None, path: str | None, source: InitSource | None = None) -> Init | None:
        """`init` with each imported constructor that certainly computes a torch layer replaced by it.

        `source` reads `__init__` itself when a lookup key needs it: parameter annotations (`config` ->
        `.configuration_vit.ViTConfig`) and locals (`act = getattr(config, "act", None)`). Never raises:
        a problem leaves the binding as written.
        """
        if init is None or not path:
            return init
        local = self._local_sequentials(init, source)
        if not local and not any(isinstance(b.value, Ctor) and _holds_imported(b.value) for b in init.bindings):
            return init  # the common class: nothing imported to look at, no cost
        path = os.path.abspath(path)
        scope = Scope({p.name: p.default for p in init.params}, source)
        # Only what forward calls (`self.act(...)`) is looked up: `np.prod(...)` stored as a number
        # never sends jedi into numpy.
        called = source.called() if source is not None else None
        out: list[Binding] = []
        changed = False
        for b in init.bindings:
            value = b.value
            if isinstance(value, Ctor) and (called is None or b.attr in called or b.attr[-1:] in ")]"):  # `inline_lookups`
                try:
                    found = self._local_sequential(value, path, scope) if value.callee in local else (
                        self._ctor(value, path, scope, b.condition) if not value.items else (
                            self._items(value, path, scope)))
                except (RecursionError, ValueError, OSError, SyntaxError):
                    found = None
                if found is not None:
                    b = replace(b, value=found)
                    changed = True
                elif (possible := self._possible(value, path, scope)) is not None:
                    # Two bindings, as `self.conv = nn.Conv2d(...) if c else Mixed(...)` written here gives.
                    builds = f"{value.callee.rsplit('.', 1)[-1]}(...) builds {possible.callee}"
                    out.append(replace(b, value=possible, condition=_and(b.condition, builds)))
                    b = replace(b, condition=_and(b.condition, f"not ({builds})"))
                    changed = True
            out.append(b)
        return replace(init, bindings=tuple(out)) if changed else init

    def base_init(self, qualified: str, path: str, depth: int,
                  reader: Callable[[str, str, int], Init | None]) -> tuple[Init | None, str]:
        """The `__init__` bindings of the class `qualified` (as named in file `path`) and where it is defined
        (`Layer (pkg/base.py:6)`), read once per file and class (`reader`: `idioms.inherited_layers.read_base`)."""
        if qualified.startswith("torch.nn."):
            # torch's layers, read from torch's installed `nn.modules` (plain `from .conv import Conv2d`
            # re-exports, followed without jedi: a look-up through `torch.nn`'s star import costs ~0.5 s)
            located = self.resolver.locate("torch.nn.modules", path)
            d = self._follow(located, qualified.rsplit(".", 1)[-1], 0) if located is not None else None
        else:
            d = self.definition(qualified, path)
        if d is None:
            return None, ""
        where = f"{d.name} ({self._where(d)})"
        key = (d.path, d.name)
        with self._lock:
            cached = self._bases.get(key)
        if cached is not None:
            reads.note(cached[1])
            return cached[0], where
        with self._lock:
            queued = self._queued
        with reads.recording() as read:
            init = reader(d.path, d.name, depth)
        read.add(d.path)
        with self._lock:
            if self._queued == queued:  # a reading that queued names (deferred) is read again once resolved
                self._bases[key] = (init, frozenset(read))
        reads.note(read)
        return init, where

    def _items(self, ctor: Ctor, path: str, scope: Scope, depth: int = 0) -> Ctor | None:
        """A container written here (`nn.Sequential(Conv2dNormActivation(...), ...)`) with each imported
        constructor among its items replaced by the torch layer it builds, as `_ctor` replaces one stored alone;
        None when no item changed."""
        if depth > MAX_DEPTH:
            return None
        items: list[Ctor] = []
        changed = False
        for item in ctor.items:
            found = self._items(item, path, scope, depth + 1) if item.items else (
                self._ctor(item, path, scope, None))
            if isinstance(found, Ctor):
                items.append(found)
                changed = True
            else:
                items.append(item)
        return replace(ctor, items=tuple(items)) if changed else None

    def _local_sequentials(self, init: Init, source: InitSource | None) -> frozenset[str]:
        """The constructors' callees that are classes of this file subclassing an imported class that is not
        torch's (`MLPBlock(MLP)`, `MLP` a Sequential subclass of another file): read as that base builds them."""
        if source is None:
            return frozenset()
        out: set[str] = set()
        for b in init.bindings:
            callee = b.value.callee if isinstance(b.value, Ctor) and not b.value.items else ""
            if callee[:1].isupper() and "." not in callee and callee not in out:
                base = source.imported_base(callee)
                if base is not None and _imported(base) and torch_layer(base) is None:
                    out.add(callee)
        return frozenset(out)

    def _local_sequential(self, ctor: Ctor, path: str, scope: Scope) -> Ctor | None:
        """A class of this file subclassing an imported `nn.Sequential` subclass, built here: the torch layers
        it holds as this call builds it (`builders.sequential_items` through its base), else None (as written)."""
        if ctor.lookup is not None:
            return None
        summary = self.summary_of(ctor.callee, path)
        if summary is None or summary.kind != "layer" or summary.layer != "torch.nn.Sequential":
            return None
        items = self._sequential(ctor, summary.definition, path, scope)
        if not items:
            return None
        return Ctor(summary.layer, (), (), tuple(Ctor(i) for i in items),
                    origin=f"{summary.definition.name} ({self._where(summary.definition)})")

    def _ctor(self, ctor: Ctor, path: str, scope: Scope, condition: str | None) -> Ctor | Expr | None:
        if ctor.items or not _imported(ctor.callee):
            return None
        summary = self.summary_of(ctor.callee, path)
        if summary is None:
            return self._unread_lookup(ctor, path, scope)
        where = self._where(summary.definition)
        if summary.kind == "layer" and summary.layer == "torch.nn.Sequential" and ctor.lookup is None:
            items = self._sequential(ctor, summary.definition, path, scope)
            if items is not None:
                return Ctor(summary.layer, (), (), tuple(Ctor(i) for i in items),
                            origin=f"{summary.definition.name} ({where})")
        if summary.kind == "layer" and summary.layer is not None and ctor.lookup is None:
            args, kwargs = ((), ()) if summary.own_init else (ctor.args, ctor.kwargs)
            kwargs = (*kwargs, *(Kwarg(k, Expr(v)) for k, v in summary.layer_kwargs))
            then = _suffix(summary)
            return Ctor(summary.layer, args, kwargs, origin=f"{summary.definition.name} ({where}{then})")
        if summary.kind == "other" and ctor.lookup is None:
            chosen: set[str] = set()
            acts: set[str] = set()  # a BatchNorm-then-activation class built (`create_bn_act(c)`): no fix
            built = self._built(ctor, summary.definition, path, scope, chosen, acts)
            then = NORM_ACT if acts else ""
            if built is not None and chosen:
                # A string argument chose the layer (`get_norm_layer("bn", c)`): the call's arguments are
                # the builder's, not the layer's (as for a registry's entry, none are carried over).
                return Ctor(built, (), (), origin=f"{summary.definition.name} ({where}{then})")
            if built is not None:
                return Ctor(built, ctor.args, ctor.kwargs, origin=f"{summary.definition.name} ({where}{then})")
            items = self._sequential(ctor, summary.definition, path, scope)
            if items is not None:
                return Ctor("torch.nn.Sequential", (), (), tuple(Ctor(i) for i in items),
                            origin=f"{summary.definition.name} ({where})")
        registry: Summary | None = None
        key_text: str | None = None
        if summary.kind == "registry" and ctor.lookup is not None:
            registry, key_text = summary, ctor.lookup
        elif summary.kind == "factory" and summary.registry is not None and ctor.args and ctor.lookup is None:
            registry = self.summary_of(summary.registry, summary.registry_from or summary.definition.path)
            first = ctor.args[0]
            key_text = first.text if isinstance(first, Expr) else getattr(first, "name", None)
        if registry is None or registry.kind != "registry" or key_text is None:
            return None
        key, key_origin = self._key(key_text, path, scope)
        if key is None and condition is not None and condition.strip() == key_text:
            # Built only when the key is set, and the defaults leave it unset: under the default
            # configuration nothing is built here, so it is no layer of any kind.
            written = ", ".join(a.text if isinstance(a, Expr) else getattr(a, "name", "?") for a in ctor.args)
            return Expr(f"{summary.definition.name}({written})")
        if not isinstance(key, str):
            return None
        if summary.kind == "factory" and summary.key_steps:
            key = apply_steps(key, summary.key_steps)
            if key is None:
                return None
        call = f"{summary.definition.name}[{key!r}]" if ctor.lookup is not None else f"{summary.definition.name}({key!r})"
        source = f", {key_origin}" if key_origin else ""
        entry = registry.entry(key)
        layer = self._layer(entry, registry.definition.path) if entry is not None else None
        if layer is not None and layer.formula:
            # A registry's written-out GELU (transformers' `PytorchGELUTanh` under "gelu_pytorch_tanh") stays the
            # lookup by its key: the fused helper knows the registry's classes and checks them at run time.
            layer = None
        if layer is None:
            return _evident_key(ctor, key, key_origin, f"{call} ({where}){source}")
        then = _suffix(layer)
        return Ctor(layer.layer or "", (), tuple(Kwarg(k, Expr(v)) for k, v in layer.layer_kwargs),
                    origin=f"{call} ({where}{then}){source}")

    def _built(self, ctor: Ctor, d: Definition, path: str, scope: Scope, chosen: set[str],
               acts: set[str] | None = None) -> str | None:
        """The torch layer an imported builder function returns for this call (`builders`), else None;
        `acts` collects the BatchNorm-then-activation classes it builds (`built_layer`'s `norm_act`)."""
        found = self._node(d.name, d.path, d.line)
        if found is None or not isinstance(found[1], ast.FunctionDef):
            return None
        call = self._call(ctor, scope)
        if call is not None:  # the caller's defaults, read in its file (a lambda factory passed as one)
            defaults = tuple((p, v) for p, v in scope.params.items() if v is not None)
            call = replace(call, defaults=defaults, caller=self.parsed(path), caller_path=path)
        return built_layer(found[1], found[0], found[2], call, self._lookup, torch_layer, chosen=chosen,
                           norm_act=acts) if call else None

    def _possible(self, ctor: Ctor, path: str, scope: Scope) -> Ctor | None:
        """The torch layer an imported builder builds on the paths the call leaves open to it, the others
        building a class of its own (`builders.possible_layer`), else None."""
        if ctor.items or ctor.lookup is not None or not _imported(ctor.callee):
            return None
        try:
            summary = self.summary_of(ctor.callee, path)
            if summary is None or summary.kind != "other":
                return None
            found = self._node(summary.definition.name, summary.definition.path, summary.definition.line)
            if found is None or not isinstance(found[1], ast.FunctionDef):
                return None
            call = self._call(ctor, scope)
            acts: set[str] = set()
            layer = possible_layer(found[1], found[0], found[2], call, self._lookup, torch_layer, acts) if call else None
        except (RecursionError, ValueError, OSError, SyntaxError):
            return None
        if layer is None:
            return None
        then = NORM_ACT if acts else ""
        return Ctor(layer, ctor.args, ctor.kwargs,
                    origin=f"{summary.definition.name} ({self._where(summary.definition)}{then})")

    def _call(self, ctor: Ctor, scope: Scope) -> Call | None:
        """What `ctor` passes a builder (`builders.Call`); None with a `*` argument."""
        args = tuple(a.text if isinstance(a, Expr) else "" for a in ctor.args)
        if any(t.startswith("*") for t in args):
            return None
        stored = scope.stored()
        return Call(args, frozenset(k.name for k in ctor.kwargs if k.name != "**"),
                    any(k.name == "**" for k in ctor.kwargs),
                    frozenset(p for p, v in scope.params.items() if v is not None and isinstance(literal(v), int)),
                    tuple((k.name, k.value.text) for k in ctor.kwargs if k.name != "**" and isinstance(k.value, Expr)),
                    # a name the caller binds itself is not a module-level name; without its source, none is read
                    constant=self.string_constant if stored is not None else None,
                    local_names=(stored or frozenset()) | frozenset(scope.params))

    def string_constant(self, name: str, path: str, hops: int = 0) -> str | None:
        """The string literal a module-level name of file `path` is bound to (`NORM_BATCH = "batch"`, there
        or imported with `from .consts import NORM_BATCH`), else None: a name bound more than once at the
        top level, or in a file where a function may rebind it (`global`), is not evident."""
        parsed = self.parsed(path)
        if parsed is None or parsed.tree is None or hops > MAX_DEPTH:
            return None
        node = parsed.toplevel.get(name)
        if isinstance(node, ast.Assign):
            bound = [s for s in parsed.tree.body if name in _assigned(s)]
            value = node.value
            if (len(bound) == 1 and not parsed.has_global and len(node.targets) == 1
                    and isinstance(value, ast.Constant) and isinstance(value.value, str)):
                return value.value
            return None
        target = parsed.imports.get(name) if node is None else None
        if target is None or name in _assigned_anywhere(parsed.tree):
            return None
        module, _, inner = target.rpartition(".")
        located = self.resolver.locate(module, path) if module.strip(".") or module.startswith(".") else None
        if located is None or in_stdlib(located):
            return None
        return self.string_constant(inner, located, hops + 1)

    def _sequential(self, ctor: Ctor, d: Definition, path: str, scope: Scope) -> tuple[str, ...] | None:
        """The torch layers an imported subclass of `nn.Sequential`, or the `nn.Sequential` an imported
        builder function returns, holds as this call builds it (a
        parameter of the caller passed on: its default)."""
        found = self._node(d.name, d.path, d.line)
        if found is None or not may_hold_sequential(found[1], found[0], torch_layer):
            # Not parsed (the whole file, with `ast`) for an answer none of its values can change; noted as read
            # all the same, so that what `adopter check`'s result cache records stays what the reading records.
            reads.note((path,))
            return None
        caller = self.parsed(path)
        if caller is None:
            return None
        positional: list[tuple[ast.expr, ParsedFile]] = []
        keywords: dict[str, tuple[ast.expr, ParsedFile]] = {}

        def value(text: str) -> ast.expr | None:
            if text in scope.params:
                # The caller's parameter: its default, if it has one; for a default of None, the value
                # `if p is None: p = V` gives it (torchvision's `norm_layer = nn.BatchNorm2d`).
                default = scope.params[text]
                text = scope.fallbacks().get(text, "") if default == "None" else default or ""
            if text.startswith("*"):
                return None
            try:
                return ast.parse(text, mode="eval").body if text else UNKNOWN_VALUE
            except SyntaxError:
                return UNKNOWN_VALUE

        for a in ctor.args:
            node = value(a.text) if isinstance(a, Expr) else None
            if node is None:
                return None
            positional.append((node, caller))
        for k in ctor.kwargs:
            node = value(k.value.text) if k.name != "**" and isinstance(k.value, Expr) else None
            if node is None:
                return None
            keywords[k.name] = (node, caller)
        if isinstance(found[1], ast.FunctionDef):
            return returned_sequential(found[1], found[0], (positional, keywords), self._lookup, torch_layer)
        return sequential_items(found[1], found[0], found[2], (positional, keywords), self._lookup, torch_layer)

    def class_or_function(self, qualified: str, path: str) -> tuple[ParsedFile, ast.FunctionDef | ast.ClassDef, str] | None:
        """The definition (`ast`) of a name used in file `path`, with its parsed file and path (`_lookup`)."""
        return self._lookup(qualified, path)

    def _lookup(self, qualified: str, path: str) -> tuple[ParsedFile, ast.FunctionDef | ast.ClassDef, str] | None:
        """The definition of a name used in file `path` (a top-level name of that file, or imported)."""
        if "." not in qualified:
            return self._node(qualified, path, None)
        d = self.definition(qualified, path)
        return self._node(d.name, d.path, d.line) if d is not None else None

    def _node(self, name: str, path: str, line: int | None,
              ) -> tuple[ParsedFile, ast.FunctionDef | ast.ClassDef, str] | None:
        parsed = self.parsed(path)
        if parsed is None or parsed.tree is None:
            return None
        node = parsed.toplevel.get(name) if line is None else node_at(parsed.tree, name, line)
        return (parsed, node, path) if isinstance(node, ast.FunctionDef | ast.ClassDef) else None

    def _key(self, text: str, path: str, scope: Scope, hops: int = 0) -> tuple[object, str | None]:
        """The value of a lookup key where evident: a literal, a parameter's literal default, a local
        `getattr(config, "<field>", d)`, or `config.<field>` with the default of the field in the
        config class: annotated, or as the file passes it (`Scope.class_of`)."""
        value = literal(text)
        if value is not UNKNOWN:
            return value, None
        if text in scope.params and scope.params[text] is not None:
            return literal(scope.params[text] or ""), f"default of `{text}`"
        if text in scope.params and hops == 0:
            return self._passed_field(text, path, scope)
        # `Scope.locals` parses `__init__` (`ast`) and is keyed by names: a dotted key (`config.hidden_act`, most
        # keys) is never one of them.
        local = scope.locals().get(text) if text.isidentifier() else None
        if local is not None and hops < 2:
            found = getattr_parts(local)
            if found is not None:
                return self._key(f"{found[0]}.{found[1]}", path, scope, hops + 1)
        root, dot, field_name = text.partition(".")
        annotation = scope.class_of(root) if dot and "." not in field_name else None
        if annotation is None:
            return UNKNOWN, None
        values = []
        for member in annotation.split(" | "):
            config = self.summary_of(member, path)
            if config is None or config.kind != "config":
                return UNKNOWN, None
            if scope.built_only_otherwise(root, config):
                # The default configuration never builds this class (T5's gated MLP is built only when
                # `is_gated_act`): its defaults say nothing about the configurations that do.
                return UNKNOWN, None
            values.append((config.default(field_name), config))
        value, config = values[0]
        if any(v != value for v, _ in values[1:]):
            return UNKNOWN, None
        return value, (f"default of `{field_name}` in {config.definition.name} "
                       f"({self._where(config.definition)})")

    def _unread_lookup(self, ctor: Ctor, path: str, scope: Scope) -> Ctor | None:
        """A lookup in an imported table this reading cannot open (`ACT2FN` of a `transformers` not installed,
        read from a model package alone), `ACT2FN[config.pooler_activation]`, whose key is a field of the
        package's own config class with an evident default (`pooler_activation="tanh"`; every config class
        this file passes agreeing). The key is that default whatever the table holds, so the lookup is by
        that literal key (`_evident_key`), as for a table read whose entry is no torch layer. A GELU key, a
        key not evident, disagreeing configs and calls (`get_activation(config.x)`: no dev package has it
        with a config of its own) leave it as written."""
        if ctor.lookup is None:
            return None
        key, key_origin = self._key(ctor.lookup, path, scope)
        if not isinstance(key, str):
            return None
        name = ctor.callee.rsplit(".", 1)[-1]
        return _evident_key(ctor, key, key_origin, f"{name}[{key!r}] (table not read), {key_origin}")

    def _passed_field(self, param: str, path: str, scope: Scope) -> tuple[object, str | None]:
        """A required parameter's key where every construction in the file passes it a config field
        (`passed_fields`): that field's default, when every construction's config agrees."""
        fields = passed_fields(scope.source, param)
        if fields is None:
            return UNKNOWN, None
        values = []
        for cls, root, field_name in fields:
            for member in cls.split(" | "):
                config = self.summary_of(member, path)
                if config is None or config.kind != "config" or scope.built_only_otherwise(root, config):
                    return UNKNOWN, None
                values.append((config.default(field_name), config, field_name))
        value, config, field_name = values[0]
        if value is UNKNOWN or any(v != value for v, _, _ in values[1:]):
            return UNKNOWN, None
        return value, (f"default of `{field_name}` in {config.definition.name} "
                       f"({self._where(config.definition)}), passed as `{param}`")

    def _layer(self, qualified: str, from_path: str) -> Summary | None:
        """The layer summary of a class named in file `from_path` (a torch class or a summarised one)."""
        torch_name = torch_layer(qualified)
        if torch_name is not None:
            return Summary("layer", Definition(from_path, 0, qualified), torch_name)
        found = self.summary_of(qualified, from_path)
        return found if found is not None and found.kind == "layer" else None

    def _where(self, d: Definition) -> str:
        """`package/module.py:line`: the path from the root of the definition's package."""
        root = self.root or self.resolver._package_root(d.path)[0]
        shown = os.path.relpath(d.path, root) if root and d.path.startswith(root.rstrip("/") + "/") else d.path
        return f"{shown}:{d.line}"

    # -- resolution ----------------------------------------------------------------------------------

    def summary_of(self, qualified: str, from_path: str, depth: int = 0) -> Summary | None:
        """The summary of `qualified` as named in the file `from_path` (None: unknown or not readable)."""
        definition = self.definition(qualified, from_path)
        if definition is None and "." not in qualified:  # a class of that file itself
            parsed = self.parsed(from_path)
            node = parsed.toplevel.get(qualified) if parsed is not None else None
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.Assign):
                definition = Definition(from_path, node.lineno, qualified)
        if definition is None or depth > MAX_DEPTH:
            return None
        key = (definition.path, definition.name)
        with self._lock:
            cached = self._summaries.get(key)
        if cached is not None:
            reads.note(cached[1])
            return cached[0]
        read: set[str] = {definition.path}
        try:
            summary = self._summarise(definition, depth, read)
        except (RecursionError, ValueError):
            summary = None
        with self._lock:
            self._summaries[key] = (summary, frozenset(read))
        reads.note(read)
        return summary

    def definition(self, qualified: str, from_path: str) -> Definition | None:
        """Where `qualified` (as named in `from_path`) is defined, found by jedi; None when unknown.

        Only names whose module is a file the resolver can see (the workspace, the search paths) are
        looked up, so a file with nothing to reach never starts jedi.
        """
        module = qualified.rpartition(".")[0]
        if not module.strip(".") and not module.startswith("."):
            return None
        located = self.resolver.locate(module, from_path)
        if located is None:
            return None
        key = _definition_key(qualified, from_path, located)
        with self._lock:
            cached = self._defs.get(key)
        if cached is not None:  # only a file outside the standard library is ever looked up, so kept
            reads.note(cached[1])
            return cached[0]
        if in_stdlib(located):  # the standard library defines no torch layers (a `realpath`: after the cache)
            return None
        with self._lock:
            if self.deferred:
                self._pending.add((qualified, from_path))
                self._queued += 1
                return None
        return self._goto(qualified, from_path, located)

    def _goto(self, qualified: str, from_path: str, located: str) -> Definition | None:
        module, _, name = qualified.rpartition(".")
        found: Definition | None = None
        try:
            root = self.root or self.resolver._package_root(from_path)[0] or os.path.dirname(from_path)
            found = direct_definition(module, name, from_path, located, root, self.resolver.locate, self.parsed)
            if found is None:
                found = self.jedi.goto(module, name, from_path, root)
        except Exception:  # jedi failing on one name must not take the analysis down
            found = None
        if found is None:
            # jedi sometimes gives up on a re-export its earlier look-ups cached half-way: follow the
            # plain `from .x import Y` chain by reading the files instead.
            found = self._follow(located, name, 0)
        with self._lock:
            files = frozenset({located} | ({found.path} if found else set()))
            self._defs[_definition_key(qualified, from_path, located)] = (found, files)
        reads.note(files)
        with self._lock:
            self.resolved += 1
        return found

    def _follow(self, path: str, name: str, hops: int) -> Definition | None:
        parsed = self.parsed(path)
        if parsed is None or hops > MAX_DEPTH:
            return None
        node = parsed.toplevel.get(name)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.Assign):
            return Definition(path, node.lineno, name)
        target = parsed.imports.get(name)
        if target is None:
            return None
        module, _, inner = target.rpartition(".")
        located = self.resolver.locate(module, path)
        return self._follow(located, inner, hops + 1) if located is not None else None

    def has_pending(self) -> bool:
        with self._lock:
            return bool(self._pending)

    def resolve_pending(self) -> int:
        """Resolve the queued names (call off the analysis thread); how many were found."""
        with self._lock:
            todo, self._pending = sorted(self._pending), set()
        found = 0
        for qualified, from_path in todo:
            module = qualified.rpartition(".")[0]
            located = self.resolver.locate(module, from_path)
            if located is not None and self._goto(qualified, from_path, located) is not None:
                found += 1
        if todo:
            self.release()
        return found

    def release(self) -> None:
        """Drop jedi's and parso's parse trees and the files read (summaries stay): they are large, and
        every full garbage collection of the long-running server would walk them."""
        with self._lock:
            self._files.clear()
        self.jedi.release()

    def changed(self, paths: Iterable[str]) -> bool:
        """Forget what was read from `paths` (saved or changed on disk); whether anything was."""
        gone = {form for p in paths for form in (os.path.abspath(p), os.path.realpath(p))}
        hit = False
        with self._lock:
            for p in gone:
                if self._files.pop(p, None) is not None:
                    hit = True
            stale_defs = [k for k, (_, read) in self._defs.items() if read & gone]
            stale_summaries = [k for k, (_, read) in self._summaries.items() if read & gone]
            stale_bases = [k for k, (_, read) in self._bases.items() if read & gone]
            for b in stale_bases:
                del self._bases[b]
            for k in stale_defs:
                del self._defs[k]
            for s in stale_summaries:
                del self._summaries[s]
            hit = hit or bool(stale_defs or stale_summaries or stale_bases)
        if hit:
            self.resolver.clear()
        return hit

    # -- reading definitions -------------------------------------------------------------------------

    def parsed(self, path: str) -> ParsedFile | None:
        reads.note((path,))
        with self._lock:
            if path in self._files:
                return self._files[path]
        result: ParsedFile | None = None
        try:
            with open(path, "rb") as handle:
                data = handle.read(6 * 1024 * 1024)
            stamp = os.stat(path).st_mtime
            tree = ast.parse(data, path)
            result = ParsedFile(stamp, tree, imports_of(tree), toplevel_of(tree), b"global" in data)
        except (OSError, SyntaxError, ValueError):
            result = None
        with self._lock:
            self._files[path] = result
        return result

    def _summarise(self, d: Definition, depth: int, read: set[str]) -> Summary | None:
        parsed = self.parsed(d.path)
        if parsed is None or parsed.tree is None:
            return None
        node = node_at(parsed.tree, d.name, d.line)
        if isinstance(node, ast.ClassDef):
            return self._class(node, d, parsed, depth, read)
        if isinstance(node, ast.FunctionDef):
            return self._function(node, d, parsed, depth, read)
        if isinstance(node, ast.Assign):
            entries, ignore_case = self._registry(node, d.name, parsed)
            if entries:
                return Summary("registry", d, entries=entries, ignore_case=ignore_case)
        return Summary("other", d)

    def _class(self, node: ast.ClassDef, d: Definition, parsed: ParsedFile, depth: int, read: set[str]) -> Summary:
        methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
        own_init = "__init__" in methods
        if "forward" not in methods and "__call__" not in methods:
            for base in node.bases:
                dotted = dotted_name(base)
                if dotted is None:
                    continue
                qualified = qualify(dotted, parsed.imports)
                layer = torch_layer(qualified)
                if layer is not None:
                    return Summary("layer", d, layer, own_init=own_init)
                if not qualified.startswith(("torch.", "typing.", "builtins.")):
                    sub = self._base(qualified, d.path, parsed, depth, read)
                    if sub is not None and sub.kind == "layer":
                        return Summary("layer", d, sub.layer, sub.layer_kwargs, own_init or sub.own_init,
                                       norm_act=sub.norm_act, eval_norm=sub.eval_norm,
                                       linear_forward=sub.linear_forward, formula=sub.formula)
        forward = methods.get("forward")
        if isinstance(forward, ast.FunctionDef) and "__call__" not in methods:
            for base in node.bases:
                dotted = dotted_name(base)
                layer = torch_layer(qualify(dotted, parsed.imports)) if dotted is not None else None
                if layer is not None and norm_then_act(node, layer, lambda n: qualify(n, parsed.imports)):
                    return Summary("layer", d, layer, own_init=own_init, norm_act=True)
                qualified = qualify(dotted, parsed.imports) if dotted is not None else ""
                eval_layer = eval_norm(node, layer or qualified, lambda n: qualify(n, parsed.imports))
                if eval_layer is not None:
                    return Summary("layer", d, eval_layer, own_init=own_init, eval_norm=True)
        if isinstance(forward, ast.FunctionDef):
            found = elementwise_layer(forward, parsed.imports)
            if found is not None:
                return Summary("layer", d, found[0], found[1], own_init=own_init)
            formula = written_layer(forward, methods.get("__init__"), lambda n: qualify(n, parsed.imports)) if (
                "__call__" not in methods and _plain_module(node, parsed)) else None
            if formula is not None:
                return Summary("layer", d, formula[0], formula[1], own_init=True, formula=formula[2])
        if "__call__" not in methods and linear_forward(node, parsed.toplevel, lambda n: qualify(n, parsed.imports)):
            return Summary("layer", d, LINEAR, own_init=True, linear_forward=True)
        defaults: dict[str, object] = {}
        if "__init__" in methods:
            if isinstance(methods["__init__"], ast.FunctionDef):
                defaults = config_defaults(methods["__init__"])
        else:  # a dataclass config (transformers 5) or a subclass that keeps its base's `__init__`
            defaults = class_defaults(node, self._inherited(node, d.path, parsed, depth, read))
        if defaults:
            return Summary("config", d, defaults=tuple(sorted(defaults.items(), key=lambda kv: kv[0])))
        return Summary("other", d)

    def _inherited(self, node: ast.ClassDef, path: str, parsed: ParsedFile, depth: int,
                   read: set[str]) -> dict[str, object]:
        """The config defaults a class inherits: its config bases', the first base's winning (the MRO)."""
        out: dict[str, object] = {}
        for base in reversed(node.bases):
            dotted = dotted_name(base)
            qualified = qualify(dotted, parsed.imports) if dotted is not None else None
            if qualified is None or qualified.startswith(("torch.", "typing.", "builtins.")):
                continue
            sub = self._base(qualified, path, parsed, depth, read)
            if sub is not None and sub.kind == "config":
                out.update(sub.defaults)
        return out

    def _base(self, qualified: str, path: str, parsed: ParsedFile, depth: int, read: set[str]) -> Summary | None:
        if qualified in parsed.toplevel:
            node = parsed.toplevel[qualified]
            if isinstance(node, ast.ClassDef):
                return self._class(node, Definition(path, node.lineno, qualified), parsed, depth + 1, read)
            return None
        found = self.summary_of(qualified, path, depth + 1)
        if found is not None:
            read.add(found.definition.path)
        return found

    def _function(self, node: ast.FunctionDef, d: Definition, parsed: ParsedFile, depth: int,
                  read: set[str]) -> Summary:
        """A factory: the function builds `R[<its first argument>]` (called, or an instance already)."""
        args = node.args.posonlyargs + node.args.args
        if not args:
            return Summary("other", d)
        param = args[0].arg
        derived = {param}
        for stmt in ast.walk(node):  # names computed from the parameter (`name, args = split_args(name)`)
            if isinstance(stmt, ast.Assign) and any(isinstance(n, ast.Name) and n.id in derived
                                                    for n in ast.walk(stmt.value)):
                for target in stmt.targets:
                    for n in ast.walk(target):
                        if isinstance(n, ast.Name):
                            derived.add(n.id)
        for sub in ast.walk(node):
            key, steps = key_steps(sub.slice, node) if isinstance(sub, ast.Subscript) else (None, ())
            if (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and key is not None
                    and key.id in derived and sub.value.id not in derived):
                return Summary("factory", d, registry=qualify(sub.value.id, parsed.imports), key_steps=steps)
        handed = handed_on(node, param) if depth < MAX_DEPTH else None
        dotted = dotted_name(handed.func) if handed is not None else None
        inner = self.summary_of(qualify(dotted, parsed.imports), d.path, depth + 1) if dotted else None
        if inner is not None and inner.kind == "factory" and inner.registry is not None:
            # `layer = get_norm_layer(name); return layer(n)`: the handed factory's table, looked up alike
            read.add(inner.definition.path)
            return Summary("factory", d, registry=inner.registry, key_steps=inner.key_steps,
                           registry_from=inner.registry_from or inner.definition.path)
        return Summary("other", d)

    def _registry(self, node: ast.Assign, name: str, parsed: ParsedFile) -> tuple[tuple[tuple[str, str], ...], bool]:
        value = node.value
        entries: list[tuple[str, str]] = []
        ignore_case = False
        if isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name):
            source = parsed.toplevel.get(value.args[0].id)
            if isinstance(source, ast.Assign):
                value = source.value
        if isinstance(value, ast.Call) and not value.args:
            entries.extend(dict_entries(value, parsed.imports))  # `dict(batchnorm=nn.BatchNorm2d, ...)`
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    target = entry_class(v, parsed.imports)
                    if target is not None:
                        entries.append((k.value, target))
        elif isinstance(value, ast.Call) and parsed.tree is not None:
            # entries added by module-level calls: `R.add("key", SomeClass)`
            for stmt in parsed.tree.body:
                call = stmt.value if isinstance(stmt, ast.Expr) else None
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and isinstance(call.func.value, ast.Name) and call.func.value.id == name
                        and len(call.args) >= 2 and isinstance(call.args[0], ast.Constant)
                        and isinstance(call.args[0].value, str)):
                    target = entry_class(call.args[1], parsed.imports)
                    if target is not None:
                        entries.append((call.args[0].value, target))
            # a registry class that upper- or lower-cases its keys compares them without case
            cls = parsed.toplevel.get(dotted_name(value.func) or "")
            if isinstance(cls, ast.ClassDef):
                ignore_case = any(isinstance(n, ast.Attribute) and n.attr in ("upper", "lower") for n in ast.walk(cls))
        return tuple(entries), ignore_case


# -- helpers ----------------------------------------------------------------------------------------


def _assigned(stmt: ast.stmt) -> set[str]:
    """The names a top-level statement binds (assignments, imports, definitions, loops, `with`)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _assigned_anywhere(tree: ast.Module) -> set[str]:
    """The names the module's top-level statements bind other than by importing them."""
    return {n for s in tree.body if not isinstance(s, ast.Import | ast.ImportFrom) for n in _assigned(s)}


def _suffix(summary: Summary) -> str:
    """The `origin` suffix that says a layer read from another file's forward gets no automatic fix, or ""."""
    if summary.norm_act:
        return NORM_ACT
    if summary.eval_norm:
        return EVAL_NORM
    if summary.linear_forward:
        return LINEAR_FORWARD
    return summary.formula


def _plain_module(node: ast.ClassDef, parsed: ParsedFile) -> bool:
    """Whether class `node` derives from `nn.Module` directly and from nothing else."""
    return bool(node.bases) and not node.keywords and all(
        (dotted := dotted_name(b)) is not None and qualify(dotted, parsed.imports) == "torch.nn.Module"
        for b in node.bases)


def _and(condition: str | None, test: str) -> str:
    return test if condition is None else f"{condition} and {test}"


def torch_layer(qualified: str) -> str | None:
    """`torch.nn.modules.activation.GELU` -> `torch.nn.GELU`: a torch layer class, else None."""
    if not is_torch_module_class(qualified):
        return None
    last = qualified.rsplit(".", 1)[-1]
    return None if last == "Module" else f"torch.nn.{last}"


def _imported(callee: str) -> bool:
    return "." in callee.lstrip(".") and not callee.startswith(("torch.", "builtins.", "typing."))


def _holds_imported(ctor: Ctor) -> bool:
    """Whether the constructor, or one written among its items, is imported from outside torch."""
    return _imported(ctor.callee) or any(_holds_imported(i) for i in ctor.items)


def _definition_key(qualified: str, from_path: str, located: str) -> tuple[str, str, str]:
    """What a definition look-up's answer depends on: the name, the importing folder when the import is
    relative, and the file the module was located at from the importing file."""
    module = qualified.rpartition(".")[0]
    return qualified, os.path.dirname(from_path) if module.startswith(".") else "", located


def _evident_key(ctor: Ctor, key: str, key_origin: str | None, origin: str) -> Ctor | None:
    """A registry lookup whose key a config class's default gives (`ACT2FN[config.hidden_act]`, `hidden_act =
    "relu2"`) but whose entry is no torch layer this reading knows (`ReLUSquaredActivation`): the lookup by that
    literal key (`ACT2FN['relu2']`), so that what reads literal keys (`key_may_be`, `gate_activation`) reads it
    as it reads a key written so. None for any other key (a literal or a parameter's default: read there
    already), and for a key that spells a GELU (`quick_gelu`, `gelu_10`): the lookup stays as written, and
    family 6 reports it with its run-time check as before (a GELU default is a site by the labels)."""
    if key_origin is None or " in " not in key_origin or "gelu" in key.lower():
        return None
    if ctor.lookup is not None:
        return replace(ctor, lookup=repr(key), origin=origin)
    if ctor.args and isinstance(ctor.args[0], Expr):
        return replace(ctor, args=(Expr(repr(key)), *ctor.args[1:]), origin=origin)
    return None
