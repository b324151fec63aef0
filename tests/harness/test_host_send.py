"""``host.send``: open and send in one call, with the thread's index entry read once."""

from __future__ import annotations

from typing import Any

import pytest

from agent_mem_vault.core.errors import AccessDeniedError, InvalidInputError
from agent_mem_vault.harness import Access, HarnessHost, User, define_harness, members_only
from agent_mem_vault.harness.errors import ThreadNotFoundError
from agent_mem_vault.harness.index import THREADS
from agent_mem_vault.harness.testing import ScriptedModel, text
from agent_mem_vault.store import Persistence

from .conftest import HostFactory
from .support import ADA

SAM = User(id="sam", tenant_id="acme")


class CountingGets:
    """The persistence, counting the reads of thread index entries."""

    def __init__(self, inner: Persistence) -> None:
        self.inner = inner
        self.entry_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def get(self, collection: str, key: str) -> Any:
        if collection == THREADS:
            self.entry_reads += 1
        return await self.inner.get(collection, key)


def counted(make_host: HostFactory, **kwargs: Any) -> tuple[HarnessHost, CountingGets]:
    host = make_host(**kwargs)
    counting = CountingGets(host.persistence)
    host.persistence = counting  # type: ignore[assignment]
    return host, counting


def harness(*answers: str) -> Any:
    return define_harness(name="acme/desk", model=ScriptedModel([text(a) for a in answers]))


async def test_a_send_reads_the_index_entry_once_where_open_then_send_reads_it_twice(
    make_host: HostFactory,
) -> None:
    host, counting = counted(make_host)
    desk = harness("one", "two", "three")
    assert (await host.send(desk, "hello", thread_id="t1")).text == "one"
    first = counting.entry_reads  # a new thread: the read that finds nothing
    assert first == 1

    assert (await host.send(desk, "again", thread_id="t1")).text == "two"
    assert counting.entry_reads - first == 1

    before = counting.entry_reads
    session = await host.open(desk, thread_id="t1")
    assert (await session.send("third")).text == "three"
    assert counting.entry_reads - before == 2


async def test_a_send_is_checked_against_the_entry_it_read(make_host: HostFactory) -> None:
    users = {"ada": ADA, "sam": SAM}
    host = make_host(access=Access(get_user=users.get, rules=members_only()))
    desk = harness("hi Ada")
    assert (await host.send(desk, "hello", thread_id="case", user=ADA)).text == "hi Ada"
    seq = (await (await host.open(desk, thread_id="case", user=ADA)).snapshot()).seq

    with pytest.raises(AccessDeniedError):  # not a member: open refuses
        await host.send(desk, "let me in", thread_id="case", user=SAM)
    await host.sessions.share(thread_id="case", user_id="sam", role="operator", user=ADA)
    with pytest.raises(AccessDeniedError):  # an operator reads, but sends no user message
        await host.send(desk, "let me in", thread_id="case", user=SAM)
    assert (await (await host.open(desk, thread_id="case", user=ADA)).snapshot()).seq == seq


async def test_an_operator_reply_never_starts_a_thread(make_host: HostFactory) -> None:
    host = make_host()
    with pytest.raises(ThreadNotFoundError):
        await host.send(harness(), "I am here", thread_id="nobody", as_="operator")
    assert await host.sessions.list() == []


@pytest.mark.parametrize(
    ("text_", "kwargs"),
    [("   ", {}), ("hello", {"as_": "robot"}), ("hello", {"input_id": "bad id"})],
)
async def test_bad_input_starts_no_thread(
    make_host: HostFactory, text_: str, kwargs: dict[str, Any]
) -> None:
    host = make_host()
    with pytest.raises(InvalidInputError):
        await host.send(harness(), text_, thread_id="fresh", **kwargs)
    assert await host.sessions.list() == []
