"""The storage contract that the harness and the run registry share.

A persistence offers four small primitives, and every service is written in
terms of them, so that a backend (memory, SQLite, PostgreSQL) is one class:

* **Logs** — append-only, ordered records per stream (a thread's log). An
  append may name the sequence number it expects to follow; if another writer
  got there first it fails with ``LogConflictError`` and nothing is written.
  That is how two hosts never interleave a turn.
* **Documents** — JSON values under ``(collection, key)`` with a version
  number. ``insert`` is put-if-absent and returns what is there, which is how
  "at most once" is done (a handoff record keyed by the new run's TID, a
  transfer keyed by its transfer id). ``put`` takes an expected version for
  compare-and-set.
* **Leases** — a named lease held by one owner until it expires; renewing is
  acquiring again. Ownership of a thread's log across hosts rests on this;
  ``append_owned`` takes (or renews) a lease and appends in one write.
* **Watching** — ``watch`` yields a stream's records as they are appended, from
  any process that shares the backend, for live event streams.

All methods are coroutines; memory and SQLite finish without suspending for
long, PostgreSQL really awaits the network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ..core.errors import ConflictError, InvalidInputError

__all__ = [
    "Doc",
    "Lease",
    "LogConflictError",
    "LogRecord",
    "Persistence",
    "VersionConflictError",
    "check_name",
    "scan_all",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One entry of a stream's log; ``seq`` starts at 1 and has no gaps."""

    stream: str
    seq: int
    type: str
    data: JSON
    at: datetime


@dataclass(frozen=True, slots=True)
class Doc:
    """A stored document; ``version`` starts at 1 and grows by one per write."""

    collection: str
    key: str
    value: JSON
    version: int


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a lease, and until when (per the backend's clock)."""

    name: str
    owner: str
    expires_at: datetime
    token: int = field(default=0)
    """Grows each time the lease changes hands: a fencing token."""


class LogConflictError(ConflictError, code="log_conflict"):
    """Another writer appended first; re-read the log and decide again."""

    @classmethod
    def at(cls, stream: str, *, expected_seq: int | None, last_seq: int) -> LogConflictError:
        return cls(
            f"log {stream!r} is at {last_seq}, not {expected_seq}: another writer "
            "appended first; re-read the log",
            stream=stream,
            expected_seq=expected_seq,
            last_seq=last_seq,
        )


class VersionConflictError(ConflictError, code="version_conflict"):
    """A document changed since it was read; re-read it and decide again."""

    @classmethod
    def at(
        cls, collection: str, key: str, *, expected: int | None, current: int
    ) -> VersionConflictError:
        state = f"is at version {current}" if current else "does not exist"
        return cls(
            f"{collection}/{key} {state}, not version {expected}; re-read it and try again",
            collection=collection,
            key=key,
            expected_version=expected,
            version=current,
        )


def check_name(kind: str, value: str) -> str:
    """Streams, collections and keys are non-empty text without NUL bytes.

    The limit is in UTF-8 bytes, not characters, so that a collection and a key
    together always fit a PostgreSQL b-tree index entry, on every backend alike.
    """
    if (
        not isinstance(value, str)
        or not value
        or "\x00" in value
        or len(value.encode("utf-8", "surrogatepass")) > 1024
    ):
        raise InvalidInputError(
            f"{kind} must be non-empty text of at most 1024 UTF-8 bytes without NUL, "
            f"got {value[:80]!r}",
            field=kind,
        )
    return value


@runtime_checkable
class Persistence(Protocol):
    """What every backend implements. See the module docstring for the model."""

    # -- logs ---------------------------------------------------------------
    async def append(
        self,
        stream: str,
        records: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        expected_seq: int | None = None,
    ) -> list[LogRecord]:
        """Append ``(type, data)`` records atomically, all or none.

        With ``expected_seq`` the append succeeds only if the stream's last
        sequence number is exactly that (0 for an empty stream); otherwise it
        raises ``LogConflictError`` and writes nothing.
        """
        ...

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
        """``acquire_lease(lease, owner, ttl)``, then ``append`` if ``owner`` holds it: one write.

        Returns the records written and the lease as it stands afterwards. If
        somebody else holds the lease, nothing changes: no records, and their
        lease. If the append conflicts (``LogConflictError``) nothing is
        written, the lease included. One transaction (one commit) where
        ``acquire_lease`` and ``append`` take two.
        """
        ...

    async def read(
        self, stream: str, *, after: int = 0, limit: int | None = None
    ) -> list[LogRecord]:
        """Records with ``seq > after``, in order."""
        ...

    async def last_seq(self, stream: str) -> int:
        """The sequence number of the newest record, 0 for an empty stream."""
        ...

    def watch(self, stream: str, *, after: int = 0) -> AsyncIterator[LogRecord]:
        """Yield records with ``seq > after`` now and as they are appended, forever.

        Appends by other processes on the same backend are seen too. The caller
        stops it by leaving the ``async for`` (or closing the iterator).
        """
        ...

    # -- documents ----------------------------------------------------------
    async def get(self, collection: str, key: str) -> Doc | None: ...

    async def insert(self, collection: str, key: str, value: Mapping[str, Any]) -> tuple[Doc, bool]:
        """Put-if-absent. Returns the stored document and whether this call created it."""
        ...

    async def put(
        self,
        collection: str,
        key: str,
        value: Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Doc:
        """Write a document. ``expected_version=0`` means it must not exist yet;
        another number means it must be at that version (compare-and-set);
        ``None`` writes unconditionally. A mismatch raises ``VersionConflictError``.
        """
        ...

    async def delete(
        self, collection: str, key: str, *, expected_version: int | None = None
    ) -> bool:
        """Remove a document; returns whether one was there."""
        ...

    async def scan(
        self, collection: str, *, prefix: str = "", after: str | None = None, limit: int = 1000
    ) -> list[Doc]:
        """Documents whose key starts with ``prefix``, in key order, past ``after``."""
        ...

    # -- leases -------------------------------------------------------------
    async def acquire_lease(self, name: str, owner: str, ttl: float) -> Lease:
        """Take or renew the lease if it is free, expired or already ``owner``'s.

        Returns the lease as it stands afterwards: if ``lease.owner != owner``
        somebody else holds it and nothing changed.
        """
        ...

    async def release_lease(self, name: str, owner: str) -> bool:
        """Give the lease up if ``owner`` holds it; returns whether it did."""
        ...

    async def get_lease(self, name: str) -> Lease | None:
        """The current unexpired holder, or None."""
        ...

    # -- life cycle ---------------------------------------------------------
    async def close(self) -> None: ...


async def scan_all(
    persistence: Persistence, collection: str, *, prefix: str = "", page: int = 500
) -> list[Doc]:
    """Every document under ``prefix``, in key order, read ``page`` at a time.

    ``scan`` returns at most ``limit`` documents, so a caller that wants them
    all pages with ``after``; this is that loop, written once.
    """
    out: list[Doc] = []
    after: str | None = None
    while True:
        docs = await persistence.scan(collection, prefix=prefix, after=after, limit=page)
        out += docs
        if len(docs) < page:
            return out
        after = docs[-1].key
