"""Harness design §5: move a conversation to another harness, and the rules of a transfer."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from agent_mem_vault.core.errors import AccessDeniedError, InvalidInputError
from agent_mem_vault.harness import (
    Endpoint,
    Envelope,
    FilePart,
    Harness,
    HarnessHost,
    LogOwnedElsewhereError,
    Message,
    Routing,
    ThreadNotFoundError,
    TransferConflictError,
    TransferTimeoutError,
    User,
    WrongHarnessError,
    define_harness,
    tool,
)
from agent_mem_vault.harness.log import TRANSFERRED, replay, stream_name
from agent_mem_vault.harness.testing import ScriptedModel, pause, text, tool_call, usage
from agent_mem_vault.store import LogRecord, Persistence

from .conftest import HostFactory
from .support import MEMBERS_ONLY, OLGA, billing_agent, support_harness

ADA = User(id="ada", tenant_id="acme", keys={"openai": "sk-ada"})
NOTE = "Refund for order 42. The user waits."


def desk(main: ScriptedModel) -> Harness:
    return support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        name="acme/desk",
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )


def billing_desk(model: ScriptedModel | None = None) -> Harness:
    return define_harness(name="acme/billing", model=model or ScriptedModel([]))


async def case(host: HarnessHost, main: ScriptedModel, *replies: str) -> Harness:
    """Ada's thread ``case-42`` on the desk, with one exchange per reply text."""
    harness = desk(main)
    session = await host.open(harness, thread_id="case-42", user=ADA)
    for i, _ in enumerate(replies):
        await session.send(f"message {i}")
    return harness


async def target_messages(host: HarnessHost, thread_id: str, user: User = ADA) -> list[Message]:
    snapshot = await (await host.open(billing_desk(), thread_id=thread_id, user=user)).snapshot()
    return list(snapshot.messages)


async def test_a_transfer_makes_a_new_target_thread_whose_first_message_is_the_note(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([text("Hello")]), "Hello")

    result = await host.transfer(
        from_=Endpoint(harness, "case-42"),
        to=Endpoint(billing_desk()),
        envelope=Envelope(note=NOTE),
        user=ADA,
        transfer_id="refund-case-42",
    )

    assert result.thread_id != "case-42"
    messages = await target_messages(host, result.thread_id)
    assert [m.text for m in messages] == [NOTE]  # 'none' is the default: no message follows


