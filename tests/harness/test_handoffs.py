"""Harness design, section 1, "Let agents hand off": the handoff tool, the router, the limits."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agent_mem_vault.harness import (
    AgentContext,
    HarnessHost,
    Routing,
    define_agent,
    tool,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .conftest import HostFactory
from .support import billing_agent, chat_agent, harness_meta, support_harness

REFUND = "I want a refund for order 42."


async def test_main_model_hands_off_to_billing_who_answers_in_the_same_turn(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing", "note": "Refund for order 42"})])
    billing = ScriptedModel([text("Your refund for order 42 is on its way.")])
    harness = support_harness(main, [billing_agent(billing)])
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert result.status == "completed"
    assert result.text == "billing:\nYour refund for order 42 is on its way."
    assert result.run_id
    snapshot = await session.snapshot()
    assert snapshot.active_agent == "billing"
    assert [(m.role, m.agent) for m in snapshot.messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", None),
        ("assistant", "billing"),
    ]
    assert snapshot.messages[2].parts[0].output == "Handed off to billing. billing answers next."  # type: ignore[union-attr]
    main.check_consumed()
    billing.check_consumed()


async def test_router_returning_none_keeps_the_turn_with_the_agent_that_answers_now(
    host: HarnessHost,
) -> None:
    seen: list[str | None] = []

    def router(ctx: Any) -> None:
        seen.append(ctx.active_agent)
        return None

    main = ScriptedModel([text("Hello, how can I help?"), tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([text("Refund started."), text("Three days.")])
    harness = support_harness(main, [billing_agent(billing)], routing=Routing(router=router))
    session = await host.open(harness, thread_id="t1")

    first = await session.send("Hi")
    await session.send(REFUND)
    third = await session.send("How long?")

    assert first.text == "Hello, how can I help?"  # the main model kept the turn
    assert third.text == "billing:\nThree days."  # billing kept the turn
    assert seen == [None, None, "billing"]
    assert len(main.calls) == 2
    billing.check_consumed()


async def test_router_returning_a_handoff_hands_off_before_the_model_answers(
    host: HarnessHost,
) -> None:
    def router(ctx: Any) -> Any:
        if "refund" in (ctx.text or ""):
            return {"handoff": "billing", "note": "Refund for order 42"}
        return None

    main = ScriptedModel([])
    billing = ScriptedModel([text("Refund started.")])
    harness = support_harness(main, [billing_agent(billing)], routing=Routing(router=router))
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert result.text == "billing:\nRefund started."
    assert main.calls == []
    messages = (await session.snapshot()).messages
    assert harness_meta(messages[1])["handoff"]["by"] == "router"
    assert (await session.snapshot()).active_agent == "billing"


async def test_main_model_handoff_tool_lists_the_root_agents(host: HarnessHost) -> None:
    main = ScriptedModel([text("Hi")])
    triage = chat_agent("triage", ScriptedModel([]), "Sort requests.")
    harness = support_harness(main, [billing_agent(ScriptedModel([])), triage])
    session = await host.open(harness, thread_id="t1")

    await session.send("Hi")

    schema = main.calls[0].tool("handoff")
    assert schema["properties"]["to"] == {"type": "string", "enum": ["billing", "triage"]}
    assert schema["required"] == ["to"]


async def test_a_root_agent_can_hand_back_to_main_which_its_handoff_tool_offers(
    host: HarnessHost,
) -> None:
    main = ScriptedModel(
        [tool_call("handoff", {"to": "billing"}), text("Back at the desk. What else?")]
    )
    billing = ScriptedModel([tool_call("handoff", {"to": "main", "note": "not billing"})])
    triage = chat_agent("triage", ScriptedModel([]), "Sort requests.")
    harness = support_harness(main, [billing_agent(billing), triage])
    session = await host.open(harness, thread_id="t1")

    result = await session.send("Is my parcel late?")

    assert billing.calls[0].tool("handoff")["properties"]["to"]["enum"] == ["triage", "main"]
    assert result.text == "Back at the desk. What else?"
    assert (await session.snapshot()).active_agent is None


async def test_later_turns_go_to_the_active_agent_until_it_hands_off_again(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing"}), text("Desk here again.")])
    billing = ScriptedModel(
        [
            text("Refund started."),
            text("It takes three days."),
            tool_call("handoff", {"to": "main", "note": "done with billing"}),
        ]
    )
    harness = support_harness(main, [billing_agent(billing)])
    session = await host.open(harness, thread_id="t1")

    await session.send(REFUND)
    second = await session.send("How long does it take?")
    third = await session.send("Thanks, and my parcel?")

    assert second.text == "billing:\nIt takes three days."
    assert third.text == "Desk here again."
    assert len(main.calls) == 2
    main.check_consumed()
    billing.check_consumed()


async def test_router_can_pick_another_agent_for_later_turns(host: HarnessHost) -> None:
    def router(ctx: Any) -> Any:
        return {"handoff": "triage"} if "parcel" in (ctx.text or "") else None

    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([text("Refund started.")])
    triage = ScriptedModel([text("Your parcel is on its way.")])
    harness = support_harness(
        main,
        [billing_agent(billing), chat_agent("triage", triage, "Sort requests.")],
        routing=Routing(router=router),
    )
    session = await host.open(harness, thread_id="t1")

    await session.send(REFUND)
    result = await session.send("Where is my parcel?")

    assert result.text == "triage:\nYour parcel is on its way."
    assert (await session.snapshot()).active_agent == "triage"


async def test_active_agent_survives_a_restart_of_the_host(make_host: HostFactory) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([text("Refund started."), text("Three days.")])
    harness = support_harness(main, [billing_agent(billing)])
    first = make_host()
    await (await first.open(harness, thread_id="t1")).send(REFUND)
    await first.close()

    second = make_host()
    session = await second.open(harness, thread_id="t1")
    assert (await session.snapshot()).active_agent == "billing"
    result = await session.send("How long?")

    assert result.text == "billing:\nThree days."
    assert len(main.calls) == 1


async def test_one_turn_hands_off_at_most_ten_times(host: HarnessHost) -> None:
    # a and b hand the turn back and forth; the 11th handoff is rejected and
    # the agent that asked keeps the turn.
    a_model = ScriptedModel([tool_call("handoff", {"to": "b"})] * 6)
    b_model = ScriptedModel(
        [tool_call("handoff", {"to": "a"})] * 5 + [text("I answer myself then.")]
    )
    main = ScriptedModel([tool_call("handoff", {"to": "a"})])
    harness = support_harness(
        main, [chat_agent("a", a_model, "A."), chat_agent("b", b_model, "B.")]
    )
    session = await host.open(harness, thread_id="t1")

    result = await session.send("ping")

    assert result.status == "completed"
    assert result.text == "b:\nI answer myself then."
    events = [e async for e in _events_until_finished(session)]
    assert sum(e.name == "harness.handoff" for e in events) == 10
    rejected = (await session.snapshot()).messages[-2]
    assert rejected.role == "tool" and rejected.parts[0].is_error  # type: ignore[union-attr]
    assert "10 times" in rejected.parts[0].output  # type: ignore[union-attr]


async def test_a_subagent_cannot_be_a_handoff_target(host: HarnessHost) -> None:
    main = ScriptedModel(
        [tool_call("handoff", {"to": "researcher"}), text("I will answer myself.")]
    )
    researcher = chat_agent("researcher", ScriptedModel([]), "Research.")
    harness = support_harness(main, [billing_agent(ScriptedModel([]))], subagents=[researcher])
    session = await host.open(harness, thread_id="t1")

    result = await session.send("Look this up")

    assert main.calls[0].tool("handoff")["properties"]["to"]["enum"] == ["billing"]
    assert result.text == "I will answer myself."
    error = (await session.snapshot()).messages[2].parts[0]
    assert error.is_error and "subagent" in error.output  # type: ignore[union-attr]
    assert (await session.snapshot()).active_agent is None


async def test_a_router_that_names_a_subagent_fails_the_turn_and_hands_nothing_off(
    host: HarnessHost,
) -> None:
    researcher = chat_agent("researcher", ScriptedModel([]), "Research.")
    main = ScriptedModel([])
    harness = support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        subagents=[researcher],
        routing=Routing(router=lambda ctx: {"handoff": "researcher"}),
    )
    session = await host.open(harness, thread_id="t1")

    result = await session.send("Look this up")

    assert (result.status, result.code) == ("failed", "not_a_root_agent")
    assert "'researcher' is a subagent" in (result.message or "")
    assert main.calls == []
    records = await host.persistence.read("harness/default/t1")
    assert "harness.handoff" not in [r.type for r in records]
    assert (await session.snapshot()).active_agent is None


async def test_a_child_that_an_agent_starts_cannot_hand_off(host: HarnessHost) -> None:
    outcomes: list[str] = []

    async def child_run(ctx: AgentContext) -> str:
        assert ctx.harness is None
        return await ctx.chat(system_prompts=["Research."])

    researcher = define_agent(name="researcher", description="Looks things up", run=child_run)

    async def lead_run(ctx: AgentContext) -> str:
        found = await ctx.spawn("researcher", "Find order 42")
        outcomes.append(found)
        return f"Found: {found}"

    lead = define_agent(name="lead", description="Leads", run=lead_run)
    main = ScriptedModel(
        [
            tool_call("handoff", {"to": "lead"}),
            # the child's model tries the handoff tool: it has none, so it is unknown
            tool_call("handoff", {"to": "billing"}),
            text("Order 42 is paid."),
        ]
    )
    harness = support_harness(
        main, [lead, billing_agent(ScriptedModel([]))], subagents=[researcher]
    )
    session = await host.open(harness, thread_id="t1")

    result = await session.send("Check order 42")

    assert main.calls[1].tool_names == ()
    assert outcomes == ["Order 42 is paid."]
    assert result.text == "lead:\nFound: Order 42 is paid."
    assert (await session.snapshot()).active_agent == "lead"


async def test_a_childs_tool_cannot_hand_off_from_code(host: HarnessHost) -> None:
    class Empty(BaseModel):
        pass

    errors: list[str] = []

    async def escape(args: Empty, ctx: Any) -> str:
        try:
            await ctx.run.handoff(to="billing")
        except Exception as exc:
            errors.append(getattr(exc, "code", ""))
            raise
        return "gone"

    escape_tool = tool(name="escape", description="Try to escape", input=Empty, run=escape)

    async def child_run(ctx: AgentContext) -> str:
        return await ctx.chat(tools=[escape_tool])

    child = define_agent(name="child", description="A child", run=child_run)

    async def parent_run(ctx: AgentContext) -> str:
        return await ctx.spawn(child, "go")

    parent = define_agent(name="parent", description="A parent", run=parent_run)
    main = ScriptedModel(
        [tool_call("handoff", {"to": "parent"}), tool_call("escape"), text("Stayed.")]
    )
    harness = support_harness(main, [parent, billing_agent(ScriptedModel([]))], subagents=[child])
    session = await host.open(harness, thread_id="t1")

    result = await session.send("go")

    assert errors == ["child_cannot_hand_off"]
    assert result.text == "parent:\nStayed."


async def test_an_app_tool_named_handoff_fails_the_turn_with_a_duplicate_tool_error(
    host: HarnessHost,
) -> None:
    class Empty(BaseModel):
        pass

    own = tool(name="handoff", description="The app's own", input=Empty, run=lambda a, c: "x")
    main = ScriptedModel([text("never")])
    harness = support_harness(main, [billing_agent(ScriptedModel([]))], tools=[own])
    session = await host.open(harness, thread_id="t1")

    result = await session.send("Hi")

    assert result.status == "failed"
    assert result.code == "duplicate_tool"
    assert "give_models_handoff_tool" in (result.message or "")
    assert main.calls == []


async def test_without_the_handoff_tool_no_model_has_it_and_router_and_code_still_hand_off(
    host: HarnessHost,
) -> None:
    class Empty(BaseModel):
        pass

    own = tool(name="handoff", description="The app's own", input=Empty, run=lambda a, c: "mine")

    async def triage_run(ctx: AgentContext) -> str:
        assert ctx.harness is not None
        await ctx.harness.handoff(to="billing", note="Refund for order 42")
        return "I pass you to billing."

    triage = define_agent(name="triage", description="Sorts", run=triage_run)
    billing = ScriptedModel([text("Refund started.")])
    main = ScriptedModel([])

    def router(ctx: Any) -> Any:
        return {"handoff": "triage"} if ctx.active_agent is None else None

    harness = support_harness(
        main,
        [triage, billing_agent(billing)],
        tools=[own],
        routing=Routing(router=router, give_models_handoff_tool=False),
    )
    session = await host.open(harness, thread_id="t1")

    result = await session.send(REFUND)

    assert result.status == "completed"
    assert result.text == "triage:\nI pass you to billing.\n\nbilling:\nRefund started."
    assert billing.calls[0].tool_names == ()
    messages = (await session.snapshot()).messages
    # router handoff: one assistant message; code handoff: one assistant message
    router_msg, _triage_text, code_msg, _answer = messages[1:]
    assert router_msg.text == "Handed off to triage. triage answers next."
    assert harness_meta(router_msg)["handoff"]["by"] == "router"
    assert code_msg.text == (
        "Handed off to billing. billing answers next.\nNote: Refund for order 42"
    )
    assert harness_meta(code_msg)["handoff"]["by"] == "code"
    assert not any(m.tool_calls for m in messages)


async def test_a_handoff_tool_call_without_to_is_refused_and_hands_nothing_back_to_main(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([tool_call("handoff", {"note": "no target"}), text("Still billing.")])
    session = await host.open(support_harness(main, [billing_agent(billing)]), thread_id="t1")

    result = await session.send(REFUND)

    assert result.text == "billing:\nStill billing."
    refused = (await session.snapshot()).messages[-2].parts[0]
    assert refused.is_error and "needs 'to'" in refused.output  # type: ignore[union-attr]
    assert (await session.snapshot()).active_agent == "billing"


async def test_an_agent_that_asks_its_model_twice_has_both_replies_in_the_turn_text(
    host: HarnessHost,
) -> None:
    model = ScriptedModel([text("Checking order 42."), text("It is refunded.")])

    async def run(ctx: AgentContext) -> None:
        await ctx.chat(model=model)
        await ctx.chat(model=model)

    twice = define_agent(name="twice", description="Asks twice", run=run)
    main = ScriptedModel([tool_call("handoff", {"to": "twice"})])
    session = await host.open(support_harness(main, [twice]), thread_id="t1")

    result = await session.send(REFUND)

    # The same text a host that takes the thread over would build from the log.
    assert result.text == "twice:\nChecking order 42.\n\nIt is refunded."


async def test_an_agent_that_returns_something_other_than_text_fails_the_turn_clearly(
    host: HarnessHost,
) -> None:
    odd = define_agent(name="odd", description="Returns a number", run=lambda ctx: 42)  # type: ignore[arg-type,return-value]
    main = ScriptedModel([tool_call("handoff", {"to": "odd"})])
    session = await host.open(support_harness(main, [odd]), thread_id="t1")

    result = await session.send("hi")

    assert (result.status, result.code) == ("failed", "invalid_input")
    assert "agent 'odd' returned int" in (result.message or "")


async def _events_until_finished(session: Any) -> Any:
    async for event in session.events():
        yield event
        if event.name == "run.finished":
            return


async def test_a_child_that_returns_something_other_than_text_is_a_clear_error(
    host: HarnessHost,
) -> None:
    odd = define_agent(name="odd", description="A child", run=lambda ctx: {"x": 1})  # type: ignore[arg-type,return-value]

    async def lead_run(ctx: AgentContext) -> str:
        return await ctx.spawn("odd", "go")

    lead = define_agent(name="lead", description="Leads", run=lead_run)
    main = ScriptedModel([tool_call("handoff", {"to": "lead"})])
    session = await host.open(support_harness(main, [lead], subagents=[odd]), thread_id="t1")

    result = await session.send("go")

    assert (result.status, result.code) == ("failed", "invalid_input")
    assert "agent 'odd' returned dict" in (result.message or "")
