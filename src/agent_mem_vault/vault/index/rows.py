"""How a note becomes rows of the index: packed text, the rows' columns, the SQL that stores them.

Shared by ``db.Index`` (one note at a time) and its ``BulkLoader`` (a rebuild),
and ``unpack`` by the queries that read the rows back (``queries.py``).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from ..folder.records import FileRecord
from ..format.models import Handoff, Memory

__all__ = [
    "FILE_INSERT",
    "FTS_ADD",
    "FTS_DELETE",
    "HANDOFF_INSERT",
    "HANDOFF_STORED",
    "MEMORY_COLUMNS",
    "MEMORY_INSERT",
    "MEMORY_STORED",
    "as_duplicate",
    "file_row",
    "handoff_row",
    "join_path",
    "memory_from_row",
    "memory_row",
    "own_path",
    "pack",
    "split_path",
    "unpack",
]


def pack(text: str) -> str | bytes:
    """``text`` compressed if that makes it smaller (a BLOB), else as it is (TEXT)."""
    raw = text.encode("utf-8")
    if len(raw) < 64:
        return text
    # A small window and the fastest level: notes are short, so this compresses
    # as well as the defaults at a fraction of the cost (reindex packs every note).
    packer = zlib.compressobj(1, zlib.DEFLATED, 10, 4)
    packed = packer.compress(raw) + packer.flush()
    return packed if len(packed) < len(raw) else text


def split_path(path: str) -> tuple[str, str]:
    """A note's path as the (folder, name) key of the ``files`` table."""
    head, _, name = path.rpartition("/")
    return head, name


def own_path(path: str, namespace: str, kind: str, id: str) -> str | None:
    """``path`` if it is not the usual ``<namespace>/<kind>/<id>.md`` (the
    ``own_path`` column), else ``None``: the generated ``path`` column gives it."""
    return None if path == f"{namespace}/{kind}/{id}.md" else path


HANDOFF_INSERT = (
    "INSERT INTO handoffs(id, namespace, sender, recipient, status, created_at, read_at, "
    "supersedes, superseded_by, summary, context, own_path) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)


def unpack(value: str | bytes | None) -> str:
    """What ``pack`` stored, as text again (also the SQL function ``amv_text``)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return zlib.decompress(value).decode("utf-8")
    return value


def join_path(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def handoff_row(h: Handoff, packed: str | bytes | None = None) -> tuple[Any, ...]:
    """A ``handoffs`` row, in ``HANDOFF_INSERT`` order."""
    return (
        h.id,
        h.namespace,
        h.sender,
        h.recipient,
        h.status,
        h.created_at,
        h.read_at,
        json.dumps(list(h.supersedes)),
        h.superseded_by,
        h.summary,
        pack(h.context) if packed is None else packed,
        own_path(h.path, h.namespace, "handoffs", h.id),
    )


def memory_row(m: Memory, packed: str | bytes | None = None) -> tuple[Any, ...]:
    """A ``memories`` row without its rowid, in ``MEMORY_INSERT`` order."""
    tags = json.dumps(list(m.tags))
    return (
        m.id,
        m.namespace,
        m.title,
        m.kind,
        tags,
        m.agent,
        m.created_at,
        own_path(m.path, m.namespace, "memories", m.id),
        pack(m.content) if packed is None else packed,
        m.status,
        json.dumps(list(m.supersedes)) if m.supersedes else None,
        m.superseded_by,
        m.forgotten_at,
    )


HANDOFF_STORED = (
    "SELECT id, namespace, sender, recipient, status, created_at, read_at, supersedes, "
    "superseded_by, summary, context, own_path FROM handoffs WHERE id=?"
)
"""A handoff's row as stored, in ``handoff_row`` order."""
MEMORY_STORED = (
    "SELECT id, namespace, title, kind, tags, agent, created_at, own_path, body, state, "
    "supersedes, superseded_by, forgotten_at FROM memories WHERE id=?"
)
"""A memory's row as stored, in ``memory_row`` order."""

MEMORY_INSERT = (
    "INSERT INTO memories(rowid, id, namespace, title, kind, tags, agent, created_at, own_path, "
    "body, state, supersedes, superseded_by, forgotten_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
FTS_ADD = (
    "INSERT INTO memories_fts(rowid, title, content, tags) "
    "SELECT rid, title, content, tags FROM memories_text"
)
"""Index memories' text from the rows just stored (the same values a delete gives back)."""
FTS_DELETE = (
    "INSERT INTO memories_fts(memories_fts, rowid, title, content, tags) "
    "SELECT 'delete', rid, title, content, tags FROM memories_text WHERE rid=?"
)
"""Un-index one memory (external content: FTS5 is told the text it indexed)."""


def file_row(r: FileRecord) -> tuple[Any, ...]:
    """A ``files`` row, in ``FILE_INSERT`` order."""
    directory, name = split_path(r.path)
    own_id = r.note_id if r.kind in ("handoff", "memory") and name != f"{r.note_id}.md" else None
    filled = ",".join(r.filled) if r.filled and r.kind != "broken" else None
    return (directory, name, r.mtime_ns, r.size, r.kind, own_id, r.problem, filled)


FILE_INSERT = (
    "INSERT INTO files(dir, name, mtime_ns, size, kind, own_id, problem, filled) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def as_duplicate(record: FileRecord, other: str) -> FileRecord:
    """A copied note (its id is ``other``'s): kept as broken so ``other`` keeps its place."""
    return FileRecord(
        record.path,
        record.mtime_ns,
        record.size,
        "broken",
        problem=f"duplicate id {record.note_id}: {other} has the same id",
    )


MEMORY_COLUMNS = (
    "m.id, m.namespace, m.title, amv_text(m.body), m.kind, m.created_at, m.tags, m.agent, "
    "m.path, m.supersedes, m.superseded_by, m.forgotten_at"
)
"""A memory as ``memory_from_row`` reads it, from ``memories m``."""


def memory_from_row(row: Sequence[Any]) -> Memory:
    """A memory from a row in ``MEMORY_COLUMNS`` order."""
    return Memory(
        id=row[0],
        namespace=row[1],
        title=row[2],
        content=row[3],
        kind=row[4],
        created_at=row[5],
        tags=tuple(json.loads(row[6])),
        agent=row[7],
        path=row[8],
        supersedes=tuple(json.loads(row[9])) if row[9] else (),
        superseded_by=row[10],
        forgotten_at=row[11],
    )
