"""The log: the truth per thread; restarts, idempotent inputs, ownership."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.harness import (
    Harness,
    HarnessHost,
    InputConflictError,
    LogOwnedElsewhereError,
    Routing,
    TurnResult,
    WrongHarnessError,
    tool,
)
from agent_mem_vault.harness.log import replay, stream_name
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .conftest import HostFactory
from .support import PERSON, billing_agent, gated_harness, support_harness


async def test_the_log_holds_transcript_inputs_active_agent_and_events(host: HarnessHost) -> None:
    main = ScriptedModel([tool_call("handoff", {"to": "billing"})])
    harness = support_harness(main, [billing_agent(ScriptedModel([text("ok")]))])
    session = await host.open(harness, thread_id="t1")
    await session.send("refund", input_id="in-1")

    records = await host.persistence.read(stream_name("default", "t1"))

    types = [r.type for r in records]
    assert types[:3] == ["input", "message", "run.started"]
    assert "harness.handoff" in types and types[-1] == "run.finished"
    state = replay(records)
    assert state.active_agent == "billing"
    assert "in-1" in state.inputs
    assert [m.text for m in state.messages][-1] == "ok"


async def test_a_second_host_on_the_same_persistence_continues_where_the_first_stopped(
    make_host: HostFactory,
) -> None:
    main = ScriptedModel([text("one"), text("two")])
    harness = support_harness(main, [billing_agent(ScriptedModel([]))])
    first = make_host()
    await (await first.open(harness, thread_id="t1")).send("first")
    await first.close()

    second = make_host()
    session = await second.open(harness, thread_id="t1")
    result = await session.send("second")

    assert result.text == "two"
    assert [m.text for m in (await session.snapshot()).messages] == [
        "first",
        "one",
        "second",
        "two",
    ]
    assert [m.text for m in main.calls[1].messages] == ["first", "one", "second"]


async def test_an_input_sent_twice_with_the_same_input_id_runs_once(host: HarnessHost) -> None:
    main = ScriptedModel([text("once")])
    session = await host.open(
        support_harness(main, [billing_agent(ScriptedModel([]))]), thread_id="t1"
    )

    first = await session.send("hello", input_id="in-1")
    again = await session.send("hello", input_id="in-1")

    assert again == first
    assert len(main.calls) == 1
    assert len((await session.snapshot()).messages) == 2


async def test_the_same_input_id_with_another_payload_is_rejected_as_a_conflict(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([text("once")])
    session = await host.open(
        support_harness(main, [billing_agent(ScriptedModel([]))]), thread_id="t1"
    )
    await session.send("hello", input_id="in-1")
    seq = (await session.snapshot()).seq

    with pytest.raises(InputConflictError) as info:
        await session.send("something else", input_id="in-1")

    assert info.value.code == "input_conflict"
    assert (await session.snapshot()).seq == seq


async def answered_once(
    make_host: HostFactory,
) -> tuple[ScriptedModel, Harness, HarnessHost, TurnResult]:
    """Input ``in-1`` on thread ``t1``, answered by a fresh host: its model, harness, host, reply.

    The model has one answer, so a second run of that input would fail loudly.
    """
    main = ScriptedModel([text("once")])
    harness = support_harness(main, [billing_agent(ScriptedModel([]))])
    first = make_host()
    result = await (await first.open(harness, thread_id="t1")).send("hi", input_id="in-1")
    return main, harness, first, result


async def test_an_input_retried_on_another_host_after_a_restart_runs_once(
    make_host: HostFactory,
) -> None:
    main, harness, first, result = await answered_once(make_host)
    await first.close()

    second = make_host()
    again = await (await second.open(harness, thread_id="t1")).send("hi", input_id="in-1")

    assert again == result
    assert len(main.calls) == 1


async def test_a_turn_cut_off_by_a_stopped_host_is_closed_as_failed_by_the_next(
    make_host: HostFactory,
) -> None:
    called = asyncio.Event()

    class Empty(BaseModel):
        pass

    async def hang(args: Empty, ctx: Any) -> str:
        called.set()
        await asyncio.sleep(30)
        return "never"

    main = ScriptedModel([tool_call("hang"), text("fresh")])
    harness = support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        tools=[tool(name="hang", description="Hangs", input=Empty, run=hang)],
    )
    first = make_host(lease_ttl=0.2)
    session = await first.open(harness, thread_id="t1")
    task = asyncio.create_task(session.send("hang", input_id="in-1"))
    await called.wait()
    task.cancel()  # the host dies in the middle of the turn
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.3)  # its lease lapses

    second = make_host()
    retry = await (await second.open(harness, thread_id="t1")).send("hang", input_id="in-1")
    fresh = await (await second.open(harness, thread_id="t1")).send("again")

    assert retry.status == "failed" and retry.code == "turn_abandoned"
    assert fresh.text == "fresh"


async def test_a_host_cannot_write_a_thread_whose_log_another_host_owns(
    make_host: HostFactory,
) -> None:
    harness = support_harness(ScriptedModel([text("a")]), [billing_agent(ScriptedModel([]))])
    first = make_host()
    await (await first.open(harness, thread_id="t1")).send("mine")
    second = make_host()
    session = await second.open(harness, thread_id="t1")
    seq = (await session.snapshot()).seq

    with pytest.raises(LogOwnedElsewhereError) as info:
        await session.send("theirs")

    assert info.value.code == "log_owned_elsewhere"
    assert (await session.snapshot()).seq == seq


async def test_opening_a_thread_with_another_harness_is_rejected(host: HarnessHost) -> None:
    harness = support_harness(ScriptedModel([]), [])
    other = support_harness(ScriptedModel([]), [], name="acme/billing")
    await host.open(harness, thread_id="t1")

    with pytest.raises(WrongHarnessError):
        await host.open(other, thread_id="t1")


@pytest.mark.parametrize("bad", ["", "a/b", "x" * 201, "sp ace"])
async def test_a_bad_thread_id_is_rejected(host: HarnessHost, bad: str) -> None:
    with pytest.raises(InvalidInputError):
        await host.open(support_harness(ScriptedModel([]), []), thread_id=bad)


async def test_an_empty_message_is_rejected_and_nothing_is_written(host: HarnessHost) -> None:
    session = await host.open(support_harness(ScriptedModel([]), []), thread_id="t1")

    with pytest.raises(InvalidInputError):
        await session.send("   ")

    assert (await session.snapshot()).seq == 0


async def test_a_failing_model_fails_the_turn_with_model_error(host: HarnessHost) -> None:
    from agent_mem_vault.harness.testing import fail

    session = await host.open(
        support_harness(ScriptedModel([fail("endpoint down")]), []), thread_id="t1"
    )

    result = await session.send("hi")

    assert result.status == "failed"
    assert result.code == "model_error"
    assert "endpoint down" in (result.message or "")
    assert (await session.snapshot()).status == "idle"


async def test_a_host_keeps_the_log_while_a_turn_runs_longer_than_its_lease(
    make_host: HostFactory,
) -> None:
    release = asyncio.Event()  # the model answers only once the second host was refused
    harness = gated_harness(release, "slow answer")
    first = make_host(lease_ttl=0.45)
    turn = asyncio.create_task((await first.open(harness, thread_id="t1")).send("slow"))
    await asyncio.sleep(0.8)  # past the lease's TTL, still in the model call

    second = make_host()
    with pytest.raises(LogOwnedElsewhereError):
        await (await second.open(harness, thread_id="t1")).send("me too")
    release.set()

    assert (await turn).text == "slow answer"


async def test_open_without_create_does_not_start_an_unknown_thread(host: HarnessHost) -> None:
    from agent_mem_vault.harness import ThreadNotFoundError

    harness = support_harness(ScriptedModel([]), [])

    with pytest.raises(ThreadNotFoundError):
        await host.open(harness, thread_id="nope", create=False)

    assert await host.sessions.list() == []


def desk_with_person(main: ScriptedModel) -> Any:
    return support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )


async def test_an_operator_reply_sent_twice_with_the_same_input_id_is_written_once(
    host: HarnessHost,
) -> None:
    session = await host.open(desk_with_person(ScriptedModel([tool_call("handoff", PERSON)])))
    await session.send("A person please")

    first = await session.send("Olga here.", as_="operator", input_id="op-1")
    again = await session.send("Olga here.", as_="operator", input_id="op-1")

    assert again == first
    assert first.text == "Olga here." and first.status == "sent"
    assert [m.text for m in (await session.snapshot()).messages].count("Olga here.") == 1
    with pytest.raises(InputConflictError):
        await session.send("Olga again.", as_="operator", input_id="op-1")


async def test_a_held_message_sent_twice_with_the_same_input_id_is_held_once(
    host: HarnessHost,
) -> None:
    session = await host.open(desk_with_person(ScriptedModel([tool_call("handoff", PERSON)])))
    await session.send("A person please")

    first = await session.send("Hello?", input_id="in-2")
    again = await session.send("Hello?", input_id="in-2")

    assert again == first and first.status == "held"
    assert [m.text for m in (await session.snapshot()).messages].count("Hello?") == 1


async def test_continue_without_message_twice_with_the_same_input_id_runs_once(
    host: HarnessHost,
) -> None:
    main = ScriptedModel([text("Hi"), text("Anything else?")])
    session = await host.open(support_harness(main, [billing_agent(ScriptedModel([]))]))
    await session.send("hello")

    first = await session.continue_without_message(input_id="go-1")
    again = await session.continue_without_message(input_id="go-1")

    assert again == first and first.text == "Anything else?"
    main.check_consumed()
    with pytest.raises(InputConflictError):
        await session.send("hello", input_id="go-1")


async def test_a_retry_of_a_finished_input_is_answered_by_a_host_that_does_not_own_the_thread(
    make_host: HostFactory,
) -> None:
    main, harness, _first, result = await answered_once(make_host)

    second = make_host()  # the first host still owns the thread
    session = await second.open(harness, thread_id="t1")
    again = await session.send("hi", input_id="in-1")

    assert again == result
    assert len(main.calls) == 1
    with pytest.raises(LogOwnedElsewhereError):
        await session.send("something new")


@pytest.mark.parametrize("arguments", [{"lease_ttl": 0}, {"summary_timeout": -1}])
def test_a_host_with_a_lease_or_timeout_that_is_not_positive_is_refused(
    arguments: dict[str, Any],
) -> None:
    with pytest.raises(InvalidInputError, match="positive number of seconds"):
        HarnessHost(**arguments)
