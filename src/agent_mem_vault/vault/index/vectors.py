"""Memory vectors in the derived index, nearest-neighbour search, and rank fusion.

The vectors are derived like everything else in the index: the table is made
on first use and forgotten with the index (``reindex`` deletes the file, so
every memory is embedded again). Two triggers keep it in step with the notes
without any code on the write path: a memory row inserted (saved, edited by
hand, found by a rescan) is queued in ``vector_queue``; a memory row deleted
takes its vector and its queue entry with it. An edit is a delete and an
insert, so an edited memory is re-embedded. Embedding itself happens later,
outside the vault lock (see ``memories.py``): a save never waits for a model.

Vectors are unit-length float32 BLOBs. Search is an exact dot product over
all of them with numpy, against a copy kept in memory per process: vectors
added since the last search are appended (each has a ``seq``), and the copy is
read again only when a vector was removed or the index is new (``meta`` holds
an epoch and counters that triggers bump). Filters (namespace, kind, tags) choose the rows before
ranking.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..format.models import Memory
from .rows import MEMORY_COLUMNS, memory_from_row

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "RRF_K",
    "VectorCache",
    "count_vectors",
    "ensure_vector_schema",
    "memories_by_rowid",
    "pending_texts",
    "rrf_fuse",
    "store_vectors",
    "vector_schema_exists",
]

RRF_K = 60
"""Reciprocal rank fusion constant (Cormack et al., 2009); measured in bench_search.py."""

_SCHEMA = (
    "CREATE TABLE memory_vectors("
    "rowid INTEGER PRIMARY KEY, seq INTEGER NOT NULL, vec BLOB NOT NULL)",
    "CREATE INDEX memory_vectors_seq ON memory_vectors(seq)",
    "CREATE TABLE vector_queue(rowid INTEGER PRIMARY KEY)",
    """CREATE TRIGGER memories_vector_queue AFTER INSERT ON memories BEGIN
        INSERT OR IGNORE INTO vector_queue(rowid) VALUES (new.rowid);
    END""",
    """CREATE TRIGGER memories_vector_drop AFTER DELETE ON memories BEGIN
        DELETE FROM memory_vectors WHERE rowid = old.rowid;
        DELETE FROM vector_queue WHERE rowid = old.rowid;
    END""",
    # An index that updates a memory row in place (rather than delete + insert)
    # must re-embed it too.
    """CREATE TRIGGER memories_vector_requeue AFTER UPDATE ON memories BEGIN
        DELETE FROM memory_vectors WHERE rowid = old.rowid;
        INSERT OR IGNORE INTO vector_queue(rowid) VALUES (new.rowid);
    END""",
    """CREATE TRIGGER memory_vectors_added AFTER INSERT ON memory_vectors BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors_version';
    END""",
    """CREATE TRIGGER memory_vectors_removed AFTER DELETE ON memory_vectors BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vectors_removed';
    END""",
)


def vector_schema_exists(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='memory_vectors'"
    ).fetchone()
    return row is not None


def ensure_vector_schema(conn: sqlite3.Connection, model: str) -> None:
    """Make the vector tables for ``model`` (the caller holds the vault lock, in a transaction).

    New tables, or vectors of another model, mean every memory is queued again.
    """
    if vector_schema_exists(conn):
        row = conn.execute("SELECT value FROM meta WHERE key='vectors_model'").fetchone()
        if row is not None and row[0] == model:
            return
        conn.execute("DELETE FROM memory_vectors")
    else:
        for statement in _SCHEMA:
            conn.execute(statement)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('vectors_model', ?)", (model,))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('vectors_version', '0')")
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('vectors_removed', '0')")
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('vectors_epoch', ?)", (secrets.token_hex(8),))
    conn.execute("INSERT OR IGNORE INTO vector_queue(rowid) SELECT rowid FROM memories")


def count_vectors(conn: sqlite3.Connection) -> tuple[int, int]:
    """``(vectors, memories waiting for one)``; ``(0, 0)`` before the first hybrid search."""
    if not vector_schema_exists(conn):
        return 0, 0
    done = conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
    waiting = conn.execute("SELECT count(*) FROM vector_queue").fetchone()[0]
    return int(done), int(waiting)


def memory_text(title: str, content: str) -> str:
    """What is embedded for a memory: its title, then its text."""
    return f"{title}\n{content}"


def pending_texts(conn: sqlite3.Connection, limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` queued memories, newest first, as ``(rowid, text to embed)``."""
    if not vector_schema_exists(conn):
        return []
    # The queue alone first: joined, SQLite may walk every memory to find it empty.
    queued = [
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM vector_queue ORDER BY rowid DESC LIMIT ?", (limit,)
        ).fetchall()
    ]
    if not queued:
        return []
    rows = conn.execute(
        "SELECT m.rowid, m.title, f.content FROM memories m "
        "JOIN memories_fts f ON f.rowid = m.rowid "
        f"WHERE m.rowid IN ({','.join('?' * len(queued))}) ORDER BY m.rowid DESC",
        queued,
    ).fetchall()
    return [(int(r[0]), memory_text(r[1], r[2])) for r in rows]


