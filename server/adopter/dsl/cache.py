"""Parsed rule files kept across processes: the user's cache folder, and the seed a wheel ships.

Parsing the bundled rules with Lark is most of what a server does before its first diagnostics. Parsed
files are kept on disk in the user's cache folder (`rules/` of `$ADOPTER_CACHE_DIR`, else of
`$XDG_CACHE_HOME/adopter` or `~/.cache/adopter`), one entry per path keyed on the file's SHA-256, in one
pickle per folder of rule files (a process reads only the folders it loads), under a folder per parser
fingerprint (the DSL code and grammar, the interpreter, Adopter's version). A wheel
also carries a *seed* (`adopter/_data/rules-seed.pickle`, written when the wheel is built): the bundled
files parsed, keyed on their names, so the very first start after installing parses nothing either.

The fingerprint does not depend on where the code is installed nor on whether the rule types are
compiled: instances are pickled field by field (`_DataclassPickler`), which the mypyc-compiled and the
pure classes read alike. Anything wrong with a cache or the seed (unreadable, another version, no
permission) only means parsing again; `ADOPTER_RULE_CACHE=0` turns both off.

Imports nothing beyond the DSL (no tree-sitter), so that a wheel's build can write the seed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import pickle
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adopter import __version__
from adopter.dsl.types import Problem, Rule

Parsed = tuple[tuple[Rule, ...], Problem | None]
SEED_NAME = "rules-seed.pickle"
_KEEP_VERSIONS = 4  # parser fingerprints whose cache is kept (folders, or files of earlier versions)


class DiskCache:
    """Parsed rule files by path, with the SHA-256 of the text they were parsed from: one pickle per folder
    of rule files (`rules-<parser fingerprint>/<folder key>.pickle`), so that a process reads, and keeps in
    memory, only the folders it loads rules from. One file for every path ever parsed, as this was before,
    made every start unpickle the rules of every checkout and test folder the user's Adopter had read: with
    20 copies of the bundled rules on disk, 0.6 MB of memory and 10 ms of CPU each. A folder's file keeps
    one entry per path (the latest text) and drops the paths that no longer exist when it is written;
    writing also deletes the files of folders that no longer exist."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.folders: dict[str, dict[str, tuple[str, Parsed]]] = {}  # read on first use, by rule folder
        self.dirty: set[str] = set()

    @property
    def directory(self) -> Path | None:
        return None if self.folder is None else self.folder / f"rules-{parser_fingerprint()}"

    def file(self, rule_folder: str) -> Path | None:
        """Where the parsed files of `rule_folder` are kept."""
        directory = self.directory
        if directory is None:
            return None
        return directory / f"{hashlib.sha256(rule_folder.encode()).hexdigest()[:24]}.pickle"

    def get(self, path: str, digest: str) -> Parsed | None:
        entry = self._entries(path).get(path)
        return entry[1] if entry is not None and entry[0] == digest else None

    def put(self, path: str, digest: str, parsed: Parsed) -> None:
        self._entries(path)[path] = (digest, parsed)
        self.dirty.add(os.path.dirname(path))

    def _entries(self, path: str) -> dict[str, tuple[str, Parsed]]:
        rule_folder = os.path.dirname(path)
        entries = self.folders.get(rule_folder)
        if entries is None:
            entries = self.folders[rule_folder] = self._read(rule_folder)
        return entries

    def _read(self, rule_folder: str) -> dict[str, tuple[str, Parsed]]:
        file = self.file(rule_folder)
        if file is None:
            return {}
        # Only ever a file this user's own Adopter wrote (the folder is the user's cache).
        try:
            with file.open("rb") as data:
                unpickler = pickle.Unpickler(data)
                if unpickler.load() != rule_folder:  # another folder with the same key: not ours
                    return {}
                entries = unpickler.load()
        except Exception:  # missing, truncated, written by other code: parse again
            return {}
        return entries if isinstance(entries, dict) else {}

    def write(self) -> None:
        """Save the folders whose entries were added to; never raises."""
        directory = self.directory
        if directory is None or not self.dirty:
            return
        dirty, self.dirty = self.dirty, set()
        with contextlib.suppress(Exception):  # a read-only or full disk: the next start parses again
            directory.mkdir(parents=True, exist_ok=True)
            # Other parser versions' caches (other checkouts, older versions): keep the newest few.
            others = sorted((p for p in directory.parent.glob("rules-*") if p != directory),
                            key=lambda p: p.stat().st_mtime, reverse=True)
            for old in others[_KEEP_VERSIONS - 1:]:
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
                else:  # a single-file cache of earlier versions
                    old.unlink(missing_ok=True)
            _drop_vanished_folders(directory)
            for rule_folder in sorted(dirty):
                entries = {p: e for p, e in self.folders[rule_folder].items() if Path(p).is_file()}
                self.folders[rule_folder] = entries
                file = self.file(rule_folder)
                if file is not None:
                    _dump_folder(rule_folder, entries, file)


def _drop_vanished_folders(directory: Path) -> None:
    """Delete the cache files of rule folders that no longer exist (a removed checkout, a test's
    temporary folder): each file starts with its folder's name, read without the rest."""
    for file in directory.glob("*.pickle"):
        try:
            with file.open("rb") as data:
                rule_folder = pickle.Unpickler(data).load()
        except Exception:
            rule_folder = None
        if not isinstance(rule_folder, str) or not os.path.isdir(rule_folder):
            file.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class Seed:
    """The bundled rule files parsed when the wheel was built: by file name, (SHA-256, parsed) with each
    rule's and problem's `path` the bare name (`with_path` puts the installed file's back)."""

    fingerprint: str
    entries: dict[str, tuple[str, Parsed]]

    def get(self, path: Path, digest: str) -> Parsed | None:
        entry = self.entries.get(path.name)
        if entry is None or entry[0] != digest:
            return None
        return with_path(entry[1], str(path))


