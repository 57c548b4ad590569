"""The server's first answers, before pygls and lsprotocol are imported.

Importing lsprotocol's types (and pygls with them) costs more CPU than analysing a large model file:
it would be most of the time from the editor starting the server to the first diagnostics. So the
server starts here, on a plain JSON-RPC reader over stdin, and handles only the common opening:

1. `initialize`: answered with the result pygls gave the last time for the same client capabilities
   and the same server code (kept in the user cache folder, `answer_file`). Without one, nothing is
   answered here: pygls answers, and its answer is kept for the next start (`FirstAnswer`).
2. `initialized`: nothing to do before pygls has it.
3. the first `textDocument/didOpen` of a Python document: analysed with the settings the full server
   has at that point (initializationOptions over `[tool.adopter]`) and its diagnostics published
   (`adopter.lsp.wire`, the same JSON pygls would send).

Any other message, or a case the full server would also report something for (a settings problem, a
broken rule file), a malformed message, the end of input, or no message for `IDLE_S`, ends this phase
unanswered. Then the full server is built, and every byte read here is fed to it first, as if it had
read them itself: it handles `initialize` (its answer is dropped when one was sent here; a different
one is logged and replaces the kept one), `initialized` and the `didOpen` (it analyses and publishes
again) and all that follows. So the protocol behaviour is pygls' own; this phase only sends the same
first messages sooner. `ADOPTER_LSP_EARLY=0` turns it off.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import os
import re
import select
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, TypeGuard

if TYPE_CHECKING:
    from adopter.analysis.crossfile.reach import CrossFileReach
    from adopter.lsp.pipeline import Configured

log = logging.getLogger(__name__)

IDLE_S = 0.5  # no message for this long: build the full server meanwhile
_LENGTH = re.compile(rb"^content-length:\s*(\d+)\s*$", re.IGNORECASE | re.MULTILINE)
# Files whose code decides the `initialize` result, besides Adopter's own lsp/ modules.
_LIBRARY_FILES = (("pygls", "capabilities.py"), ("pygls", "protocol/language_server.py"), ("lsprotocol", "types.py"))


def enabled() -> bool:
    """Whether the server may answer its first messages before pygls is loaded (`ADOPTER_LSP_EARLY`)."""
    return os.environ.get("ADOPTER_LSP_EARLY", "1").strip().lower() not in ("0", "false", "no", "off")


def encode(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message framed as pygls frames it."""
    body = json.dumps(message)  # ASCII (escapes), so its length in characters is its length in bytes
    return (f"Content-Length: {len(body)}\r\n"
            f"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{body}").encode()


class Reader:
    """Framed JSON-RPC messages from a file descriptor; keeps every byte read (`raw`) for the full server."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.raw = bytearray()
        self.pos = 0  # where the next message starts in `raw`

    def next(self, timeout: float | None) -> dict[str, Any] | None:
        """The next message; None at the end of input, after `timeout` seconds without one, or when
        the input is not a message this phase understands."""
        while True:
            end = self.raw.find(b"\r\n\r\n", self.pos)
            if end >= 0:
                match = _LENGTH.search(bytes(self.raw[self.pos : end]))
                if match is None:
                    return None
                start, stop = end + 4, end + 4 + int(match.group(1))
                if len(self.raw) >= stop:
                    self.pos = stop
                    try:
                        message = json.loads(self.raw[start:stop])
                    except ValueError:
                        return None
                    return message if isinstance(message, dict) else None
            if timeout is not None and not select.select([self.fd], [], [], timeout)[0]:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.raw += chunk


class Writer(Protocol):
    def write(self, data: bytes) -> Any: ...

    def close(self) -> Any: ...


@dataclass
class FirstAnswer:
    """Finds the full server's answer to `initialize` among the first messages it writes: dropped when
    this phase already sent one, kept in `file` for the next start."""

    request_id: object
    file: Path | None
    sent: object = None  # the result sent by this phase, if any
    pending: bool = True

    def wrap(self, inner: Writer) -> Writer:
        answer = self

        class Filter:
            def write(self, data: bytes) -> Any:
                if answer.pending and answer.is_answer(data):
                    return None
                return inner.write(data)

            def close(self) -> Any:
                return inner.close()

        return Filter()

    def is_answer(self, data: bytes) -> bool:
        """Whether `data` is the answer to `initialize` and was already sent (the kept one is updated)."""
        try:
            message = json.loads(data.partition(b"\r\n\r\n")[2])
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message or message.get("id") != self.request_id:
            return False
        self.pending = False
        result = message.get("result")
        if "result" in message and result != self.sent and self.file is not None:
            if self.sent is not None:
                log.warning("the initialize result sent early differs from the server's; kept the new one")
            _store(self.file, result)
        return self.sent is not None


@dataclass
class Handover:
    """What the full server starts from: the bytes read so far, and its `initialize` answer's fate."""

    raw: bytes
    answer: FirstAnswer | None = None
    published: list[str] = field(default_factory=list)  # URIs whose diagnostics were published here


