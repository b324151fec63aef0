"""The client's reading of an event stream, and the view's event fold."""

from __future__ import annotations

import httpx
import pytest

from agent_mem_vault.client import ClientEvent, HarnessClient, PendingWait, ViewState, apply_event
from agent_mem_vault.client.client import reconnect_delay
from agent_mem_vault.core.errors import NotFoundError

STREAM = (
    b': a comment\nretry: 1000\nid: 7\nevent: e\ndata: {"id": "7", "name":\ndata:  "a"}\n\n'
    b"id: 8\n\n"
    b': keep-alive\n\ndata: {"id": "9", "name": "b"}\n\n'
)


async def test_events_join_data_lines_skip_those_without_data_and_resume_from_the_last_id() -> None:
    asked: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("last-event-id"))
        if len(asked) > 1:
            return httpx.Response(404, json={"code": "thread_not_found", "message": "gone"})
        return httpx.Response(200, content=STREAM, headers={"content-type": "text/event-stream"})

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = HarnessClient("http://desk.test/api/desk", "case-42", http=http, reconnect_delay=0)
    got: list[ClientEvent] = []

    async def follow() -> None:
        async for event in client.events(after="6"):
            got.append(event)

    with pytest.raises(NotFoundError):
        await follow()
    await http.aclose()
    assert [(e.id, e.name) for e in got] == [("7", "a"), ("9", "b")]
    # An id stands until the next one (as in a browser's EventSource): the event after
    # ``id: 8`` carries 8, and the stream resumes from there.
    assert [e.raw["id"] for e in got] == ["7", "9"]
    assert asked == ["6", "8"]


def message_event(seq: int, message_id: str, text: str) -> ClientEvent:
    message = {"id": message_id, "role": "assistant", "parts": [{"type": "text", "text": text}]}
    return ClientEvent(str(seq), "message", {"message": message})


def test_view_appends_a_message_and_replaces_one_with_the_same_id() -> None:
    state = apply_event(ViewState(), message_event(1, "m1", "a"))
    state = apply_event(state, message_event(2, "m1", "b"))
    assert [m.text for m in state.messages] == ["b"]
    assert state.last_event_id == "2"


def test_view_moves_the_active_agent_on_handoff_but_not_to_a_person() -> None:
    state = apply_event(ViewState(), ClientEvent("1", "harness.handoff", {"to": "billing"}))
    assert state.active_agent == "billing"
    state = apply_event(state, ClientEvent("2", "harness.handoff", {"to": {"human": True}}))
    assert state.active_agent == "billing"


def test_view_opens_and_closes_waits() -> None:
    opened = {"waitId": "w1", "kind": "human", "message": "note"}
    state = apply_event(ViewState(), ClientEvent("1", "wait.opened", opened))
    assert state.pending_waits == (PendingWait("w1", "human", "note"),)
    closed = apply_event(state, ClientEvent("2", "wait.closed", {"waitId": "w1"}))
    assert closed.pending_waits == ()
    assert closed.stale


def test_view_skips_events_its_snapshot_already_holds() -> None:
    """A snapshot read mid-stream can be newer than the stream: nothing shows twice."""
    wait = PendingWait("w2", "human", "a person")
    snapshot = ViewState(pending_waits=(wait,), last_event_id="9")
    replayed = ClientEvent("8", "wait.opened", {"waitId": "w2", "kind": "human"})
    assert apply_event(snapshot, replayed) is snapshot
    newer = apply_event(snapshot, message_event(10, "m9", "hello"))
    assert [m.text for m in newer.messages] == ["hello"]
    assert newer.last_event_id == "10"
    # Ids that are not log positions are applied, never skipped.
    other = ClientEvent("evt-a", "harness.handoff", {"to": "billing"})
    assert apply_event(ViewState(), other).active_agent == "billing"


def test_reconnect_delay_doubles_after_each_failure_up_to_its_cap() -> None:
    assert [reconnect_delay(n, 0.5, 4.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert reconnect_delay(10_000, 0.5, 30.0) == 30.0
