"""The client's messages read from stdin on the event loop itself, without a reader thread.

pygls reads each header line and each body through `run_in_executor`: three thread hand-offs per
message, each waking the event loop from another thread. When stdin is a pipe or a socket (how every
LSP client starts a server), an asyncio stream reads the same bytes on the loop, and pygls' own
message loop (`pygls.io_.run_async`) runs over it unchanged. Anything else (a terminal, a file, any
stdin on Windows) keeps pygls' reader.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
import threading
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    import asyncio

    from pygls.server import JsonRPCServer

    from adopter.lsp.early import Handover

log = logging.getLogger(__name__)


class PipeReader:
    """pygls' async reader interface over an asyncio stream; `b""` at the end of input."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        return await self._stream.readline()

    async def readexactly(self, n: int) -> bytes:
        import asyncio

        try:
            return await self._stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:  # the client went away mid-message
            return exc.partial if len(exc.partial) == n else b""


def is_pipe(stream: BinaryIO) -> bool:
    """Whether `stream` is a pipe or a socket on a POSIX system (a terminal must not be switched to
    non-blocking, and Windows' proactor loop cannot read an ordinary stdin pipe)."""
    if os.name != "posix":
        return False
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def serve_stdio(
    server: JsonRPCServer,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    handover: Handover | None = None,
) -> None:
    """Serve `server` over stdin/stdout until the client exits (pygls' `start_io`, without the reader
    thread when stdin is a pipe). `handover`: what `adopter.lsp.early` read and answered before (stdin
    must be a pipe): its bytes are read first, and an `initialize` answer it sent is not sent again."""
    import asyncio  # here, not at the top: the early start (adopter.lsp.early) runs before it is needed

    from pygls.io_ import StdoutWriter, run_async

    source = stdin or sys.stdin.buffer
    if not is_pipe(source):
        if handover is not None:
            raise ValueError("an early start needs stdin to be a pipe")
        server.start_io(stdin, stdout)
        return
    stop = threading.Event()
    server._stop_event = stop  # pygls' `shutdown` and `exit` handlers set it
    writer = StdoutWriter(stdout or sys.stdout.buffer)
    if handover is not None and handover.answer is not None:
        writer = handover.answer.wrap(writer)  # type: ignore[assignment]
    server.protocol.set_writer(writer)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=1 << 20)
        if handover is not None:
            stream.feed_data(handover.raw)  # read by the early start: the full server reads them first
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), source)
        await run_async(
            stop_event=stop,
            reader=PipeReader(stream),
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("Connection to the client is lost; shutting down.")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it unannotated
