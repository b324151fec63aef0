"""The app sees every refusal the model got during a turn: on the result and as an event."""

from __future__ import annotations

from agent_mem_vault.harness import (
    HARNESS_EVENTS,
    MAX_HANDOFFS_PER_TURN,
    Harness,
    HarnessHost,
    Routing,
    define_agent,
    define_harness,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .conftest import HostFactory


def desk(main: ScriptedModel) -> Harness:
    agents = [
        define_agent(name=name, description=name, run=lambda ctx: ctx.chat())
        for name in ("billing", "shipping")
    ]
    return define_harness(name="acme/desk", model=main, agents=agents, routing=Routing())


async def events_of(host: HarnessHost, harness: Harness, name: str) -> list[dict[str, object]]:
    session = await host.open(harness, thread_id="t1")
    seq = (await session.snapshot()).seq
    found = []
    async for event in session.events():
        if event.name == name:
            found.append(event.value)
        if event.seq >= seq:
            break
    return found


async def test_an_unknown_target_an_unknown_tool_and_a_second_handoff_reach_the_app(
    make_host: HostFactory,
) -> None:
    host = make_host()
    main = ScriptedModel(
        [
            [tool_call("handoff", {"to": "nobody"}), tool_call("lookup", {})],
            [tool_call("handoff", {"to": "billing"}), tool_call("handoff", {"to": "shipping"})],
            text("Done."),
        ]
    )
    harness = desk(main)
    result = await (await host.open(harness, thread_id="t1")).send("hi")

    assert result.status == "completed"
    assert [(r.code, r.tool) for r in result.refusals] == [
        ("not_a_root_agent", "handoff"),
        ("unknown_tool", "lookup"),
        ("duplicate_handoff", "handoff"),
    ]
    assert "nobody" in result.refusals[0].message
    events = await events_of(host, harness, HARNESS_EVENTS.refused)
    assert [e["code"] for e in events] == ["not_a_root_agent", "unknown_tool", "duplicate_handoff"]
    assert all(e["runId"] == result.run_id for e in events)
    assert result.to_json()["refusals"][1]["toolCallId"] == result.refusals[1].tool_call_id

    # A retry of the same input returns the same refusals, from the log.
    again = await (await host.open(harness, thread_id="t1")).send("hi", input_id=result.input_id)
    assert again.refusals == result.refusals


async def test_the_handoff_over_the_limit_is_on_the_turn_result(make_host: HostFactory) -> None:
    host = make_host()
    ping_pong = [
        tool_call("handoff", {"to": "billing" if i % 2 == 0 else "shipping"})
        for i in range(MAX_HANDOFFS_PER_TURN + 1)
    ]
    main = ScriptedModel([*[[c] for c in ping_pong], text("Settled.")])
    result = await (await host.open(desk(main), thread_id="t1")).send("go")

    assert [r.code for r in result.refusals] == ["too_many_handoffs"]
    assert result.refusals[0].agent is not None  # an agent's model asked for the 11th
