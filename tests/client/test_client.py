"""HarnessClient and the live session view against a real server on loopback."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import httpx
import pytest

from agent_mem_vault.client import ClientEvent, HarnessClient, create_session_view
from agent_mem_vault.core.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    RemoteError,
    UnauthenticatedError,
)
from agent_mem_vault.harness.access import User
from agent_mem_vault.server.support_demo import SupportDemo
from tests.server.support import ADA, OLGA, PERSON, REFUND, free_port, serve


def desk(url: str, headers: dict[str, str], thread_id: str = "case-42") -> HarnessClient:
    return HarnessClient(f"{url}/api/desk", thread_id, headers=headers)


async def open_case(url: str) -> None:
    async with desk(url, ADA) as ada:
        await ada.send(REFUND)
        await ada.share(user_id="olga", role="operator")
        assert (await ada.send(PERSON)).status == "interrupted"


async def test_send_gives_the_turn_text_status_and_run_id(url: str) -> None:
    async with desk(url, ADA) as ada:
        result = await ada.send(REFUND)
    assert result.status == "completed"
    assert result.text.startswith("billing:\n")
    assert result.run_id


async def test_snapshot_messages_carry_their_agent(url: str) -> None:
    await open_case(url)
    async with desk(url, OLGA) as olga:
        snap = await olga.snapshot()
    agents = [m.agent for m in snap.messages if m.role == "assistant"]
    assert agents[0] is None
    assert "billing" in agents
    assert snap.active_agent == "billing"


async def test_answer_with_the_snapshots_pending_wait_hands_back(url: str) -> None:
    await open_case(url)
    async with desk(url, OLGA) as olga:
        snapshot = await olga.snapshot()
        wait = next(w for w in snapshot.pending_waits if w.kind == "human")
        await olga.answer(question_id=wait.wait_id, value={"handBack": "billing"})
        after = await olga.snapshot()
    assert after.pending_waits == []
    assert after.active_agent == "billing"


async def test_rejections_come_back_as_the_error_tree_with_their_code(url: str) -> None:
    async with desk(url, ADA) as ada:
        await ada.send(REFUND)
        await ada.share(user_id="olga", role="operator")
    async with desk(url, OLGA) as olga:
        with pytest.raises(ConflictError) as no_wait:
            await olga.send("Hi", as_="operator")
    assert no_wait.value.code == "no_human_wait"
    async with desk(url, ADA, "nope") as missing:
        with pytest.raises(NotFoundError) as not_found:
            await missing.snapshot()
    assert not_found.value.code == "thread_not_found"
    async with desk(url, {}) as anonymous:
        with pytest.raises(UnauthenticatedError):
            await anonymous.snapshot()


async def test_transfer_returns_a_thread_the_target_harness_serves(url: str) -> None:
    await open_case(url)
    async with desk(url, ADA) as ada:
        target = await ada.transfer(to="billing", note="Refund for order 42.", transfer_id="t-42")
    async with HarnessClient(f"{url}/api/billing", target, headers=ADA) as billing:
        result = await billing.send("Hi, I am still here.")
        snap = await billing.snapshot()
    assert result.status == "completed"
    assert snap.messages[0].text == "Refund for order 42."


async def test_events_resume_after_the_server_drops_without_loss_or_repeat(
    demo: SupportDemo,
) -> None:
    port = free_port()
    seen: list[ClientEvent] = []
    ada = User(id="ada", tenant_id="acme")
    async with serve(demo.app, port) as base:
        client = HarnessClient(f"{base}/api/desk", "case-42", headers=ADA, reconnect_delay=0.1)
        await client.send(REFUND)

        async def follow() -> None:
            async for event in client.events():
                seen.append(event)

        task = asyncio.create_task(follow())
        await _until(lambda: any(e.name == "harness.handoff" for e in seen))
    # The server is gone; the thread moves on meanwhile.
    session = await demo.host.open(demo.desk, thread_id="case-42", user=ada)
    await session.send("Thanks, and an invoice for order 42 too?")
    newest = (await session.snapshot()).seq
    async with serve(demo.app, port):
        await _until(lambda: bool(seen) and int(seen[-1].id) >= newest)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await client.aclose()
    assert [int(e.id) for e in seen] == list(range(1, newest + 1))
    (handoff, *_) = [e for e in seen if e.name == "harness.handoff"]
    assert handoff.run_id is not None and handoff.run_id == handoff.value["runId"]


async def test_operator_reply_shows_in_every_open_view_at_once(url: str) -> None:
    await open_case(url)
    ada_view = create_session_view(desk(url, ADA))
    olga_view = create_session_view(desk(url, OLGA))
    async with ada_view.client, olga_view.client, ada_view, olga_view:
        assert ada_view.pending_waits and olga_view.pending_waits
        await olga_view.send("Hi, Olga here.", as_="operator")

        def has_reply(state: Any) -> bool:
            return any(
                m.metadata.get("harness", {}).get("operator") == "olga" for m in state.messages
            )

        await asyncio.gather(ada_view.wait_for(has_reply), olga_view.wait_for(has_reply))
        reply = ada_view.messages[-1]
        assert (reply.role, reply.text, reply.agent) == ("assistant", "Hi, Olga here.", None)


async def test_view_follows_handoffs_and_the_end_of_a_pause(url: str) -> None:
    await open_case(url)
    async with desk(url, OLGA) as olga, create_session_view(olga) as view:
        assert view.active_agent == "billing"
        wait = view.pending_waits[0]
        await view.client.answer(question_id=wait.wait_id, value={"handBack": "main"})
        await view.wait_for(lambda s: not s.pending_waits and s.active_agent is None)
        async with desk(url, ADA) as ada:
            await ada.send("I want a refund for order 7.")
        state = await view.wait_for(
            lambda s: s.active_agent == "billing" and s.messages[-1].agent == "billing"
        )
    assert [m.agent for m in state.messages if m.role == "assistant"][-1] == "billing"


async def _until(predicate: Any, within: float = 10.0) -> None:
    async with asyncio.timeout(within):
        while not predicate():  # noqa: ASYNC110 - the list is filled by another task
            await asyncio.sleep(0.02)


async def test_events_back_off_while_the_server_fails_and_raise_on_a_4xx() -> None:
    """A server that keeps failing is asked again less and less often, not hammered."""
    asked: list[float] = []
    answers = [503] * 5 + [404]

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(time.monotonic())
        status = answers[len(asked) - 1]
        body = {"code": "thread_not_found", "message": "no thread"} if status == 404 else {}
        return httpx.Response(status, json=body)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = HarnessClient("http://desk.test/api/desk", "case-42", http=http, reconnect_delay=0.02)
    with pytest.raises(NotFoundError):
        async for _ in client.events():
            pass
    await http.aclose()
    gaps = [later - earlier for earlier, later in itertools.pairwise(asked)]
    # Each wait is at least the doubled delay: 0.02, 0.04, 0.08, 0.16, 0.32 s.
    for gap, least in zip(gaps, (0.02, 0.04, 0.08, 0.16, 0.32), strict=True):
        assert gap >= least * 0.95, gaps


async def test_events_from_something_that_is_not_a_harness_raise_a_clear_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=b"data: <html>hello</html>\n\n", headers={"content-type": "text/html"}
        )

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = HarnessClient("http://elsewhere.test/", "case-42", http=http)
    with pytest.raises(RemoteError) as caught:
        async for _ in client.events():
            pass
    await http.aclose()
    assert caught.value.code == "bad_event"
    assert "api/desk" in caught.value.message


async def test_ids_that_could_reach_another_route_are_refused_before_any_request() -> None:
    asked: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return httpx.Response(200)

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    for bad in ("a/b", "..", "", "case 42"):
        with pytest.raises(InvalidInputError) as caught:
            HarnessClient("http://desk.test/api/desk", bad, http=http)
        assert caught.value.code == "invalid_id"
    client = HarnessClient("http://desk.test/api/desk", "case-42", http=http)
    with pytest.raises(InvalidInputError):
        await client.cancel("../../members")
    with pytest.raises(InvalidInputError):
        await client.resolve("w/1")
    await http.aclose()
    assert asked == []
