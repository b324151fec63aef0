"""The MCP stdio wire spoken by hand: the initialize parameters, JSON-RPC lines, and
``agent-mem-vault serve`` on bare pipes.

For tests that need what the SDK's client would hide: bytes written as a
client with a bug would write them, several requests in one write, the exact
lines the server sends back, its stderr and exit status. One copy, so that the
protocol version or the way a stalled server is reported is changed in one
place.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.cli_process import CLI, cli_env

__all__ = ["INIT", "NO_ANSWER_AFTER", "SERVE", "RawServer", "message", "serving"]

INIT: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}
"""The ``params`` of an ``initialize`` request."""

SERVE = (*CLI, "serve", "--agent", "codex")
"""``serve`` as Codex starts it (``--namespace`` and more options follow)."""

NO_ANSWER_AFTER = 60.0
"""Only to end a test whose server never answers; no assertion is about time."""


def message(id_: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    """One JSON-RPC line (a notification when ``id_`` is None), newline included."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        body["id"] = id_
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


class RawServer:
    """``agent-mem-vault serve`` on bare pipes: bytes in, JSON lines out.

    ``args`` are more options for ``serve`` (``--namespace``), ``env`` more
    environment variables, ``wrapper`` a command it runs under (``unshare``); the
    vault is ``vault_path``.
    """

    def __init__(
        self,
        vault_path: Path,
        *args: str,
        env: dict[str, str] | None = None,
        wrapper: Sequence[str] = (),
    ) -> None:
        self.proc = subprocess.Popen(
            [*wrapper, *SERVE, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(vault=vault_path, **(env or {})),
        )
        self.pending = b""

    def write(self, data: bytes) -> None:
        """``data`` as it is: any number of lines, or part of one."""
        assert self.proc.stdin
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, line: bytes) -> None:
        """One line (the newline is added)."""
        self.write(line + b"\n")

    def lines(self, count: int, timeout: float = NO_ANSWER_AFTER) -> list[dict[str, Any]]:
        """The next ``count`` lines of stdout, each of which must be a JSON-RPC message."""
        assert self.proc.stdout
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while self.pending.count(b"\n") < count:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            chunk = os.read(fd, 1 << 16) if ready else b""
            if not chunk:
                self.proc.kill()
                self.finish()
                raise AssertionError(f"stdout ended or stalled; got {self.pending[:300]!r}")
            self.pending += chunk
        out: list[dict[str, Any]] = []
        for _ in range(count):
            line, self.pending = self.pending.split(b"\n", 1)
            parsed = json.loads(line)
            assert parsed["jsonrpc"] == "2.0"
            out.append(parsed)
        return out

    def answer(self) -> dict[str, Any]:
        """The next line of stdout."""
        return self.lines(1)[0]

    def request(self, id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request and return the next line (its answer, over stdio in order)."""
        self.write(message(id_, method, params))
        return self.answer()

    def call(self, id_: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/call``'s result."""
        answer = self.request(id_, "tools/call", {"name": tool, "arguments": arguments})
        assert answer["id"] == id_
        result: dict[str, Any] = answer["result"]
        return result

    def finish(self) -> tuple[int, bytes, bytes]:
        """Close stdin and wait for the server to end: (status, stdout not read yet, stderr)."""
        stdout, stderr = self.proc.communicate(timeout=NO_ANSWER_AFTER)
        return self.proc.returncode, self.pending + stdout, stderr

    def close(self) -> str:
        """Close stdin, wait for the server to end; its stderr."""
        return self.finish()[2].decode()


@contextmanager
def serving(vault_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[RawServer]:
    """A :class:`RawServer` past its handshake (``initialize`` answered with a result, then
    ``notifications/initialized``), for tests of what follows it; when the block ends its
    stdin is closed, and it must have ended without a traceback."""
    raw = RawServer(vault_path, *args, env=env)
    init = raw.request(0, "initialize", INIT)
    assert "result" in init, init
    raw.write(message(None, "notifications/initialized"))
    yield raw
    stderr = raw.close()
    assert "Traceback" not in stderr, stderr
