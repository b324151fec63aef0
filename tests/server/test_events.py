"""The SSE stream over a real uvicorn on loopback: events, and resuming after a drop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource

from agent_mem_vault.server import create_harness_app
from agent_mem_vault.server.support_demo import SupportDemo
from tests.server.support import ADA, BOB, OLGA, PERSON, REFUND, serve

DESK = "/api/desk/threads/case-42"


@pytest.fixture
async def live(demo: SupportDemo) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(demo.app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        yield client


async def read_events(
    client: httpx.AsyncClient, headers: dict[str, str], until: Any, path: str = DESK
) -> list[tuple[str, dict[str, Any]]]:
    """Open the stream, collect (id, event) until ``until(events)`` holds, then drop it."""
    got: list[tuple[str, dict[str, Any]]] = []
    async with client.stream("GET", f"{path}/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async for message in EventSource(response).aiter_sse():
            if message.data:
                got.append((str(message.id), json.loads(message.data)))
                if until(got):
                    break
    return got


async def test_event_stream_carries_the_handoff_event(live: httpx.AsyncClient) -> None:
    await live.post(f"{DESK}/messages", json={"text": "hello"}, headers=ADA)

    opened = asyncio.Event()

    def until(got: list[tuple[str, dict[str, Any]]]) -> bool:
        opened.set()  # the stream is open: it sends the first turn's events
        return any(e["name"] == "harness.handoff" for _, e in got)

    task = asyncio.create_task(read_events(live, ADA, until))
    await asyncio.wait_for(opened.wait(), 10)
    await live.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    events = await asyncio.wait_for(task, 10)
    (handoff,) = [e for _, e in events if e["name"] == "harness.handoff"]
    assert handoff["value"]["from"] is None
    assert handoff["value"]["to"] == "billing"
    assert handoff["value"]["by"] == "tool"
    assert handoff["value"]["runId"]
    assert handoff["runId"] == handoff["value"]["runId"]
    assert [i for i, _ in events] == [e["id"] for _, e in events]


async def test_dropped_stream_resumes_from_last_event_id_without_loss_or_repeat(
    live: httpx.AsyncClient,
) -> None:
    await live.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    await live.post(f"{DESK}/members", json={"userId": "olga", "role": "operator"}, headers=ADA)
    first = await read_events(live, OLGA, lambda got: len(got) == 5)
    # While nobody listens, the thread moves on.
    await live.post(f"{DESK}/messages", json={"text": PERSON}, headers=ADA)
    await live.post(f"{DESK}/messages", json={"text": "Olga here.", "as": "operator"}, headers=OLGA)
    newest = int((await live.get(DESK, headers=OLGA)).json()["lastEventId"])
    rest = await read_events(
        live, {**OLGA, "last-event-id": first[-1][0]}, lambda got: int(got[-1][0]) >= newest
    )
    ids = [int(i) for i, _ in first + rest]
    assert ids == list(range(1, newest + 1))
    assert rest[-1][1]["value"]["message"]["metadata"]["harness"]["operator"] == "olga"


async def test_query_last_event_id_resumes_like_the_header(live: httpx.AsyncClient) -> None:
    await live.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    got = await read_events(live, ADA, lambda got: True)
    assert got[0][0] == "1"
    async with live.stream("GET", f"{DESK}/events?lastEventId=3", headers=ADA) as response:
        async for message in EventSource(response).aiter_sse():
            if message.data:
                assert message.id == "4"
                break


async def test_stream_without_access_is_refused_before_it_starts(live: httpx.AsyncClient) -> None:
    await live.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    for headers, status, code in ((BOB, 404, "thread_not_found"), ({}, 401, "unauthenticated")):
        r = await live.get(f"{DESK}/events", headers=headers)
        assert (r.status_code, r.json()["code"]) == (status, code)


async def test_a_client_that_stops_reading_is_dropped_not_kept_forever(
    demo: SupportDemo,
) -> None:
    """The stream is pulled as fast as its client reads; a stalled client is let go."""
    app = create_harness_app(
        demo.host, {"desk": demo.desk, "billing": demo.billing_desk}, sse_send_timeout=0.2
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://desk.test"
    ) as client:
        await client.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client never hangs up
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["type"])
        if message["type"] == "http.response.body":
            await asyncio.Event().wait()  # ... and never takes the data

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": f"{DESK}/events",
        "raw_path": f"{DESK}/events".encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"authorization", ADA["authorization"].encode()), (b"host", b"desk.test")],
        "client": ("127.0.0.1", 50000),
        "server": ("desk.test", 80),
    }
    # Without the send timeout this would wait for the client forever.
    await asyncio.wait_for(app(scope, receive, send), 10)
    assert sent[:2] == ["http.response.start", "http.response.body"]
