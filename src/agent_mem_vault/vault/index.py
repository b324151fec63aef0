"""The derived SQLite index in ``.agent-mem-vault/index.sqlite3``.

Markdown notes are the truth; this index only makes reads fast. It remembers,
for every note file, the size and mtime it was read at, and for every folder
its mtime, so that a rescan touches only what changed (see ``scan.py``). It
can be deleted at any time: the next call rebuilds it.

Schema changes are named migrations, applied in order and recorded in the
``migrations`` table. An index written by a newer version (a migration name
this code does not know) is rebuilt rather than trusted.

All index writes happen while the caller holds the vault lock, so SQLite
never sees two writers; readers use WAL and never block.
"""

from __future__ import annotations

import json
import re
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..core import disk
from .models import BrokenNote, Handoff, Memory, SkippedNote
from .records import MAX_NOTE_BYTES, FileRecord
from .snippets import snippet

__all__ = ["MIGRATIONS", "BulkLoader", "Index", "IndexDamaged", "is_damage", "pack"]

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0003_smaller",
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE dirs(
            path TEXT PRIMARY KEY, parent TEXT, mtime_ns INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX dirs_parent ON dirs(parent);
        CREATE TABLE files(
            dir TEXT NOT NULL, name TEXT NOT NULL, mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL, kind TEXT NOT NULL, own_id TEXT, problem TEXT,
            note_id TEXT GENERATED ALWAYS AS (CASE WHEN kind IN ('handoff', 'memory')
                THEN coalesce(own_id, substr(name, 1, length(name) - 3)) END) VIRTUAL,
            PRIMARY KEY (dir, name)
        ) WITHOUT ROWID;
        CREATE INDEX files_broken ON files(kind) WHERE kind = 'broken';
        CREATE TABLE handoffs(
            id TEXT PRIMARY KEY, namespace TEXT NOT NULL, sender TEXT NOT NULL,
            recipient TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL,
            read_at TEXT, supersedes TEXT NOT NULL, superseded_by TEXT,
            summary TEXT NOT NULL, context BLOB NOT NULL, own_path TEXT,
            path TEXT GENERATED ALWAYS AS
                (coalesce(own_path, namespace || '/handoffs/' || id || '.md')) VIRTUAL
        );
        CREATE INDEX handoffs_queue ON handoffs(namespace, recipient, status, created_at, id);
        CREATE INDEX handoffs_ns_status ON handoffs(namespace, status, created_at, id);
        CREATE INDEX handoffs_ns ON handoffs(namespace, created_at, id);
        CREATE INDEX handoffs_recipient ON handoffs(recipient, status, created_at, id);
        CREATE INDEX handoffs_sender ON handoffs(sender, created_at, id);
        CREATE INDEX handoffs_status ON handoffs(status, created_at, id);
        CREATE TABLE memories(
            rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, namespace TEXT NOT NULL,
            title TEXT NOT NULL, kind TEXT NOT NULL, tags TEXT NOT NULL, agent TEXT,
            created_at TEXT NOT NULL, own_path TEXT, body BLOB NOT NULL,
            path TEXT GENERATED ALWAYS AS
                (coalesce(own_path, namespace || '/memories/' || id || '.md')) VIRTUAL
        );
        CREATE INDEX memories_ns_kind ON memories(namespace, kind, created_at);
        CREATE VIEW memories_text AS SELECT
            rowid AS rid, title, amv_text(body) AS content,
            (SELECT group_concat(value, ' ') FROM json_each(memories.tags)) AS tags
            FROM memories;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            title, content, tags, content = 'memories_text', content_rowid = 'rid',
            tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE TABLE briefs(namespace TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
        """,
    ),
    (
        "0004_hand_notes",
        # Notes written by hand (what was filled in from their files) and the life of a
        # memory (its versions, forgotten). Notes the old rules ignored or refused are
        # read again: their rows go, and every folder is looked at once more.
        """
        ALTER TABLE files ADD COLUMN filled TEXT;
        ALTER TABLE memories ADD COLUMN state TEXT NOT NULL DEFAULT 'live';
        ALTER TABLE memories ADD COLUMN supersedes TEXT;
        ALTER TABLE memories ADD COLUMN superseded_by TEXT;
        ALTER TABLE memories ADD COLUMN forgotten_at TEXT;
        CREATE INDEX memories_list ON memories(namespace, state, created_at, id);
        CREATE INDEX memories_time ON memories(state, created_at, id);
        DELETE FROM files WHERE kind IN ('other', 'broken');
        UPDATE dirs SET mtime_ns = -1;
        """,
    ),
    (
        "0005_skipped_notes",
        # Files an older index read whole that are now skipped (empty, or over the
        # size limit) are marked changed, with their folders: the next call that
        # checks those folders reads them again (``records.read_record``).
        f"""
        UPDATE dirs SET mtime_ns = -1 WHERE path IN (SELECT dir FROM files
            WHERE (size > {MAX_NOTE_BYTES} OR size = 0) AND kind != 'skipped');
        UPDATE files SET mtime_ns = -1
            WHERE (size > {MAX_NOTE_BYTES} OR size = 0) AND kind != 'skipped';
        """,
    ),
]
"""The schema, as named migrations. Kept under 1 KB per note at 100,000 notes
(docs/benchmarks.md, "What the vault costs on disk"): a memory's text is stored once,
compressed, in ``memories.body``, and the full-text index reads it from there
(an external-content FTS5 table over the ``memories_text`` view) instead of
keeping its own copy; a handoff's context is compressed too; files are keyed
by (folder, name), so one B-tree serves lookups and per-folder checks.

What can be worked out is not stored: a note's path and id are stored only
when they differ from the usual ``<namespace>/<kind>/<id>.md`` (``own_path``,
``own_id``) and read through virtual generated columns (``path``,
``note_id``), which cost no space. Pages are 8 KiB (``Index``), which leaves
less of each page unused than 4 KiB with rows of a few hundred bytes.

Only live memories are in the full-text index (``memories_fts``): a memory
superseded by a newer version or forgotten is out of every search with no
filter to pay for, and back in when it is live again (``Index.put``)."""

RETIRED = frozenset({"0001_initial", "0002_compact"})
"""Migrations of layouts this code no longer reads: such an index is rebuilt."""


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


def _unpack(value: str | bytes | None) -> str:
    """What ``pack`` stored, as text again (also the SQL function ``amv_text``)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return zlib.decompress(value).decode("utf-8")
    return value


def _split(path: str) -> tuple[str, str]:
    """A note's path as the (folder, name) key of the ``files`` table."""
    head, _, name = path.rpartition("/")
    return head, name


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _own_path(path: str, namespace: str, kind: str, id: str) -> str | None:
    """``path`` if it is not the usual ``<namespace>/<kind>/<id>.md`` (the
    ``own_path`` column), else ``None``: the generated ``path`` column gives it."""
    return None if path == f"{namespace}/{kind}/{id}.md" else path


_PHRASE = re.compile(r'"((?:[^"]|"")*)"')
"""A quoted phrase of an FTS5 match expression (the words a search highlights)."""

_HANDOFF_COLUMNS = (
    "id, namespace, sender, recipient, status, created_at, read_at, supersedes, "
    "superseded_by, summary, context, path"
)
_HANDOFF_INSERT = (
    "INSERT INTO handoffs(id, namespace, sender, recipient, status, created_at, read_at, "
    "supersedes, superseded_by, summary, context, own_path) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)


def _handoff_filter(
    namespace: str | None, status: str, agent: str | None, sender: str | None
) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (with a leading space, or empty) of a handoff listing, and its args.

    ``agent`` is matched exactly, and handoffs to any agent (``recipient`` empty: a
    note written by hand with no ``to``) are for every agent too."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("namespace", namespace), ("recipient", agent), ("sender", sender)):
        if value is not None:
            where.append("recipient IN (?, '')" if column == "recipient" else f"{column}=?")
            args.append(value)
    if status != "all":
        where.append("status=?")
        args.append(status)
    return (" WHERE " + " AND ".join(where) if where else ""), args


def _memory_filter(
    namespace: str | None, status: str, kind: str | None, tags: Sequence[str]
) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (with a leading space, or empty) of a memory listing over
    ``memories m``, and its args."""
    where: list[str] = []
    args: list[Any] = []
    if namespace is not None:
        where.append("m.namespace=?")
        args.append(namespace)
    if status != "all":
        where.append("m.state=?")
        args.append(status)
    if kind is not None:
        where.append("m.kind=?")
        args.append(kind)
    for tag in tags:
        where.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)")
        args.append(tag)
    return (" WHERE " + " AND ".join(where) if where else ""), args


def _search_filter(
    match: str,
    namespace: str | None,
    kind: str | None = None,
    tags: Sequence[str] = (),
) -> tuple[str, list[Any]]:
    """The ``FROM … WHERE`` of a search: the match, the namespace with those below
    it, and the ``kind`` and ``tags`` filters.

    The matches drive the query (``CROSS JOIN`` keeps them outermost); each is
    then tested on its ``memories`` row, found by rowid. That costs one lookup
    per match, where a list of the namespace's rowids would cost one per memory
    of the namespace, and FTS5 never fetches a match's text to test it.
    """
    conditions: list[str] = []
    args: list[Any] = []
    if namespace is not None:
        # The range is the namespace's children ("ns/..."): '/' + 1 is '0'.
        conditions.append("(m.namespace = ? OR (m.namespace >= ? AND m.namespace < ?))")
        args.extend([namespace, namespace + "/", namespace + "0"])
    if kind is not None:
        conditions.append("m.kind = ?")
        args.append(kind)
    for tag in tags:
        conditions.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)")
        args.append(tag)
    if not conditions:
        return "memories_fts WHERE memories_fts MATCH ?", [match]
    return (
        "memories_fts CROSS JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {' AND '.join(conditions)}",
        [match, *args],
    )


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


def _handoff_row(h: Handoff, packed: str | bytes | None = None) -> tuple[Any, ...]:
    """A ``handoffs`` row, in ``_HANDOFF_INSERT`` order."""
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
        _own_path(h.path, h.namespace, "handoffs", h.id),
    )


def _memory_row(m: Memory, packed: str | bytes | None = None) -> tuple[Any, ...]:
    """A ``memories`` row without its rowid, in ``_MEMORY_INSERT`` order."""
    tags = json.dumps(list(m.tags))
    return (
        m.id,
        m.namespace,
        m.title,
        m.kind,
        tags,
        m.agent,
        m.created_at,
        _own_path(m.path, m.namespace, "memories", m.id),
        pack(m.content) if packed is None else packed,
        m.status,
        json.dumps(list(m.supersedes)) if m.supersedes else None,
        m.superseded_by,
        m.forgotten_at,
    )


_HANDOFF_STORED = (
    "SELECT id, namespace, sender, recipient, status, created_at, read_at, supersedes, "
    "superseded_by, summary, context, own_path FROM handoffs WHERE id=?"
)
"""A handoff's row as stored, in ``_handoff_row`` order."""
_MEMORY_STORED = (
    "SELECT id, namespace, title, kind, tags, agent, created_at, own_path, body, state, "
    "supersedes, superseded_by, forgotten_at FROM memories WHERE id=?"
)
"""A memory's row as stored, in ``_memory_row`` order."""

_MEMORY_INSERT = (
    "INSERT INTO memories(rowid, id, namespace, title, kind, tags, agent, created_at, own_path, "
    "body, state, supersedes, superseded_by, forgotten_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_MEMORY_COLUMNS = (
    "m.id, m.namespace, m.title, amv_text(m.body), m.kind, m.created_at, m.tags, m.agent, "
    "m.path, m.supersedes, m.superseded_by, m.forgotten_at"
)
"""A memory as ``_memory`` reads it, from ``memories m``."""
_FTS_ADD = (
    "INSERT INTO memories_fts(rowid, title, content, tags) "
    "SELECT rid, title, content, tags FROM memories_text"
)
"""Index memories' text from the rows just stored (the same values a delete gives back)."""
_FTS_DELETE = (
    "INSERT INTO memories_fts(memories_fts, rowid, title, content, tags) "
    "SELECT 'delete', rid, title, content, tags FROM memories_text WHERE rid=?"
)
"""Un-index one memory (external content: FTS5 is told the text it indexed)."""


def _file_row(r: FileRecord) -> tuple[Any, ...]:
    """A ``files`` row, in ``_FILE_INSERT`` order."""
    directory, name = _split(r.path)
    own_id = r.note_id if r.kind in ("handoff", "memory") and name != f"{r.note_id}.md" else None
    filled = ",".join(r.filled) if r.filled and r.kind != "broken" else None
    return (directory, name, r.mtime_ns, r.size, r.kind, own_id, r.problem, filled)


_FILE_INSERT = (
    "INSERT INTO files(dir, name, mtime_ns, size, kind, own_id, problem, filled) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _as_duplicate(record: FileRecord, other: str) -> FileRecord:
    """A copied note (its id is ``other``'s): kept as broken so ``other`` keeps its place."""
    return FileRecord(
        record.path,
        record.mtime_ns,
        record.size,
        "broken",
        problem=f"duplicate id {record.note_id}: {other} has the same id",
    )


def _handoff(row: Sequence[Any]) -> Handoff:
    return Handoff(
        id=row[0],
        namespace=row[1],
        sender=row[2],
        recipient=row[3],
        status="read" if row[4] == "read" else "pending",
        created_at=row[5],
        read_at=row[6],
        supersedes=tuple(json.loads(row[7])),
        superseded_by=row[8],
        summary=row[9],
        context=_unpack(row[10]),
        path=row[11],
    )


class Index:
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
        (``base.flush_touched``)."""
        self.conn = sqlite3.connect(
            ":memory:" if in_memory else db_path,
            isolation_level=None,
            check_same_thread=False,
            timeout=10.0,
        )
        try:
            self.conn.create_function("amv_text", 1, _unpack, deterministic=True)
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
                for statement in sql.split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                self.conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, now))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            # SQLite may have rolled back already (a full disk, an I/O error): the
            # error that ended the body is the one to report, not "no transaction".
            if self.conn.in_transaction:
                with suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error:
            if self.conn.in_transaction:  # a failed COMMIT leaves it open
                with suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
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
            self.remove_file(_join(directory, name))
        self.conn.execute("DELETE FROM dirs WHERE path=? OR path LIKE ? ESCAPE '\\'", (path, like))
        return len(rows)

    def files_in(self, directory: str) -> dict[str, tuple[int, int]]:
        rows = self.conn.execute(
            "SELECT name, mtime_ns, size FROM files WHERE dir=?", (directory,)
        ).fetchall()
        return {_join(directory, name): (mtime, size) for name, mtime, size in rows}

    def file_stamp(self, path: str) -> tuple[int, int] | None:
        row = self.conn.execute(
            "SELECT mtime_ns, size FROM files WHERE dir=? AND name=?", _split(path)
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def _known(self, path: str) -> tuple[str, str | None] | None:
        """(kind, note id) of the file at ``path`` as the index knows it."""
        row = self.conn.execute(
            "SELECT kind, note_id FROM files WHERE dir=? AND name=?", _split(path)
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
                    self.conn.execute(_FTS_DELETE, (found[0],))
                self.conn.execute("DELETE FROM memories WHERE rowid=?", (found[0],))
        elif kind == "brief":
            self.conn.execute("DELETE FROM briefs WHERE path=?", (path,))
        self.conn.execute("DELETE FROM files WHERE dir=? AND name=?", _split(path))

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
            out.extend(_join(d, n) for d, n in rows)
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
                _HANDOFF_INSERT.replace("INSERT", "INSERT OR IGNORE", 1),
                _handoff_row(record.handoff),
            )
            if cur.rowcount == 0:
                record = self._duplicate(record, "handoffs")
        elif record.memory is not None and record.kind == "memory":
            m = record.memory
            cur = self.conn.execute(
                _MEMORY_INSERT.replace("INSERT", "INSERT OR IGNORE", 1),
                (None, *_memory_row(m)),
            )
            if cur.rowcount == 0:
                record = self._duplicate(record, "memories")
            elif m.status == "live":
                self.conn.execute(f"{_FTS_ADD} WHERE rid=?", (cur.lastrowid,))
        elif record.kind == "brief" and record.namespace is not None:
            self.conn.execute(
                "INSERT OR REPLACE INTO briefs(namespace, path) VALUES (?, ?)",
                (record.namespace, record.path),
            )
        self.conn.execute(_FILE_INSERT, _file_row(record))
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
            _split(record.path),
        ).fetchone()
        if row is None or tuple(row) != _file_row(record):
            return False
        if record.kind == "handoff" and record.handoff is not None:
            return self._stored(_HANDOFF_STORED, record.handoff.id) == _handoff_row(record.handoff)
        if record.kind == "memory" and record.memory is not None:
            return self._stored(_MEMORY_STORED, record.memory.id) == _memory_row(record.memory)
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
        row = _file_row(record)
        self.conn.execute(
            "UPDATE files SET mtime_ns=?, size=?, problem=?, filled=? WHERE dir=? AND name=?",
            (record.mtime_ns, record.size, record.problem, row[7], *_split(record.path)),
        )
        return True

    def _duplicate(self, record: FileRecord, table: str) -> FileRecord:
        """A second note carrying an id another file already has: stored as broken."""
        row = self.conn.execute(
            f"SELECT path FROM {table} WHERE id=?", (record.note_id,)
        ).fetchone()
        return _as_duplicate(record, row[0] if row else "another note")

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

    # -- queries ----------------------------------------------------------------------

    def handoff(self, id: str) -> Handoff | None:
        row = self.conn.execute(
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE id=?", (id,)
        ).fetchone()
        return None if row is None else _handoff(row)

    def newest_pending(
        self, namespace: str, agent: str, skip: Sequence[str] = ()
    ) -> Handoff | None:
        """The newest pending handoff to ``agent``, or to any agent (``to`` left out of
        a note written by hand): one lookup in the queue's index for each."""
        found = [self._newest_to(namespace, who, skip) for who in (agent, "")]
        rows = [row for row in found if row is not None]
        if not rows:
            return None
        return _handoff(max(rows, key=lambda r: (r[5], r[0])))

    def _newest_to(self, namespace: str, recipient: str, skip: Sequence[str]) -> Any:
        sql = (
            f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE namespace=? AND recipient=? "
            "AND status='pending'"
        )
        args: list[Any] = [namespace, recipient]
        if skip:
            sql += f" AND id NOT IN ({','.join('?' * len(skip))})"
            args.extend(skip)
        sql += " ORDER BY created_at DESC, id DESC LIMIT 1"
        return self.conn.execute(sql, args).fetchone()

    def list_handoffs(
        self,
        *,
        namespace: str | None,
        status: str,
        agent: str | None,
        sender: str | None,
        limit: int,
        offset: int = 0,
    ) -> list[Handoff]:
        order = " ORDER BY created_at DESC, id DESC"
        if agent is None:
            where, args = _handoff_filter(namespace, status, agent, sender)
            sql = f"SELECT {_HANDOFF_COLUMNS} FROM handoffs{where}{order} LIMIT ? OFFSET ?"
            return [_handoff(row) for row in self.conn.execute(sql, [*args, limit, offset])]
        # To the agent, or to any agent: each read in order from the queue's index (as
        # far as the page reaches), then the two merged, never a sort of all of them.
        parts: list[str] = []
        args = []
        for who in (agent, ""):
            where, part_args = _handoff_filter(namespace, status, None, sender)
            where += (" AND " if where else " WHERE ") + "recipient=?"
            parts.append(
                f"SELECT * FROM (SELECT {_HANDOFF_COLUMNS} FROM handoffs{where}{order} LIMIT ?)"
            )
            args.extend([*part_args, who, limit + offset])
        sql = f"SELECT * FROM ({' UNION ALL '.join(parts)}){order} LIMIT ? OFFSET ?"
        return [_handoff(row) for row in self.conn.execute(sql, [*args, limit, offset])]

    def count_listed(
        self, *, namespace: str | None, status: str, agent: str | None, sender: str | None
    ) -> int:
        """How many handoffs ``list_handoffs`` with these filters has in all."""
        where, args = _handoff_filter(namespace, status, agent, sender)
        return int(self.conn.execute(f"SELECT count(*) FROM handoffs{where}", args).fetchone()[0])

    def count_handoffs(self, status: str | None = None) -> int:
        if status is None:
            return int(self.conn.execute("SELECT count(*) FROM handoffs").fetchone()[0])
        return int(
            self.conn.execute("SELECT count(*) FROM handoffs WHERE status=?", (status,)).fetchone()[
                0
            ]
        )

    def count_memories(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])

    def recent_memories(self, namespace: str, kind: str, limit: int) -> list[Memory]:
        """The newest live memories of ``kind`` in ``namespace`` (the brief's decisions)."""
        rows = self.conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.namespace=? AND m.kind=? "
            "AND m.state='live' ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (namespace, kind, limit),
        ).fetchall()
        return [_memory(r) for r in rows]

    def memory(self, id: str) -> Memory | None:
        """One memory by id, whatever its state."""
        row = self.conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.id=?", (id,)
        ).fetchone()
        return None if row is None else _memory(row)

    def list_memories(
        self,
        *,
        namespace: str | None,
        status: str,
        kind: str | None,
        tags: Sequence[str],
        limit: int,
        offset: int = 0,
    ) -> tuple[int, list[Memory]]:
        """(how many match in all, the page from ``offset``), newest first: by
        ``namespace`` (exactly), ``status`` (live, superseded, forgotten or all),
        ``kind`` and ``tags`` (all of them). The index ``memories_list`` serves a
        namespace's live memories in order, ``memories_time`` the whole vault's."""
        where, args = _memory_filter(namespace, status, kind, tags)
        rows = self.conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m{where} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        if (namespace, status, kind, tags) == (None, "live", None, ()):
            # Every memory less the few retired: SQLite counts a whole table from its
            # pages (0.2 ms at 100,000), where counting the live ones walks an index.
            retired = self.conn.execute(
                "SELECT count(*) FROM memories WHERE state IN ('superseded', 'forgotten')"
            ).fetchone()[0]
            return self.count_memories() - int(retired), [_memory(r) for r in rows]
        total = self.conn.execute(f"SELECT count(*) FROM memories m{where}", args).fetchone()[0]
        return int(total), [_memory(r) for r in rows]

    def note_kind(self, id: str) -> str | None:
        """``handoff`` or ``memory``: which the note with this id is; None if neither."""
        if self.conn.execute("SELECT 1 FROM handoffs WHERE id=?", (id,)).fetchone():
            return "handoff"
        if self.conn.execute("SELECT 1 FROM memories WHERE id=?", (id,)).fetchone():
            return "memory"
        return None

    def filled_notes(self) -> list[tuple[str, tuple[str, ...]]]:
        """Notes written by hand, with the properties taken from their files."""
        rows = self.conn.execute(
            "SELECT dir, name, filled FROM files WHERE filled IS NOT NULL ORDER BY dir, name"
        ).fetchall()
        return [(_join(d, n), tuple(f.split(","))) for d, n, f in rows]

    def search(
        self,
        match: str,
        namespace: str | None,
        limit: int,
        offset: int = 0,
        *,
        kind: str | None = None,
        tags: Sequence[str] = (),
    ) -> list[tuple[Memory, float, str]]:
        """The memories ranked ``offset`` to ``offset + limit`` (see ``search_page``)."""
        return self.search_page(match, namespace, limit, offset, kind=kind, tags=tags)[1]

    def search_page(
        self,
        match: str,
        namespace: str | None,
        limit: int,
        offset: int = 0,
        *,
        kind: str | None = None,
        tags: Sequence[str] = (),
    ) -> tuple[int, list[tuple[Memory, float, str]]]:
        """(matches in all, the memories ranked ``offset`` to ``offset + limit``) for
        an FTS5 ``match``.

        Every match is ranked by BM25 (title weighs 5, tags 2, content 1) inside
        FTS5; only the rows of the page are then joined and given a snippet.
        This is the lexical ranking a hybrid search fuses with others. ``kind``
        and ``tags`` filter before ranking, like the namespace.
        """
        where, args = _search_filter(match, namespace, kind, tags)
        # The total comes from the same pass that ranks (a window over every
        # match), so matches are found and tested once per search, not twice.
        top = self.conn.execute(
            "SELECT id, score, count(*) OVER () FROM (SELECT memories_fts.rowid AS id, "
            f"bm25(memories_fts, 5.0, 1.0, 2.0) AS score FROM {where}) "
            "ORDER BY score LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        if not top:
            total = self.count_matches(match, namespace, kind=kind, tags=tags) if offset else 0
            return total, []
        rowids = [r[0] for r in top]
        # The excerpt is cut here (``snippets.py``), not by FTS5's snippet(), whose cost
        # grows with the square of the matches in a note: one pasted log could make a
        # search take minutes.
        rows = self.conn.execute(
            "SELECT rowid, id, namespace, title, amv_text(body), kind, created_at, tags, "
            "agent, path, supersedes, superseded_by, forgotten_at "
            f"FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids,
        ).fetchall()
        by_rowid = {r[0]: r for r in rows}
        words = [phrase.replace('""', '"') for phrase in _PHRASE.findall(match)]
        out = []
        for rowid, score, _total in top:
            row = by_rowid.get(rowid)
            if row is not None:
                memory = _memory(row[1:13])
                excerpt = snippet(words, memory.content, memory.title, " ".join(memory.tags))
                out.append((memory, -float(score), excerpt))
        return int(top[0][2]), out

    def count_matches(
        self,
        match: str,
        namespace: str | None,
        *,
        kind: str | None = None,
        tags: Sequence[str] = (),
    ) -> int:
        """How many memories ``search`` ranks for ``match`` (its ``total``)."""
        where, args = _search_filter(match, namespace, kind, tags)
        return int(self.conn.execute(f"SELECT count(*) FROM {where}", args).fetchone()[0])

    def matching_rowids(self, match: str, rowids: Sequence[int]) -> set[int]:
        """Which of these memories (by index rowid) an FTS5 ``match`` finds."""
        if not rowids:
            return set()
        found = self.conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
            f"AND rowid IN ({','.join('?' * len(rowids))})",
            [match, *rowids],
        ).fetchall()
        return {int(r[0]) for r in found}

    def brief_path(self, namespace: str) -> str | None:
        row = self.conn.execute(
            "SELECT path FROM briefs WHERE namespace=?", (namespace,)
        ).fetchone()
        return None if row is None else str(row[0])

    def broken(self) -> list[BrokenNote]:
        rows = self.conn.execute(
            "SELECT dir, name, problem FROM files WHERE kind='broken' ORDER BY dir, name"
        ).fetchall()
        return [
            BrokenNote(path=_join(d, name), problem=problem or "unreadable")
            for d, name, problem in rows
        ]

    def skipped(self) -> list[SkippedNote]:
        """Files left out on purpose (empty, or over ``records.MAX_NOTE_BYTES``)."""
        rows = self.conn.execute(
            "SELECT dir, name, size, problem FROM files WHERE kind='skipped' ORDER BY dir, name"
        ).fetchall()
        return [
            SkippedNote(path=_join(d, name), reason=problem or "skipped", size=int(size))
            for d, name, size, problem in rows
        ]

    def delivered_twice(self, namespace: str | None = None) -> list[tuple[str, str]]:
        """(path, what happened) of each handoff whose note records a second delivery
        (``records.twice_delivered``), in one namespace or all."""
        sql = "SELECT dir, name, problem FROM files WHERE kind='handoff' AND problem IS NOT NULL"
        args: tuple[str, ...] = ()
        if namespace is not None:
            sql += " AND dir=?"
            args = (f"{namespace}/handoffs",)
        rows = self.conn.execute(sql + " ORDER BY dir, name", args).fetchall()
        return [(_join(d, n), str(p)) for d, n, p in rows]

    def handoffs_with_supersedes(self) -> list[tuple[str, str]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute("SELECT id, supersedes FROM handoffs WHERE supersedes!='[]'")
        ]


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
                record = _as_duplicate(record, other)
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
                handoffs.append(_handoff_row(r.handoff, packed))
            elif r.kind == "memory" and r.memory is not None:
                rowid = self.next_rowid
                self.next_rowid += 1
                memories.append((rowid, *_memory_row(r.memory, packed)))
            elif r.kind == "brief" and r.namespace is not None:
                briefs.append((r.namespace, r.path))
            files.append(_file_row(r))
        conn.executemany(_HANDOFF_INSERT, handoffs)
        conn.executemany(_MEMORY_INSERT, memories)
        if memories:
            first, last = memories[0][0], memories[-1][0]
            retired = [m[0] for m in memories if m[10] != "live"]
            if not retired:
                conn.execute(f"{_FTS_ADD} WHERE rid BETWEEN ? AND ?", (first, last))
            else:  # only live memories are in the full-text index
                conn.execute(
                    f"{_FTS_ADD} WHERE rid BETWEEN ? AND ? "
                    f"AND rid NOT IN ({','.join('?' * len(retired))})",
                    (first, last, *retired),
                )
        conn.executemany("INSERT OR REPLACE INTO briefs(namespace, path) VALUES (?, ?)", briefs)
        conn.executemany(_FILE_INSERT, files)
        self.records = []


def _memory(row: Sequence[Any]) -> Memory:
    """A memory from a row in ``_MEMORY_COLUMNS`` order."""
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
