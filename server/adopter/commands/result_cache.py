"""`check` and `fix` results kept on disk, by content: an unchanged file costs one hash the next run.

An entry's key is the SHA-256 of the file's bytes, the path as given and its absolute form (findings
and messages name the file; relative imports resolve from it) and the settings digest
(`fingerprint.settings_digest`: the code, the rules, the environment). An entry also records the other
files its analysis read (base classes, imported layers: `adopter.analysis.crossfile.reads`) with their SHA-256, and
is used only while each still has that content. Not recorded: a file whose absence mattered (an import
that did not resolve starts resolving when the file appears), and the files jedi passes through on its
way to a definition it finds elsewhere; `--no-cache` or a changed setting recomputes everything.

Entries live in `check/<settings digest>/<key[:2]>/<key>.pickle` of the user's cache folder (the rule
cache's: `$ADOPTER_CACHE_DIR`, else `$XDG_CACHE_HOME/adopter` or `~/.cache/adopter`);
`ADOPTER_RESULT_CACHE=0` (or `ADOPTER_RULE_CACHE=0`, which turns off every cache) turns it off. Only the
newest few settings folders are kept. A broken, unreadable or unwritable entry only means computing
again: nothing here raises.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

from adopter.dsl import cache as rule_cache

KEEP_SETTINGS = 4  # settings folders kept (other rule sets, targets, versions); the oldest are removed
_FORMAT = 1  # of an entry's pickle: (format, payload, ((path, sha256), ...))


def enabled() -> bool:
    """Whether results may be kept on disk (`ADOPTER_RESULT_CACHE`, and every cache's `ADOPTER_RULE_CACHE`)."""
    value = os.environ.get("ADOPTER_RESULT_CACHE", "1").strip().lower()
    return rule_cache.enabled() and value not in ("0", "false", "no", "off")


def folder(settings: str) -> Path | None:
    """The folder of one settings digest's entries, or None when caching is off or has no place."""
    rules = rule_cache.cache_folder() if enabled() else None
    return None if rules is None else rules.parent / "check" / settings


def content(data: bytes) -> str:
    """The SHA-256 of a file's bytes."""
    return hashlib.sha256(data).hexdigest()


def key(sha256: str, path: str, abspath: str) -> str:
    """The entry key of a file with content `sha256` under the path it was given as."""
    digest = hashlib.sha256(sha256.encode())
    digest.update(b"\0" + path.encode("utf-8", "surrogateescape") + b"\0" + abspath.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class ResultCache:
    """Entries of one settings digest; `get` checks the files each one read, hashing each file once."""

    def __init__(self, settings: str) -> None:
        self.folder = folder(settings)
        self._hashes: dict[str, str | None] = {}  # files read by entries: their SHA-256 now (None: gone)
        self.hits = self.misses = 0

    def known(self, abspath: str, sha256: str) -> None:
        """The content of a file this run read anyway (spares hashing it again as another entry's dependency)."""
        self._hashes[abspath] = sha256

    def get(self, entry: str) -> Any | None:
        if self.folder is None:
            return None
        try:
            stored = pickle.loads((self.folder / entry[:2] / f"{entry}.pickle").read_bytes())
            fmt, payload, deps = stored
        except Exception:  # missing, truncated, another format: compute it
            self.misses += 1
            return None
        if fmt != _FORMAT or any(self._sha256(p) != h for p, h in deps):
            self.misses += 1
            return None
        self.hits += 1
        return payload

    def put(self, entry: str, payload: Any, read: tuple[str, ...]) -> None:
        """Keep `payload` under `entry`, with the current content of the files it `read`; never raises."""
        if self.folder is None:
            return
        deps = tuple((p, h) for p in read if (h := self._sha256(p)) is not None)
        if len(deps) != len(read):
            return  # a file it read is gone already: nothing to check it against
        with contextlib.suppress(Exception):
            target = self.folder / entry[:2] / f"{entry}.pickle"
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".entry-", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    pickle.dump((_FORMAT, payload, deps), out, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    def prune(self) -> None:
        """Remove all but the newest `KEEP_SETTINGS` settings folders (this one is touched first); never raises."""
        if self.folder is None:
            return
        with contextlib.suppress(Exception):
            if self.folder.is_dir():
                os.utime(self.folder)
            siblings = sorted((p for p in self.folder.parent.iterdir() if p.is_dir()),
                              key=lambda p: p.stat().st_mtime, reverse=True)
            for old in siblings[KEEP_SETTINGS:]:
                shutil.rmtree(old, ignore_errors=True)

    def _sha256(self, path: str) -> str | None:
        if path not in self._hashes:
            try:
                self._hashes[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                self._hashes[path] = None
        return self._hashes[path]
