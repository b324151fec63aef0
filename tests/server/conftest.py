"""Fixtures for the HTTP tests: the harness design's support desk on every backend."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agent_mem_vault.server.support_demo import SupportDemo, build_support_demo
from agent_mem_vault.store import Persistence


@pytest.fixture
def demo(persistence: Persistence) -> SupportDemo:
    return build_support_demo(persistence)


@pytest.fixture
async def http(demo: SupportDemo) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=demo.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        yield client
