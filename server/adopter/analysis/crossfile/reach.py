"""Reach across files: what a class, function or table imported from another module computes.

A constructor in `__init__` whose callee is imported (`self.act = FP32SiLU()`, `get_act_layer(act)`,
`ACT2FN[config.hidden_act]`, `LayerNorm2d(dim)`) is resolved with jedi's project-aware inference (the
workspace and the installed packages; files are parsed, never imported or run) to the file and line
that define it. That definition is then read (Python's `ast`, never executed) into a frozen `Summary`:

- a *layer*: a subclass of a torch layer that does not override `forward` (`class LayerNorm2d(nn.LayerNorm)`),
  or a module whose `forward` is one elementwise function of its input with casts around it
  (`F.silu(x.float()).to(x.dtype)` is SiLU) — the torch layer it computes;
- a *registry*: a lookup table of layer classes by name (`{"relu": nn.ReLU, ...}`, or entries added by
  module-level calls such as `Act.add_factory_class("gelu", nn.GELU)`);
- a *factory*: a function that builds the entry of a registry named by its first argument;
- a *config*: the defaults its `__init__` gives each field, where they are evident statically
  (`hidden_act="gelu"`, or `act_info[-1]` of `feed_forward_proj.split("-")`).

`CrossFileReach.bind` applies them to one class's `__init__` bindings (the one hook the analysis calls):
a constructor that certainly computes a torch layer becomes that layer's constructor, with `origin`
saying where it came from; anything else stays as written. Results are cached per file and dropped
when that file changes (`changed`). In `deferred` mode (the language server) a name not resolved yet
is queued instead of resolved, so that jedi never costs a keystroke: `resolve_pending` then runs on
another thread and the documents are analysed again.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import sysconfig
import textwrap
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from adopter.analysis.canonical.spellings import (
    CANONICAL,
    GELU,
    MODULES,
    RELU,
    SIGMOID,
    SILU,
    TANH,
    TRANSPARENT_METHODS,
    Key,
)
from adopter.analysis.crossfile import reads
from adopter.analysis.crossfile.resolver import ModuleResolver, is_torch_module_class
from adopter.dsl.types import Binding, Ctor, Expr, Init, Kwarg

MAX_DEPTH = 6
# The function each stateless torch activation computes, inverted: canonical op -> torch.nn class.
_LAYER_OF_OP: dict[Key, str] = {s.op: name for name, s in MODULES.items() if s.op in (GELU, SILU, RELU, SIGMOID, TANH)}
_UNKNOWN = object()
_CALLED = re.compile(r"\bself\.(\w+)\s*\(")
_ENVIRONMENT: Any = None  # jedi's environment for this interpreter, made once per process


@dataclass(frozen=True, slots=True)
class Definition:
    """Where jedi found a name defined: the file, the 1-based line and the name there."""

    path: str
    line: int
    name: str


@dataclass(frozen=True, slots=True)
class Summary:
    """What an imported name is, as far as reading its code tells (see the module docstring)."""

    kind: str  # "layer" | "registry" | "factory" | "config" | "other"
    definition: Definition
    layer: str | None = None  # layer: the torch.nn class it computes
    layer_kwargs: tuple[tuple[str, str], ...] = ()  # layer: constructor keywords that say which variant
    own_init: bool = False  # layer: it has its own __init__ (its arguments are not the torch layer's)
    entries: tuple[tuple[str, str], ...] = ()  # registry: key -> qualified class (in the registry's file)
    ignore_case: bool = False  # registry: its lookups compare keys without case
    registry: str | None = None  # factory: the registry it looks up, qualified in the factory's file
    defaults: tuple[tuple[str, object], ...] = ()  # config: field -> default value

    def default(self, field_name: str) -> object:
        for name, value in self.defaults:
            if name == field_name:
                return value
        return _UNKNOWN

    def entry(self, key: str) -> str | None:
        for name, value in self.entries:
            if name == key:
                return value
        if self.ignore_case:
            found = [v for n, v in self.entries if n.lower() == key.lower()]
            return found[0] if len(found) == 1 else None
        return None


@dataclass(frozen=True, slots=True)
class _Parsed:
    stamp: float
    tree: ast.Module | None
    imports: dict[str, str]  # local name -> qualified (relative modules keep their dots)
    toplevel: dict[str, ast.AST]  # module-level classes, functions and assigned names


class CrossFileReach:
    """Resolves imported names with jedi and summarises their definitions; thread-safe, cached."""

    def __init__(self, resolver: ModuleResolver, *, deferred: bool = False, root: str | None = None) -> None:
        self.resolver = resolver
        self.deferred = deferred
        self.root = root
        self._lock = threading.RLock()
        self._files: dict[str, _Parsed | None] = {}
        self._defs: dict[tuple[str, str], tuple[Definition | None, frozenset[str]]] = {}
        self._summaries: dict[tuple[str, str], tuple[Summary | None, frozenset[str]]] = {}
        self._pending: set[tuple[str, str]] = set()
        self._jedi: Any = None
        self._projects: dict[str, Any] = {}
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
        if not any(isinstance(b.value, Ctor) and _imported(b.value.callee) for b in init.bindings):
            return init  # the common class: nothing imported to look at, no cost
        path = os.path.abspath(path)
        scope = _Scope({p.name: p.default for p in init.params}, source)
        # Only what forward calls (`self.act(...)`) is looked up: `np.prod(...)` stored as a number
        # never sends jedi into numpy.
        called = source.called() if source is not None else None
        out: list[Binding] = []
        changed = False
        for b in init.bindings:
            value = b.value
            if isinstance(value, Ctor) and (called is None or b.attr in called):
                try:
                    found = self._ctor(value, path, scope, b.condition)
                except (RecursionError, ValueError, OSError, SyntaxError):
                    found = None
                if found is not None:
                    b = replace(b, value=found)
                    changed = True
            out.append(b)
        return replace(init, bindings=tuple(out)) if changed else init

    def _ctor(self, ctor: Ctor, path: str, scope: _Scope, condition: str | None) -> Ctor | Expr | None:
        if ctor.items or not _imported(ctor.callee):
            return None
        summary = self.summary_of(ctor.callee, path)
        if summary is None:
            return None
        where = self._where(summary.definition)
        if summary.kind == "layer" and summary.layer is not None and ctor.lookup is None:
            args, kwargs = ((), ()) if summary.own_init else (ctor.args, ctor.kwargs)
            kwargs = (*kwargs, *(Kwarg(k, Expr(v)) for k, v in summary.layer_kwargs))
            return Ctor(summary.layer, args, kwargs, origin=f"{summary.definition.name} ({where})")
        registry: Summary | None = None
        key_text: str | None = None
        if summary.kind == "registry" and ctor.lookup is not None:
            registry, key_text = summary, ctor.lookup
        elif summary.kind == "factory" and summary.registry is not None and ctor.args and ctor.lookup is None:
            registry = self.summary_of(summary.registry, summary.definition.path)
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
        entry = registry.entry(key)
        if entry is None:
            return None
        layer = self._layer(entry, registry.definition.path)
        if layer is None:
            return None
        call = f"{summary.definition.name}[{key!r}]" if ctor.lookup is not None else f"{summary.definition.name}({key!r})"
        source = f", {key_origin}" if key_origin else ""
        return Ctor(layer.layer or "", (), tuple(Kwarg(k, Expr(v)) for k, v in layer.layer_kwargs),
                    origin=f"{call} ({where}){source}")

    def _key(self, text: str, path: str, scope: _Scope, hops: int = 0) -> tuple[object, str | None]:
        """The value of a lookup key where evident: a literal, a parameter's literal default, a local
        `getattr(config, "<field>", d)`, or `config.<field>` with the default of the field in the
        annotated config class."""
        value = _literal(text)
        if value is not _UNKNOWN:
            return value, None
        if text in scope.params and scope.params[text] is not None:
            return _literal(scope.params[text] or ""), f"default of `{text}`"
        local = scope.locals().get(text)
        if local is not None and hops < 2:
            found = _getattr_parts(local)
            if found is not None:
                return self._key(f"{found[0]}.{found[1]}", path, scope, hops + 1)
        root, dot, field_name = text.partition(".")
        annotation = scope.annotations().get(root) if dot and "." not in field_name else None
        if annotation is None:
            return _UNKNOWN, None
        config = self.summary_of(annotation, path)
        if config is None or config.kind != "config":
            return _UNKNOWN, None
        if scope.built_only_otherwise(root, config):
            # The default configuration never builds this class (T5's gated MLP is built only when
            # `is_gated_act`): its defaults say nothing about the configurations that do.
            return _UNKNOWN, None
        return config.default(field_name), (f"default of `{field_name}` in {config.definition.name} "
                                            f"({self._where(config.definition)})")

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
        if located is None or _in_stdlib(located):  # the standard library defines no torch layers
            return None
        scope = os.path.dirname(from_path) if module.startswith(".") else ""
        key = (qualified, scope)
        with self._lock:
            cached = self._defs.get(key)
            if cached is not None:
                reads.note(cached[1])
                return cached[0]
            if self.deferred:
                self._pending.add((qualified, from_path))
                return None
        return self._goto(qualified, from_path, located)

    def _goto(self, qualified: str, from_path: str, located: str) -> Definition | None:
        module, _, name = qualified.rpartition(".")
        scope = os.path.dirname(from_path) if module.startswith(".") else ""
        found: Definition | None = None
        try:
            found = self._jedi_goto(module, name, from_path)
        except Exception:  # jedi failing on one name must not take the analysis down
            found = None
        if found is None:
            # jedi sometimes gives up on a re-export its earlier look-ups cached half-way: follow the
            # plain `from .x import Y` chain by reading the files instead.
            found = self._follow(located, name, 0)
        with self._lock:
            files = frozenset({located} | ({found.path} if found else set()))
            self._defs[(qualified, scope)] = (found, files)
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

    def _jedi_goto(self, module: str, name: str, from_path: str) -> Definition | None:
        jedi = self._load_jedi()
        code = f"from {module} import {name}\n"
        script = jedi.Script(code, path=from_path, project=self._project(from_path), environment=self._env)
        names = script.goto(1, len(code) - 1 - len(name) // 2, follow_imports=True)
        for n in names:
            if n.module_path is not None and str(n.module_path).endswith(".py") and n.line is not None:
                return Definition(str(n.module_path), n.line, n.name)
        return None

    def _load_jedi(self) -> Any:
        global _ENVIRONMENT
        if self._jedi is None:
            import jedi  # lazily: importing jedi takes a few hundred milliseconds

            # jedi runs inference on compiled modules in a subprocess of this interpreter, so nothing is
            # ever imported here; source files are only parsed.
            if _ENVIRONMENT is None:
                _ENVIRONMENT = jedi.create_environment(sys.executable, safe=False)
            self._env = _ENVIRONMENT
            self._jedi = jedi
        return self._jedi

    def _project(self, from_path: str) -> Any:
        root = self.root or self.resolver._package_root(from_path)[0] or os.path.dirname(from_path)
        project = self._projects.get(root)
        if project is None:
            project = self._jedi.Project(root, added_sys_path=[root], load_unsafe_extensions=False)
            self._projects[root] = project
        return project

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
        if self._jedi is not None:
            import parso.cache

            parso.cache.parser_cache.clear()
            self._jedi.cache.clear_time_caches(True)

    def changed(self, paths: Iterable[str]) -> bool:
        """Forget what was read from `paths` (saved or changed on disk); whether anything was."""
        gone = {form for p in paths for form in (os.path.abspath(p), os.path.realpath(p))}
        hit = False
        with self._lock:
            for p in gone:
                if self._files.pop(p, None) is not None:
                    hit = True
            for cache in (self._defs, self._summaries):
                stale = [k for k, (_, read) in cache.items() if read & gone]
                for k in stale:
                    del cache[k]
                hit = hit or bool(stale)
        if hit:
            self.resolver.clear()
        return hit

    # -- reading definitions -------------------------------------------------------------------------

    def parsed(self, path: str) -> _Parsed | None:
        reads.note((path,))
        with self._lock:
            if path in self._files:
                return self._files[path]
        result: _Parsed | None = None
        try:
            with open(path, "rb") as handle:
                data = handle.read(6 * 1024 * 1024)
            stamp = os.stat(path).st_mtime
            tree = ast.parse(data, path)
            result = _Parsed(stamp, tree, _imports(tree), _toplevel(tree))
        except (OSError, SyntaxError, ValueError):
            result = None
        with self._lock:
            self._files[path] = result
        return result

    def _summarise(self, d: Definition, depth: int, read: set[str]) -> Summary | None:
        parsed = self.parsed(d.path)
        if parsed is None or parsed.tree is None:
            return None
        node = _node_at(parsed.tree, d.name, d.line)
        if isinstance(node, ast.ClassDef):
            return self._class(node, d, parsed, depth, read)
        if isinstance(node, ast.FunctionDef):
            return self._function(node, d, parsed)
        if isinstance(node, ast.Assign):
            entries, ignore_case = self._registry(node, d.name, parsed)
            if entries:
                return Summary("registry", d, entries=entries, ignore_case=ignore_case)
        return Summary("other", d)

    def _class(self, node: ast.ClassDef, d: Definition, parsed: _Parsed, depth: int, read: set[str]) -> Summary:
        methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
        own_init = "__init__" in methods
        if "forward" not in methods and "__call__" not in methods:
            for base in node.bases:
                dotted = _dotted(base)
                if dotted is None:
                    continue
                qualified = _qualify(dotted, parsed.imports)
                layer = torch_layer(qualified)
                if layer is not None:
                    return Summary("layer", d, layer, own_init=own_init)
                if not qualified.startswith(("torch.", "typing.", "builtins.")):
                    sub = self._base(qualified, d.path, parsed, depth, read)
                    if sub is not None and sub.kind == "layer":
                        return Summary("layer", d, sub.layer, sub.layer_kwargs, own_init or sub.own_init)
        forward = methods.get("forward")
        if isinstance(forward, ast.FunctionDef):
            found = _elementwise(forward, parsed.imports)
            if found is not None:
                return Summary("layer", d, found[0], found[1], own_init=own_init)
        if "__init__" in methods and isinstance(methods["__init__"], ast.FunctionDef):
            defaults = _config_defaults(methods["__init__"])
            if defaults:
                return Summary("config", d, defaults=tuple(sorted(defaults.items(), key=lambda kv: kv[0])))
        return Summary("other", d)

    def _base(self, qualified: str, path: str, parsed: _Parsed, depth: int, read: set[str]) -> Summary | None:
        if qualified in parsed.toplevel:
            node = parsed.toplevel[qualified]
            if isinstance(node, ast.ClassDef):
                return self._class(node, Definition(path, node.lineno, qualified), parsed, depth + 1, read)
            return None
        found = self.summary_of(qualified, path, depth + 1)
        if found is not None:
            read.add(found.definition.path)
        return found

    def _function(self, node: ast.FunctionDef, d: Definition, parsed: _Parsed) -> Summary:
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
            if (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and isinstance(sub.slice, ast.Name)
                    and sub.slice.id in derived and sub.value.id not in derived):
                return Summary("factory", d, registry=_qualify(sub.value.id, parsed.imports))
        return Summary("other", d)

    def _registry(self, node: ast.Assign, name: str, parsed: _Parsed) -> tuple[tuple[tuple[str, str], ...], bool]:
        value = node.value
        entries: list[tuple[str, str]] = []
        ignore_case = False
        if isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name):
            source = parsed.toplevel.get(value.args[0].id)
            if isinstance(source, ast.Assign):
                value = source.value
        if isinstance(value, ast.Dict):
            for k, v in zip(value.keys, value.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    target = _entry_class(v, parsed.imports)
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
                    target = _entry_class(call.args[1], parsed.imports)
                    if target is not None:
                        entries.append((call.args[0].value, target))
            # a registry class that upper- or lower-cases its keys compares them without case
            cls = parsed.toplevel.get(_dotted(value.func) or "")
            if isinstance(cls, ast.ClassDef):
                ignore_case = any(isinstance(n, ast.Attribute) and n.attr in ("upper", "lower") for n in ast.walk(cls))
        return tuple(entries), ignore_case


# -- helpers ----------------------------------------------------------------------------------------


def torch_layer(qualified: str) -> str | None:
    """`torch.nn.modules.activation.GELU` -> `torch.nn.GELU`: a torch layer class, else None."""
    if not is_torch_module_class(qualified):
        return None
    last = qualified.rsplit(".", 1)[-1]
    return None if last == "Module" else f"torch.nn.{last}"


def _stdlib_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)}
    return tuple(sorted(roots))


_STDLIB = _stdlib_roots()


def _in_stdlib(path: str) -> bool:
    real = os.path.realpath(path)
    return real.startswith(_STDLIB) and "site-packages" not in real and "dist-packages" not in real


def _imported(callee: str) -> bool:
    return "." in callee.lstrip(".") and not callee.startswith(("torch.", "builtins.", "typing."))


def _literal(text: str) -> object:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, TypeError, RecursionError):
        return _UNKNOWN
    return value if isinstance(value, str | int | float | bool | type(None)) else _UNKNOWN


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _qualify(dotted: str, imports: dict[str, str]) -> str:
    root, dot, rest = dotted.partition(".")
    target = imports.get(root)
    if target is None:
        return dotted
    return f"{target}{dot}{rest}" if dot else target


def _imports(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            for a in stmt.names:
                if a.name != "*":
                    sep = "" if module.endswith(".") else "."
                    out.setdefault(a.asname or a.name, f"{module}{sep}{a.name}")
    return out


def _toplevel(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef):
            out[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = stmt
    return out


def _node_at(tree: ast.Module, name: str, line: int) -> ast.AST | None:
    found: ast.AST | None = None
    for stmt in tree.body:
        names: list[str] = []
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef):
            names = [stmt.name]
        elif isinstance(stmt, ast.Assign):
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        if name in names:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) or found is None:
                found = stmt
    return found


def _entry_class(node: ast.AST, imports: dict[str, str]) -> str | None:
    if isinstance(node, ast.Tuple) and node.elts:
        return None  # a class with arguments (`(ClippedGELU, {"min": -10})`): not the plain layer
    dotted = _dotted(node)
    return None if dotted is None else _qualify(dotted, imports)


def _peel(node: ast.AST) -> ast.AST:
    """The value under casts and copies (`x.float()`, `y.to(x.dtype)`, `.type_as(x)`)."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr in TRANSPARENT_METHODS):
        node = node.func.value
    return node


