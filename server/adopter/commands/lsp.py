"""`adopter lsp`: run the language server over stdio (or TCP, for debugging)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lsp",
        help="run the language server (stdio by default)",
        description="Run the Adopter language server. Editors start it over stdio.",
    )
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP address instead, e.g. 127.0.0.1:2087")
    parser.add_argument("--log-file", metavar="PATH", help="write the server log here (default: stderr)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.set_defaults(run=run)


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--tcp wants HOST:PORT (e.g. 127.0.0.1:2087), got {text!r}")
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    """Start the server; returns when the client says exit."""
    address = None
    if args.tcp:
        try:
            address = _address(args.tcp)
        except ValueError as exc:
            print(f"adopter lsp: {exc}", file=sys.stderr)
            return 2
    logging.basicConfig(
        filename=args.log_file,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # pygls logs every message at INFO: keep that for --verbose, Adopter's own info always.
    logging.getLogger("adopter").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    from adopter.lsp import early
    from adopter.lsp.stdio import is_pipe, serve_stdio

    handover = None
    if address is None and early.enabled() and is_pipe(sys.stdin.buffer):
        # The first answers and diagnostics go out before pygls and lsprotocol are imported.
        handover = early.serve_first(sys.stdin.buffer, sys.stdout.buffer)
    from adopter.lsp.app import build_server

    server = build_server()
    if address is not None:
        server.start_tcp(*address)
    else:
        serve_stdio(server, handover=handover)
    return 0
