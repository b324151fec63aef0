"""In-process persistence: for tests, demos and hosts that need nothing to survive.

It keeps the exact semantics of the durable backends (conflicts, versions,
leases), so code tested on it behaves the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from ..core.clock import SYSTEM_CLOCK, Clock
from .base import Doc, Lease, LogConflictError, LogRecord, VersionConflictError, check_name

__all__ = ["MemoryPersistence", "memory_persistence"]


def _frozen_copy(value: Mapping[str, Any]) -> dict[str, Any]:
    # A JSON round trip both copies and proves the value would survive a real
    # backend: a test that stores a datetime fails here as it would on SQLite.
    # NaN and Infinity are not JSON (PostgreSQL's json type refuses them).
    return dict(json.loads(json.dumps(value, allow_nan=False)))


class MemoryPersistence:
    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._logs: dict[str, list[LogRecord]] = {}
        self._docs: dict[str, dict[str, Doc]] = {}
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}

    # -- logs ---------------------------------------------------------------
    async def append(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        expected_seq: int | None = None,
    ) -> list[LogRecord]:
        check_name("stream", stream)
        prepared = [(check_name("record type", t), _frozen_copy(d)) for t, d in records]
        with self._lock:
            log = self._logs.setdefault(stream, [])
            if expected_seq is not None and len(log) != expected_seq:
                raise LogConflictError(
                    f"log {stream!r} is at {len(log)}, not {expected_seq}: another writer "
                    "appended first; re-read the log",
                    stream=stream,
                    expected_seq=expected_seq,
                    last_seq=len(log),
                )
            now = self._clock.now()
            added = [
                LogRecord(stream=stream, seq=len(log) + i + 1, type=t, data=d, at=now)
                for i, (t, d) in enumerate(prepared)
            ]
            log.extend(added)
            waiters = self._waiters.pop(stream, [])
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_wake, fut)
        return [_copy_record(r) for r in added]

    async def read(
        self, stream: str, *, after: int = 0, limit: int | None = None
    ) -> list[LogRecord]:
        # A negative ``after`` means "from the start", as ``seq > after`` does
        # on the SQL backends; as a slice index it would count from the end.
        after = max(after, 0)
        with self._lock:
            log = self._logs.get(stream, [])
            picked = log[after:] if limit is None else log[after : after + limit]
            return [_copy_record(r) for r in picked]

    async def last_seq(self, stream: str) -> int:
        with self._lock:
            return len(self._logs.get(stream, []))

    async def watch(self, stream: str, *, after: int = 0) -> AsyncIterator[LogRecord]:
        loop = asyncio.get_running_loop()
        after = max(after, 0)
        while True:
            with self._lock:
                log = self._logs.get(stream, [])
                fresh = [_copy_record(r) for r in log[after:]]
                fut: asyncio.Future[None] | None = None
                if not fresh:
                    fut = loop.create_future()
                    self._waiters.setdefault(stream, []).append((loop, fut))
            for record in fresh:
                after = record.seq
                yield record
            if fut is not None:
                await fut

    # -- documents ----------------------------------------------------------
    async def get(self, collection: str, key: str) -> Doc | None:
        with self._lock:
            doc = self._docs.get(collection, {}).get(key)
            return _copy_doc(doc) if doc else None

    async def insert(self, collection: str, key: str, value: Mapping[str, Any]) -> tuple[Doc, bool]:
        check_name("collection", collection)
        check_name("key", key)
        stored = _frozen_copy(value)
        with self._lock:
            docs = self._docs.setdefault(collection, {})
            existing = docs.get(key)
            if existing is not None:
                return _copy_doc(existing), False
            doc = Doc(collection, key, stored, 1)
            docs[key] = doc
            return _copy_doc(doc), True

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
        stored = _frozen_copy(value)
        with self._lock:
            docs = self._docs.setdefault(collection, {})
            existing = docs.get(key)
            current = existing.version if existing else 0
            if expected_version is not None and expected_version != current:
                raise VersionConflictError(
                    f"{collection}/{key} is at version {current}, not {expected_version}; "
                    "re-read it and try again",
                    collection=collection,
                    key=key,
                )
            doc = Doc(collection, key, stored, current + 1)
            docs[key] = doc
            return _copy_doc(doc)

    async def delete(
        self, collection: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        with self._lock:
            docs = self._docs.get(collection, {})
            existing = docs.get(key)
            if existing is None:
                if expected_version not in (None, 0):
                    raise VersionConflictError(
                        f"{collection}/{key} does not exist", collection=collection, key=key
                    )
                return False
            if expected_version is not None and expected_version != existing.version:
                raise VersionConflictError(
                    f"{collection}/{key} is at version {existing.version}, not "
                    f"{expected_version}; re-read it and try again",
                    collection=collection,
                    key=key,
                )
            del docs[key]
            return True

    async def scan(
        self, collection: str, *, prefix: str = "", after: str | None = None, limit: int = 1000
    ) -> list[Doc]:
        with self._lock:
            docs = self._docs.get(collection, {})
            keys = sorted(k for k in docs if k.startswith(prefix) and (after is None or k > after))
            return [_copy_doc(docs[k]) for k in keys[:limit]]

    # -- leases -------------------------------------------------------------
    async def acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        check_name("lease", name)
        check_name("owner", owner)
        now = self._clock.now()
        with self._lock:
            held = self._leases.get(name)
            if held is not None and held.owner != owner and held.expires_at > now:
                return held
            token = (
                held.token
                if held is not None and held.owner == owner
                else ((held.token if held else 0) + 1)
            )
            lease = Lease(name, owner, now + timedelta(seconds=ttl), token)
            self._leases[name] = lease
            return lease

    async def release_lease(self, name: str, owner: str) -> bool:
        check_name("owner", owner)
        with self._lock:
            held = self._leases.get(name)
            if held is None or held.owner != owner:
                return False
            # Expire rather than forget, so the fencing token keeps growing.
            self._leases[name] = Lease(name, "", self._clock.now(), held.token)
            return True

    async def get_lease(self, name: str) -> Lease | None:
        now = self._clock.now()
        with self._lock:
            held = self._leases.get(name)
            return held if held is not None and held.owner and held.expires_at > now else None

    async def close(self) -> None:
        return None


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _copy_record(r: LogRecord) -> LogRecord:
    return LogRecord(r.stream, r.seq, r.type, copy.deepcopy(r.data), r.at)


def _copy_doc(d: Doc) -> Doc:
    return Doc(d.collection, d.key, copy.deepcopy(d.value), d.version)


def memory_persistence(*, clock: Clock = SYSTEM_CLOCK) -> MemoryPersistence:
    """A persistence that lives in this process only.

    >>> store = memory_persistence()
    """
    return MemoryPersistence(clock=clock)