def _elementwise(forward: ast.FunctionDef, imports: dict[str, str]) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """The torch layer a `forward` computes when it is one elementwise activation of its input."""
    params = [a.arg for a in forward.args.posonlyargs + forward.args.args]
    if len(params) != 2 or forward.args.vararg or forward.args.kwonlyargs:
        return None
    x = params[1]
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    call = _peel(body[0].value)
    if not isinstance(call, ast.Call) or not call.args:
        return None
    first = _peel(call.args[0])
    dotted = _dotted(call.func)
    if dotted is None or not isinstance(first, ast.Name) or first.id != x or len(call.args) > 1:
        return None
    key: Key = ("function", _qualify(dotted, imports))
    layer = _LAYER_OF_OP.get(CANONICAL.get(key, key))
    if layer is None:
        return None
    kwargs: list[tuple[str, str]] = []
    for k in call.keywords:
        if k.arg == "inplace":
            continue
        if layer == "torch.nn.GELU" and k.arg == "approximate" and isinstance(k.value, ast.Constant):
            kwargs.append(("approximate", repr(k.value.value).replace("'", '"')))
            continue
        return None
    return layer, tuple(kwargs)


def _config_defaults(init: ast.FunctionDef) -> dict[str, object]:
    """`self.<field>` values after `__init__` runs with every parameter at its default, where evident."""
    args = init.args
    positional = args.posonlyargs + args.args
    env: dict[str, object] = {}
    for a, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
        env[a.arg] = _value(default, env, {})
    for a, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        env[a.arg] = _value(kw_default, env, {}) if kw_default is not None else _UNKNOWN
    fields: dict[str, object] = {}
    _run(init.body, env, fields)
    return {k: v for k, v in fields.items() if v is not _UNKNOWN}


