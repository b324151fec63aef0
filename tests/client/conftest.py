"""The client tests talk to the demo desk under a real uvicorn on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent_mem_vault.server.support_demo import SupportDemo, build_support_demo
from agent_mem_vault.store import Persistence
from tests.server.support import serve


@pytest.fixture
def demo(persistence: Persistence) -> SupportDemo:
    return build_support_demo(persistence)


@pytest.fixture
async def url(demo: SupportDemo) -> AsyncIterator[str]:
    async with serve(demo.app) as base:
        yield base
