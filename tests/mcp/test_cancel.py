"""Cancelled means not written: a tool call the client gives up on before its write
began never writes, even once the lock it waited for frees.

Another process (this test) holds the vault's lock, so the server's
``create_handoff`` waits for it in the server's worker; the kernel's lock
table says when it waits (/proc/locks). The client then cancels: over stdio
and in the handshake era over HTTP with ``notifications/cancelled``, in the
2026-07-28 era over HTTP by closing the response stream (the SDK client's
way). The lock is released and a later call, queued behind the cancelled one
on the same worker, shows what the vault holds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from agent_mem_vault.vault import Vault
from mcp import Client
from tests.mcp_wire import RawServer, message, serving
from tests.vault_locks import needs_proc_locks, vault_lock_held, wait_for_lock_waiters

from .conftest import NS, TOKEN, HttpSession, serve_http

pytestmark = [pytest.mark.slow, needs_proc_locks]

HANDOFF = {"to": "codex", "summary": "Batch the backfill", "context": "migrations/0007"}
CREATE = {"name": "create_handoff", "arguments": HANDOFF}
LONG_WAIT = {"AGENT_MEM_VAULT_LOCK_TIMEOUT": "600"}
"""A lock wait that outlasts any load on the machine: the test ends it by releasing."""


def handoff_notes(vault_path: Path) -> list[Path]:
    return sorted((vault_path / NS / "handoffs").glob("*.md"))


@pytest.fixture
def stdio(vault: Vault) -> Iterator[RawServer]:
    with serving(vault.path, "--namespace", NS, env=LONG_WAIT) as raw:
        yield raw


def _create_waiting_for_the_lock(stdio: RawServer, vault: Vault) -> None:
    """Send a create_handoff call (id 5) and return once it waits for the vault's lock,
    which the test holds."""
    stdio.write(message(5, "tools/call", CREATE))
    wait_for_lock_waiters(vault.path, 1)


def test_a_write_cancelled_while_it_waits_for_the_lock_is_never_written_over_stdio(
    stdio: RawServer, vault: Vault
) -> None:
    with vault_lock_held(vault.path):
        _create_waiting_for_the_lock(stdio, vault)
        stdio.write(message(None, "notifications/cancelled", {"requestId": 5, "reason": "Esc"}))
        # The server keeps answering while the cancelled call still holds the worker.
        assert stdio.request(6, "ping", {}) == {"jsonrpc": "2.0", "id": 6, "result": {}}
    listed = stdio.request(
        7, "tools/call", {"name": "list_handoffs", "arguments": {"status": "all"}}
    )
    # The next answer is the list's: the cancelled call is never answered, as the spec asks.
    assert listed["id"] == 7
    assert listed["result"]["structuredContent"]["count"] == 0
    assert handoff_notes(vault.path) == []


def test_a_write_that_waited_for_the_lock_and_was_not_cancelled_is_written_over_stdio(
    stdio: RawServer, vault: Vault
) -> None:
    with vault_lock_held(vault.path):
        _create_waiting_for_the_lock(stdio, vault)
    created = stdio.answer()
    assert created["id"] == 5 and created["result"]["isError"] is False
    assert len(handoff_notes(vault.path)) == 1


def test_a_cancel_that_comes_after_the_write_keeps_the_write_over_stdio(
    stdio: RawServer, vault: Vault
) -> None:
    created = stdio.call(5, "create_handoff", HANDOFF)
    stdio.write(message(None, "notifications/cancelled", {"requestId": 5, "reason": "late"}))
    listed = stdio.call(6, "list_handoffs", {"status": "all"})
    assert (
        listed["structuredContent"]["handoffs"][0]["id"]
        == created["structuredContent"]["handoff"]["id"]
    )
    assert len(handoff_notes(vault.path)) == 1


def test_a_write_cancelled_while_it_waits_for_the_lock_is_never_written_over_http(
    vault_path: Path,
) -> None:
    with serve_http(vault_path, env=LONG_WAIT) as served:
        http = HttpSession(served)
        answered: list[httpx2.Response] = []
        with vault_lock_held(vault_path):
            call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": CREATE}
            caller = threading.Thread(target=lambda: answered.append(http.post(call)))
            caller.start()
            wait_for_lock_waiters(vault_path, 1)
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 5, "reason": "Esc"},
            }
            assert http.post(cancel).status_code == 202
            caller.join(timeout=60)
            assert not caller.is_alive()
            assert http.answer({"jsonrpc": "2.0", "id": 6, "method": "ping"})["id"] == 6
        listed = http.answer(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "list_handoffs", "arguments": {"status": "all"}},
            }
        )
    assert listed["result"]["structuredContent"]["count"] == 0
    assert handoff_notes(vault_path) == []
    assert "result" not in answered[0].text  # the cancelled request got no result
    assert "Traceback" not in served.stderr, served.stderr


async def test_a_write_cancelled_by_closing_its_stream_is_never_written_over_http(
    vault_path: Path,
) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with serve_http(vault_path, env=LONG_WAIT) as served:
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        async with http, Client(streamable_http_client(served.url, http_client=http)) as client:
            with vault_lock_held(vault_path):
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(client.call_tool, "create_handoff", HANDOFF)
                        await anyio.to_thread.run_sync(wait_for_lock_waiters, vault_path, 1)
                        scope.cancel()  # the SDK client closes the call's response stream
                assert scope.cancelled_caught
                # The closed stream reaches the server as a disconnect, which cancels
                # the call in a few turns of its event loop; a tools/list on another
                # connection, sent after the close, takes many more turns to answer.
                assert (await client.list_tools()).tools
            listed: Any = await client.call_tool("list_handoffs", {"status": "all"})
    assert listed.structured_content["count"] == 0
    assert handoff_notes(vault_path) == []
    assert "Traceback" not in served.stderr, served.stderr
