"""Two HTTP server processes on one PostgreSQL: an SSE client on server B sees server A's turn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.store.postgres import postgres_persistence
from tests.loopback import free_port

from .conftest import start_worker

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
SPEC: dict[str, Any] = {
    "main": [[["tool", "handoff", {"to": "billing"}]]],
    "billing": [
        [["text", "Your refund for order 42 is on its way."]],
        [["pause", 0.3], ["text", "It takes three days."]],
    ],
}


async def start_server(dsn: str, host_id: str) -> tuple[asyncio.subprocess.Process, str]:
    port = free_port()
    args = (dsn, host_id, str(port), json.dumps(SPEC))
    proc = await start_worker("server_worker.py", *args, ready="ready", stdin=False)
    return proc, f"http://127.0.0.1:{port}"


@pytest.fixture
async def servers(dsn: str) -> AsyncIterator[list[str]]:
    started = [await start_server(dsn, "host-a"), await start_server(dsn, "host-b")]
    yield [url for _, url in started]
    for proc, _ in started:
        proc.kill()
        await proc.wait()


async def read_sse(client: httpx.AsyncClient, url: str, turns: int) -> list[dict[str, Any]]:
    """SSE events (``id`` checked against ``data``) until ``turns`` turns finished."""
    events: list[dict[str, Any]] = []
    async with client.stream("GET", url, headers={"accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        event_id = None
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                body = json.loads(line[5:])
                assert body["id"] == event_id
                events.append(body)
                if sum(e["name"] == "run.finished" for e in events) == turns:
                    return events
    raise AssertionError("the stream ended")


async def test_an_sse_client_on_server_b_sees_a_turn_that_server_a_runs_in_order_once(
    servers: list[str], dsn: str
) -> None:
    a, b = servers
    thread = f"{a}/api/support/threads/t1"
    async with httpx.AsyncClient(timeout=20) as client:
        first = await client.post(f"{thread}/messages", json={"text": "Refund order 42, please."})
        assert first.status_code == 200, first.text
        stream = asyncio.create_task(
            read_sse(client, f"{b}/api/support/threads/t1/events", turns=2)
        )
        await asyncio.sleep(0.2)  # the stream is open on B before A's second turn
        second = await client.post(f"{thread}/messages", json={"text": "How long?"})
        assert second.status_code == 200, second.text
        events = await asyncio.wait_for(stream, 20)
        # A write on B while A owns the thread: 409, nothing written.
        refused = await client.post(f"{b}/api/support/threads/t1/messages", json={"text": "and B?"})

    assert refused.status_code == 409
    assert refused.json()["code"] == "log_owned_elsewhere"
    store = postgres_persistence(dsn, min_size=1, max_size=1)
    try:
        log = await store.read(stream_name("default", "t1"))
    finally:
        await store.close()
    assert [int(e["id"]) for e in events] == [r.seq for r in log]
    assert [(e["name"], e["value"]) for e in events] == [(r.type, r.data) for r in log]
    assert events[-1]["value"]["text"] == "billing:\nIt takes three days."
