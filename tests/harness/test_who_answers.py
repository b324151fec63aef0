"""Harness design, section 3, "Show who answers": agent names on messages, handoff events."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_mem_vault.harness import HARNESS_EVENTS, Event, HarnessHost, Routing, Session
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .support import billing_agent, escalate_tool, support_harness


async def collect_until_finished(session: Session, after: int = 0) -> list[Event]:
    events: list[Event] = []
    async for event in session.events(after=after):
        events.append(event)
        if event.name == "run.finished":
            return events
    return events


async def test_each_assistant_message_carries_its_agents_name_and_none_for_the_main_model(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([[text("Let me get billing."), tool_call("handoff", {"to": "billing"})]])
    billing = ScriptedModel([text("Refund started.")])
    session = await host.open(support_harness(main, [billing_agent(billing)]), thread_id="t1")

    await session.send("refund please")

    snapshot = await session.snapshot()
    assistants = [m for m in snapshot.messages if m.role == "assistant"]
    assert [(m.agent, m.text) for m in assistants] == [
        (None, "Let me get billing."),
        ("billing", "Refund started."),
    ]
    wire = [m.to_json() for m in assistants]
    assert [w["agent"] for w in wire] == [None, "billing"]
    assert wire[1]["metadata"]["harness"]["agent"] == "billing"


async def test_each_handoff_streams_a_harness_handoff_event_with_from_to_note_by_and_run_id(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing", "note": "Refund for 42"})])
    billing = ScriptedModel([tool_call("handoff", {"to": "main"})])
    main_again = [text("Desk here.")]
    main = ScriptedModel([*main.replies, *main_again])
    session = await host.open(support_harness(main, [billing_agent(billing)]), thread_id="t1")

    result = await session.send("refund please")

    events = await collect_until_finished(session)
    handoffs = [e for e in events if e.name == HARNESS_EVENTS.handoff]
    assert [h.value for h in handoffs] == [
        {
            "from": None,
            "to": "billing",
            "note": "Refund for 42",
            "by": "tool",
            "runId": result.run_id,
        },
        {"from": "billing", "to": None, "by": "tool", "runId": result.run_id},
    ]
    assert all(h.run_id == result.run_id for h in handoffs)


async def test_code_handoff_event_says_by_code(host: HarnessHost) -> None:
    main = ScriptedModel([tool_call("escalate", {"orderId": "7"})])
    billing = ScriptedModel([text("ok")])
    harness = support_harness(main, [billing_agent(billing)], tools=[escalate_tool()])
    session = await host.open(harness, thread_id="t1")

    await session.send("refund 7")

    events = await collect_until_finished(session)
    [handoff] = [e for e in events if e.name == "harness.handoff"]
    assert handoff.value["by"] == "code"
    assert handoff.value["note"] == "Refund for order 7"


async def test_router_handoff_event_says_by_router_with_the_note(host: HarnessHost) -> None:
    def router(ctx: Any) -> Any:
        return {"handoff": "billing", "note": "Refund for 42"}

    main = ScriptedModel([])
    billing = ScriptedModel([text("ok")])
    harness = support_harness(main, [billing_agent(billing)], routing=Routing(router=router))
    session = await host.open(harness, thread_id="t1")

    result = await session.send("refund 42")

    events = await collect_until_finished(session)
    [handoff] = [e for e in events if e.name == HARNESS_EVENTS.handoff]
    assert handoff.value == {
        "from": None,
        "to": "billing",
        "note": "Refund for 42",
        "by": "router",
        "runId": result.run_id,
    }


async def test_events_stream_live_and_resume_after_the_last_id_without_gap_or_repeat(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([text("one"), text("two")])
    session = await host.open(
        support_harness(main, [billing_agent(ScriptedModel([]))]), thread_id="t1"
    )

    listener = asyncio.create_task(collect_until_finished(session))
    await asyncio.sleep(0.01)
    await session.send("first")
    first = await asyncio.wait_for(listener, 5)
    await session.send("second")
    rest = await asyncio.wait_for(collect_until_finished(session, after=int(first[-1].id)), 5)

    seqs = [e.seq for e in first + rest]
    assert seqs == list(range(1, len(seqs) + 1))
    names = [e.name for e in rest]
    assert names == ["input", "message", "run.started", "message", "usage", "run.finished"]
    message_event = next(e for e in rest if e.name == "message")
    assert message_event.value["message"]["parts"] == [{"type": "text", "text": "second"}]


async def test_snapshot_seq_continues_into_the_event_stream(host: HarnessHost) -> None:
    main = ScriptedModel([text("one"), text("two")])
    session = await host.open(
        support_harness(main, [billing_agent(ScriptedModel([]))]), thread_id="t1"
    )
    await session.send("first")
    snapshot = await session.snapshot()

    await session.send("second")
    events: list[Any] = await collect_until_finished(session, after=snapshot.seq)

    assert events[0].seq == snapshot.seq + 1
    assert events[0].name == "input"


async def test_a_turn_with_a_handoff_streams_its_events_in_the_order_things_happened(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing", "note": "Refund for 42"})])
    billing = ScriptedModel([text("Refund started.")])
    session = await host.open(support_harness(main, [billing_agent(billing)]), thread_id="t1")

    await session.send("refund please")

    events = await collect_until_finished(session)
    assert [e.name for e in events] == [
        "input",
        "message",  # the user's
        "run.started",
        "message",  # the main model's handoff call
        "usage",
        "message",  # its result: Handed off to billing.
        "harness.handoff",
        "message",  # billing's answer
        "usage",
        "run.finished",
    ]
    agents = [e.value["message"].get("agent") for e in events if e.name == "message"]
    assert agents == [None, None, None, "billing"]