async def test_envelope_summary_is_one_message_the_source_model_writes_with_the_users_keys(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    main = ScriptedModel([text("Hello"), [text("Ada wants a refund for order 42."), usage(120, 9)]])
    harness = await case(host, main, "Hello")
    before = (await (await host.open(harness, thread_id="case-42", user=ADA)).snapshot()).usage

    result = await host.transfer(
        from_=Endpoint(harness, "case-42"),
        to=Endpoint(billing_desk()),
        envelope=Envelope(note=NOTE, messages="summary"),
        user=ADA,
    )

    assert [m.text for m in await target_messages(host, result.thread_id)] == [
        NOTE,
        "Ada wants a refund for order 42.",
    ]
    summary_call = main.calls[-1]
    assert summary_call.keys == {"openai": "sk-ada"}
    assert [m.text for m in summary_call.messages] == ["message 0", "Hello"]
    source = await (await host.open(harness, thread_id="case-42", user=ADA)).snapshot()
    assert source.usage.input_tokens == before.input_tokens + 120
    records = await host.persistence.read(stream_name("acme", "case-42"))
    [spent] = [r for r in records if r.type == "usage" and r.data["source"] == "transfer"]
    assert spent.data["transferId"] == result.transfer_id


async def test_a_summary_that_takes_too_long_fails_the_transfer_and_nothing_moves(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY, summary_timeout=0.05)
    main = ScriptedModel([text("Hello"), [pause(5), text("too late")]])
    harness = await case(host, main, "Hello")
    seq = await host.persistence.last_seq(stream_name("acme", "case-42"))

    with pytest.raises(TransferTimeoutError) as info:
        await host.transfer(
            from_=Endpoint(harness, "case-42"),
            to=Endpoint(billing_desk()),
            envelope=Envelope(note=NOTE, messages="summary"),
            user=ADA,
            transfer_id="t-slow",
        )

    assert info.value.code == "transfer_timeout"
    assert await host.persistence.last_seq(stream_name("acme", "case-42")) == seq
    assert [s.thread_id for s in await host.sessions.list(user=ADA)] == ["case-42"]


async def test_the_summary_timeout_is_two_minutes_by_default() -> None:
    assert HarnessHost().summary_timeout == 120.0


async def test_envelope_all_copies_the_settled_transcript_with_new_ids_and_file_copies(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([text("Got it")]))
    session = await host.open(harness, thread_id="case-42", user=ADA)
    photo = FilePart(media_type="image/png", data="iVBORw0KGgo=", name="receipt.png")
    await session.send("Here is my receipt", files=[photo])
    source = (await session.snapshot()).messages

    result = await host.transfer(
        from_=Endpoint(harness, "case-42"),
        to=Endpoint(billing_desk()),
        envelope=Envelope(note=NOTE, messages="all"),
        user=ADA,
    )

    copied = (await target_messages(host, result.thread_id))[1:]
    assert [(m.role, m.text) for m in copied] == [(m.role, m.text) for m in source]
    assert not {m.id for m in copied} & {m.id for m in source}
    assert copied[0].parts[1] == photo and copied[0].parts[1] is not source[0].parts[1]
    assert copied[0].metadata["harness"]["copiedFrom"]["messageId"] == source[0].id


async def test_a_tool_call_with_no_result_stays_behind_and_the_source_keeps_running(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    started, release = asyncio.Event(), asyncio.Event()

    class Empty(BaseModel):
        pass

    async def slow(args: Empty, ctx: Any) -> str:
        started.set()
        await release.wait()
        return "found"

    main = ScriptedModel(
        [text("Hi"), [text("Looking it up."), tool_call("lookup")], text("It is found.")]
    )
    harness = support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        name="acme/desk",
        tools=[tool(name="lookup", description="Look up", input=Empty, run=slow)],
    )
    session = await host.open(harness, thread_id="case-42", user=ADA)
    await session.send("hello")
    turn = asyncio.create_task(session.send("where is order 42?"))
    await started.wait()

    transfer = asyncio.create_task(
        host.transfer(
            from_=Endpoint(harness, "case-42"),
            to=Endpoint(billing_desk(), "case-42-billing"),
            envelope=Envelope(messages="all"),
            user=ADA,
        )
    )
    # The target's log gets the copied messages (with harness.transferred, in
    # one append) before the transfer waits for the turn to write the source:
    # once it is there, the transfer has read the tool's call still unsettled.
    async for record in host.persistence.watch(stream_name("acme", "case-42-billing")):
        if record.type == TRANSFERRED:
            break
    assert not transfer.done()  # it waits for the turn's hold on the source
    release.set()
    result, done = await transfer, await turn

    copied = await target_messages(host, result.thread_id)
    assert [m.text for m in copied] == ["hello", "Hi", "where is order 42?", "Looking it up."]
    assert not any(m.tool_calls for m in copied)
    assert done.text == "Looking it up.\n\nIt is found."  # the source kept running


async def test_waits_members_and_other_state_never_move(make_host: HostFactory) -> None:
    host = make_host(access=MEMBERS_ONLY)
    main = ScriptedModel([tool_call("handoff", {"to": {"human": True}, "note": "person"})])
    harness = await case(host, main, "x")
    await host.sessions.share(thread_id="case-42", user_id="olga", role="operator", user=ADA)

    result = await host.transfer(
        from_=Endpoint(harness, "case-42"),
        to=Endpoint(billing_desk()),
        envelope=Envelope(messages="all"),
        user=ADA,
    )

    target = await (
        await host.open(billing_desk(), thread_id=result.thread_id, user=ADA)
    ).snapshot()
    assert target.pending_waits == ()
    assert target.status == "idle"
    assert target.active_agent is None
    assert dict(target.members) == {"ada": "owner"}  # the user is the only member, the owner
    assert target.usage.input_tokens == 0
    source = await (await host.open(harness, thread_id="case-42", user=ADA)).snapshot()
    assert source.status == "paused"  # the source keeps its wait


async def test_both_threads_are_in_the_users_tenant(make_host: HostFactory) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([]))
    eve = User(id="ada", tenant_id="globex")  # same id, other tenant

    with pytest.raises(ThreadNotFoundError):
        await host.transfer(
            from_=Endpoint(harness, "case-42"), to=Endpoint(billing_desk()), user=eve
        )
    assert await host.sessions.list(user=eve) == []

    result = await host.transfer(
        from_=Endpoint(harness, "case-42"), to=Endpoint(billing_desk()), user=ADA
    )
    # The target is made in Ada's tenant: there is no way to name another.
    assert await host.persistence.last_seq(stream_name("acme", result.thread_id)) > 0
    assert await host.sessions.list(user=eve) == []
    assert result.thread_id in [s.thread_id for s in await host.sessions.list(user=ADA)]


