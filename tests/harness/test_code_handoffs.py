"""Harness design, section 2, "Hand off from code", and "What the target gets"."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agent_mem_vault.harness import (
    AgentContext,
    HandoffOutsideTurnError,
    HarnessHost,
    NotARootAgentError,
    Routing,
    ToolContext,
    User,
    define_agent,
    tool,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .support import (
    BILLING_PROMPT,
    SUPPORT_PROMPT,
    billing_agent,
    chat_agent,
    escalate_tool,
    harness_meta,
    support_harness,
)

REFUND = "I want a refund for order 42."


def triage_agent(to: Any = "billing", caught: list[str] | None = None) -> Any:
    async def run(ctx: AgentContext) -> str:
        if ctx.harness is None:
            raise RuntimeError("This agent must run in a harness.")
        try:
            await ctx.harness.handoff(to=to, note="Refund for order 42")
        except Exception as exc:
            if caught is None:
                raise
            caught.append(getattr(exc, "code", ""))
            return "I keep this one."
        return "I pass you to billing."

    return define_agent(name="triage", description="Sorts new requests", run=run)


async def test_a_root_agent_hands_off_from_code_and_the_target_answers_in_the_same_turn(
    host: HarnessHost,
) -> None:
    billing = ScriptedModel([text("Refund started.")])
    main = ScriptedModel([tool_call("handoff", {"to": "triage"})])
    harness = support_harness(main, [triage_agent(), billing_agent(billing)])
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert result.text == "triage:\nI pass you to billing.\n\nbilling:\nRefund started."
    snapshot = await session.snapshot()
    assert snapshot.active_agent == "billing"
    call, answer = snapshot.messages[-3], snapshot.messages[-2]
    assert call.tool_calls[0].name == "handoff"
    assert dict(call.tool_calls[0].arguments) == {"to": "billing", "note": "Refund for order 42"}
    assert answer.role == "tool"
    assert answer.parts[0].output == "Handed off to billing. billing answers next."  # type: ignore[union-attr]
    for message in (call, answer):
        assert harness_meta(message)["handoff"]["by"] == "code"
        assert harness_meta(message)["agent"] == "triage"


async def test_a_tool_of_the_main_model_hands_off_with_run_handoff(host: HarnessHost) -> None:
    main = ScriptedModel([tool_call("escalate", {"orderId": "42"})])
    billing = ScriptedModel([text("Refund for order 42 started.")])
    harness = support_harness(main, [billing_agent(billing)], tools=[escalate_tool()])
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert result.text == "billing:\nRefund for order 42 started."
    messages = (await session.snapshot()).messages
    assert messages[2].parts[0].output == "Billing answers next."  # type: ignore[union-attr]
    assert harness_meta(messages[3])["handoff"] == {
        "by": "code",
        "to": "billing",
        "note": "Refund for order 42",
    }
    assert "agent" not in harness_meta(messages[3])  # the main model handed off
    assert len(main.calls) == 1  # the part that handed off ended


async def test_handoff_messages_go_after_the_messages_the_earlier_model_call_got(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("escalate", {"orderId": "42"})])
    billing = ScriptedModel([text("Done.")])
    harness = support_harness(main, [billing_agent(billing)], tools=[escalate_tool()])
    session = await host.open(harness, thread_id="t1")

    await session.send(REFUND)

    earlier = main.calls[0].messages
    later = billing.calls[0].messages
    assert later[: len(earlier)] == earlier  # the provider's prompt cache still holds
    assert [m.role for m in later[len(earlier) :]] == ["assistant", "tool", "assistant", "tool"]


async def test_code_handoff_after_the_turn_ended_rejects(host: HarnessHost) -> None:
    kept: list[Any] = []

    async def run(ctx: AgentContext) -> str:
        kept.append(ctx.harness)
        return "Noted."

    keeper = define_agent(name="keeper", description="Keeps", run=run)
    main = ScriptedModel([tool_call("handoff", {"to": "keeper"})])
    harness = support_harness(main, [keeper, billing_agent(ScriptedModel([]))])
    session = await host.open(harness, thread_id="t1")
    await session.send("hi")

    with pytest.raises(HandoffOutsideTurnError) as info:
        await kept[0].handoff(to="billing")

    assert info.value.code == "handoff_outside_turn"
    assert (await session.snapshot()).active_agent == "keeper"


async def test_code_handoff_in_a_harness_without_routing_rejects(host: HarnessHost) -> None:
    codes: list[str] = []

    class Empty(BaseModel):
        pass

    async def move(args: Empty, ctx: ToolContext) -> str:
        try:
            await ctx.run.handoff(to="billing")
        except HandoffOutsideTurnError as exc:
            codes.append(exc.code)
            return "could not"
        return "moved"

    main = ScriptedModel([tool_call("move"), text("I stay.")])
    harness = support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        tools=[tool(name="move", description="Move", input=Empty, run=move)],
    )
    harness = type(harness)(**{**_fields(harness), "routing": None})
    session = await host.open(harness, thread_id="t1")

    result = await session.send("hi")

    assert codes == ["handoff_outside_turn"]
    assert result.text == "I stay."
    assert main.calls[0].tool_names == ("move",)  # no routing, no handoff tool


async def test_code_handoff_to_a_non_root_agent_rejects_and_the_caller_keeps_the_turn(
    host: HarnessHost,
) -> None:
    caught: list[str] = []
    helper = billing_agent(ScriptedModel([]))
    helper = type(helper)(name="helper", description="sub", run=helper.run)
    main = ScriptedModel([tool_call("handoff", {"to": "triage"})])
    harness = support_harness(
        main,
        [triage_agent(to="helper", caught=caught), billing_agent(ScriptedModel([]))],
        subagents=[helper],
    )
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert caught == [NotARootAgentError.code]
    assert result.text == "triage:\nI keep this one."
    assert (await session.snapshot()).active_agent == "triage"


async def test_the_target_gets_its_own_system_prompts_and_tools(
    host: HarnessHost,
) -> None:
    class Empty(BaseModel):
        pass

    refund_tool = tool(name="refund", description="Refund", input=Empty, run=lambda a, c: "ok")
    main = ScriptedModel([tool_call("handoff", {"to": "billing", "note": "order 42"})])
    billing = ScriptedModel([text("Done.")])
    harness = support_harness(
        main, [billing_agent(billing, tools=[refund_tool])], tools=[escalate_tool()]
    )
    session = await host.open(harness, thread_id="t1")

    await session.send(REFUND)

    assert main.calls[0].system_prompts == (SUPPORT_PROMPT,)
    assert main.calls[0].tool_names == ("escalate", "handoff")
    assert billing.calls[0].system_prompts == (BILLING_PROMPT,)
    assert billing.calls[0].tool_names == ("refund", "handoff")


async def test_the_target_gets_the_saved_transcript_and_the_note(host: HarnessHost) -> None:
    main = ScriptedModel([text("Hello!"), tool_call("handoff", {"to": "billing", "note": "N42"})])
    billing = ScriptedModel([text("Done.")])
    harness = support_harness(main, [billing_agent(billing)])
    session = await host.open(harness, thread_id="t1")
    await session.send("Hi")

    await session.send(REFUND)

    got = billing.calls[0].messages
    saved = (await session.snapshot()).messages
    assert got == saved[: len(got)]
    assert [m.text for m in got[:2]] == ["Hi", "Hello!"]
    assert got[-2].tool_calls[0].arguments["note"] == "N42"


async def test_the_tools_of_the_agent_that_handed_off_do_not_go_with_it(
    host: HarnessHost,
) -> None:
    refund_tool = tool(name="refund", description="Refund", input=_Empty, run=lambda a, c: "ok")
    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([tool_call("handoff", {"to": "triage", "note": "not billing"})])
    triage = ScriptedModel([text("Triage here.")])
    harness = support_harness(
        main,
        [
            billing_agent(billing, tools=[refund_tool]),
            chat_agent("triage", triage, "Sort requests."),
        ],
        tools=[escalate_tool()],
    )
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert result.text == "triage:\nTriage here."
    assert billing.calls[0].tool_names == ("refund", "handoff")
    assert triage.calls[0].tool_names == ("handoff",)
    assert triage.calls[0].system_prompts == ("Sort requests.",)


async def test_the_target_gets_the_provider_keys_of_the_user_who_sent_the_turn(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([text("Done."), text("Done for Mia.")])
    harness = support_harness(main, [billing_agent(billing)])
    ada = User(id="ada", tenant_id="acme", keys={"openai": "sk-ada"})
    mia = User(id="mia", tenant_id="acme", keys={"openai": "sk-mia"})
    await (await host.open(harness, thread_id="t1", user=ada)).send(REFUND)
    await host.sessions.share(thread_id="t1", user_id="mia", role="member", user=ada)

    await (await host.open(harness, thread_id="t1", user=mia)).send("Me too.")

    assert main.calls[0].keys == {"openai": "sk-ada"}
    assert [c.keys for c in billing.calls] == [{"openai": "sk-ada"}, {"openai": "sk-mia"}]


async def test_router_handoff_messages_carry_by_router_and_the_agent_that_had_the_turn(
    host: HarnessHost,
) -> None:
    def router(ctx: Any) -> Any:
        return {"handoff": "main", "note": "back"} if ctx.text == "desk please" else None

    main = ScriptedModel([tool_call("handoff", {"to": "billing"}), text("Desk.")])
    billing = ScriptedModel([text("Refund started.")])
    harness = support_harness(main, [billing_agent(billing)], routing=Routing(router=router))
    session = await host.open(harness, thread_id="t1")
    await session.send(REFUND)

    await session.send("desk please")

    messages = (await session.snapshot()).messages
    call, result = messages[-3], messages[-2]
    assert dict(call.tool_calls[0].arguments) == {"to": "main", "note": "back"}
    assert result.parts[0].output == "Handed off to main. main answers next."  # type: ignore[union-attr]
    for message in (call, result):
        assert harness_meta(message)["handoff"]["by"] == "router"
        assert harness_meta(message)["agent"] == "billing"
    assert messages[-1].agent is None


class _Empty(BaseModel):
    pass


@pytest.mark.parametrize("how", ["ctx.harness.handoff", "ctx.run.handoff"])
async def test_outside_a_turn_both_calls_reject_and_write_nothing(
    host: HarnessHost, how: str
) -> None:
    """The design: "Outside a turn of a harness with routing, both calls reject"; the
    harness without routing is ``test_code_handoff_in_a_harness_without_routing_rejects``."""
    kept: list[Any] = []  # the handoff, kept past the part of the turn that got it

    async def agent_run(ctx: AgentContext) -> str:
        assert ctx.harness is not None
        kept.append(ctx.harness.handoff)
        return "Noted."

    async def tool_run(args: _Empty, ctx: ToolContext) -> str:
        kept.append(ctx.run.handoff)
        return "Noted."

    keeper = define_agent(name="keeper", description="Keeps", run=agent_run)
    note = tool(name="note", description="Note", input=_Empty, run=tool_run)
    if how == "ctx.harness.handoff":
        main = ScriptedModel([tool_call("handoff", {"to": "keeper"})])
    else:
        main = ScriptedModel([tool_call("note"), text("Noted it.")])
    harness = support_harness(main, [keeper, billing_agent(ScriptedModel([]))], tools=[note])
    session = await host.open(harness, thread_id="t1")
    await session.send("hi")
    before = await session.snapshot()

    with pytest.raises(HandoffOutsideTurnError) as info:
        await kept[0](to="billing")

    assert info.value.code == "handoff_outside_turn"
    after = await session.snapshot()
    assert (after.seq, after.active_agent) == (before.seq, before.active_agent)


async def test_a_tool_handoff_to_a_non_root_agent_rejects_and_the_model_keeps_the_turn(
    host: HarnessHost,
) -> None:
    researcher = billing_agent(ScriptedModel([]))
    researcher = type(researcher)(name="researcher", description="sub", run=researcher.run)
    main = ScriptedModel([tool_call("escalate", {"orderId": "42"}), text("I handle it myself.")])
    harness = support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        tools=[escalate_tool(to="researcher")],
        subagents=[researcher],
    )
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert result.text == "I handle it myself."
    failed = (await session.snapshot()).messages[2].parts[0]
    assert failed.is_error and "not_a_root_agent" not in failed.output  # type: ignore[union-attr]
    assert "subagent" in failed.output  # type: ignore[union-attr]
    assert (await session.snapshot()).active_agent is None


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}
