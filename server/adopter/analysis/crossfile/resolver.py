"""Finds whether a class imported from another file is an `nn.Module`, by reading (never importing) it.

Lazy and cached: a file is parsed the first time a base class needs it, and its module-level symbols
are kept (keyed by path, invalidated when the file's modification time changes). Resolution follows
`from .x import Y` / `from pkg.x import Y` chains, including re-exports in `__init__.py` files, up to a
bounded depth.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Sequence

from adopter.analysis.crossfile import reads
from adopter.analysis.names.symbols import ModuleSymbols, class_base_names, import_from_names
from adopter.analysis.parse.source import SourceText, check_input, new_parser

Reader = Callable[[str], "str | None"]
MAX_HOPS = 8

# `torch.nn.<Class>` names that are not modules.
_TORCH_NN_NON_MODULES = frozenset({"Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer"})


def is_torch_module_class(qualified: str) -> bool:
    """`torch.nn.Module`, `torch.nn.Linear`, `torch.nn.modules.conv.Conv2d`: classes of torch.nn."""
    if not qualified.startswith("torch.nn."):
        return False
    last = qualified.rsplit(".", 1)[-1]
    if last in _TORCH_NN_NON_MODULES or not last[:1].isupper():
        return False
    return ".functional." not in qualified and ".init." not in qualified and ".utils." not in qualified


def _disk_reader(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(6 * 1024 * 1024)
    except OSError:
        return None
    checked, problem = check_input(data, path)
    return None if checked is None or problem is not None else checked.decode("utf-8")


class ModuleResolver:
    """Resolves dotted module names to files and answers "is this class an nn.Module?" across files.

    `reader(path)` returns a file's text or None; the default reads the disk (and then watches
    modification times). `search_paths` are extra roots for absolute imports, tried after the root
    of the importing file's own package.
    """

    def __init__(self, reader: Reader | None = None, search_paths: Sequence[str] | None = None) -> None:
        self._reader: Reader = reader or _disk_reader
        self._on_disk = reader is None
        self._search_paths = list(search_paths) if search_paths is not None else [
            p for p in sys.path if p and os.path.isdir(p)
        ]
        self._symbols: OrderedDict[str, tuple[float, ModuleSymbols | None]] = OrderedDict()  # least recent first
        # Source bytes of the parsed files kept (their trees are ~20 times larger); None: all. The language
        # server bounds it: a file dropped is parsed again if a class not asked about yet needs it.
        self.parsed_budget: int | None = None
        self._exists: dict[str, bool] = {}
        self._texts: dict[str, str] = {}  # texts read while checking existence (non-disk readers)
        self._answers: dict[tuple[str, str, str], bool | None] = {}

    @classmethod
    def for_archive(cls, archive: str) -> ModuleResolver:
        """A resolver over the files of a zip archive (a wheel), addressed by member path."""
        import zipfile

        # Opened once and kept: opening a wheel re-reads its central directory (thousands of entries,
        # tens of milliseconds), which per read dominated the analysis of a file.
        zf = zipfile.ZipFile(archive)
        names = set(zf.namelist())

        def read(member: str) -> str | None:
            member = os.path.normpath(member).replace(os.sep, "/")
            if member not in names:
                return None
            return zf.read(member).decode("utf-8", errors="replace")

        return cls(read, search_paths=[""])

    def clear(self) -> None:
        """Forget everything read so far (files on disk changed)."""
        self._symbols.clear()
        self._exists.clear()
        self._texts.clear()
        self._answers.clear()

    # -- files ---------------------------------------------------------------------------------------

    def _file_exists(self, path: str) -> bool:
        known = self._exists.get(path)
        if known is None:
            if self._on_disk:
                known = os.path.isfile(path)
            else:
                text = self._reader(path)
                known = text is not None
                if text is not None:
                    self._texts[path] = text
            self._exists[path] = known
        return known

    def package_of(self, path: str | None) -> str | None:
        """The dotted package containing the file `path` (from the `__init__.py` files above it)."""
        if not path:
            return None
        _, parts = self._package_root(path)
        return ".".join(parts) if parts else None

    def _package_root(self, path: str) -> tuple[str, list[str]]:
        directory = os.path.dirname(path)
        parts: list[str] = []
        while directory and self._file_exists(os.path.join(directory, "__init__.py")):
            parent, name = os.path.split(directory)
            parts.append(name)
            if parent == directory:
                break
            directory = parent
        return directory, list(reversed(parts))

    def symbols(self, path: str) -> ModuleSymbols | None:
        """The module-level symbols of the file at `path` (cached), or None when it cannot be read."""
        reads.note((path,))
        stamp = 0.0
        if self._on_disk:
            try:
                stamp = os.stat(path).st_mtime
            except OSError:
                return None
        cached = self._symbols.get(path)
        if cached is not None and cached[0] == stamp:
            self._symbols.move_to_end(path)
            return cached[1]
        text = self._texts.pop(path, None) or self._reader(path)
        result: ModuleSymbols | None = None
        if text is not None:
            data = text.encode("utf-8")
            tree = new_parser().parse(data)
            result = ModuleSymbols(SourceText(data, tree, path), self.package_of(path))
        self._symbols[path] = (stamp, result)
        self._symbols.move_to_end(path)
        if self.parsed_budget is not None:
            self._within_budget(self.parsed_budget)
        return result

    def _within_budget(self, budget: int) -> None:
        """Drop the least recently used parsed files until the rest hold at most `budget` source bytes (the
        latest one is always kept)."""
        sizes = [(p, len(s.src.data)) for p, (_, s) in self._symbols.items() if s is not None]
        total = sum(size for _, size in sizes)
        for path, size in sizes[:-1]:
            if total <= budget:
                break
            del self._symbols[path]
            total -= size

    def locate(self, module: str, from_path: str | None) -> str | None:
        """The file of module `module` (absolute `a.b` or relative `..a.b`), seen from `from_path`."""
        roots: list[str] = []
        if module.startswith("."):
            if not from_path:
                return None
            level = len(module) - len(module.lstrip("."))
            directory = os.path.dirname(from_path)
            for _ in range(level - 1):
                directory = os.path.dirname(directory)
            roots.append(directory)
            module = module.lstrip(".")
        else:
            if from_path:
                roots.append(self._package_root(from_path)[0])
            roots.extend(self._search_paths)
        rel = module.replace(".", "/") if module else ""
        for root in roots:
            base = os.path.join(root, rel) if rel else root
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                if self._file_exists(candidate):
                    return candidate
        return None

    # -- classes -------------------------------------------------------------------------------------

    def is_module_class(self, qualified: str, from_path: str | None) -> bool | None:
        """Whether the class `qualified` (as qualified in the file `from_path`) is an nn.Module.

        None when it cannot be found. Never imports anything.
        """
        return self._is_module(qualified, from_path or "", 0, set())

    def _is_module(self, qualified: str, from_path: str, hops: int, seen: set[tuple[str, str, str]]) -> bool | None:
        if is_torch_module_class(qualified):
            return True
        if qualified.startswith(("torch.", "builtins.", "typing.")) or "." not in qualified.lstrip("."):
            return False if qualified.startswith(("torch.", "typing.")) else None
        module, _, name = qualified.rpartition(".")
        path = self.locate(module, from_path or None) if module.strip(".") else None
        # the located file is in the key: two copies of one package name their modules alike
        key = (qualified, from_path if qualified.startswith(".") else "", path or "")
        if key in self._answers and not reads.active():  # recording: walk again to note the files
            return self._answers[key]
        if hops > MAX_HOPS or key in seen:
            return None
        seen.add(key)
        answer: bool | None = None
        if path is not None:
            symbols = self.symbols(path)
            if symbols is not None:
                answer = self._in_file(symbols, name, path, hops, seen)
        self._answers[key] = answer
        return answer

    def _in_file(
        self, symbols: ModuleSymbols, name: str, path: str, hops: int, seen: set[tuple[str, str, str]]
    ) -> bool | None:
        node = symbols.classes.get(name)
        if node is not None:
            return self._class_is_module(symbols, name, path, hops, seen, set())
        target = symbols.imports.get(name) or symbols.aliases.get(name) or _nested_import(symbols, name)
        if target is not None:
            return self._is_module(target, path, hops + 1, seen)
        return None

    def _class_is_module(
        self,
        symbols: ModuleSymbols,
        name: str,
        path: str,
        hops: int,
        seen: set[tuple[str, str, str]],
        local_seen: set[str],
    ) -> bool | None:
        if name in local_seen:
            return None
        local_seen.add(name)
        node = symbols.classes[name]
        unknown = False
        for base in class_base_names(node, symbols.src):
            root = base.split(".")[0]
            if base in symbols.classes:
                found = self._class_is_module(symbols, base, path, hops, seen, local_seen)
            elif root in symbols.imports or root in symbols.aliases:
                found = self._is_module(symbols.qualify(base), path, hops + 1, seen)
            else:
                found = None
            if found:
                return True
            unknown = unknown or found is None
        return None if unknown else False


def _nested_import(symbols: ModuleSymbols, name: str) -> str | None:
    """A re-export under `if TYPE_CHECKING:` or similar, found by scanning all import statements."""
    stack = [symbols.src.tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "import_from_statement":
            found = import_from_names(node, symbols.src, symbols.package).get(name)
            if found is not None:
                return found
        elif node.type in _SCANNED:
            stack.extend(node.named_children)
    return None


_SCANNED = frozenset(
    {"module", "block", "if_statement", "try_statement", "else_clause", "elif_clause", "except_clause",
     "finally_clause", "with_statement"}
)


