"""Fixtures for the MCP server: a real vault on disk, in-process and subprocess clients."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

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
