"""How ``PdsClient.publish`` classifies what a failed write left behind (a scripted PDS).

The reference PDS is exercised in ``test_pds_publish.py``; here httpx's
``MockTransport`` plays answers that PDS cannot be made to give on demand
(an expired session, a 503, a network that drops every request).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agent_mem_vault.atproto import next_tid, record_cid
from agent_mem_vault.atproto.pds import PdsClient, PdsSession, PublishFailed
from agent_mem_vault.core.clock import utc_now
from agent_mem_vault.runs import build_handoff_record

Write = Callable[[httpx.Request], httpx.Response]


def _record() -> dict[str, Any]:
    return build_handoff_record(from_run=next_tid(), to_run=next_tid(), created_at=utc_now())


def _error(status: int, error: str) -> Write:
    return lambda request: httpx.Response(status, json={"error": error, "message": error})


def _drop(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("network down (test)", request=request)


async def _publish(record: dict[str, Any], write: Write, there: dict[str, Any] | None) -> Any:
    def pds(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("getRecord"):
            if there is None:
                return httpx.Response(400, json={"error": "RecordNotFound"})
            return httpx.Response(
                200, json={"uri": "at://did:plc:abc/x/y", "cid": record_cid(there), "value": there}
            )
        return write(request)

    async with PdsClient("http://127.0.0.1:9", transport=httpx.MockTransport(pds)) as client:
        client.session = PdsSession(did="did:plc:abc", handle="a.test", access_jwt="jwt")
        return await client.publish(record, record["toRun"])


async def test_a_write_the_pds_refused_and_that_is_not_there_is_not_retryable() -> None:
    with pytest.raises(PublishFailed) as info:
        await _publish(_record(), _error(401, "ExpiredToken"), there=None)
    assert info.value.retryable is False
    assert "log in again" in info.value.message


@pytest.mark.parametrize(
    "write", [_error(503, "Unavailable"), _error(429, "RateLimitExceeded"), _drop]
)
async def test_a_write_that_failed_in_transit_and_is_not_there_is_retryable(write: Write) -> None:
    with pytest.raises(PublishFailed) as info:
        await _publish(_record(), write, there=None)
    assert info.value.retryable is True
    assert "publish again" in info.value.message


async def test_a_failed_write_whose_record_is_there_unchanged_is_already_published() -> None:
    record = _record()
    result = await _publish(record, _error(500, "InternalServerError"), there=record)
    assert result.outcome == "already_published"
    assert result.cid == record_cid(record)


async def test_a_failed_write_under_a_key_holding_another_record_is_taken() -> None:
    record = _record()
    theirs = {**record, "createdAt": "2030-01-01T00:00:00.000Z"}
    result = await _publish(record, _error(500, "InternalServerError"), there=theirs)
    assert result.outcome == "taken"
    assert result.record == theirs
    assert result.cid == record_cid(theirs) != record_cid(record)


async def test_when_reading_back_fails_too_the_outcome_is_unknown_and_retryable() -> None:
    def pds(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("network down (test)", request=request)

    async with PdsClient("http://127.0.0.1:9", transport=httpx.MockTransport(pds)) as client:
        client.session = PdsSession(did="did:plc:abc", handle="a.test", access_jwt="jwt")
        record = _record()
        with pytest.raises(PublishFailed) as info:
            await client.publish(record, record["toRun"])
    assert info.value.retryable is True
    assert "may or may not be there" in info.value.message
