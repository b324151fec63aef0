"""Harness design §4, "Hand off to a person": the human wait, the pause, waits in the log."""

from __future__ import annotations

from typing import Any

import pytest

from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.harness import (
    AgentContext,
    HandoffToHumanNotAllowedError,
    HarnessHost,
    Routing,
    define_agent,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .conftest import HostFactory
from .support import PERSON, billing_agent, escalate_tool, support_harness
from .test_who_answers import collect_until_finished

HUMAN_ROUTING = Routing(router=lambda ctx: None, allow_handoff_to_human=True)


def desk(main: ScriptedModel, billing: ScriptedModel | None = None, **kwargs: Any) -> Any:
    kwargs.setdefault("routing", HUMAN_ROUTING)
    return support_harness(
        main, [billing_agent(billing or ScriptedModel([]))], name="acme/desk", **kwargs
    )


async def test_the_handoff_tool_also_takes_human_true_when_allowed(host: HarnessHost) -> None:
    main = ScriptedModel([text("Hi")])
    session = await host.open(desk(main), thread_id="t1")

    await session.send("Hi")

    to = main.calls[0].tool("handoff")["properties"]["to"]
    assert to["anyOf"][0] == {"type": "string", "enum": ["billing"]}
    assert to["anyOf"][1]["properties"]["human"]["const"] is True


async def test_a_handoff_to_a_person_opens_a_human_wait_whose_message_is_the_note(
    host: HarnessHost,
) -> None:
    session = await host.open(desk(ScriptedModel([tool_call("handoff", PERSON)])), thread_id="t1")

    result = await session.send("I want a person.")

    [wait] = (await session.snapshot()).pending_waits
    assert wait.kind == "human"
    assert wait.message == "The user asks for a person."
    assert wait.run_id == result.run_id


async def test_the_human_wait_does_not_expire(make_host: HostFactory) -> None:
    clock = ManualClock()
    host = make_host(clock=clock)
    session = await host.open(desk(ScriptedModel([tool_call("handoff", PERSON)])), thread_id="t1")
    await session.send("I want a person.")

    await host.close()
    clock.advance(seconds=365 * 24 * 3600)  # a year later, on another host

    later = await make_host(clock=clock).open(desk(ScriptedModel([])), thread_id="t1")
    [wait] = (await later.snapshot()).pending_waits
    assert wait.status == "open"
    assert (await later.snapshot()).status == "paused"
    opened = [
        r for r in await host.persistence.read("harness/default/t1") if r.type == "wait.opened"
    ]
    assert not any("expire" in key.lower() for key in opened[0].data)
    assert await later.answer(question_id=wait.wait_id, value={"handBack": "billing"}) == "billing"


async def test_the_turn_ends_interrupted_and_the_session_pauses(host: HarnessHost) -> None:
    session = await host.open(desk(ScriptedModel([tool_call("handoff", PERSON)])), thread_id="t1")

    result = await session.send("I want a person.")

    assert result.status == "interrupted"
    snapshot = await session.snapshot()
    assert snapshot.status == "paused"
    events = await collect_until_finished(session)
    [handoff] = [e for e in events if e.name == "harness.handoff"]
    assert handoff.value["to"] == {"human": True}
    assert handoff.value["waitId"] == snapshot.pending_waits[0].wait_id
    assert events[-1].value["status"] == "interrupted"


async def test_a_user_message_during_the_pause_goes_into_the_transcript_and_no_model_answers(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("handoff", PERSON)])
    session = await host.open(desk(main), thread_id="t1")
    await session.send("I want a person.")

    result = await session.send("Hello? Anyone?")

    assert result.status == "held"
    assert result.run_id is None
    assert len(main.calls) == 1
    last = (await session.snapshot()).messages[-1]
    assert (last.role, last.text) == ("user", "Hello? Anyone?")