def with_path(parsed: Parsed, path: str) -> Parsed:
    """`parsed` with `path` as the file its rules and problem came from."""
    rules, problem = parsed
    if problem is not None:
        problem = dataclasses.replace(problem, path=path)
    return tuple(dataclasses.replace(r, path=path) for r in rules), problem


def read_seed(rules: Path) -> Seed | None:
    """The seed beside the bundled `rules` folder, when there is one for this parser; else None."""
    seed = _load(rules.parent / SEED_NAME)
    if isinstance(seed, Seed) and seed.fingerprint == parser_fingerprint():
        return seed
    return None


def write_seed(rules: Path, out: Path) -> int:
    """Parse every rule file of the folder `rules` and write them to `out` as a seed; the number of files.
    Raises on a file that does not parse: the bundled rules must."""
    from adopter.dsl import parse_rules

    entries: dict[str, tuple[str, Parsed]] = {}
    for file in sorted(rules.glob("*.adl")):
        data = file.read_bytes()
        entries[file.name] = (hashlib.sha256(data).hexdigest(), (tuple(parse_rules(rule_text(data), file.name)), None))
    out.parent.mkdir(parents=True, exist_ok=True)
    _dump(Seed(parser_fingerprint(), entries), out)
    return len(entries)


def rule_text(data: bytes) -> str:
    """A rule file's text as the parser reads it (UTF-8, any line break read as `\\n`, as `read_text()`
    reads it). Raises UnicodeDecodeError."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _load(file: Path) -> object:
    try:
        return pickle.loads(file.read_bytes())
    except Exception:  # missing, truncated, written by other code: parse again
        return None


def _dump(obj: object, file: Path) -> None:
    """Write `obj` to `file` atomically (a concurrent server reads the old or the new file)."""
    _dump_all((obj,), file)


def _dump_folder(rule_folder: str, entries: dict[str, tuple[str, Parsed]], file: Path) -> None:
    """A folder's cache file: its name first (read alone when pruning), then its entries."""
    _dump_all((rule_folder, entries), file)


def _dump_all(objects: tuple[object, ...], file: Path) -> None:
    import tempfile  # only when the cache is written: not on a start that reads it

    fd, tmp = tempfile.mkstemp(prefix=".rules-", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            pickler = _DataclassPickler(out, protocol=pickle.HIGHEST_PROTOCOL)
            for obj in objects:
                pickler.dump(obj)  # one memo: read back in order by one unpickler (the first alone too)
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise


class _DataclassPickler(pickle.Pickler):
    """Pickles the DSL's frozen dataclasses field by field, so that their mypyc-compiled versions (whose
    own unpickling goes through the frozen `__setattr__` and fails) load as well as the pure ones, and a
    pickle written by either build reads in the other."""

    def reducer_override(self, obj: object) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            values = tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))
            return _rebuild, (type(obj), values)
        return NotImplemented


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # `dataclasses.fields` per class: 30,000 objects per load


def _rebuild(cls: Any, values: tuple[object, ...]) -> object:
    """A dataclass instance with these field values, as they were (no `__init__` checks run again)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    obj: object = cls.__new__(cls)  # the class's own: a compiled class refuses object.__new__
    for name, value in zip(names, values):
        object.__setattr__(obj, name, value)
    return obj


def cache_folder() -> Path | None:
    """Where parsed rules are kept across processes, or None when that is turned off."""
    if not enabled():
        return None
    explicit = os.environ.get("ADOPTER_CACHE_DIR")  # as the accelerator search's cache (`wham/`) reads it
    if explicit:
        return Path(explicit) / "rules"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "adopter" / "cache" / "rules"
    try:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except RuntimeError:  # no home folder
        return None
    return Path(base) / "adopter" / "rules"


def enabled() -> bool:
    """Whether parsed rules may be read from and written to disk (`ADOPTER_RULE_CACHE`)."""
    return os.environ.get("ADOPTER_RULE_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


_fingerprint: list[str] = []


def parser_fingerprint() -> str:
    """What parsed rules depend on besides the rule text: the DSL code and grammar (their bytes, by file
    name), the interpreter and Adopter's version; not where they are installed."""
    if not _fingerprint:
        digest = hashlib.sha256(f"{__version__}|{sys.version}".encode())
        sources = sorted(Path(__file__).resolve().parent.glob("*.py"))
        try:
            from adopter.resources import grammar_dir

            sources += sorted(grammar_dir().glob("*.lark"))
        except FileNotFoundError:
            pass
        for source in sources:
            try:
                digest.update(source.name.encode() + b"\0" + source.read_bytes())
            except OSError:
                digest.update(source.name.encode() + b"\0?")
        _fingerprint.append(digest.hexdigest()[:20])
    return _fingerprint[0]


# Taken now, while the DSL modules just imported are the ones on disk: taken lazily, a file replaced
# under a running process (an upgrade, an edit) would file rules parsed by the old code under the new
# code's fingerprint, and every later start would read them back.
parser_fingerprint()
