"""What every backend does the same way before it touches its storage.

:class:`Backend` holds the public writing calls of :class:`~.base.Persistence`:
it checks the names (:func:`~.base.check_name`), encodes the values as JSON
text once, and hands the result to the backend's own primitive (``_append``,
``_put``, …). So a name is refused with one message on every backend, a value
that is not JSON (NaN, a datetime) is refused before anything is written, and
each backend holds only what differs: how it stores.

JSON text is what the backends keep (SQLite and PostgreSQL in a column, memory
in a dict): it proves that a value would survive a durable backend, and each
read parses a fresh copy, so a caller can never mutate what is stored.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .base import Doc, Lease, LogRecord, VersionConflictError, check_name

__all__ = ["Backend", "Claim", "Encoded", "check_version", "encode_json", "written"]

# allow_nan=False: NaN and Infinity are not JSON; other readers of the file
# (and PostgreSQL's json column) would refuse them. One encoder for every
# write: ``json.dumps`` with options builds a new one per call, a third of its cost.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

Encoded = list[tuple[str, str]]
"""Records ready to store: ``(type, data as JSON text)``, types checked."""


@dataclass(frozen=True, slots=True)
class Claim:
    """The lease that an ``append_owned`` takes (or renews) before it appends."""

    name: str
    owner: str
    ttl: float
    """Seconds the lease holds from now."""


def encode_json(value: Mapping[str, Any]) -> str:
    """``value`` as compact JSON text; ``ValueError`` for NaN or Infinity, ``TypeError``
    for what JSON cannot hold."""
    return _ENCODER.encode(value)


def written(stream: str, last: int, records: Encoded, at: datetime) -> list[LogRecord]:
    """The log records an append of ``records`` after sequence number ``last`` wrote."""
    return [
        LogRecord(stream, last + i + 1, t, json.loads(text), at)
        for i, (t, text) in enumerate(records)
    ]


def check_version(collection: str, key: str, expected: int | None, current: int) -> None:
    """Refuse a write that expected another version (``current`` 0: the document is absent)."""
    if expected is not None and expected != current:
        raise VersionConflictError.at(collection, key, expected=expected, current=current)


class Backend(ABC):
    """The checked, encoded front of the writing calls; see the module docstring."""

    # -- logs ---------------------------------------------------------------
    async def append(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        expected_seq: int | None = None,
    ) -> list[LogRecord]:
        check_name("stream", stream)
        return await self._append(stream, _encoded(records), expected_seq)

    async def append_owned(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        expected_seq: int | None,
        lease: str,
        owner: str,
        ttl: float,
    ) -> tuple[list[LogRecord], Lease]:
        check_name("stream", stream)
        check_name("lease", lease)
        check_name("owner", owner)
        claim = Claim(lease, owner, ttl)
        return await self._append_owned(stream, _encoded(records), expected_seq, claim)

    @abstractmethod
    async def _append(
        self, stream: str, records: Encoded, expected_seq: int | None
    ) -> list[LogRecord]:
        """``append``, its arguments checked and encoded."""

    @abstractmethod
    async def _append_owned(
        self, stream: str, records: Encoded, expected_seq: int | None, claim: Claim
    ) -> tuple[list[LogRecord], Lease]:
        """``append_owned``, its arguments checked and encoded."""

    # -- documents ----------------------------------------------------------
    async def insert(self, collection: str, key: str, value: Mapping[str, Any]) -> tuple[Doc, bool]:
        check_name("collection", collection)
        check_name("key", key)
        return await self._insert(collection, key, encode_json(value))

    async def put(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Doc:
        check_name("collection", collection)
        check_name("key", key)
        return await self._put(collection, key, encode_json(value), expected_version)

    @abstractmethod
    async def _insert(self, collection: str, key: str, text: str) -> tuple[Doc, bool]:
        """``insert`` of the JSON ``text``, the names checked."""

    @abstractmethod
    async def _put(self, collection: str, key: str, text: str, expected: int | None) -> Doc:
        """``put`` of the JSON ``text``, the names checked."""

    # -- leases -------------------------------------------------------------
    async def acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        check_name("lease", name)
        check_name("owner", owner)
        return await self._acquire_lease(name, owner, ttl)

    async def release_lease(self, name: str, owner: str) -> bool:
        # An empty owner is what a released lease holds; it must not "release" it.
        check_name("owner", owner)
        return await self._release_lease(name, owner)

    @abstractmethod
    async def _acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        """``acquire_lease``, the names checked."""

    @abstractmethod
    async def _release_lease(self, name: str, owner: str) -> bool:
        """``release_lease``, the owner checked."""


def _encoded(records: Sequence[tuple[str, Mapping[str, Any]]]) -> Encoded:
    return [(check_name("record type", t), encode_json(d)) for t, d in records]
