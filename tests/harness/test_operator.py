"""Harness design, section 4, "Reply as the operator" and "End the pause"."""

from __future__ import annotations

from typing import Any

import pytest

from agent_mem_vault.core.errors import AccessDeniedError
from agent_mem_vault.harness import (
    Access,
    FilePart,
    HarnessHost,
    InvalidAnswerError,
    NoHumanWaitError,
    Routing,
    Session,
    ThreadPausedError,
    UnknownAgentError,
    members_only,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .conftest import HostFactory
from .support import ADA, OLGA, PERSON, billing_agent, harness_meta, support_harness


def desk(main: ScriptedModel, billing: ScriptedModel | None = None) -> Any:
    return support_harness(
        main,
        [billing_agent(billing or ScriptedModel([]))],
        name="acme/desk",
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )


async def paused(
    make_host: HostFactory, main: ScriptedModel, billing: ScriptedModel | None = None
) -> tuple[Session, Session]:
    """Ada's thread, handed to a person; returns (Ada's session, Olga's session)."""
    host = make_host(access=Access(get_user=lambda r: None, rules=members_only()))
    harness = desk(main, billing)
    ada = await host.open(harness, thread_id="case-42", user=ADA)
    await host.sessions.share(thread_id="case-42", user_id="olga", role="operator", user=ADA)
    await ada.send("I want a person.")
    olga = await host.open(harness, thread_id="case-42", user=OLGA)
    return ada, olga


async def test_an_operator_reply_is_an_assistant_message_marked_with_the_operator_and_no_model_runs(
    make_host: HostFactory,
) -> None:
    main = ScriptedModel([tool_call("handoff", PERSON)])
    _, olga = await paused(make_host, main)

    result = await olga.send("Hi, this is Olga. I will look into it.", as_="operator")

    assert result.status == "sent"
    last = (await olga.snapshot()).messages[-1]
    assert last.role == "assistant"
    assert last.text == "Hi, this is Olga. I will look into it."
    assert harness_meta(last)["operator"] == "olga"
    assert len(main.calls) == 1
    assert (await olga.snapshot()).status == "paused"


async def test_an_operator_reply_needs_the_operator_action(make_host: HostFactory) -> None:
    ada, _ = await paused(make_host, ScriptedModel([tool_call("handoff", PERSON)]))
    seq = (await ada.snapshot()).seq

    with pytest.raises(AccessDeniedError):
        await ada.send("I am the person now", as_="operator")

    assert (await ada.snapshot()).seq == seq


async def test_files_in_an_operator_reply_go_into_a_user_message_after_it(
    make_host: HostFactory,
) -> None:
    _, olga = await paused(make_host, ScriptedModel([tool_call("handoff", PERSON)]))
    invoice = FilePart(media_type="application/pdf", data="JVBERi0=", name="invoice.pdf")

    await olga.send("Here is your invoice.", as_="operator", files=[invoice])

    reply, attachment = (await olga.snapshot()).messages[-2:]
    assert reply.role == "assistant" and reply.parts == (reply.parts[0],)
    assert attachment.role == "user"
    assert attachment.parts == (invoice,)
    assert harness_meta(attachment)["operatorAttachment"] is True
    assert harness_meta(attachment)["replyTo"] == reply.id


async def test_an_operator_reply_without_an_open_human_wait_is_rejected_with_no_human_wait(
    host: HarnessHost,
) -> None:
    session = await host.open(desk(ScriptedModel([text("hi")])), thread_id="t1")
    await session.send("hello")
    seq = (await session.snapshot()).seq

    with pytest.raises(NoHumanWaitError) as info:
        await session.send("I am a person", as_="operator")

    assert info.value.code == "no_human_wait"
    assert (await session.snapshot()).seq == seq


@pytest.mark.parametrize(
    ("value", "agent"),
    [({"handBack": "billing"}, "billing"), ({"handBack": "main"}, None)],
)
async def test_answering_hand_back_gives_the_thread_to_that_agent(
    make_host: HostFactory, value: dict[str, str], agent: str | None
) -> None:
    _, olga = await paused(make_host, ScriptedModel([tool_call("handoff", PERSON)]))
    [wait] = (await olga.snapshot()).pending_waits

    got = await olga.answer(question_id=wait.wait_id, value=value)

    snapshot = await olga.snapshot()
    assert got == agent
    assert snapshot.active_agent == agent
    assert snapshot.pending_waits == ()
    assert snapshot.status == "idle"


async def test_answering_resume_gives_the_thread_back_to_the_agent_that_answered_before(
    make_host: HostFactory,
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([tool_call("handoff", PERSON)])
    _, olga = await paused(make_host, main, billing)
    [wait] = (await olga.snapshot()).pending_waits
    assert wait.before == "billing"

    await olga.answer(question_id=wait.wait_id, value={"resume": True})

    assert (await olga.snapshot()).active_agent == "billing"


@pytest.mark.parametrize("how", ["resolve", "cancel"])
async def test_resolve_or_cancel_gives_the_thread_back_to_the_agent_before_the_handoff(
    make_host: HostFactory, how: str
) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    billing = ScriptedModel([tool_call("handoff", PERSON)])
    _, olga = await paused(make_host, main, billing)
    [wait] = (await olga.snapshot()).pending_waits

    await getattr(olga, how)(wait.wait_id)

    snapshot = await olga.snapshot()
    assert snapshot.active_agent == "billing"
    assert snapshot.pending_waits == ()


@pytest.mark.parametrize(
    "value", [{"resume": False}, {"handBack": "billing", "resume": True}, "resume", None, {}]
)
async def test_any_other_answer_is_rejected_with_invalid_answer(
    make_host: HostFactory, value: Any
) -> None:
    _, olga = await paused(make_host, ScriptedModel([tool_call("handoff", PERSON)]))
    [wait] = (await olga.snapshot()).pending_waits
    seq = (await olga.snapshot()).seq

    with pytest.raises(InvalidAnswerError) as info:
        await olga.answer(question_id=wait.wait_id, value=value)

    assert info.value.code == "invalid_answer"
    assert (await olga.snapshot()).seq == seq


async def test_handing_back_to_an_unknown_agent_is_rejected_with_unknown_agent(
    make_host: HostFactory,
) -> None:
    _, olga = await paused(make_host, ScriptedModel([tool_call("handoff", PERSON)]))
    [wait] = (await olga.snapshot()).pending_waits

    with pytest.raises(UnknownAgentError) as info:
        await olga.answer(question_id=wait.wait_id, value={"handBack": "shipping"})

    assert info.value.code == "unknown_agent"
    assert (await olga.snapshot()).status == "paused"


@pytest.mark.parametrize("how", ["answer", "resolve", "cancel"])
async def test_ending_the_wait_needs_the_operator_action(make_host: HostFactory, how: str) -> None:
    ada, _ = await paused(make_host, ScriptedModel([tool_call("handoff", PERSON)]))
    [wait] = (await ada.snapshot()).pending_waits

    if how == "answer":
        end = ada.answer(question_id=wait.wait_id, value={"resume": True})
    else:
        end = getattr(ada, how)(wait.wait_id)

    with pytest.raises(AccessDeniedError):
        await end

    assert (await ada.snapshot()).status == "paused"


async def test_the_answer_starts_no_turn_and_held_messages_wait_for_the_next_message(
    make_host: HostFactory,
) -> None:
    main = ScriptedModel([tool_call("handoff", PERSON)])
    billing = ScriptedModel([text("Refund started for order 42.")])
    ada, olga = await paused(make_host, main, billing)
    await ada.send("It is about order 42.")  # held
    [wait] = (await olga.snapshot()).pending_waits

    started = (await olga.snapshot()).seq

    await olga.answer(question_id=wait.wait_id, value={"handBack": "billing"})

    assert billing.calls == []
    assert [e.name async for e in _until_handoff(olga, started)] == [
        "wait.closed",
        "harness.handoff",
    ]
    assert (await olga.snapshot()).seq == started + 2  # no input, no run.started: no turn
    result = await ada.send("Are you there?")
    assert result.text == "billing:\nRefund started for order 42."
    seen = [m.text for m in billing.calls[0].messages if m.role == "user"]
    assert seen == ["I want a person.", "It is about order 42.", "Are you there?"]


async def test_continue_without_message_lets_the_agent_answer_the_held_messages(
    make_host: HostFactory,
) -> None:
    main = ScriptedModel([tool_call("handoff", PERSON)])
    billing = ScriptedModel([text("Refund started for order 42.")])
    ada, olga = await paused(make_host, main, billing)
    await ada.send("It is about order 42.")
    with pytest.raises(ThreadPausedError):
        await olga.continue_without_message()
    [wait] = (await olga.snapshot()).pending_waits
    await olga.answer(question_id=wait.wait_id, value={"handBack": "billing"})

    result = await olga.continue_without_message()

    assert result.status == "completed"
    assert result.text == "billing:\nRefund started for order 42."
    assert billing.calls[0].messages[-1].text == "It is about order 42."


async def test_the_operator_handoff_streams_a_handoff_event_by_operator(
    make_host: HostFactory,
) -> None:
    _, olga = await paused(make_host, ScriptedModel([tool_call("handoff", PERSON)]))
    [wait] = (await olga.snapshot()).pending_waits
    seq = (await olga.snapshot()).seq

    await olga.answer(question_id=wait.wait_id, value={"handBack": "billing"})

    events = []
    async for event in olga.events(after=seq):
        events.append(event)
        if event.name == "harness.handoff":
            break
    assert events[-1].value == {
        "from": {"human": True},
        "to": "billing",
        "by": "operator",
        "runId": wait.run_id,
        "waitId": wait.wait_id,
    }


async def _until_handoff(session: Session, after: int) -> Any:
    async for event in session.events(after=after):
        yield event
        if event.name == "harness.handoff":
            return
