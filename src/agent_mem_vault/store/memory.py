"""In-process persistence: for tests, demos and hosts that need nothing to survive.

It keeps the exact semantics of the durable backends (conflicts, versions,
leases), so code tested on it behaves the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeGuard

from ..core.clock import SYSTEM_CLOCK, Clock
from .backend import Backend, Claim, Encoded, check_version
from .base import Doc, Lease, LogConflictError, LogRecord
from .wakeups import Wakeups

__all__ = ["MemoryPersistence", "memory_persistence"]


def _foreign(held: Lease | None, owner: str, now: datetime) -> TypeGuard[Lease]:
    """Whether ``held`` is somebody else's lease that has not expired."""
    return held is not None and held.owner != owner and held.expires_at > now


@dataclass(frozen=True, slots=True)
class _Entry:
    seq: int
    type: str
    text: str
    at: datetime


@dataclass(frozen=True, slots=True)
class _StoredDoc:
    text: str
    version: int


class MemoryPersistence(Backend):
    """Values are kept as JSON text (see :mod:`.backend`): one parse per read is much
    cheaper than the deep copies it replaces."""

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._logs: dict[str, list[_Entry]] = {}
        self._docs: dict[str, dict[str, _StoredDoc]] = {}
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._wakeups = Wakeups()

    # -- logs ---------------------------------------------------------------
    async def _append(
        self, stream: str, records: Encoded, expected_seq: int | None
    ) -> list[LogRecord]:
        with self._lock:
            added = self._add(stream, records, expected_seq, self._clock.now())
        # After the lock: a watch registers under it, so it either saw these
        # records or is registered by now.
        self._wakeups.wake(stream)
        return [_thaw(stream, e) for e in added]

    async def _append_owned(
        self, stream: str, records: Encoded, expected_seq: int | None, claim: Claim
    ) -> tuple[list[LogRecord], Lease]:
        lease, owner, ttl = claim.name, claim.owner, claim.ttl

        with self._lock:
            now = self._clock.now()
            held = self._leases.get(lease)
            if _foreign(held, owner, now):
                return [], held
            added = self._add(stream, records, expected_seq, now)  # a conflict: nothing taken
            taken = self._take_lease(held, lease, owner, ttl, now)
        self._wakeups.wake(stream)
        return [_thaw(stream, e) for e in added], taken

    def _add(
        self, stream: str, records: Encoded, expected_seq: int | None, now: datetime
    ) -> list[_Entry]:
        """Put ``records`` after the stream's last record, which must be ``expected_seq``
        (else ``LogConflictError``, nothing changed); the lock is held."""
        log = self._logs.setdefault(stream, [])
        if expected_seq is not None and len(log) != expected_seq:
            raise LogConflictError.at(stream, expected_seq=expected_seq, last_seq=len(log))
        added = [
            _Entry(seq=len(log) + i + 1, type=t, text=text, at=now)
            for i, (t, text) in enumerate(records)
        ]
        log.extend(added)
        return added

    async def read(
        self, stream: str, *, after: int = 0, limit: int | None = None
    ) -> list[LogRecord]:
        # A negative ``after`` means "from the start", as ``seq > after`` does
        # on the SQL backends; as a slice index it would count from the end.
        after = max(after, 0)
        with self._lock:
            log = self._logs.get(stream, [])
            picked = log[after:] if limit is None else log[after : after + limit]
            return [_thaw(stream, e) for e in picked]

    async def last_seq(self, stream: str) -> int:
        with self._lock:
            return len(self._logs.get(stream, []))

    async def watch(self, stream: str, *, after: int = 0) -> AsyncIterator[LogRecord]:
        after = max(after, 0)
        while True:
            with self._lock:
                log = self._logs.get(stream, [])
                fresh = [_thaw(stream, e) for e in log[after:]]
                # Registered under the lock that appends take: no lost wake-up.
                fut = None if fresh else self._wakeups.register(stream)
            for record in fresh:
                after = record.seq
                yield record
            if fut is not None:
                try:
                    await fut
                finally:
                    self._wakeups.discard(stream, fut)

    # -- documents ----------------------------------------------------------
    async def get(self, collection: str, key: str) -> Doc | None:
        with self._lock:
            doc = self._docs.get(collection, {}).get(key)
            return _doc(collection, key, doc) if doc else None

    async def _insert(self, collection: str, key: str, text: str) -> tuple[Doc, bool]:
        with self._lock:
            docs = self._docs.setdefault(collection, {})
            existing = docs.get(key)
            if existing is not None:
                return _doc(collection, key, existing), False
            doc = docs[key] = _StoredDoc(text, 1)
            return _doc(collection, key, doc), True

    async def _put(self, collection: str, key: str, text: str, expected: int | None) -> Doc:
        with self._lock:
            docs = self._docs.setdefault(collection, {})
            existing = docs.get(key)
            current = existing.version if existing else 0
            check_version(collection, key, expected, current)
            doc = docs[key] = _StoredDoc(text, current + 1)
            return _doc(collection, key, doc)

    async def delete(
        self, collection: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        with self._lock:
            docs = self._docs.get(collection, {})
            existing = docs.get(key)
            check_version(collection, key, expected_version, existing.version if existing else 0)
            if existing is None:
                return False
            del docs[key]
            return True

    async def scan(
        self, collection: str, *, prefix: str = "", after: str | None = None, limit: int = 1000
    ) -> list[Doc]:
        with self._lock:
            docs = self._docs.get(collection, {})
            keys = sorted(k for k in docs if k.startswith(prefix) and (after is None or k > after))
            return [_doc(collection, k, docs[k]) for k in keys[:limit]]

    # -- leases -------------------------------------------------------------
    async def _acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        now = self._clock.now()
        with self._lock:
            held = self._leases.get(name)
            if _foreign(held, owner, now):
                return held
            return self._take_lease(held, name, owner, ttl, now)

    def _take_lease(
        self, held: Lease | None, name: str, owner: str, ttl: float, now: datetime
    ) -> Lease:
        """Give ``owner`` the lease that ``held`` was (free, expired or its own); lock held."""
        token = (
            held.token
            if held is not None and held.owner == owner
            else ((held.token if held else 0) + 1)
        )
        lease = self._leases[name] = Lease(name, owner, now + timedelta(seconds=ttl), token)
        return lease

    async def _release_lease(self, name: str, owner: str) -> bool:
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


def _thaw(stream: str, e: _Entry) -> LogRecord:
    return LogRecord(stream, e.seq, e.type, json.loads(e.text), e.at)


def _doc(collection: str, key: str, d: _StoredDoc) -> Doc:
    return Doc(collection, key, json.loads(d.text), d.version)


def memory_persistence(*, clock: Clock = SYSTEM_CLOCK) -> MemoryPersistence:
    """A persistence that lives in this process only.

    >>> store = memory_persistence()
    """
    return MemoryPersistence(clock=clock)