async def test_an_existing_target_needs_send_and_must_belong_to_the_target_harness(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([]))
    await host.open(billing_desk(), thread_id="olgas", user=OLGA)
    await host.open(harness, thread_id="other-desk", user=ADA)
    await host.open(billing_desk(), thread_id="adas", user=ADA)

    with pytest.raises(AccessDeniedError):
        await host.transfer(
            from_=Endpoint(harness, "case-42"), to=Endpoint(billing_desk(), "olgas"), user=ADA
        )
    with pytest.raises(WrongHarnessError):
        await host.transfer(
            from_=Endpoint(harness, "case-42"),
            to=Endpoint(billing_desk(), "other-desk"),
            user=ADA,
        )
    result = await host.transfer(
        from_=Endpoint(harness, "case-42"),
        to=Endpoint(billing_desk(), "adas"),
        envelope=Envelope(note=NOTE),
        user=ADA,
    )
    assert result.thread_id == "adas"
    assert [m.text for m in await target_messages(host, "adas")] == [NOTE]


async def test_the_source_must_belong_to_the_named_harness(make_host: HostFactory) -> None:
    host = make_host(access=MEMBERS_ONLY)
    await case(host, ScriptedModel([]))

    with pytest.raises(WrongHarnessError):
        await host.transfer(
            from_=Endpoint(billing_desk(), "case-42"), to=Endpoint(billing_desk()), user=ADA
        )


def refund_transfer(harness: Harness) -> dict[str, Any]:
    """The arguments of ``host.transfer`` for moving case 42 to billing, under one transfer id."""
    return {
        "from_": Endpoint(harness, "case-42"),
        "to": Endpoint(billing_desk()),
        "envelope": Envelope(note=NOTE, messages="all"),
        "user": ADA,
        "transfer_id": "refund-case-42",
    }


async def test_a_retry_with_the_same_transfer_id_makes_no_second_thread_and_copies_nothing_again(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([text("Hello")]), "Hello")
    args = refund_transfer(harness)

    first = await host.transfer(**args)
    again = await host.transfer(**args)

    assert again.thread_id == first.thread_id and again.retried
    assert len(await target_messages(host, first.thread_id)) == 3
    assert len(await host.sessions.list(user=ADA)) == 2
    with pytest.raises(TransferConflictError):
        await host.transfer(**{**args, "envelope": Envelope(note="other")})


Records = Sequence[tuple[str, Mapping[str, Any]]]
"""What ``Persistence.append`` takes: (type, data) pairs."""


class CrashOnce:
    """A persistence that fails one append (as a process killed at that point would)."""

    def __init__(self, inner: Persistence, stream: str, record_type: str) -> None:
        self._inner = inner
        self._stream = stream
        self._type = record_type
        self.crashed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def append(
        self,
        stream: str,
        records: Records,
        *,
        expected_seq: int | None = None,
    ) -> list[LogRecord]:
        if not self.crashed and stream == self._stream and records[0][0] == self._type:
            self.crashed = True
            raise ConnectionError("the host died here")
        return await self._inner.append(stream, records, expected_seq=expected_seq)


