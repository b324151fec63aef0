"""The rule-based offline model of the support-desk demo."""

from __future__ import annotations

from agent_mem_vault.harness.definitions import Routing, define_agent, define_harness
from agent_mem_vault.harness.handoff import handoff_tool_spec
from agent_mem_vault.harness.messages import Message, TextPart, ToolCallPart, ToolResultPart
from agent_mem_vault.harness.model import (
    Model,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
)
from agent_mem_vault.harness.rules_model import (
    Rule,
    RuleBasedModel,
    billing_model,
    support_desk_model,
)


def desk_tools(*, human: bool, source: str | None = None) -> tuple[ToolSpec, ...]:
    """The handoff tool exactly as the harness builds it for the demo's desk."""
    billing = define_agent(name="billing", description="Refunds, invoices, payments", run=_noop)
    harness = define_harness(
        name="acme/desk",
        model=support_desk_model(),
        agents=[billing],
        routing=Routing(allow_handoff_to_human=human),
    )
    return (handoff_tool_spec(harness, source),)


def _noop(ctx: object) -> str:
    return ""


def user(text: str, **metadata: object) -> Message:
    return Message(id="u", role="user", parts=(TextPart(text),), metadata=metadata)


def req(*messages: Message, tools: tuple[ToolSpec, ...] = ()) -> ModelRequest:
    return ModelRequest(
        system_prompts=("You are the support desk.",), messages=messages, tools=tools
    )


async def run(model: Model, request: ModelRequest) -> list[ModelEvent]:
    return [e async for e in model.stream(request)]


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def calls_of(events: list[ModelEvent]) -> list[ToolCallRequest]:
    return [e for e in events if isinstance(e, ToolCallRequest)]


async def test_rule_based_model_implements_the_model_protocol() -> None:
    assert isinstance(support_desk_model(), Model)
    assert support_desk_model().name == "rule-based/support-desk"


async def test_desk_hands_a_refund_to_billing_with_a_note() -> None:
    events = await run(
        support_desk_model(),
        req(user("I want a refund for order 42."), tools=desk_tools(human=False)),
    )
    [call] = calls_of(events)
    assert call.name == "handoff"
    assert call.arguments["to"] == "billing"
    assert "order 42" in call.arguments["note"]
    assert "I want a refund for order 42." in call.arguments["note"]
    assert text_of(events) == ""


async def test_desk_hands_invoice_and_payment_questions_to_billing() -> None:
    for text in ("Where is my invoice?", "My payment failed", "I was charged twice"):
        [call] = calls_of(
            await run(support_desk_model(), req(user(text), tools=desk_tools(human=False)))
        )
        assert call.arguments["to"] == "billing", text


async def test_desk_hands_to_a_person_when_the_tool_offers_it() -> None:
    events = await run(
        support_desk_model(), req(user("I want to talk to a person"), tools=desk_tools(human=True))
    )
    [call] = calls_of(events)
    assert call.arguments["to"] == {"human": True}
    assert "person" in call.arguments["note"]


async def test_agent_please_and_human_ask_for_a_person() -> None:
    for text in ("agent please", "Can I get a HUMAN?"):
        [call] = calls_of(
            await run(support_desk_model(), req(user(text), tools=desk_tools(human=True)))
        )
        assert call.arguments["to"] == {"human": True}, text


async def test_no_handoff_to_a_person_when_the_tool_does_not_offer_it() -> None:
    events = await run(
        support_desk_model(), req(user("I want a person"), tools=desk_tools(human=False))
    )
    assert calls_of(events) == []
    assert "rule-based" in text_of(events)


async def test_no_handoff_at_all_without_a_handoff_tool() -> None:
    events = await run(support_desk_model(), req(user("I want a refund for order 42.")))
    assert calls_of(events) == []
    reply = text_of(events)
    assert "billing" in reply
    assert "rule-based" in reply


async def test_other_messages_get_a_helpful_text_reply_in_deltas() -> None:
    events = await run(support_desk_model(), req(user("Hello there"), tools=desk_tools(human=True)))
    assert calls_of(events) == []
    assert len(events) > 3  # streamed word by word
    assert text_of(events).startswith("Hello! This is the support desk.")


async def test_every_text_answer_says_it_is_rule_based() -> None:
    for model in (support_desk_model(), billing_model()):
        for text in ("hello", "what is the weather", "refund please", "invoice", "thanks"):
            events = await run(model, req(user(text)))
            if not calls_of(events):
                assert "rule-based" in text_of(events), (model.name, text)


