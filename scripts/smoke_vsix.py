"""Check a built .vsix with a given Python, without VS Code: the launcher's probe, then an LSP session.

    python3 scripts/smoke_vsix.py adopter-linux-x64-0.1.0.vsix /opt/python3.14/bin/python3.14
    python3 scripts/smoke_vsix.py VSIX PYTHON [MODEL_FILE]

Unpacks the .vsix into a temporary folder and runs its launcher (extension/client/python/launch.py) with
PYTHON, as the extension does with the user's interpreter: `--probe` must say ready (a platform .vsix
carries what the server needs for CPython 3.10-3.14), then `launch.py lsp` over stdio gets initialize,
initialized and didOpen of MODEL_FILE (default: the end-to-end test's tinybert model) and must publish
at least one Adopter finding for it. Prints what it saw with wall times; exits 0 when both held, 1 when
not. For trying other Pythons by hand (the code-server test covers one); the checker itself runs on any
Python 3.10+. Kills the server it starts.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from queue import Empty, Queue
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "tests" / "e2e" / "workspace" / "tinybert" / "modeling_tinybert.py"
TIMEOUT_S = 120.0


def send(stream: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def read_messages(stream: IO[bytes], out: Queue[dict[str, Any] | None]) -> None:
    """Each LSP message from the server's stdout, then None at its end."""
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                out.put(None)
                return
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length is None:
            continue
        out.put(json.loads(stream.read(length)))


def lsp_session(python: str, launcher: Path, model: Path) -> tuple[bool, str]:
    server = subprocess.Popen([python, str(launcher), "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=model.parent)
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    stderr: list[bytes] = []
    threading.Thread(target=lambda: stderr.extend(server.stderr or []), daemon=True).start()
    messages: Queue[dict[str, Any] | None] = Queue()
    threading.Thread(target=read_messages, args=(server.stdout, messages), daemon=True).start()
    uri = model.resolve().as_uri()
    started = time.monotonic()
    try:
        send(server.stdin, {"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": model.parent.resolve().as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": model.parent.resolve().as_uri(), "name": model.parent.name}]}})
        send(server.stdin, {"method": "initialized", "params": {}})
        send(server.stdin, {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": model.read_text(encoding="utf-8")}}})
        initialized = None
        while time.monotonic() - started < TIMEOUT_S:
            try:
                message = messages.get(timeout=1.0)
            except Empty:
                continue
            if message is None:
                break
            if message.get("id") == 1 and "result" in message:
                initialized = time.monotonic() - started
                name = message["result"].get("serverInfo", {}).get("name", "?")
                print(f"  initialize answered in {initialized:.1f} s (server {name})")
            elif message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                found = [d for d in message["params"]["diagnostics"] if d.get("source", "").lower().startswith("adopter")]
                if found:
                    codes = sorted({str(d.get("code")) for d in found})
                    return True, (f"{len(found)} findings for {model.name} after {time.monotonic() - started:.1f} s: "
                                  f"{', '.join(codes)}")
        tail = b"".join(stderr).decode(errors="replace")[-2000:]
        return False, f"no findings for {model.name} within {TIMEOUT_S:.0f} s; the server's stderr ends with:\n{tail}"
    finally:
        try:
            send(server.stdin, {"id": 2, "method": "shutdown"})
            send(server.stdin, {"method": "exit"})
            server.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            server.kill()
            server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vsix", type=Path)
    parser.add_argument("python", help="the interpreter to run the server with, as the user's python3")
    parser.add_argument("model", type=Path, nargs="?", default=DEFAULT_MODEL)
    args = parser.parse_args(argv)
    version = subprocess.run([args.python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    print(f"{args.vsix.name} with Python {version} ({args.python})")
    with tempfile.TemporaryDirectory(prefix="adopter-smoke-") as tmp:
        with zipfile.ZipFile(args.vsix) as archive:
            archive.extractall(tmp)
        launcher = Path(tmp) / "extension" / "client" / "python" / "launch.py"
        started = time.monotonic()
        probe = subprocess.run([args.python, str(launcher), "--probe"], capture_output=True, text=True, timeout=120)
        print(f"  probe: exit {probe.returncode} in {time.monotonic() - started:.1f} s: {probe.stdout.strip()}")
        if probe.returncode != 0:
            print(probe.stderr.strip()[-2000:])
            return 1
        ok, what = lsp_session(args.python, launcher, args.model)
        print(f"  {what}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