def store_vectors(conn: sqlite3.Connection, model: str, rowids: Sequence[int], vectors: Any) -> int:
    """Keep the vectors of still-queued rows (the caller holds the lock, in a transaction).

    A row that left the queue meanwhile (its note was edited or deleted) is
    skipped: its vector would describe text that is gone. Returns how many
    were kept.
    """
    if not vector_schema_exists(conn):
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='vectors_model'").fetchone()
    if row is None or row[0] != model:
        return 0
    kept = 0
    for rowid, vec in zip(rowids, vectors, strict=True):
        if conn.execute("DELETE FROM vector_queue WHERE rowid=?", (rowid,)).rowcount:
            # seq: the version this insert makes (the trigger bumps it), so a
            # process's copy reads only the vectors added since it last looked.
            conn.execute(
                "INSERT OR REPLACE INTO memory_vectors(rowid, seq, vec) VALUES (?, "
                "(SELECT CAST(value AS INTEGER) + 1 FROM meta WHERE key = 'vectors_version'), ?)",
                (rowid, vec.astype("<f4").tobytes()),
            )
            kept += 1
    return kept


_HEADROOM = 1024
"""Rows of room kept past the vectors read, so the saves that follow copy nothing."""
_FETCH = 4096
"""Rows read from SQLite at a time while loading: no list of 100,000 BLOBs at once."""


