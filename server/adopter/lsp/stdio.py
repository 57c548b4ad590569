"""The client's messages read from stdin on the event loop itself, without a reader thread.

pygls reads each header line and each body through `run_in_executor`: three thread hand-offs per
message, each waking the event loop from another thread. When stdin is a pipe or a socket (how every
LSP client starts a server), an asyncio stream reads the same bytes on the loop, and pygls' own
message loop (`pygls.io_.run_async`) runs over it unchanged. Anything else (a terminal, a file, any
stdin on Windows) keeps pygls' reader.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import BinaryIO

from pygls.io_ import StdoutWriter, run_async
from pygls.server import JsonRPCServer

log = logging.getLogger(__name__)


class PipeReader:
    """pygls' async reader interface over an asyncio stream; `b""` at the end of input."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        return await self._stream.readline()

    async def readexactly(self, n: int) -> bytes:
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


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Serve `server` over stdin/stdout until the client exits (pygls' `start_io`, without the reader
    thread when stdin is a pipe)."""
    source = stdin or sys.stdin.buffer
    if not is_pipe(source):
        server.start_io(stdin, stdout)
        return
    stop = threading.Event()
    server._stop_event = stop  # pygls' `shutdown` and `exit` handlers set it
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=1 << 20)
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
