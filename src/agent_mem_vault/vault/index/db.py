"""The derived SQLite index in ``.agent-mem-vault/index.sqlite3``.

Markdown notes are the truth; this index only makes reads fast. It remembers,
for every note file, the size and mtime it was read at, and for every folder
its mtime, so that a rescan touches only what changed (see ``scan.py``). It
can be deleted at any time: the next call rebuilds it.

Schema changes are named migrations (``schema.py``), applied in order, each in
its own transaction, and recorded in the ``migrations`` table. An index written
by a newer version (a migration name this code does not know) is rebuilt rather
than trusted.

All index writes happen while the caller holds the vault lock, so SQLite
never sees two writers; readers use WAL and never block.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...core import disk
from ..folder.records import FileRecord
from .queries import IndexQueries
from .rows import (
    FILE_INSERT,
    FTS_ADD,
    FTS_DELETE,
    HANDOFF_INSERT,
    HANDOFF_STORED,
    MEMORY_INSERT,
    MEMORY_STORED,
    as_duplicate,
    file_row,
    handoff_row,
    join_path,
    memory_row,
    pack,
    split_path,
    unpack,
)
from .schema import MIGRATIONS, RETIRED, statements

__all__ = ["BulkLoader", "Index", "IndexDamaged", "is_damage"]


def _copy_into(db_path: Path, conn: sqlite3.Connection) -> None:
    """Copy the index file at ``db_path`` into ``conn`` without writing anything beside it.

    Read-only first (which reads what the write-ahead log holds, when its shared-memory
    file is there or can be made); else as an immutable file (the log unread: the
    copy is older, and the folder checks that follow bring it up to date, as after
    any change made while no process looked). Nothing copied if neither opens it.
    """
    if not db_path.is_file():
        return
    for mode in ("mode=ro", "immutable=1"):
        try:
            source = sqlite3.connect(f"{db_path.absolute().as_uri()}?{mode}", uri=True)
        except sqlite3.Error:
            continue
        try:
            source.execute("SELECT count(*) FROM sqlite_master").fetchone()
            source.backup(conn)
            return
        except sqlite3.Error:
            continue
        finally:
            source.close()


class IndexDamaged(Exception):
    """The index file is unreadable or from a newer version; the caller rebuilds it."""


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """True when ``exc`` means the index file itself is damaged (rebuild it): never for
    a full disk, an I/O error or a lock, which a rebuild would meet again (and which
    must not cost the index its rows). See ``core.disk``."""
    return disk.is_damage(exc)


class Index(IndexQueries):
    """One connection to a vault's index. Not shared between threads without a lock."""

    def __init__(
        self, db_path: Path, *, in_memory: bool = False, copy: bool = True, scratch: bool = False
    ) -> None:
        """The index file at ``db_path``; with ``in_memory``, a copy of it in this
        process's memory (empty if the file cannot be read, or without ``copy``): the
        index of a vault this user may read but not write, brought up to date from the
        notes like any other, and gone with the process. ``scratch``: a file being
        built from nothing and swapped in when complete (``IndexUpkeep.rebuild``), so
        it keeps no journal at all.

        ``IndexDamaged`` if the file is not a sound database; any other SQLite error
        (a full disk, an I/O error) is raised as it is, for the caller to report: the
        file is not to be rebuilt for it."""
        self.db_path = db_path
        self.freed: set[str] = set()
        """Ids of handoffs and memories removed, for ``freed_duplicates``."""
        self.touched: set[str] = set()
        """Paths of the notes stored or removed since the owner last took them (``""``:
        every note, after a rebuild): what a synced vault commits next
        (``take_touched``)."""
        self.conn = sqlite3.connect(
            ":memory:" if in_memory else db_path,
            isolation_level=None,
            check_same_thread=False,
            timeout=10.0,
        )
        try:
            self.conn.create_function("amv_text", 1, unpack, deterministic=True)
            # Takes effect only on a new file (before WAL is set); see MIGRATIONS.
            self.conn.execute("PRAGMA page_size=8192")
            if in_memory and copy:
                _copy_into(db_path, self.conn)
            self.conn.execute(f"PRAGMA journal_mode={'OFF' if scratch else 'WAL'}")
            # The index is derived: after a power cut it is checked against the
            # notes' sizes and mtimes, so it does not pay for its own fsyncs.
            self.conn.execute("PRAGMA synchronous=OFF")
            self.conn.execute("PRAGMA temp_store=MEMORY")
            self.conn.execute("PRAGMA cache_size=-32000")
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            if is_damage(exc):
                raise IndexDamaged(str(exc)) from exc
            raise

    def take_touched(self) -> set[str]:
        """The paths stored or removed since the last call (see ``touched``), emptied:
        the feed a vault's sync is told under the lock (``ops/port.py``)."""
        touched, self.touched = self.touched, set()
        return touched

    def close(self) -> None:
        self.conn.close()

    # -- schema ------------------------------------------------------------------

    def pending_migrations(self) -> list[tuple[str, str]]:
        """Migrations not yet applied; ``IndexDamaged`` if the index is from a newer version."""
        try:
            has_table = self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='migrations'"
            ).fetchone()
            applied: set[str] = set()
            if has_table:
                applied = {r[0] for r in self.conn.execute("SELECT name FROM migrations")}
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise IndexDamaged(str(exc)) from exc
            raise
        if applied & RETIRED:
            raise IndexDamaged(f"index has an old layout {sorted(applied & RETIRED)}")
        known = {name for name, _ in MIGRATIONS}
        if applied - known:
            raise IndexDamaged(f"index has unknown migrations {sorted(applied - known)}")
        return [(name, sql) for name, sql in MIGRATIONS if name not in applied]

    def migrate(self, now: str) -> None:
        """Apply pending migrations; the caller holds the vault lock."""
        todo = self.pending_migrations()
        if not todo:
            return
        with self.transaction():
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at TEXT)"
            )
            for name, sql in todo:
                for statement in statements(sql):
                    self.conn.execute(statement)
                self.conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, now))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            disk.roll_back_open(self.conn)
            raise
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error:
            disk.roll_back_open(self.conn)
            raise

    # -- meta ----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- folders and files ----------------------------------------------------------

    def dirs(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT path, mtime_ns FROM dirs").fetchall())

    def dir_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM dirs").fetchone()[0])

    def child_dirs(self, parent: str) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT path FROM dirs WHERE parent=?", (parent,))]

    def set_dir(self, path: str, mtime_ns: int) -> None:
        parent = None if path == "" else path.rpartition("/")[0]
        self.conn.execute(
            "INSERT OR REPLACE INTO dirs(path, parent, mtime_ns) VALUES (?, ?, ?)",
            (path, parent, mtime_ns),
        )

    def remove_dir_tree(self, path: str) -> int:
        """Forget a folder that is gone, with everything under it; returns files forgotten."""
        like = "%" if path == "" else path.replace("%", r"\%").replace("_", r"\_") + "/%"
        rows = self.conn.execute(
            "SELECT dir, name FROM files WHERE dir=? OR dir LIKE ? ESCAPE '\\'", (path, like)
        ).fetchall()
        for directory, name in rows:
            self.remove_file(join_path(directory, name))
        self.conn.execute("DELETE FROM dirs WHERE path=? OR path LIKE ? ESCAPE '\\'", (path, like))
        return len(rows)

    def files_in(self, directory: str) -> dict[str, tuple[int, int]]:
        rows = self.conn.execute(
            "SELECT name, mtime_ns, size FROM files WHERE dir=?", (directory,)
        ).fetchall()
        return {join_path(directory, name): (mtime, size) for name, mtime, size in rows}

    def file_stamp(self, path: str) -> tuple[int, int] | None:
        row = self.conn.execute(
            "SELECT mtime_ns, size FROM files WHERE dir=? AND name=?", split_path(path)
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def _known(self, path: str) -> tuple[str, str | None] | None:
        """(kind, note id) of the file at ``path`` as the index knows it."""
        row = self.conn.execute(
            "SELECT kind, note_id FROM files WHERE dir=? AND name=?", split_path(path)
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def remove_file(self, path: str) -> None:
        self._remove(path, self._known(path))

    def _remove(self, path: str, row: tuple[str, str | None] | None) -> None:
        """``remove_file``, given what ``_known`` says of ``path``."""
        self.touched.add(path)
        if row is None:
            return
        kind, note_id = row
        if kind in ("handoff", "memory") and note_id is not None:
            self.freed.add(note_id)
        if kind == "handoff":
            self.conn.execute("DELETE FROM handoffs WHERE id=? AND path=?", (note_id, path))
        elif kind == "memory":
            found = self.conn.execute(
                "SELECT rowid, state FROM memories WHERE id=? AND path=?", (note_id, path)
            ).fetchone()
            if found is not None:
                if found[1] == "live":  # only live memories are in the full-text index
                    self.conn.execute(FTS_DELETE, (found[0],))
                self.conn.execute("DELETE FROM memories WHERE rowid=?", (found[0],))
        elif kind == "brief":
            self.conn.execute("DELETE FROM briefs WHERE path=?", (path,))
        self.conn.execute("DELETE FROM files WHERE dir=? AND name=?", split_path(path))

    def freed_duplicates(self) -> list[str]:
        """Notes kept as broken copies of an id whose holder was removed since the last
        call: they may hold it now (a note renamed or moved by hand is first seen
        as a copy of itself, when its new path is read before its old one is
        forgotten), so the caller reads them again."""
        freed, self.freed = self.freed, set()
        out: list[str] = []
        for note_id in sorted(freed):
            like = note_id.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")
            rows = self.conn.execute(
                "SELECT dir, name FROM files WHERE kind='broken' AND problem LIKE ? ESCAPE '\\'",
                (f"duplicate id {like}: %",),
            ).fetchall()
            out.extend(join_path(d, n) for d, n in rows)
        return out

    def put(self, record: FileRecord) -> FileRecord:
        """Store what ``record`` says about its file, replacing what was known.

        A second note with an id already held by another file is stored as
        broken (a copied note), so the first keeps its place.
        """
        self.touched.add(record.path)
        known = self._known(record.path)
        h = record.handoff
        if (
            record.kind == "handoff"
            and h is not None
            and known == ("handoff", h.id)
            and self._restate(record)
        ):
            return record
        self._remove(record.path, known)
        if record.handoff is not None and record.kind == "handoff":
            cur = self.conn.execute(
                HANDOFF_INSERT.replace("INSERT", "INSERT OR IGNORE", 1),
                handoff_row(record.handoff),
            )
            if cur.rowcount == 0:
                record = self._duplicate(record, "handoffs")
        elif record.memory is not None and record.kind == "memory":
            m = record.memory
            cur = self.conn.execute(
                MEMORY_INSERT.replace("INSERT", "INSERT OR IGNORE", 1),
                (None, *memory_row(m)),
            )
            if cur.rowcount == 0:
                record = self._duplicate(record, "memories")
            elif m.status == "live":
                self.conn.execute(f"{FTS_ADD} WHERE rid=?", (cur.lastrowid,))
        elif record.kind == "brief" and record.namespace is not None:
            self.conn.execute(
                "INSERT OR REPLACE INTO briefs(namespace, path) VALUES (?, ?)",
                (record.namespace, record.path),
            )
        self.conn.execute(FILE_INSERT, file_row(record))
        return record

    def holds(self, record: FileRecord) -> bool:
        """Whether the index stores exactly what ``put(record)`` would store: nothing
        to write for it.

        A note another writer wrote and indexed already is held as it is on disk;
        so is one rewritten with the same content. Anything else (an edit, a note
        the index lacks or keeps as a copy of another) is not.
        """
        row = self.conn.execute(
            "SELECT dir, name, mtime_ns, size, kind, own_id, problem, filled FROM files "
            "WHERE dir=? AND name=?",
            split_path(record.path),
        ).fetchone()
        if row is None or tuple(row) != file_row(record):
            return False
        if record.kind == "handoff" and record.handoff is not None:
            return self._stored(HANDOFF_STORED, record.handoff.id) == handoff_row(record.handoff)
        if record.kind == "memory" and record.memory is not None:
            return self._stored(MEMORY_STORED, record.memory.id) == memory_row(record.memory)
        if record.kind == "brief":
            found = self.conn.execute(
                "SELECT 1 FROM briefs WHERE namespace=? AND path=?",
                (record.namespace, record.path),
            ).fetchone()
            return found is not None
        return True  # a broken or plain file: its files row is all the index keeps

    def _stored(self, query: str, note_id: str) -> tuple[Any, ...] | None:
        """The row ``query`` finds for ``note_id``, as a tuple (None if there is none)."""
        row = self.conn.execute(query, (note_id,)).fetchone()
        return None if row is None else tuple(row)

    def _restate(self, record: FileRecord) -> bool:
        """A handoff's note written again in place (read, ack, reopen, supersede, an
        edit), whose file the index knows as this handoff's: its rows updated where
        they are; False, changing nothing, if the handoff's row says otherwise.

        The same rows as removing and inserting them, for less work: only the
        indexes over a column that changes (the status, mostly) are touched, where
        a removal and an insertion would rewrite all six twice.
        """
        h = record.handoff
        assert h is not None
        cur = self.conn.execute(
            "UPDATE handoffs SET status=?, read_at=?, supersedes=?, superseded_by=?, "
            "summary=?, context=? WHERE id=? AND path=? AND namespace=? AND sender=? "
            "AND recipient=? AND created_at=?",
            (
                h.status,
                h.read_at,
                json.dumps(list(h.supersedes)),
                h.superseded_by,
                h.summary,
                pack(h.context),
                h.id,
                record.path,
                h.namespace,
                h.sender,
                h.recipient,
                h.created_at,
            ),
        )
        if cur.rowcount != 1:
            return False
        row = file_row(record)
        self.conn.execute(
            "UPDATE files SET mtime_ns=?, size=?, problem=?, filled=? WHERE dir=? AND name=?",
            (record.mtime_ns, record.size, record.problem, row[7], *split_path(record.path)),
        )
        return True

    def _duplicate(self, record: FileRecord, table: str) -> FileRecord:
        """A second note carrying an id another file already has: stored as broken."""
        row = self.conn.execute(
            f"SELECT path FROM {table} WHERE id=?", (record.note_id,)
        ).fetchone()
        return as_duplicate(record, row[0] if row else "another note")

    def dirs_under(self, folder: str) -> dict[str, int]:
        """Known folders at or below ``folder`` (a namespace's folders), with their mtimes."""
        like = folder.replace("%", r"\%").replace("_", r"\_") + "/%"
        rows = self.conn.execute(
            "SELECT path, mtime_ns FROM dirs WHERE path=? OR path LIKE ? ESCAPE '\\'",
            (folder, like),
        ).fetchall()
        return dict(rows)

    def dir_signature(self, directory: str) -> tuple[int, int]:
        """``dir_signatures`` for one folder, from the covering ``files_dir`` index."""
        row = self.conn.execute(
            "SELECT count(*), coalesce(sum(mtime_ns % 4294967291 + size * 65537), 0) "
            "FROM files WHERE dir=?",
            (directory,),
        ).fetchone()
        return int(row[0]), int(row[1])

    def dir_signatures(self) -> dict[str, tuple[int, int]]:
        """Per folder: (notes, a sum over their mtimes and sizes), to skip unchanged folders."""
        rows = self.conn.execute(
            "SELECT dir, count(*), sum(mtime_ns % 4294967291 + size * 65537) "
            "FROM files GROUP BY dir"
        ).fetchall()
        return {d: (n, int(sig)) for d, n, sig in rows}

    @contextmanager
    def bulk(self) -> Iterator[BulkLoader]:
        """Load many records into an empty index fast (inside the caller's transaction).

        The secondary indexes are dropped while loading and built once at the
        end, which is much cheaper than updating six B-trees per note.
        """
        secondary = self.conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL "
            "AND tbl_name IN ('handoffs', 'memories')"
        ).fetchall()
        for name, _sql in secondary:
            self.conn.execute(f"DROP INDEX {name}")
        self.touched.add("")  # every note, as far as a commit of the changes goes
        loader = BulkLoader(self)
        yield loader
        loader.flush()
        for _name, sql in secondary:
            self.conn.execute(sql)


class BulkLoader:
    """Buffers records and writes them with ``executemany``; only for an empty index."""

    BATCH = 2000

    def __init__(self, index: Index) -> None:
        self.index = index
        self.records: list[tuple[FileRecord, str | bytes | None]] = []
        self.seen: dict[tuple[str, str], str] = {}
        row = index.conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()
        self.next_rowid = int(row[0]) + 1

    def add(self, record: FileRecord, packed: str | bytes | None = None) -> None:
        """Buffer ``record``; ``packed`` is its text already ``pack``-ed (by a worker)."""
        note_id = record.note_id
        if note_id is not None:
            key = (record.kind, note_id)
            other = self.seen.get(key)
            if other is not None:
                record = as_duplicate(record, other)
            else:
                self.seen[key] = record.path
        self.records.append((record, packed))
        if len(self.records) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        conn = self.index.conn
        handoffs: list[tuple[Any, ...]] = []
        memories: list[tuple[Any, ...]] = []
        files: list[tuple[Any, ...]] = []
        briefs: list[tuple[str, str]] = []
        for r, packed in self.records:
            if r.kind == "handoff" and r.handoff is not None:
                handoffs.append(handoff_row(r.handoff, packed))
            elif r.kind == "memory" and r.memory is not None:
                rowid = self.next_rowid
                self.next_rowid += 1
                memories.append((rowid, *memory_row(r.memory, packed)))
            elif r.kind == "brief" and r.namespace is not None:
                briefs.append((r.namespace, r.path))
            files.append(file_row(r))
        conn.executemany(HANDOFF_INSERT, handoffs)
        conn.executemany(MEMORY_INSERT, memories)
        if memories:
            first, last = memories[0][0], memories[-1][0]
            retired = [m[0] for m in memories if m[10] != "live"]
            if not retired:
                conn.execute(f"{FTS_ADD} WHERE rid BETWEEN ? AND ?", (first, last))
            else:  # only live memories are in the full-text index
                conn.execute(
                    f"{FTS_ADD} WHERE rid BETWEEN ? AND ? "
                    f"AND rid NOT IN ({','.join('?' * len(retired))})",
                    (first, last, *retired),
                )
        conn.executemany("INSERT OR REPLACE INTO briefs(namespace, path) VALUES (?, ?)", briefs)
        conn.executemany(FILE_INSERT, files)
        self.records = []
