"""One Python convention: snake_case in Python, camelCase on the wire, both taken."""

from __future__ import annotations

from typing import Any

import pytest

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.harness import (
    Endpoint,
    HarnessHost,
    InvalidAnswerError,
    Session,
    define_harness,
)
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.harness.testing import ScriptedModel, tool_call

from .test_human import PERSON, desk


async def paused(host: HarnessHost, thread_id: str = "t1") -> tuple[Session, str]:
    session = await host.open(
        desk(ScriptedModel([tool_call("handoff", PERSON)])), thread_id=thread_id
    )
    await session.send("I want a person.")
    [wait] = (await session.snapshot()).pending_waits
    return session, wait.wait_id


@pytest.mark.parametrize("key", ["hand_back", "handBack"])
async def test_an_answer_hands_back_in_python_or_wire_spelling_and_the_log_keeps_the_wire_one(
    host: HarnessHost, key: str
) -> None:
    session, wait_id = await paused(host)

    assert await session.answer(wait_id, {key: "billing"}) == "billing"

    records = await host.persistence.read(stream_name("default", "t1"))
    [closed] = [r.data for r in records if r.type == "wait.closed"]
    assert closed["value"] == {"handBack": "billing"}


async def test_an_answer_that_names_both_spellings_is_refused_and_changes_nothing(
    host: HarnessHost,
) -> None:
    session, wait_id = await paused(host)
    seq = (await session.snapshot()).seq
    with pytest.raises(InvalidAnswerError, match="both hand_back and handBack"):
        await session.answer(wait_id, {"hand_back": "billing", "handBack": "main"})
    assert (await session.snapshot()).seq == seq


@pytest.mark.parametrize("how", ["answer", "resolve", "cancel"])
async def test_answer_resolve_and_cancel_take_the_wait_id_by_position_or_by_name(
    host: HarnessHost, how: str
) -> None:
    extra: dict[str, Any] = {"value": {"resume": True}} if how == "answer" else {}
    name = "question_id" if how == "answer" else "wait_id"
    session, wait_id = await paused(host, "by-position")
    await getattr(session, how)(wait_id, *extra.values())
    session, wait_id = await paused(host, "by-name")
    await getattr(session, how)(**{name: wait_id}, **extra)
    for thread_id in ("by-position", "by-name"):
        snapshot = await (await host.open(session.harness, thread_id=thread_id)).snapshot()
        assert snapshot.pending_waits == ()


def test_an_endpoint_is_an_endpoint_a_tuple_or_a_harness() -> None:
    harness = define_harness(name="acme/desk", model=ScriptedModel([]))
    assert Endpoint.of((harness, "case-42"), "from_") == Endpoint(harness, "case-42")
    assert Endpoint.of(harness, "to") == Endpoint(harness)
    with pytest.raises(InvalidInputError, match="from_ must be an Endpoint"):
        Endpoint.of("acme/desk", "from_")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="as its harness"):
        Endpoint.of(("acme/desk", "case-42"), "from_")  # type: ignore[arg-type]


async def test_a_transfer_takes_tuples_for_its_endpoints(host: HarnessHost) -> None:
    harness = define_harness(name="acme/desk", model=ScriptedModel([]))
    billing = define_harness(name="acme/billing", model=ScriptedModel([]))
    await host.open(harness, thread_id="case-42")
    result = await host.transfer(from_=(harness, "case-42"), to=billing)
    assert (await (await host.open(billing, thread_id=result.thread_id)).snapshot()).seq > 0