def answer_file(capabilities: object) -> Path | None:
    """Where pygls' `initialize` result for these client capabilities and this code is kept (None: no
    cache folder). The key covers the client capabilities, Python, Adopter's lsp/ modules (each
    feature's registration) and pygls' and lsprotocol's files that build the result."""
    from importlib.util import find_spec

    from adopter import __version__
    from adopter.dsl.cache import cache_folder

    folder = cache_folder()
    if folder is None:
        return None
    digest = hashlib.sha256(json.dumps([capabilities, __version__, sys.version], sort_keys=True).encode())
    for module in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(module.name.encode() + b"\0" + module.read_bytes())
    for package, name in _LIBRARY_FILES:
        spec = find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return None
        try:
            stat = (Path(next(iter(spec.submodule_search_locations))) / name).stat()
        except OSError:
            return None
        digest.update(f"{package}/{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return folder.parent / "lsp" / f"initialize-{digest.hexdigest()[:32]}.json"


def _load(file: Path | None) -> object:
    if file is None:
        return None
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _store(file: Path, result: object) -> None:
    """Write `result` to `file` atomically; a cache that cannot be written is skipped."""
    import tempfile  # only when the answer changed: not on the way to the first diagnostics

    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".initialize-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(result, out)
        os.replace(tmp, file)
    except OSError as exc:
        log.info("could not keep the initialize result in %s: %s", file, exc)
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def serve_first(stdin: BinaryIO, stdout: BinaryIO) -> Handover:
    """Handle the opening messages this phase can (see the module's docstring); never raises."""
    reader = Reader(stdin.fileno())
    handover = Handover(b"")
    # No cyclic collection while the analysis is imported and one file analysed (15 % of this phase's
    # CPU otherwise): what it allocates is bounded by that one file.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _serve(reader, stdout, handover)
    except Exception:  # whatever went wrong, the full server reads the same bytes and answers them
        log.exception("the early start failed; the full server takes over")
    finally:
        if collecting:
            gc.enable()
    handover.raw = bytes(reader.raw)
    return handover


def _send(stdout: BinaryIO, message: dict[str, Any]) -> None:
    stdout.write(encode(message))
    stdout.flush()


def _serve(reader: Reader, stdout: BinaryIO, handover: Handover) -> None:
    message = reader.next(None)
    if message is None or message.get("method") != "initialize" or "id" not in message:
        return
    params = message.get("params")
    if not _plain_initialize(params):
        return  # pygls reads (or rejects) it: an answer sent here could not be taken back
    file = answer_file(params.get("capabilities"))
    handover.answer = answer = FirstAnswer(message["id"], file)
    result = _load(file)
    if not isinstance(result, dict):
        return
    _send(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": result})
    answer.sent = result
    opened = _Opening.read(params)
    if opened is not None:
        opened.prepare()  # while the client takes the answer and sends its next messages
    while opened is not None:
        message = reader.next(IDLE_S)
        if message is None or "id" in message:
            return
        if message.get("method") == "initialized":
            continue
        if message.get("method") == "textDocument/didOpen":
            uri = opened.publish(message.get("params"), stdout)
            if uri is not None:
                handover.published.append(uri)
        return


def _plain_initialize(params: object) -> TypeGuard[dict[str, Any]]:
    """Whether `initialize` params have the types pygls needs where the early start reads them."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return False
    kinds: dict[str, type | tuple[type, ...]] = {"processId": int, "rootUri": str, "rootPath": str, "workspaceFolders": list,
             "initializationOptions": (dict, list, str, int, float, bool)}
    return all(params.get(key) is None or isinstance(params[key], kind) for key, kind in kinds.items())


@dataclass
class _Opening:
    """The settings and workspace root the full server has between `initialize` and its settings pull."""

    settings: Any
    root: Path | None
    context: Configured | None = None  # the rules and the session (`prepare`)
    reach: CrossFileReach | None = None

    @classmethod
    def read(cls, params: dict[str, Any]) -> _Opening | None:
        """From the `initialize` params, as `adopter.lsp.configuration.initialize` reads them; None when
        the full server would report a settings problem."""
        from pygls.uris import from_fs_path, to_fs_path

        from adopter.lsp.settings import pyproject_settings, resolve_settings

        root_uri, root_path = params.get("rootUri"), params.get("rootPath")
        if root_path is not None and root_uri is None:  # as pygls' `lsp_initialize` does
            root_uri = from_fs_path(root_path)
        path = to_fs_path(root_uri) if isinstance(root_uri, str) else None
        root = Path(path) if path else None
        pyproject, problems = pyproject_settings(root)
        sources = {"pyproject.toml [tool.adopter]": pyproject, "initializationOptions": params.get("initializationOptions")}
        settings, found = resolve_settings(sources)
        return None if problems or found else cls(settings, root)

    def prepare(self) -> Configured:
        """What the first document's diagnostics need besides the document: the analysis and the engine
        imported, the rules loaded. Done before the document arrives, so it overlaps with the client's
        own work between the `initialize` answer and its `didOpen`."""
        from adopter.analysis.analyser import deferred_reach
        from adopter.lsp import wire  # noqa: F401  # imports the engine, which publishing needs
        from adopter.lsp.pipeline import load_rule_context

        if self.context is None:
            # As the full server's analyses: a reach of its own that queues names for jedi, never waits.
            self.reach = deferred_reach()
            self.context = load_rule_context(self.settings, self.root, self.reach)
        return self.context

    def publish(self, params: object, stdout: BinaryIO) -> str | None:
        """Analyse an opened Python document and publish its diagnostics; its URI, or None when it is
        left to the full server (not a Python file, a rule problem to show)."""
        from pygls.uris import to_fs_path

        from adopter.lsp import wire
        from adopter.lsp.pipeline import UNAVAILABLE, analyse_python, is_rule_file, published_problems
        from adopter.session import OpenText

        item = params.get("textDocument") if isinstance(params, dict) else None
        if not isinstance(item, dict):
            return None
        uri, language, text, version = item.get("uri"), item.get("languageId"), item.get("text"), item.get("version")
        if not (isinstance(uri, str) and isinstance(text, str) and isinstance(language, str)
                and isinstance(version, int)) or is_rule_file(uri, language):
            return None  # the full server reports what is wrong with it
        started = time.perf_counter()
        context = self.prepare()
        if any(p.code != UNAVAILABLE for p in context.problems):  # the full server shows them as a message
            return None
        path = to_fs_path(uri) if uri.startswith("file:") else None
        snapshot = analyse_python(OpenText(text, path, reach=self.reach), version, context)
        index = wire.LspIndex(text)
        bindings = wire.module_bindings(snapshot.module_file)
        diagnostics = [
            wire.finding_diagnostic(f, index, uri, bindings, wire.severity_override(self.settings, f.rule_id, f.family))
            for f in snapshot.findings
        ]
        diagnostics += [wire.problem_diagnostic(p, index) for p in published_problems(snapshot, False)]
        out = {"uri": uri, "version": version, "diagnostics": diagnostics}
        _send(stdout, {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": out})
        log.info("first diagnostics of %s in %.0f ms, before the full server", uri, (time.perf_counter() - started) * 1000)
        return uri
