"""Bad handoff records: rejected with a message naming the field, nothing stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from agent_mem_vault.atproto import RecordValidationError, next_tid
from agent_mem_vault.atproto.pds import PdsClient, PdsSession
from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.runs import RunRegistry, build_handoff_record, check_handoff_record
from agent_mem_vault.store import Persistence


async def _takeover(persistence: Persistence) -> tuple[RunRegistry, str, str]:
    registry = RunRegistry(persistence, lease_seconds=60)
    old = await registry.start_run("bot")
    new = await registry.start_run("bot")
    return registry, old.tid, new.tid


def _record(old: str, new: str, **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "$type": "garden.engram.agents.handoff",
        "fromRun": old,
        "toRun": new,
        "createdAt": "2026-11-30T12:00:00.000Z",
    }
    for key, value in changes.items():
        if value is _MISSING:
            record.pop(key)
        else:
            record[key] = value
    return record


_MISSING = object()

# (test id, changes to a good record, record key or None to use toRun, field named)
BAD = [
    ("missing fromRun", {"fromRun": _MISSING}, None, "fromRun"),
    ("missing toRun", {"toRun": _MISSING}, "NEW", "toRun"),
    ("missing createdAt", {"createdAt": _MISSING}, None, "createdAt"),
    ("non-TID fromRun", {"fromRun": "run-1"}, None, "fromRun"),
    ("non-TID toRun", {"toRun": "0000000000000"}, "0000000000000", "toRun"),
    ("fromRun == toRun", {"fromRun": "NEW"}, None, "toRun"),
    ("rkey is not toRun", {}, "3kznmn7xqxl22", "rkey"),
    ("rkey is not a TID", {}, "self", "rkey"),
    ("datetime without timezone", {"createdAt": "2026-11-30T12:00:00.000"}, None, "createdAt"),
    ("wrong $type", {"$type": "app.bsky.feed.post"}, None, "$type"),
    ("generator without version", {"generator": {"name": "x"}}, None, "generator.version"),
]


@pytest.mark.parametrize(
    ("changes", "rkey", "field"), [b[1:] for b in BAD], ids=[str(b[0]) for b in BAD]
)
async def test_a_bad_handoff_record_is_rejected_naming_the_field_and_nothing_is_stored(
    persistence: Persistence, changes: dict[str, Any], rkey: str | None, field: str
) -> None:
    registry, old, new = await _takeover(persistence)
    changes = {k: new if v == "NEW" else v for k, v in changes.items()}
    record = _record(old, new, **changes)
    key = new if rkey is None else (new if rkey == "NEW" else rkey)
    with pytest.raises(RecordValidationError) as info:
        await registry.record_handoff("bot", record, key)
    assert info.value.field == field
    named = "record key" if field == "rkey" else field.split(".")[-1]
    assert named in info.value.message
    assert await registry.handoffs("bot") == []


async def test_a_record_for_a_takeover_that_did_not_happen_is_rejected(
    persistence: Persistence,
) -> None:
    registry, old, new = await _takeover(persistence)
    third = (await registry.start_run("bot")).tid
    with pytest.raises(InvalidInputError) as info:
        await registry.record_handoff("bot", _record(old, third), third)
    assert info.value.details["field"] == "fromRun"
    with pytest.raises(InvalidInputError) as info:
        await registry.record_handoff("other", _record(old, new), new)
    assert info.value.details["field"] == "toRun"
    assert await registry.handoffs("bot") == []


async def test_a_good_record_lands_once_and_a_different_one_for_the_same_run_does_not(
    persistence: Persistence,
) -> None:
    registry, old, new = await _takeover(persistence)
    first, created = await registry.record_handoff("bot", _record(old, new), new)
    assert created
    other = _record(old, new, createdAt="2030-01-01T00:00:00.000Z")
    landed, created = await registry.record_handoff("bot", other, new)
    assert not created
    assert landed == first
    assert [e.record for e in await registry.handoffs("bot")] == [first]


@pytest.mark.parametrize(
    ("changes", "rkey", "field"), [b[1:] for b in BAD], ids=[str(b[0]) for b in BAD]
)
async def test_a_bad_handoff_record_is_rejected_naming_the_field_and_nothing_is_published(
    changes: dict[str, Any], rkey: str | None, field: str
) -> None:
    sent: list[httpx.Request] = []

    def pds(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"uri": "at://did:plc:x/c/k", "cid": "bafyreix"})

    old, new = next_tid(), next_tid()
    changes = {k: new if v == "NEW" else v for k, v in changes.items()}
    record = _record(old, new, **changes)
    key = new if rkey is None else (new if rkey == "NEW" else rkey)
    async with PdsClient("http://127.0.0.1:9", transport=httpx.MockTransport(pds)) as client:
        client.session = PdsSession(did="did:plc:abc", handle="a.test", access_jwt="jwt")
        with pytest.raises(RecordValidationError) as info:
            await client.publish(record, key, check=check_handoff_record)
    assert info.value.field == field
    assert sent == []


def test_building_a_record_from_a_datetime_without_timezone_names_created_at() -> None:
    with pytest.raises(RecordValidationError) as info:
        build_handoff_record(
            from_run=next_tid(), to_run=next_tid(), created_at=datetime(2026, 11, 30, 12)
        )
    assert info.value.field == "createdAt"
    assert "timezone" in info.value.message


def test_building_a_record_from_a_run_to_itself_names_to_run() -> None:
    tid = next_tid()
    with pytest.raises(RecordValidationError) as info:
        build_handoff_record(from_run=tid, to_run=tid, created_at=datetime.now(UTC))
    assert info.value.field == "toRun"