async def test_an_agent_hands_off_to_a_person_from_code(host: HarnessHost) -> None:
    async def run(ctx: AgentContext) -> str:
        assert ctx.harness is not None
        await ctx.harness.handoff(to={"human": True}, note="Angry customer")
        return "A person will take over."

    angry = define_agent(name="angry", description="Calms", run=run)
    main = ScriptedModel([tool_call("handoff", {"to": "angry"})])
    harness = support_harness(main, [angry], routing=HUMAN_ROUTING)
    session = await host.open(harness, thread_id="t1")

    result = await session.send("This is outrageous!")

    assert result.status == "interrupted"
    assert result.text == "angry:\nA person will take over."
    [wait] = (await session.snapshot()).pending_waits
    assert (wait.message, wait.before) == ("Angry customer", "angry")


async def test_a_tool_hands_off_to_a_person_with_run_handoff(host: HarnessHost) -> None:
    main = ScriptedModel([tool_call("escalate", {"orderId": "42"})])
    harness = desk(main, tools=[escalate_tool(to={"human": True})])
    session = await host.open(harness, thread_id="t1")

    result = await session.send("refund 42, a person please")

    assert result.status == "interrupted"
    [wait] = (await session.snapshot()).pending_waits
    assert wait.message == "Refund for order 42"
    assert wait.before is None


async def test_the_router_can_hand_off_to_a_person(host: HarnessHost) -> None:
    def router(ctx: Any) -> Any:
        return {"handoff": {"human": True}, "note": "VIP"} if "VIP" in (ctx.text or "") else None

    main = ScriptedModel([])
    harness = desk(main, routing=Routing(router=router, allow_handoff_to_human=True))
    session = await host.open(harness, thread_id="t1")

    result = await session.send("I am a VIP")

    assert result.status == "interrupted"
    assert main.calls == []
    assert (await session.snapshot()).pending_waits[0].message == "VIP"


async def test_without_allow_handoff_to_human_a_handoff_to_a_person_rejects(
    host: HarnessHost,
) -> None:
    codes: list[str] = []

    async def run(ctx: AgentContext) -> str:
        assert ctx.harness is not None
        try:
            await ctx.harness.handoff(to={"human": True})
        except HandoffToHumanNotAllowedError as exc:
            codes.append(exc.code)
        return "No person here, but I can help."

    helper = define_agent(name="helper", description="Helps", run=run)
    main = ScriptedModel([tool_call("handoff", PERSON), tool_call("handoff", {"to": "helper"})])
    harness = support_harness(main, [helper])
    session = await host.open(harness, thread_id="t1")

    result = await session.send("A person please")

    assert "anyOf" not in main.calls[0].tool("handoff")["properties"]["to"]
    rejected = (await session.snapshot()).messages[2].parts[0]
    assert rejected.is_error and "allow_handoff_to_human" in rejected.output  # type: ignore[union-attr]
    assert codes == ["handoff_to_human_not_allowed"]
    assert result.status == "completed"
    assert (await session.snapshot()).pending_waits == ()


async def test_waits_live_in_the_log_and_any_host_sees_and_answers_them_after_a_restart(
    make_host: HostFactory,
) -> None:
    harness = desk(ScriptedModel([tool_call("handoff", PERSON)]))
    first = make_host()
    await (await first.open(harness, thread_id="t1")).send("A person please")
    await first.close()

    second = make_host()
    session = await second.open(harness, thread_id="t1")
    [wait] = (await session.snapshot()).pending_waits
    await session.answer(question_id=wait.wait_id, value={"handBack": "billing"})

    snapshot = await session.snapshot()
    assert snapshot.pending_waits == ()
    assert snapshot.active_agent == "billing"
    assert snapshot.status == "idle"


@pytest.mark.parametrize("to", [{"human": False}, {"human": True, "x": 1}, 7])
async def test_a_handoff_target_of_the_wrong_shape_is_rejected(host: HarnessHost, to: Any) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": to}), text("I stay.")])
    session = await host.open(desk(main), thread_id="t1")

    result = await session.send("hm")

    assert result.text == "I stay."
    assert (await session.snapshot()).pending_waits == ()
