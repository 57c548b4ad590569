"""Which module-level functions another file of the same package imports.

`Forward.referenced` is false for a function whose name its own file never mentions: a helper nothing
calls gets no findings. A public helper of a library module is often called only from other modules
(timm's `apply_rot_embed`, defined beside `class RotaryEmbedding` and re-exported by its package's
`__init__`), so before a function counts as unreferenced, the other `.py` files of its package are read:
one that names both this module (its file's stem, or its package folder for an `__init__.py`) and the
function as whole words is taken to import it.

The package is the highest folder above the file that holds an `__init__.py` (read recursively); a file
outside any package is read beside its folder's other `.py` files only. Reads are bounded: past
`MAX_FILES` files the answer is "all of them are imported" (a doubt keeps findings); a file over
`MAX_BYTES` is skipped. Answers are cached per process while the package's folders are unchanged (their
modification times: a file added, removed or renamed), and every file read is recorded (`reads.note`) so
that `adopter check`'s result cache depends on it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from adopter.analysis.crossfile import reads
from adopter.analysis.parse.words import whole_words

MAX_FILES = 3000
MAX_BYTES = 2_000_000
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", ".git", ".venv", "venv", ".tox", "build", "dist"}
_CACHE: dict[tuple[str, bytes, tuple[str, ...]], tuple[tuple[tuple[str, int], ...], frozenset[str]]] = {}
_LISTINGS: dict[tuple[str, bool], tuple[tuple[tuple[str, int], ...], list[str]]] = {}


def imported_elsewhere(path: str | None, names: Iterable[str]) -> frozenset[str]:
    """Those of `names` (functions defined in the file at `path`) that another file of its package names
    together with the module. Empty when `path` is not a file on disk."""
    wanted = tuple(sorted(set(names)))
    if not wanted or not path or not os.path.isfile(path):
        return frozenset()
    path = os.path.abspath(path)
    root, recursive = _package_root(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    module = (os.path.basename(os.path.dirname(path)) if stem == "__init__" else stem).encode()
    folders, files = _listing(root, recursive, path)
    if len(files) > MAX_FILES:
        return frozenset(wanted)
    key = (root, module, wanted)
    cached = _CACHE.get(key)
    if cached is not None and cached[0] == folders:
        reads.note(files)
        return cached[1]
    found: set[str] = set()
    # Every file is read into this one buffer: `read(MAX_BYTES + 1)` allocated (and the kernel mapped) a fresh
    # 2 MB object per file, 40 % of the time of a call over transformers' 1,456 files.
    data = bytearray(MAX_BYTES + 1)
    for name in files:
        try:  # no stat: a file over MAX_BYTES shows by its length
            size = _read_into(name, data)
        except OSError:
            continue
        if size > MAX_BYTES:
            continue
        if data.find(module, 0, size) < 0 or not _is_word(data, module, size):
            continue
        found.update(n for n in wanted if n not in found and _is_word(data, n.encode(), size))
        if len(found) == len(wanted):
            break
    reads.note(files)
    result = frozenset(found)
    _CACHE[key] = (folders, result)
    return result


def _package_root(path: str) -> tuple[str, bool]:
    folder = os.path.dirname(path)
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return folder, False
    while os.path.isfile(os.path.join(os.path.dirname(folder), "__init__.py")):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder, True


def _listing(root: str, recursive: bool, own: str) -> tuple[tuple[tuple[str, int], ...], list[str]]:
    """(each folder read with its modification time, the `.py` files in them other than `own`). The last
    listing of `root` is reused while none of its folders changed: a stat per folder instead of reading
    each (transformers 4.35, 1,456 files: 3.1 -> 0.6 ms per call once warm)."""
    last = _LISTINGS.get((root, recursive))
    if last is not None and _unchanged(last[0]):
        return last[0], [name for name in last[1] if name != own]
    folders, files = _read_listing(root, recursive)
    _LISTINGS[(root, recursive)] = (folders, files)
    return folders, [name for name in files if name != own]


def _unchanged(folders: tuple[tuple[str, int], ...]) -> bool:
    try:
        return all(os.stat(folder).st_mtime_ns == mtime for folder, mtime in folders)
    except OSError:
        return False


def _read_listing(root: str, recursive: bool) -> tuple[tuple[tuple[str, int], ...], list[str]]:
    folders: list[tuple[str, int]] = []
    files: list[str] = []
    stack = [root]
    while stack and len(files) <= MAX_FILES + 1:  # `own` is among them now
        folder = stack.pop()
        try:
            folders.append((folder, os.stat(folder).st_mtime_ns))
            with os.scandir(folder) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.is_dir(follow_symlinks=False):
                        if recursive and entry.name not in _SKIP_DIRS and not entry.name.startswith("."):
                            stack.append(entry.path)
                    elif entry.name.endswith(".py"):
                        files.append(entry.path)
        except OSError:
            continue
    return tuple(folders), files


def _read_into(name: str, buffer: bytearray) -> int:
    """Read the file at `name` into the start of `buffer`, up to its length; how many bytes were read."""
    view = memoryview(buffer)
    size = 0
    with open(name, "rb", buffering=0) as handle:
        while size < len(buffer):
            got = handle.readinto(view[size:])
            if not got:
                break
            size += got
    return size


def _is_word(data: bytes | bytearray, word: bytes, size: int | None = None) -> bool:
    """Whether `word` occurs in `data[:size]` as a whole word (not inside a longer identifier)."""
    return next(whole_words(data, word, size), -1) >= 0