def _run(body: list[ast.stmt], env: dict[str, object], fields: dict[str, object]) -> None:
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            value = _value(stmt.value, env, fields)
            for target in stmt.targets:
                _assign(target, value, env, fields)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            _assign(stmt.target, _value(stmt.value, env, fields), env, fields)
        elif isinstance(stmt, ast.If):
            test = _value(stmt.test, env, fields)
            if test is _UNKNOWN:  # either branch may run: what they assign is unknown
                for sub in ast.walk(stmt):
                    if isinstance(sub, ast.Assign | ast.AugAssign | ast.AnnAssign):
                        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                        for t in targets:
                            _assign(t, _UNKNOWN, env, fields)
            else:
                _run(stmt.body if test else stmt.orelse, env, fields)
        elif isinstance(stmt, ast.AugAssign):
            _assign(stmt.target, _UNKNOWN, env, fields)
        elif isinstance(stmt, ast.For | ast.While | ast.With | ast.Try):
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Assign | ast.AugAssign | ast.AnnAssign):
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    for t in targets:
                        _assign(t, _UNKNOWN, env, fields)


def _assign(target: ast.AST, value: object, env: dict[str, object], fields: dict[str, object]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        fields[target.attr] = value
    elif isinstance(target, ast.Tuple | ast.List):
        for t in target.elts:
            _assign(t, _UNKNOWN, env, fields)


def _value(node: ast.AST, env: dict[str, object], fields: dict[str, object],
           obj: tuple[str, dict[str, object]] | None = None) -> object:
    """A tiny evaluator over constants: names, `self.x` (and `<obj>.x` from `obj`'s values), `str.split`,
    indexing, comparisons, `not`, `and`, `or`."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str | int | float | bool | type(None)) else _UNKNOWN
    if isinstance(node, ast.Name):
        return env.get(node.id, _UNKNOWN)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return fields.get(node.attr, _UNKNOWN)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and obj is not None \
            and node.value.id == obj[0]:
        return obj[1].get(node.attr, _UNKNOWN)
    if isinstance(node, ast.Subscript):
        base, index = _value(node.value, env, fields, obj), _value(node.slice, env, fields, obj)
        if isinstance(base, tuple | str) and isinstance(index, int) and -len(base) <= index < len(base):
            return base[index]
        return _UNKNOWN
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, env, fields, obj)
        if operand is _UNKNOWN:
            return _UNKNOWN
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub) and isinstance(operand, int | float):
            return -operand
        return _UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split":
        receiver = _value(node.func.value, env, fields, obj)
        sep = [_value(a, env, fields, obj) for a in node.args]
        if isinstance(receiver, str) and all(isinstance(s, str) for s in sep) and len(sep) <= 1 and not node.keywords:
            return tuple(receiver.split(*sep))  # type: ignore[arg-type]
        return _UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
        seq = _value(node.args[0], env, fields, obj)
        return len(seq) if isinstance(seq, tuple | str) else _UNKNOWN
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _value(node.left, env, fields, obj), _value(node.comparators[0], env, fields, obj)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        op = node.ops[0]
        try:
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.Gt | ast.Lt | ast.GtE | ast.LtE) and type(left) is type(right):
                return {ast.Gt: left > right, ast.Lt: left < right, ast.GtE: left >= right,  # type: ignore[operator]
                        ast.LtE: left <= right}[type(op)]  # type: ignore[operator]
            if isinstance(op, ast.Is) and right is None:
                return left is None
            if isinstance(op, ast.IsNot) and right is None:
                return left is not None
        except TypeError:
            return _UNKNOWN
        return _UNKNOWN
    if isinstance(node, ast.BoolOp):
        values = [_value(v, env, fields, obj) for v in node.values]
        if isinstance(node.op, ast.And):
            for v in values:
                if v is _UNKNOWN:
                    return _UNKNOWN
                if not v:
                    return v
            return values[-1]
        for v in values:
            if v is _UNKNOWN:
                return _UNKNOWN
            if v:
                return v
        return values[-1]
    return _UNKNOWN


class InitSource:
    """`__init__` of the analysed class, read only when a lookup key needs it (tree-sitter node)."""

    def __init__(self, function: Any, src: Any, qualify: Any, owner: Any = None, name: str | None = None,
                 note: Any = None) -> None:
        self.function, self.src, self.qualify, self.owner = function, src, qualify, owner
        self.name = name  # the analysed class
        self.note = note  # records a dependency on a method of this file: note(class_name, method)

    def constructions(self) -> list[list[str] | None] | None:
        """How this file builds the analysed class: per construction (`Cls(...)` inside a method), the
        conditions around it (`config.is_gated_act`, `not (...)`), or None where they are not plain
        if/else tests. None when the file never builds it."""
        if not self.name:
            return None
        data, root = self.src.data, self.src.tree.root_node
        needle = f"{self.name}(".encode()
        found: list[list[str] | None] = []
        at = data.find(needle)
        while at >= 0:
            before = data[at - 1 : at]
            if not (before.isalnum() or before in (b"_", b".")):
                node = root.descendant_for_byte_range(at, at + len(self.name))
                conditions = self._conditions(node)
                if conditions is not False:
                    found.append(conditions if isinstance(conditions, list) else None)
            at = data.find(needle, at + 1)
        return found or None

    def _conditions(self, node: Any) -> list[str] | bool | None:
        """The tests around `node` up to its method (False: not inside a method of a class, so not a
        construction this reading covers; None: a branch other than if/else)."""
        out: list[str] = []
        child, parent = node, node.parent
        while parent is not None:
            if parent.type == "function_definition":
                owner = parent.parent.parent if parent.parent is not None else None
                if owner is None or owner.type != "class_definition":
                    return False
                name = owner.child_by_field_name("name")
                method = parent.child_by_field_name("name")
                if self.note is not None and name is not None and method is not None:
                    self.note(self.src.text(name), self.src.text(method))
                return out
            if parent.type == "if_statement" and child.type == "block":
                out.append(self.src.text(parent.child_by_field_name("condition")))
            elif parent.type == "else_clause" and parent.parent is not None:
                branch = parent.parent
                if any(c.type == "elif_clause" for c in branch.named_children):
                    return None
                out.append(f"not ({self.src.text(branch.child_by_field_name('condition'))})")
            elif parent.type == "elif_clause":
                return None
            elif parent.type == "conditional_expression" and len(parent.named_children) == 3:
                value, test, other = parent.named_children
                if child == value:
                    out.append(self.src.text(test))
                elif child == other:
                    out.append(f"not ({self.src.text(test)})")
            child, parent = parent, parent.parent
        return False

    def called(self) -> frozenset[str] | None:
        """The attributes `forward` calls (`self.<attr>(`), or None when there is no forward to read."""
        if self.owner is None:
            return None
        text = self.src.raw(self.owner).decode("utf-8", errors="replace")
        return frozenset(_CALLED.findall(text))

    def annotations(self) -> dict[str, str]:
        return init_annotations(self.function, self.src, self.qualify)

    def locals(self) -> dict[str, str]:
        """Names assigned once in the body, at its top level, to the source text of their value."""
        text = textwrap.dedent(self.src.raw(self.function).decode("utf-8", errors="replace"))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return {}
        fn = tree.body[0] if tree.body else None
        if not isinstance(fn, ast.FunctionDef):
            return {}
        stores: dict[str, int] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        return {s.targets[0].id: ast.unparse(s.value) for s in fn.body
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and stores.get(s.targets[0].id) == 1}


class _Scope:
    def __init__(self, params: dict[str, str | None], source: InitSource | None) -> None:
        self.params = params
        self._source = source
        self._annotations: dict[str, str] | None = None
        self._locals: dict[str, str] | None = None

    def annotations(self) -> dict[str, str]:
        if self._annotations is None:
            self._annotations = self._source.annotations() if self._source is not None else {}
        return self._annotations

    def locals(self) -> dict[str, str]:
        if self._locals is None:
            self._locals = self._source.locals() if self._source is not None else {}
        return self._locals

    def built_only_otherwise(self, root: str, config: Summary) -> bool:
        """Whether every construction of the class in its file is under a test the config's defaults
        make false (`if config.is_gated_act:` with `is_gated_act` False by default)."""
        built = self._source.constructions() if self._source is not None else None
        if not built:
            return False
        defaults = dict(config.defaults)
        for conditions in built:
            if conditions is None:
                return False
            if not any(_test(c, root, defaults) is False for c in conditions):
                return False
        return True


def _test(text: str, root: str, defaults: dict[str, object]) -> object:
    """The truth of a test under the config's defaults (`config.x` read from them), or unknown."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return _UNKNOWN
    value = _value(node, {}, {}, (root, defaults))
    return _UNKNOWN if value is _UNKNOWN else bool(value)


def _getattr_parts(text: str) -> tuple[str, str] | None:
    """`getattr(config, "field", default)` -> ("config", "field")."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) in (2, 3) and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return node.args[0].id, node.args[1].value
    return None


def init_annotations(function: Any, src: Any, qualify: Any) -> dict[str, str]:
    """The qualified annotation of each annotated parameter of a tree-sitter function node
    (`config: ViTConfig` -> `{"config": ".configuration_vit.ViTConfig"}`)."""
    from adopter.analysis.parse.source import Field

    params = function.child_by_field_id(Field.PARAMETERS)
    out: dict[str, str] = {}
    for child in params.named_children if params is not None else ():
        if child.type not in ("typed_parameter", "typed_default_parameter"):
            continue
        name = child.child_by_field_id(Field.NAME) or (child.named_children[0] if child.named_child_count else None)
        kind = child.child_by_field_name("type")
        if name is None or kind is None or name.type != "identifier":
            continue
        text = src.text(kind).strip().strip("\"'")
        if text.replace(".", "").replace("_", "").isalnum():
            out[src.text(name)] = qualify(text)
    return out
