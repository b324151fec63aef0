"""The thread index: one document per thread, the registry a host looks threads up in.

Collection ``harness.threads``, key ``<tenant>/<thread id>``; the value holds
the harness name, the owner, the members with their roles and the thread's
metadata (``harness:transferredFrom`` / ``harness:transferredTo``). Updates are
compare-and-set on the document's version, retried on a conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import DataError
from ..core.wire import LEFT_OUT, CamelJson
from ..store import Doc, Persistence, VersionConflictError, scan_all

__all__ = ["THREADS", "ThreadEntry", "create_entry", "get_entry", "list_entries", "update_entry"]

THREADS = "harness.threads"


@dataclass(frozen=True, slots=True)
class ThreadEntry(CamelJson):
    """A thread's index entry: which harness, which tenant, who may see it."""

    tenant: str
    thread_id: str
    harness: str
    owner: str | None
    members: Mapping[str, str]
    metadata: Mapping[str, Any]
    created_at: str
    version: int = field(default=0, metadata=LEFT_OUT)
    """The stored document's version, for compare-and-set; not part of the document."""


def _key(tenant: str, thread_id: str) -> str:
    return f"{tenant}/{thread_id}"


def _entry(doc: Doc) -> ThreadEntry:
    v = doc.value
    try:
        return ThreadEntry(
            tenant=v["tenant"],
            thread_id=v["threadId"],
            harness=v["harness"],
            owner=v.get("owner"),
            members=dict(v.get("members") or {}),
            metadata=dict(v.get("metadata") or {}),
            created_at=v["createdAt"],
            version=doc.version,
        )
    except KeyError as exc:
        raise DataError(
            f"thread index entry {doc.key!r} lacks {exc.args[0]!r}; the entry is damaged: "
            "restore it from a backup of the persistence"
        ) from exc


async def get_entry(p: Persistence, tenant: str, thread_id: str) -> ThreadEntry | None:
    doc = await p.get(THREADS, _key(tenant, thread_id))
    return _entry(doc) if doc is not None else None


async def create_entry(p: Persistence, entry: ThreadEntry) -> tuple[ThreadEntry, bool]:
    """Put-if-absent: two hosts opening one new thread agree on one owner."""
    doc, created = await p.insert(THREADS, _key(entry.tenant, entry.thread_id), entry.to_json())
    return _entry(doc), created


async def update_entry(
    p: Persistence, tenant: str, thread_id: str, change: Callable[[dict[str, Any]], None]
) -> ThreadEntry:
    """Apply ``change`` to the stored value with compare-and-set, retrying on conflicts."""
    key = _key(tenant, thread_id)
    while True:
        doc = await p.get(THREADS, key)
        if doc is None:
            raise DataError(
                f"thread index entry {key!r} vanished while being updated; something "
                "deleted it outside the harness: restore it, or open the thread again"
            )
        value = dict(doc.value)
        change(value)
        try:
            return _entry(await p.put(THREADS, key, value, expected_version=doc.version))
        except VersionConflictError:
            continue


async def list_entries(p: Persistence, tenant: str) -> list[ThreadEntry]:
    return [_entry(d) for d in await scan_all(p, THREADS, prefix=f"{tenant}/")]
