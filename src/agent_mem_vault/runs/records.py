"""Handoff records: pure functions that build and check ``garden.engram.agents.handoff``.

No I/O here: the registry stores what these return, the PDS client publishes
it, and the CLI exports it. A record is checked against the shipped lexicon
(fields, TID and datetime formats, record key kind) and against the rules the
lexicon cannot say: the record key *is* ``toRun``, and a run does not hand
off to itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..atproto.lexicon import RecordValidationError, validate_record
from ..core.clock import format_datetime
from ..core.version import __version__
from ..core.wire import ONLY_WHEN_SET, CamelJson

__all__ = [
    "DEFAULT_GENERATOR",
    "HANDOFF_NSID",
    "Generator",
    "build_handoff_record",
    "check_handoff_record",
]

HANDOFF_NSID = "garden.engram.agents.handoff"


@dataclass(frozen=True, slots=True)
class Generator(CamelJson):
    """The software that wrote a record (``garden.engram.agents.defs#generator``)."""

    name: str
    """Name of the software, e.g. ``agent-mem-vault`` or your agent's name."""
    version: str
    """Its version, e.g. ``0.1.0``."""
    url: str | None = field(default=None, metadata=ONLY_WHEN_SET)
    """Where to learn about it (optional)."""

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Generator:
        url = value.get("url")
        return cls(str(value["name"]), str(value["version"]), None if url is None else str(url))


DEFAULT_GENERATOR = Generator("agent-mem-vault", __version__)


def build_handoff_record(
    *,
    from_run: str,
    to_run: str,
    created_at: datetime,
    generator: Generator | None = DEFAULT_GENERATOR,
) -> dict[str, Any]:
    """The record a stopped run writes: checked, ready to store and publish under ``to_run``.

    >>> from datetime import UTC, datetime
    >>> build_handoff_record(from_run="3kznmn7xqxl22", to_run="3kznmn7xqxl23",
    ...     created_at=datetime(2026, 1, 1, tzinfo=UTC), generator=None)["createdAt"]
    '2026-01-01T00:00:00.000Z'
    """
    if created_at.tzinfo is None:
        raise RecordValidationError(
            "record field 'createdAt' has no timezone: pass an aware datetime (UTC)",
            field="createdAt",
        )
    record: dict[str, Any] = {
        "$type": HANDOFF_NSID,
        "fromRun": from_run,
        "toRun": to_run,
        "createdAt": format_datetime(created_at),
    }
    if generator is not None:
        record["generator"] = generator.to_json()
    check_handoff_record(record, to_run)
    return record


def check_handoff_record(record: Mapping[str, Any], rkey: str | None = None) -> str:
    """Check a handoff record and its key; returns the key (``toRun``).

    Raises ``RecordValidationError`` naming the field that is wrong.
    """
    if not isinstance(record, Mapping) or record.get("$type") != HANDOFF_NSID:
        raise RecordValidationError(f"record field '$type' must be {HANDOFF_NSID!r}", field="$type")
    validate_record(record, rkey)
    to_run = str(record["toRun"])
    if record["fromRun"] == to_run:
        raise RecordValidationError(
            "record field 'toRun' equals 'fromRun': a run cannot hand off to itself",
            field="toRun",
        )
    if rkey is not None and rkey != to_run:
        raise RecordValidationError(
            f"record key {rkey!r} is not the record's toRun {to_run!r}: a handoff is keyed "
            "by the new run's TID",
            field="rkey",
        )
    return to_run