@pytest.mark.parametrize(
    ("stream", "record_type"),
    [("harness/acme/case-42", "harness.transferred"), ("harness-host", "transferred")],
)
async def test_a_retry_after_a_crash_half_way_finishes_without_copying_twice(
    persistence: Persistence, stream: str, record_type: str
) -> None:
    crashing = CrashOnce(persistence, stream, record_type)
    first = HarnessHost(persistence=crashing, access=MEMBERS_ONLY)
    harness = await case(first, ScriptedModel([text("Hello")]), "Hello")
    args = refund_transfer(harness)
    with pytest.raises(ConnectionError):
        await first.transfer(**args)
    await first.close()

    second = HarnessHost(persistence=persistence, access=MEMBERS_ONLY)
    result = await second.transfer(**args)

    assert len(await target_messages(second, result.thread_id)) == 3
    source = replay(await persistence.read("harness/acme/case-42"))
    target = replay(await persistence.read(f"harness/acme/{result.thread_id}"))
    assert list(source.transfers) == list(target.transfers) == ["refund-case-42"]
    host_events = await persistence.read("harness-host")
    assert [e.data["transferId"] for e in host_events] == ["refund-case-42"]
    await second.close()


async def test_a_target_log_owned_by_another_host_raises_log_owned_elsewhere(
    make_host: HostFactory,
) -> None:
    other = make_host(access=MEMBERS_ONLY)
    await (
        await other.open(billing_desk(ScriptedModel([text("mine")])), thread_id="busy", user=ADA)
    ).send("hi")
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([]))
    seq = await host.persistence.last_seq("harness/acme/busy")

    with pytest.raises(LogOwnedElsewhereError):
        await host.transfer(
            from_=Endpoint(harness, "case-42"), to=Endpoint(billing_desk(), "busy"), user=ADA
        )

    assert await host.persistence.last_seq("harness/acme/busy") == seq


async def test_both_logs_get_a_transferred_record_with_the_same_transfer_id_and_the_index_links(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([]))

    result = await host.transfer(
        from_=Endpoint(harness, "case-42"),
        to=Endpoint(billing_desk()),
        user=ADA,
        transfer_id="refund-case-42",
    )

    source_records = await host.persistence.read("harness/acme/case-42")
    target_records = await host.persistence.read(f"harness/acme/{result.thread_id}")
    [out] = [r for r in source_records if r.type == "harness.transferred"]
    [into] = [r for r in target_records if r.type == "harness.transferred"]
    assert out.data["transferId"] == into.data["transferId"] == "refund-case-42"
    source = await (await host.open(harness, thread_id="case-42", user=ADA)).snapshot()
    target = await (
        await host.open(billing_desk(), thread_id=result.thread_id, user=ADA)
    ).snapshot()
    assert target.metadata["harness:transferredFrom"] == {
        "threadId": "case-42",
        "harness": "acme/desk",
        "transferId": "refund-case-42",
    }
    assert source.metadata["harness:transferredTo"] == {
        "threadId": result.thread_id,
        "harness": "acme/billing",
        "transferId": "refund-case-42",
    }


async def test_host_events_yield_a_transferred_event(make_host: HostFactory) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([]))

    result = await host.transfer(
        from_=Endpoint(harness, "case-42"), to=Endpoint(billing_desk()), user=ADA
    )

    event = await asyncio.wait_for(anext(aiter(host.events())), 5)
    assert event.name == "transferred"
    assert event.value["transferId"] == result.transfer_id
    assert event.value["from"]["threadId"] == "case-42"
    assert event.value["to"]["threadId"] == result.thread_id


async def test_fork_with_a_thread_of_another_harness_raises(make_host: HostFactory) -> None:
    host = make_host(access=MEMBERS_ONLY)
    harness = await case(host, ScriptedModel([text("Hi")]), "Hi")

    with pytest.raises(WrongHarnessError) as info:
        await host.fork(billing_desk(), thread_id="case-42", user=ADA)
    assert "host.transfer" in info.value.message

    fork = await host.fork(harness, thread_id="case-42", user=ADA)
    assert [m.text for m in (await fork.snapshot()).messages] == ["message 0", "Hi"]


async def test_a_bad_envelope_is_rejected_with_what_it_may_hold(host: HarnessHost) -> None:
    harness = desk(ScriptedModel([]))
    await host.open(harness, thread_id="case-42")

    with pytest.raises(InvalidInputError) as info:
        await host.transfer(
            from_=Endpoint(harness, "case-42"),
            to=Endpoint(billing_desk()),
            envelope=Envelope(messages="everything"),  # type: ignore[arg-type]
        )

    assert "'none', 'summary' or 'all'" in info.value.message
    assert [s.thread_id for s in await host.sessions.list()] == ["case-42"]
