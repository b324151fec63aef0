"""Bad input: every rejection has its code, and changes nothing — no log record, no
index entry, no transfer plan, no lease (so it never keeps another host off a thread).

One table: each row is a call that must be rejected with a code. The calls run on a
second host after the first gave its leases up, and the whole store is compared
before and after.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.harness import (
    Endpoint,
    Envelope,
    Harness,
    HarnessHost,
    Routing,
    Session,
    define_harness,
)
from agent_mem_vault.harness.events import HOST_STREAM
from agent_mem_vault.harness.index import THREADS
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call
from agent_mem_vault.harness.threadlog import lease_name
from agent_mem_vault.harness.transfer import TRANSFERS

from .conftest import HostFactory
from .support import ADA, MEMBERS_ONLY, OLGA, PERSON, billing_agent, support_harness


@dataclass
class World:
    """``case`` waits for a person (one wait answered before, one open); ``calm`` does not.

    Ada owns both; Olga is the operator of both (``calm`` is Olga's session).
    """

    host: HarnessHost
    desk: Harness
    billing: Harness
    ada: Session
    olga: Session
    calm: Session
    open_wait: str
    closed_wait: str


def desk_harness() -> Harness:
    main = ScriptedModel(
        [tool_call("handoff", PERSON), tool_call("handoff", PERSON), text("Calm here.")]
    )
    return support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        name="acme/desk",
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )


async def world(make_host: HostFactory) -> World:
    desk, billing = desk_harness(), define_harness(name="acme/billing", model=ScriptedModel([]))
    first = make_host(access=MEMBERS_ONLY)
    ada = await first.open(desk, thread_id="case", user=ADA)
    await first.sessions.share(thread_id="case", user_id="olga", role="operator", user=ADA)
    await ada.send("A person please", input_id="first")
    olga = await first.open(desk, thread_id="case", user=OLGA)
    [closed] = (await olga.snapshot()).pending_waits
    await olga.answer(question_id=closed.wait_id, value={"handBack": "main"})
    await ada.send("A person again please")
    await (await first.open(desk, thread_id="calm", user=ADA)).send("hi")
    await first.sessions.share(thread_id="calm", user_id="olga", role="operator", user=ADA)
    await first.transfer(
        from_=Endpoint(desk, "calm"), to=Endpoint(billing), user=ADA, transfer_id="move-1"
    )
    await first.close()

    second = make_host(access=MEMBERS_ONLY)  # the rejections run here: it holds no lease
    olga = await second.open(desk, thread_id="case", user=OLGA)
    [open_wait] = (await olga.snapshot()).pending_waits
    return World(
        host=second,
        desk=desk,
        billing=billing,
        ada=await second.open(desk, thread_id="case", user=ADA),
        olga=olga,
        calm=await second.open(desk, thread_id="calm", user=OLGA),
        open_wait=open_wait.wait_id,
        closed_wait=closed.wait_id,
    )


async def store_state(host: HarnessHost) -> dict[str, Any]:
    """Everything a rejection must leave as it was."""
    p = host.persistence
    entries = await p.scan(THREADS, prefix="acme/")
    streams = [stream_name("acme", e.value["threadId"]) for e in entries]
    return {
        "entries": [(e.key, e.version) for e in entries],
        "logs": [await p.last_seq(s) for s in streams],
        "leases": [await p.get_lease(lease_name(s)) for s in streams],
        "host stream": await p.last_seq(HOST_STREAM),
        "transfers": [(d.key, d.version) for d in await p.scan(TRANSFERS, prefix="acme/")],
    }


Call = Callable[[World], Awaitable[Any]]
REJECTIONS: list[tuple[str, str, Call]] = [
    ("empty message", "invalid_input", lambda w: w.ada.send("   ")),
    ("bad input id", "invalid_input", lambda w: w.ada.send("hi", input_id="has space")),
    ("input id ending in a newline", "invalid_input", lambda w: w.ada.send("hi", input_id="x\n")),
    ("bad sender", "invalid_input", lambda w: w.ada.send("hi", as_="robot")),  # type: ignore[arg-type]
    ("input id reused", "input_conflict", lambda w: w.ada.send("other", input_id="first")),
    (
        "input id reused by operator",
        "input_conflict",
        lambda w: w.olga.send("Olga here", as_="operator", input_id="first"),
    ),
    (
        "input id reused to continue",
        "input_conflict",
        lambda w: w.ada.continue_without_message(input_id="first"),
    ),
    ("continue while paused", "thread_paused", lambda w: w.olga.continue_without_message()),
    ("operator reply, no wait", "no_human_wait", lambda w: w.calm.send("hi", as_="operator")),
    (
        "answer of the wrong shape",
        "invalid_answer",
        lambda w: w.olga.answer(question_id=w.open_wait, value={"resume": False}),
    ),
    (
        "hand back to nobody",
        "unknown_agent",
        lambda w: w.olga.answer(question_id=w.open_wait, value={"handBack": "shipping"}),
    ),
    (
        "unknown wait",
        "wait_not_found",
        lambda w: w.olga.answer(question_id="nope", value={"resume": True}),
    ),
    (
        "answer a closed wait",
        "wait_closed",
        lambda w: w.olga.answer(question_id=w.closed_wait, value={"resume": True}),
    ),
    ("resolve a closed wait", "wait_closed", lambda w: w.olga.resolve(w.closed_wait)),
    ("cancel a closed wait", "wait_closed", lambda w: w.olga.cancel(w.closed_wait)),
    (
        "owner answers as the person",
        "forbidden",
        lambda w: w.ada.answer(question_id=w.open_wait, value={"resume": True}),
    ),
    ("owner replies as the person", "forbidden", lambda w: w.ada.send("x", as_="operator")),
    ("operator sends as the user", "forbidden", lambda w: w.olga.send("x")),
    (
        "open with another harness",
        "wrong_harness",
        lambda w: w.host.open(w.billing, thread_id="case", user=ADA),
    ),
    (
        "unknown thread, no create",
        "thread_not_found",
        lambda w: w.host.open(w.desk, thread_id="nope", user=ADA, create=False),
    ),
    (
        "share as owner",
        "invalid_input",
        lambda w: w.host.sessions.share(thread_id="case", user_id="mia", role="owner", user=ADA),
    ),
    (
        "share a bad thread id",
        "invalid_input",
        lambda w: w.host.sessions.share(thread_id="a b", user_id="mia", role="member", user=ADA),
    ),
    (
        "share by an operator",
        "forbidden",
        lambda w: w.host.sessions.share(thread_id="case", user_id="mia", role="member", user=OLGA),
    ),
    (
        "transfer from the wrong harness",
        "wrong_harness",
        lambda w: w.host.transfer(
            from_=Endpoint(w.billing, "case"), to=Endpoint(w.billing), user=ADA
        ),
    ),
    (
        "transfer into a thread of another harness",
        "wrong_harness",
        lambda w: w.host.transfer(
            from_=Endpoint(w.desk, "case"), to=Endpoint(w.billing, "calm"), user=ADA
        ),
    ),
    (
        "transfer into itself",
        "invalid_input",
        lambda w: w.host.transfer(
            from_=Endpoint(w.desk, "case"), to=Endpoint(w.desk, "case"), user=ADA
        ),
    ),
    (
        "transfer with a bad envelope",
        "invalid_input",
        lambda w: w.host.transfer(
            from_=Endpoint(w.desk, "case"),
            to=Endpoint(w.billing),
            envelope=Envelope(messages="everything"),  # type: ignore[arg-type]
            user=ADA,
        ),
    ),
    (
        "transfer id reused",
        "transfer_conflict",
        lambda w: w.host.transfer(
            from_=Endpoint(w.desk, "case"), to=Endpoint(w.billing), user=ADA, transfer_id="move-1"
        ),
    ),
    (
        "transfer by an operator",
        "forbidden",
        lambda w: w.host.transfer(
            from_=Endpoint(w.desk, "case"), to=Endpoint(w.billing), user=OLGA
        ),
    ),
    (
        "fork into another harness",
        "wrong_harness",
        lambda w: w.host.fork(w.billing, thread_id="case", user=ADA),
    ),
    (
        "fork into a thread that exists",
        "invalid_input",
        lambda w: w.host.fork(w.desk, thread_id="case", user=ADA, new_thread_id="calm"),
    ),
]


@pytest.mark.parametrize(
    ("call", "code"), [(c, code) for _, code, c in REJECTIONS], ids=[n for n, _, _ in REJECTIONS]
)
async def test_every_rejection_has_its_code_and_a_clear_message_and_changes_nothing(
    make_host: HostFactory, call: Call, code: str
) -> None:
    w = await world(make_host)
    before = await store_state(w.host)

    with pytest.raises(AgentMemVaultError) as info:
        await call(w)

    assert info.value.code == code
    assert await store_state(w.host) == before


async def test_a_rejected_call_takes_no_lease_so_another_host_can_write_at_once(
    make_host: HostFactory,
) -> None:
    desk = support_harness(
        ScriptedModel([text("Hi"), tool_call("handoff", PERSON)]),
        [billing_agent(ScriptedModel([]))],
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )
    first = make_host()
    await (await first.open(desk, thread_id="calm")).send("hi", input_id="in-1")
    await first.close()
    second = make_host()
    with pytest.raises(AgentMemVaultError) as info:
        await (await second.open(desk, thread_id="calm")).send("not an operator", as_="operator")
    assert info.value.code == "no_human_wait"

    third = make_host()
    result = await (await third.open(desk, thread_id="calm")).send("A person please")

    assert result.status == "interrupted"
