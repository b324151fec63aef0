"""Fixtures for the MCP server: a real vault on disk, in-process and subprocess clients."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agent_mem_vault.mcp import ServerSettings, build_server
from agent_mem_vault.vault import Vault
from mcp import Client, StdioServerParameters
from tests.cli_process import CLI, cli_env
from tests.loopback import free_port
from tests.mcp_wire import INIT, SERVE

NS = "project/harbor-api"


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    """A vault folder, made with ``init``: ``serve`` refuses a folder that is not a vault."""
    path = tmp_path / "vault"
    Vault(path, durable=False).init()
    return path


@pytest.fixture
def vault(vault_path: Path) -> Vault:
    vault = Vault(vault_path)
    vault.init()
    return vault


@asynccontextmanager
async def in_process(
    vault: Vault, agent: str = "claude-code", namespace: str | None = NS
) -> AsyncIterator[Client]:
    """The SDK's own client talking to the server in this process."""
    server = build_server(vault, ServerSettings(agent=agent, namespace=namespace))
    async with Client(server) as client:
        yield client


def serve_params(vault_path: Path, agent: str, *extra: str, cwd: Path | None = None) -> Any:
    """Launch ``agent-mem-vault serve`` as a real subprocess, as Claude Code or Codex would."""
    env = cli_env(vault=vault_path)
    return StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "serve", "--agent", agent, *extra],
        env=env,
        cwd=str(cwd) if cwd else None,
    )


# The warm-process folder of this test run (tests/conftest.py), for tests that build
# their subprocess's environment from nothing.
WARM_DIR = {"AGENT_MEM_VAULT_RUNTIME_DIR": os.environ["AGENT_MEM_VAULT_RUNTIME_DIR"]}


# The MCP clients written by others (the TypeScript SDK, the conformance suite), which
# scripts/test-env.sh installs with npm into tests/mcp/clients/.
CLIENTS = Path(__file__).parent / "clients"
NODE = CLIENTS / "node_modules" / ".bin" / "node"


def needs_clients(installed: Path, what: str) -> list[pytest.MarkDecorator]:
    """The marks of a slow test module that runs ``what`` (found at ``installed``) from
    tests/mcp/clients/: skipped, saying why, where npm has not installed it."""
    return [
        pytest.mark.slow,
        pytest.mark.skipif(
            not (NODE.exists() and installed.exists()),
            reason=f"{what} is not installed in tests/mcp/clients/ "
            "(scripts/test-env.sh installs it with npm ci; it needs npm)",
        ),
    ]


TOKEN = "test-token-0123456789abcdef"


@dataclass
class ServedHttp:
    """A ``serve --http`` process: where it listens, and (once stopped) what it logged."""

    url: str
    proc: subprocess.Popen[bytes]
    stderr: str = ""


@contextmanager
def serve_http(
    vault_path: Path, token: str | None = TOKEN, env: dict[str, str] | None = None
) -> Iterator[ServedHttp]:
    """``agent-mem-vault serve --http`` on a free port, until the block ends."""
    port = free_port()
    env = cli_env(vault=vault_path, **(env or {}))
    env.pop("AGENT_MEM_VAULT_TOKEN", None)
    if token:
        env["AGENT_MEM_VAULT_TOKEN"] = token
    proc = subprocess.Popen(
        [*SERVE, "--namespace", NS, "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    served = ServedHttp(f"http://127.0.0.1:{port}/mcp", proc)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx2.get(served.url, timeout=1)
                break
            except httpx2.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        proc.stderr.read().decode() if proc.stderr else ""
                    ) from None
                time.sleep(0.05)
        yield served
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
        served.stderr = err.decode(errors="replace")


@pytest.fixture
def http_server(vault_path: Path) -> Iterator[str]:
    with serve_http(vault_path) as served:
        yield served.url


class HttpSession:
    """Raw JSON-RPC over streamable HTTP in the handshake era: initialize, then POSTs."""

    def __init__(self, served: ServedHttp) -> None:
        self.url = served.url
        self.headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        init = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        assert init.status_code == 200, init.text
        self.headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = INIT["protocolVersion"]
        done = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, done.text

    def post(self, body: Any, *, raw: bytes | None = None, token: bool = True) -> httpx2.Response:
        headers = dict(self.headers)
        if not token:
            del headers["Authorization"]
        content = raw if raw is not None else json.dumps(body).encode()
        return httpx2.post(self.url, content=content, headers=headers, timeout=30)

    def answer(self, body: Any, *, raw: bytes | None = None) -> dict[str, Any]:
        """The one JSON-RPC message the server answers ``body`` with (JSON or one SSE event)."""
        response = self.post(body, raw=raw)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [
                line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")
            ]
            messages = [json.loads(d) for d in data if d]
            assert len(messages) == 1, response.text
            return messages[0]  # type: ignore[no-any-return]
        return response.json()  # type: ignore[no-any-return]
