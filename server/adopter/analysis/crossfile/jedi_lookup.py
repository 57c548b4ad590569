"""Where an imported name is defined, found with jedi's project-aware inference.

jedi parses the workspace and the installed packages (it never imports them; inference on compiled
modules runs in a subprocess of this interpreter). It is imported lazily, the first time a name needs
it: importing jedi takes a few hundred milliseconds, and a file with nothing to reach never starts it.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from adopter.analysis.crossfile.summary import Definition

_ENVIRONMENT: Any = None  # jedi's environment for this interpreter, made once per process
# One look-up can read thousands of files: `from transformers import UdopConfig` follows transformers 5's
# `if TYPE_CHECKING: from .models import *` into every model package (2,252 modules, 9.5 million objects
# the collector tracks, 1.3 GB). Its young, middle and full collections then took 18 of its 25 s of CPU
# (issue 22), and every later full collection of the run walked the kept trees again (5 s each). In a
# batch (`batch`) parso's sweep is off (`commands.filework.fewer_collections`), so what jedi parsed stays
# until `release`: a look-up runs without collections and what is alive after it is frozen (never
# scanned) until `release` drops the trees. The language server (no batch) releases after its look-ups.
_BATCH = [0]  # > 0 while a batch of files is analysed (`batch`)
_NO_COLLECTIONS = 1 << 30  # a young threshold no look-up reaches


@contextmanager
def batch() -> Iterator[None]:
    """Mark the files analysed meanwhile as a batch (`check`, `fix`): jedi's look-ups run without garbage
    collections and what they keep is taken out of the collector's scans (see `_BATCH`)."""
    _BATCH[0] += 1
    try:
        yield
    finally:
        _BATCH[0] -= 1


class JediLookup:
    """jedi, its environment and one project per package root; not thread-safe (the reach serialises)."""

    def __init__(self) -> None:
        self._jedi: Any = None
        self._env: Any = None
        self._projects: dict[str, Any] = {}

    @property
    def started(self) -> bool:
        """Whether jedi was imported (a look-up needed it)."""
        return self._jedi is not None

    def goto(self, module: str, name: str, from_path: str, root: str) -> Definition | None:
        """The definition `from <module> import <name>` in `from_path` reaches; `root`: the project."""
        if not _BATCH[0]:
            return self._goto(module, name, from_path, root)
        young, middle, old = gc.get_threshold()
        gc.set_threshold(_NO_COLLECTIONS, middle, old)  # not `gc.disable()`: parso's pickle loads re-enable it
        try:
            return self._goto(module, name, from_path, root)
        finally:
            gc.set_threshold(young, middle, old)
            gc.freeze()

    def _goto(self, module: str, name: str, from_path: str, root: str) -> Definition | None:
        jedi = self._load_jedi()
        code = f"from {module} import {name}\n"
        script = jedi.Script(code, path=from_path, project=self._project(root), environment=self._env)
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

    def _project(self, root: str) -> Any:
        project = self._projects.get(root)
        if project is None:
            project = self._jedi.Project(root, added_sys_path=[root], load_unsafe_extensions=False)
            self._projects[root] = project
        return project

    def release(self) -> None:
        """Drop jedi's and parso's parse trees (large, and walked by every full garbage collection)."""
        if self._jedi is not None:
            import parso.cache

            parso.cache.parser_cache.clear()
            self._jedi.cache.clear_time_caches(True)
        if _BATCH[0]:
            gc.unfreeze()  # the dropped trees (and what else a look-up froze) can be collected again
