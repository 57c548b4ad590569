"""stdin read on the event loop (`adopter.lsp.stdio`): messages split across reads, the end of input,
and which streams take that path. The end-to-end tests (pytest-lsp, Neovim) drive it over real pipes."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import tempfile

from adopter.lsp.stdio import PipeReader, is_pipe

BODY = b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'
MESSAGE = b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


def test_a_message_arriving_in_pieces_reads_whole() -> None:
    async def scenario() -> tuple[bytes, bytes, bytes, bytes]:
        stream = asyncio.StreamReader()
        reader = PipeReader(stream)
        for i in range(0, len(MESSAGE), 7):
            stream.feed_data(MESSAGE[i : i + 7])
        stream.feed_eof()
        header, blank = await reader.readline(), await reader.readline()
        return header, blank, await reader.readexactly(len(BODY)), await reader.readline()

    header, blank, body, end = asyncio.run(scenario())
    assert header == b"Content-Length: %d\r\n" % len(BODY) and blank == b"\r\n"
    assert body == BODY and end == b""


def test_input_ending_mid_message_reads_as_the_end() -> None:
    async def scenario() -> bytes:
        stream = asyncio.StreamReader()
        stream.feed_data(BODY[:10])
        stream.feed_eof()
        return await PipeReader(stream).readexactly(len(BODY))

    assert asyncio.run(scenario()) == b""


def test_pipes_and_sockets_take_the_loop_reader_terminals_and_files_do_not() -> None:
    read, write = os.pipe()
    a, b = socket.socketpair()
    try:
        with os.fdopen(read, "rb", closefd=False) as pipe:
            assert is_pipe(pipe)
        with a.makefile("rb") as sock:
            assert is_pipe(sock)
        with tempfile.TemporaryFile() as regular:
            assert not is_pipe(regular)
        assert not is_pipe(io.BytesIO(b""))
    finally:
        os.close(read)
        os.close(write)
        a.close()
        b.close()