async def test_billing_answers_a_refund_question_for_the_order() -> None:
    # Billing gets the transcript with the desk's handoff call and its result.
    transcript = (
        user("I want a refund for order 42."),
        Message(
            "a1",
            "assistant",
            (ToolCallPart("c1", "handoff", {"to": "billing", "note": "Refund for order 42"}),),
        ),
        Message(
            "t1",
            "tool",
            (ToolResultPart("c1", "handoff", "Handed off to billing. billing answers next."),),
        ),
    )
    events = await run(
        billing_model(), req(*transcript, tools=desk_tools(human=True, source="billing"))
    )
    assert calls_of(events) == []
    assert "refund request for order 42" in text_of(events)


async def test_billing_hands_back_to_main_when_it_is_not_a_billing_question() -> None:
    events = await run(
        billing_model(),
        req(user("What are your opening hours?"), tools=desk_tools(human=False, source="billing")),
    )
    [call] = calls_of(events)
    assert call.arguments["to"] == "main"


async def test_billing_hands_a_person_request_to_a_person() -> None:
    events = await run(
        billing_model(),
        req(
            user("Let me speak to someone, a person"),
            tools=desk_tools(human=True, source="billing"),
        ),
    )
    [call] = calls_of(events)
    assert call.arguments["to"] == {"human": True}


async def test_reports_a_tool_result_instead_of_calling_again() -> None:
    model = RuleBasedModel([Rule(("order",), handoff="billing")], fallback="no rule")
    transcript = (
        user("order status?"),
        Message("a", "assistant", (ToolCallPart("c", "lookup", {}),)),
        Message("t", "tool", (ToolResultPart("c", "lookup", "shipped"),)),
    )
    events = await run(model, req(*transcript, tools=desk_tools(human=False)))
    assert calls_of(events) == []
    assert text_of(events) == "The tool lookup answered: shipped"


async def test_a_refused_handoff_is_explained_not_tried_again() -> None:
    transcript = (
        user("refund please"),
        Message("a", "assistant", (ToolCallPart("c", "handoff", {"to": "billing"}),)),
        Message(
            "t",
            "tool",
            (ToolResultPart("c", "handoff", "this turn already handed off 10 times", True),),
        ),
    )
    events = await run(support_desk_model(), req(*transcript, tools=desk_tools(human=False)))
    assert calls_of(events) == []
    assert "could not hand you over: this turn already handed off 10 times" in text_of(events)


async def test_operator_attachments_are_not_read_as_the_users_words() -> None:
    transcript = (
        user("I want a refund for order 7"),
        user("", harness={"operatorAttachment": True}),
    )
    [call] = calls_of(
        await run(support_desk_model(), req(*transcript, tools=desk_tools(human=False)))
    )
    assert "order 7" in call.arguments["note"]


async def test_handoff_target_must_be_in_the_tools_enum() -> None:
    model = RuleBasedModel(
        [Rule(("refund",), handoff="payments"), Rule(("refund",), reply="fallback rule")],
        fallback="none",
    )
    events = await run(model, req(user("refund"), tools=desk_tools(human=False)))
    assert calls_of(events) == []
    assert text_of(events) == "fallback rule"


async def test_keywords_match_whole_words_only() -> None:
    model = RuleBasedModel([Rule(("bill",), reply="billing")], fallback="other")
    assert text_of(await run(model, req(user("Bill me")))) == "billing"
    assert text_of(await run(model, req(user("billion dollars")))) == "other"


async def test_support_desk_story_runs_offline_through_the_harness() -> None:
    from agent_mem_vault.harness import HarnessHost, memory_persistence
    from agent_mem_vault.harness.context import AgentContext

    billing_llm = billing_model()

    async def billing_run(ctx: AgentContext) -> str:
        return await ctx.chat(model=billing_llm, system_prompts=["You handle refunds."])

    billing = define_agent(
        name="billing", description="Refunds, invoices, payments", run=billing_run
    )
    desk = define_harness(
        name="acme/desk",
        model=support_desk_model(),
        system_prompts=["You are the support desk."],
        agents=[billing],
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )
    host = HarnessHost(persistence=memory_persistence())
    session = await host.open(desk, thread_id="case-42")

    refund = await session.send("I want a refund for order 42.")
    assert refund.status == "completed"
    assert refund.text.startswith("billing:\nI have noted a refund request for order 42.")

    person = await session.send("Thanks, but I want to talk to a person.")
    assert person.status == "interrupted"
    snapshot = await session.snapshot()
    [wait] = snapshot.pending_waits
    assert wait.kind == "human"
    assert "person" in (wait.message or "")
    assert [m.agent for m in snapshot.messages if m.role == "assistant"] == [
        None,
        "billing",
        "billing",
    ]
