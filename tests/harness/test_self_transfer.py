"""A tool that moves (or forks) its own conversation: the most natural transfer there is.

The harness design: "Only settled messages move. A tool call with no result yet stays
behind … The source thread keeps running." The turn holds its thread; the
transfer writes the source through that hold instead of waiting for it.
"""

from __future__ import annotations

import asyncio

import pytest

from agent_mem_vault.harness import (
    Endpoint,
    Envelope,
    Harness,
    HarnessHost,
    ToolCallPart,
    ToolContext,
    TransferResult,
    define_harness,
    tool,
)
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

from .conftest import HostFactory
from .support import ADA, MEMBERS_ONLY

NOTE = "Ada wants a refund for order 42."
SUMMARY = "Ada asked for a refund for order 42; support moved her."


def billing_desk() -> Harness:
    return define_harness(name="acme/billing", model=ScriptedModel([]))


def desk_with_move_tool(
    host: HarnessHost, main: ScriptedModel, messages: str, moved: list[TransferResult]
) -> Harness:
    """The desk, whose model has a ``move_to_billing`` tool that transfers its own thread."""

    async def move_to_billing(ctx: ToolContext) -> str:
        """Move this customer to the billing desk."""
        result = await host.transfer(
            from_=Endpoint(desk, ctx.thread_id),
            to=Endpoint(billing_desk()),
            envelope=Envelope(note=NOTE, messages=messages),  # type: ignore[arg-type]
            user=ctx.user,
        )
        moved.append(result)
        return f"moved to billing as {result.thread_id}"

    desk = define_harness(name="acme/desk", model=main, tools=[tool(move_to_billing)])
    return desk


def script(messages: str) -> ScriptedModel:
    replies: list[object] = [text("Hello"), tool_call("move_to_billing", {})]
    if messages == "summary":
        replies.append(text(SUMMARY))
    replies += [text("Billing has your case now."), text("Still here.")]
    return ScriptedModel(replies)  # type: ignore[arg-type]


@pytest.mark.parametrize("messages", ["none", "summary", "all"])
async def test_a_tool_transfers_its_own_thread_and_the_turn_goes_on(
    make_host: HostFactory, messages: str
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    main = script(messages)
    moved: list[TransferResult] = []
    desk = desk_with_move_tool(host, main, messages, moved)
    session = await host.open(desk, thread_id="case-42", user=ADA)
    await session.send("I want a refund")

    result = await asyncio.wait_for(session.send("move me to billing"), 10)

    assert (result.status, result.text) == ("completed", "Billing has your case now.")
    [transfer] = moved
    target = await host.open(billing_desk(), thread_id=transfer.thread_id, user=ADA)
    copied = (await target.snapshot()).messages
    expected = {
        "none": [NOTE],
        "summary": [NOTE, SUMMARY],
        "all": [NOTE, "I want a refund", "Hello", "move me to billing"],
    }[messages]
    assert [m.text for m in copied] == expected
    # The tool's own call had no result yet: it stayed behind.
    assert not any(isinstance(p, ToolCallPart) for m in copied for p in m.parts)
    if messages == "summary":
        summarised = main.calls[2].messages
        assert not any(isinstance(p, ToolCallPart) for m in summarised for p in m.parts)

    records = await host.persistence.read(stream_name("acme", "case-42"))
    kinds = [r.type for r in records]
    transferred = kinds.index("harness.transferred")
    assert records[transferred].data["role"] == "source"
    # The source records the transfer in the middle of the turn, which then finishes.
    assert kinds.index("run.started", 5) < transferred < len(kinds) - 1
    assert kinds[-1] == "run.finished"
    source = await session.snapshot()
    assert source.status == "idle"
    assert source.metadata["harness:transferredTo"]["threadId"] == transfer.thread_id

    # The source keeps running: the next send answers at once.
    again = await asyncio.wait_for(session.send("anything else?"), 10)
    assert (again.status, again.text) == ("completed", "Still here.")
    main.check_consumed()


async def test_a_tool_forks_its_own_thread_with_only_settled_messages(
    make_host: HostFactory,
) -> None:
    host = make_host(access=MEMBERS_ONLY)
    forks: list[str] = []

    async def fork_case(ctx: ToolContext) -> str:
        """Keep a copy of this conversation for the audit team."""
        copy = await host.fork(desk, thread_id=ctx.thread_id, user=ctx.user)
        forks.append(copy.thread_id)
        return f"forked as {copy.thread_id}"

    main = ScriptedModel([tool_call("fork_case", {}), text("A copy is kept."), text("Sure.")])
    desk = define_harness(name="acme/desk", model=main, tools=[tool(fork_case)])
    session = await host.open(desk, thread_id="case-42", user=ADA)

    result = await asyncio.wait_for(session.send("keep a copy"), 10)

    assert result.text == "A copy is kept."
    [fork_id] = forks
    fork = await (await host.open(desk, thread_id=fork_id, user=ADA)).snapshot()
    assert [m.text for m in fork.messages] == ["keep a copy"]
    assert fork.metadata["harness:forkedFrom"] == {"threadId": "case-42"}
    assert (await asyncio.wait_for(session.send("thanks"), 10)).text == "Sure."


async def test_another_task_still_waits_for_a_turn_that_holds_the_thread(
    make_host: HostFactory,
) -> None:
    """Only code running inside the turn writes through its hold; anyone else queues."""
    host = make_host()
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(ctx: ToolContext) -> str:
        """Take a while."""
        started.set()
        await release.wait()
        return "done"

    main = ScriptedModel([tool_call("slow", {}), text("first"), text("second")])
    desk = define_harness(name="acme/desk", model=main, tools=[tool(slow)])
    session = await host.open(desk, thread_id="t1")
    first = asyncio.create_task(session.send("one"))
    await started.wait()

    second = asyncio.create_task(session.send("two"))
    await asyncio.sleep(0.1)
    assert not second.done()  # queued behind the running turn, not interleaved with it
    release.set()

    assert (await asyncio.wait_for(first, 10)).text == "first"
    assert (await asyncio.wait_for(second, 10)).text == "second"
