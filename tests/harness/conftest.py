"""Harness fixtures: hosts on every backend, and the design's agents and harnesses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agent_mem_vault.harness import HarnessHost
from agent_mem_vault.store import Persistence

HostFactory = Callable[..., HarnessHost]


@pytest.fixture
async def make_host(
    persistence_factory: Callable[[], Persistence],
) -> AsyncIterator[HostFactory]:
    """Each call opens a host on a new handle to the same store, as another process would."""
    opened: list[tuple[HarnessHost, Persistence]] = []

    def make(**kwargs: Any) -> HarnessHost:
        store = persistence_factory()
        host = HarnessHost(persistence=store, **kwargs)
        opened.append((host, store))
        return host

    yield make
    closed: set[int] = set()
    for host, store in opened:
        await host.close()
        if id(store) not in closed:
            closed.add(id(store))
            await store.close()


@pytest.fixture
def host(make_host: HostFactory) -> HarnessHost:
    return make_host()