@dataclass(slots=True)
class _Loaded:
    """The vectors of one index generation; appended to in place as vectors are added.

    One contiguous float32 matrix (rows ``[:size]`` of ``buffer``), so a search
    is one BLAS matrix-vector product, bound by memory bandwidth (100,000 × 384
    × 4 bytes = 154 MB read per search). Beside it, each row's namespace and
    kind as small integer codes, so that filters are array operations.
    """

    key: tuple[str, str]
    """(epoch, removals): when either changes, everything is read again."""
    version: int
    """The highest ``seq`` read so far."""
    size: int
    rowids: npt.NDArray[np.int64]
    buffer: npt.NDArray[np.float32]
    """Rows ``[:size]`` are vectors; the rest is room to grow without copying."""
    namespaces: dict[str, int]
    namespace_codes: npt.NDArray[np.int32]
    kinds: dict[str, int]
    kind_codes: npt.NDArray[np.int32]
    selections: dict[tuple[str | None, str | None], npt.NDArray[np.intp]]
    """Row positions per ``(namespace, kind)`` filter, until rows are added."""

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        return self.buffer[: self.size]

    def read(self, cursor: sqlite3.Cursor) -> None:
        """Append the ``(rowid, vec, namespace, kind)`` rows of ``cursor``, a chunk at a time."""
        while rows := cursor.fetchmany(_FETCH):
            self.append(rows)

    def append(self, rows: list[tuple[Any, ...]]) -> None:
        """Add ``(rowid, vec, namespace, kind)`` rows, growing the buffers by a quarter."""
        import numpy as np

        if not rows:
            return
        dim = len(rows[0][1]) // 4
        if self.buffer.shape[1] != dim:
            self.buffer = np.zeros((0, dim), dtype=np.float32)
            self.size = 0
        need = self.size + len(rows)
        if need > self.buffer.shape[0]:
            capacity = max(need + _HEADROOM, self.buffer.shape[0] * 5 // 4)
            self.buffer = _grown(self.buffer, capacity, self.size)
            self.rowids = _grown(self.rowids, capacity, self.size)
            self.namespace_codes = _grown(self.namespace_codes, capacity, self.size)
            self.kind_codes = _grown(self.kind_codes, capacity, self.size)
        end = self.size + len(rows)
        blob = b"".join([r[1] for r in rows])
        self.buffer[self.size : end] = np.frombuffer(blob, dtype="<f4").reshape(len(rows), dim)
        self.rowids[self.size : end] = [r[0] for r in rows]
        ns, kinds = self.namespaces, self.kinds
        self.namespace_codes[self.size : end] = [ns.setdefault(r[2], len(ns)) for r in rows]
        self.kind_codes[self.size : end] = [kinds.setdefault(r[3], len(kinds)) for r in rows]
        self.size = end
        self.selections.clear()

    def selection(self, namespace: str | None, kind: str | None) -> npt.NDArray[np.intp] | None:
        """Positions of the rows in ``namespace`` (and those below it) of ``kind``;
        ``None`` for no filter. Kept until rows are added, so repeated filtered
        searches cost one gather, not a pass over every row's codes."""
        import numpy as np

        if namespace is None and kind is None:
            return None
        found = self.selections.get((namespace, kind))
        if found is not None:
            return found
        mask: npt.NDArray[np.bool_] = np.ones(self.size, dtype=np.bool_)
        if namespace is not None:
            codes = [
                code
                for ns, code in self.namespaces.items()
                if ns == namespace or ns.startswith(namespace + "/")
            ]
            mask &= np.isin(self.namespace_codes[: self.size], codes)
        if kind is not None:
            mask &= self.kind_codes[: self.size] == self.kinds.get(kind, -1)
        found = np.flatnonzero(mask)
        if len(self.selections) >= 64:
            self.selections.clear()
        self.selections[(namespace, kind)] = found
        return found


def _grown(array: Any, capacity: int, used: int) -> Any:
    import numpy as np

    out = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    out[:used] = array[:used]
    return out


_GATHER = 8
"""A filter keeping fewer than 1/8 of the rows multiplies only those (gathered
first); above that, the product over all rows and then picking is cheaper."""


def _dot(matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> Any:
    """``matrix @ query`` on one thread, with numpy's own SIMD loop.

    Not BLAS: its threads make the product wait for the slowest of them, and
    spin afterwards. Measured at 100,000 × 384 on 2 busy cores (load 2.6):
    OpenBLAS 12-16 ms median, this 6.8 ms; on a quiet machine both are about
    6 ms, the time to read 154 MB.
    """
    import numpy as np

    return np.einsum("ij,j->i", matrix, query)


class VectorCache:
    """One process's in-memory copy of a vault's vectors, kept in step with the table.

    Vectors added since the last search are read by their ``seq`` and
    appended; a removal (an edit or a deleted note) or a new index means
    reading everything again.
    """

    def __init__(self) -> None:
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def _current(self, conn: sqlite3.Connection) -> _Loaded:
        import numpy as np

        meta = dict(
            conn.execute(
                "SELECT key, value FROM meta WHERE key IN "
                "('vectors_epoch', 'vectors_version', 'vectors_removed')"
            ).fetchall()
        )
        key = (str(meta.get("vectors_epoch")), str(meta.get("vectors_removed")))
        version = int(meta.get("vectors_version") or 0)
        with self._lock:
            loaded = self._loaded
            if loaded is None or loaded.key != key or version < loaded.version:
                empty = np.zeros(0, dtype=np.int32)
                loaded = _Loaded(
                    key,
                    0,
                    0,
                    np.zeros(0, dtype=np.int64),
                    np.zeros((0, 0), dtype=np.float32),
                    {},
                    empty,
                    {},
                    empty.copy(),
                    {},
                )
            if version > loaded.version:
                loaded.read(
                    conn.execute(
                        "SELECT v.rowid, v.vec, m.namespace, m.kind FROM memory_vectors v "
                        "JOIN memories m ON m.rowid = v.rowid WHERE v.seq > ? AND v.seq <= ? "
                        "ORDER BY v.seq",
                        # Bounded by the version read above: a vector another process
                        # adds meanwhile is read next time, not now and again then.
                        (loaded.version, version),
                    )
                )
                loaded.version = version
            self._loaded = loaded
            return loaded

    def nearest(
        self,
        conn: sqlite3.Connection,
        query: npt.NDArray[np.float32],
        *,
        namespace: str | None,
        kind: str | None,
        tags: Sequence[str],
        limit: int,
        min_similarity: float,
    ) -> list[tuple[int, float]]:
        """The ``limit`` memories closest to ``query`` among those the filters allow.

        Exact: every allowed vector is scored (see ``_Loaded``), then the top
        ones are picked with a partial sort.
        """
        import numpy as np

        if not vector_schema_exists(conn):
            return []
        loaded = self._current(conn)
        size = loaded.size
        matrix = loaded.matrix
        if size == 0 or matrix.shape[1] != query.shape[0]:
            return []
        rowids = loaded.rowids[:size]
        query = np.ascontiguousarray(query, dtype=np.float32)
        rows = loaded.selection(namespace, kind)
        if tags:
            tagged = np.flatnonzero(np.isin(rowids, _rowids_with_tags(conn, tags)))
            rows = tagged if rows is None else np.intersect1d(rows, tagged, assume_unique=True)
        if rows is None:
            scores = _dot(matrix, query)
        elif len(rows) * _GATHER < size:
            scores = _dot(np.take(matrix, rows, axis=0), query)
        else:
            scores = _dot(matrix, query)[rows]
        # Only scores above the floor compete; usually far fewer than all rows.
        passing = np.flatnonzero(scores >= min_similarity)
        if len(passing) > limit:
            best = np.argpartition(scores[passing], len(passing) - limit)[len(passing) - limit :]
            passing = passing[best]
        passing = passing[np.argsort(-scores[passing], kind="stable")]
        positions = passing if rows is None else rows[passing]
        return [
            (int(r), float(sc))
            for r, sc in zip(rowids[positions].tolist(), scores[passing].tolist(), strict=True)
        ]


def memories_by_rowid(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, Memory]:
    """The live memories with these index rowids (for hits found by meaning only): one
    superseded or forgotten keeps its vector, but is found by no search."""
    if not rowids:
        return {}
    rows = conn.execute(
        f"SELECT m.rowid, {MEMORY_COLUMNS} FROM memories m "
        f"WHERE m.rowid IN ({','.join('?' * len(rowids))}) AND m.state = 'live'",
        list(rowids),
    ).fetchall()
    return {int(r[0]): memory_from_row(r[1:]) for r in rows}


def _rowids_with_tags(conn: sqlite3.Connection, tags: Sequence[str]) -> list[int]:
    """Rowids of memories carrying every one of ``tags``."""
    where = " AND ".join(
        "EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value = ?)" for _ in tags
    )
    return [r[0] for r in conn.execute(f"SELECT rowid FROM memories WHERE {where}", list(tags))]


def rrf_fuse(
    rankings: Sequence[Sequence[str]], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: each list gives ``weight / (k + rank)`` to its items.

    Items are keys (memory ids); the result is best first, ties in first-seen order.
    """
    scores: dict[str, float] = {}
    for i, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[i]
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])
