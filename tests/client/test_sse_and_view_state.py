"""The pure parts of the client: the SSE line parser and the view's event fold."""

from __future__ import annotations

from agent_mem_vault.client import ClientEvent, PendingWait, ViewState, apply_event
from agent_mem_vault.client.client import reconnect_delay
from agent_mem_vault.client.sse import SseMessage, SseParser


def feed(parser: SseParser, text: str) -> list[SseMessage]:
    out = [parser.feed(line) for line in text.split("\n")]
    return [m for m in out if m is not None]


def test_parser_joins_data_lines_and_gives_each_message_its_id() -> None:
    parser = SseParser()
    text = ': comment\nretry: 1000\nid: 7\nevent: e\ndata: {"a":\ndata: 1}\n\ndata: x\n\n'
    got = feed(parser, text)
    assert got == [SseMessage('{"a":\n1}', "7", "e"), SseMessage("x", None)]


def test_parser_skips_events_without_data() -> None:
    assert feed(SseParser(), "id: 3\n\n") == []


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
