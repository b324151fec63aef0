"""Fixtures for the MCP server: a real vault on disk, in-process and subprocess clients."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
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
    env = {**os.environ, "AGENT_MEM_VAULT": str(vault_path)}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent_mem_vault.cli.main", "serve", "--agent", agent, *extra],
        env=env,
        cwd=str(cwd) if cwd else None,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The warm-process folder of this test run (tests/conftest.py), for tests that build
# their subprocess's environment from nothing.
WARM_DIR = {"AGENT_MEM_VAULT_RUNTIME_DIR": os.environ["AGENT_MEM_VAULT_RUNTIME_DIR"]}


TOKEN = "test-token-0123456789abcdef"
SERVE = [sys.executable, "-m", "agent_mem_vault.cli.main", "serve", "--agent", "codex"]


@dataclass
class ServedHttp:
    """A ``serve --http`` process: where it listens, and (once stopped) what it logged."""

    url: str
    proc: subprocess.Popen[bytes]
    stderr: str = ""


@contextmanager
def serve_http(vault_path: Path, token: str | None = TOKEN) -> Iterator[ServedHttp]:
    """``agent-mem-vault serve --http`` on a free port, until the block ends."""
    port = free_port()
    env = {**os.environ, "AGENT_MEM_VAULT": str(vault_path)}
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
