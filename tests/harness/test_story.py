"""The harness design's whole story, end to end: refund to billing, a person, the operator's reply,
the hand back, and the move to the billing team's harness."""

from __future__ import annotations

import asyncio

from agent_mem_vault.harness import (
    Access,
    Endpoint,
    Envelope,
    FilePart,
    Routing,
    User,
    define_harness,
    members_only,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call, usage

from .conftest import HostFactory
from .support import billing_agent, harness_meta, support_harness

USERS = {
    "Bearer token-ada": User(id="ada", tenant_id="acme", keys={"openai": "sk-ada"}),
    "Bearer token-olga": User(id="olga", tenant_id="acme"),
}


async def test_the_seeds_story_from_refund_to_a_person_and_on_to_the_billing_team(
    make_host: HostFactory,
) -> None:
    desk_model = ScriptedModel(
        [
            tool_call("handoff", {"to": "billing", "note": "Refund for order 42"}),
            [text("Ada asked for a refund of order 42; Olga sent the invoice."), usage(300, 14)],
        ]
    )
    billing_model = ScriptedModel(
        [
            text("I can refund order 42. Shall I?"),
            tool_call("handoff", {"to": {"human": True}, "note": "The user wants a person."}),
            text("The refund for order 42 is done."),
        ]
    )
    team_model = ScriptedModel([text("Billing team here. Your refund is confirmed.")])
    desk = support_harness(
        desk_model,
        [billing_agent(billing_model)],
        name="acme/desk",
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )
    billing_desk = define_harness(name="acme/billing", model=team_model)
    host = make_host(access=Access(get_user=USERS.get, rules=members_only()))
    ada = await host.get_user_of_request("Bearer token-ada")
    olga = await host.get_user_of_request("Bearer token-olga")
    assert ada is not None and olga is not None

    # 1. A refund: the desk hands off to billing, who answers in the same turn.
    session = await host.open(desk, thread_id="case-42", user=ada)
    refund = await session.send("I want a refund for order 42.")
    assert refund.text == "billing:\nI can refund order 42. Shall I?"

    # 2. A person: billing hands off to { human: true }; the session pauses.
    person = await session.send("No, I want to talk to a person.")
    assert person.status == "interrupted"
    assert (await session.send("Hello? Anyone?")).status == "held"

    # 3. Ada shares the thread with Olga as operator; Olga replies with a file.
    await host.sessions.share(thread_id="case-42", user_id="olga", role="operator", user=ada)
    operator = await host.open(desk, thread_id="case-42", user=olga)
    invoice = FilePart(media_type="application/pdf", data="JVBERi0xLjc=", name="invoice-42.pdf")
    await operator.send("Hi Ada, Olga here. Here is your invoice.", as_="operator", files=[invoice])

    # 4. Olga hands the thread back to billing; no turn starts until Ada writes.
    [wait] = [w for w in (await operator.snapshot()).pending_waits if w.kind == "human"]
    assert wait.message == "The user wants a person."
    await operator.answer(question_id=wait.wait_id, value={"handBack": "billing"})
    assert len(billing_model.calls) == 2
    done = await session.send("Thanks. Please refund it now.")
    assert done.text == "billing:\nThe refund for order 42 is done."
    billing_model.check_consumed()

    snapshot = await session.snapshot()
    who = [
        (m.agent, harness_meta(m).get("operator"))
        for m in snapshot.messages
        if m.role == "assistant" and m.text
    ]
    assert who == [
        ("billing", None),
        (None, "olga"),
        ("billing", None),
    ]

    # 5. The case moves to the billing team's harness, with a summary.
    events = host.events()
    moved = await host.transfer(
        from_=Endpoint(desk, "case-42"),
        to=Endpoint(billing_desk),
        envelope=Envelope(note="Refund for order 42. The user waits.", messages="summary"),
        user=ada,
        transfer_id="refund-case-42",
    )
    desk_model.check_consumed()
    assert desk_model.calls[-1].keys == {"openai": "sk-ada"}
    transferred = await asyncio.wait_for(anext(aiter(events)), 5)
    assert transferred.name == "transferred"
    assert transferred.value["to"]["threadId"] == moved.thread_id

    team = await host.open(billing_desk, thread_id=moved.thread_id, user=ada)
    reply = await team.send("Hi, I am still here.")
    assert reply.text == "Billing team here. Your refund is confirmed."
    target = await team.snapshot()
    assert [m.text for m in target.messages] == [
        "Refund for order 42. The user waits.",
        "Ada asked for a refund of order 42; Olga sent the invoice.",
        "Hi, I am still here.",
        "Billing team here. Your refund is confirmed.",
    ]
    assert dict(target.members) == {"ada": "owner"}
    assert target.metadata["harness:transferredFrom"]["threadId"] == "case-42"
    source = await session.snapshot()
    assert source.metadata["harness:transferredTo"]["threadId"] == moved.thread_id
    team_model.check_consumed()
