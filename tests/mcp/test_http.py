"""Streamable HTTP: a real ``serve --http`` process, the SDK's HTTP client, a bearer token."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from tests.cli_process import cli_env, run_process

from .conftest import SERVE, TOKEN


@pytest.mark.slow
async def test_http_transport_with_a_bearer_token(http_server: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    async with http, Client(streamable_http_client(http_server, http_client=http)) as client:
        created = await client.call_tool(
            "create_handoff", {"to": "codex", "summary": "over http", "context": "ctx"}
        )
        read = await client.call_tool("read_handoff", {})
    assert not created.is_error, created
    assert created.structured_content["handoff"]["from"] == "codex"
    assert read.structured_content["handoff"]["summary"] == "over http"
    assert "## Summary\nover http" in read.content[0].text  # type: ignore[union-attr]


@pytest.mark.slow
def test_http_refuses_a_request_without_the_token_or_with_a_wrong_one(http_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    missing = httpx2.post(http_server, json=body, headers=headers, timeout=10)
    wrong = httpx2.post(
        http_server,
        json=body,
        headers={**headers, "Authorization": "Bearer not-the-token-at-all"},
        timeout=10,
    )
    assert missing.status_code == 401
    assert wrong.status_code == 401


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])
def test_serve_refuses_to_listen_beyond_loopback_without_a_token(
    vault_path: Path, host: str
) -> None:
    env = cli_env(vault=vault_path)
    env.pop("AGENT_MEM_VAULT_TOKEN", None)
    proc = run_process([*SERVE, "--http", "--host", host], env=env, timeout=60)
    assert proc.returncode == 2
    assert f"listening on {host} needs a bearer token" in proc.stderr


def test_serve_refuses_a_short_token(vault_path: Path) -> None:
    proc = run_process(
        [*SERVE, "--http", "--token", "short"], env=cli_env(vault=vault_path), timeout=60
    )
    assert proc.returncode == 2
    assert "token is too short" in proc.stderr
