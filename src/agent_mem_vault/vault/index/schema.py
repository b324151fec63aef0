"""The index's schema, as named migrations, and how a migration's SQL is cut into statements.

A migration is applied inside the index's own transaction (``Index.migrate``),
statement by statement, so that a migration that fails leaves nothing of itself
behind. ``sqlite3``'s ``executescript`` would commit first, so the statements are
cut apart here instead, where SQLite itself says a statement ends
(``statements``): a ``;`` inside a string literal, a comment or a trigger's body
does not end one.
"""

from __future__ import annotations

import sqlite3

from ..folder.records import MAX_NOTE_BYTES

__all__ = ["MIGRATIONS", "RETIRED", "statements"]

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


def statements(script: str) -> list[str]:
    """The statements of ``script``, in order, each whole and ending with ``;``.

    >>> statements("INSERT INTO t VALUES ('a;b'); DELETE FROM t;")
    ["INSERT INTO t VALUES ('a;b');", 'DELETE FROM t;']
    """
    out: list[str] = []
    current = ""
    for piece in script.split(";")[:-1]:
        current += piece + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" \t\r\n;"):
                out.append(current.strip())
            current = ""
    rest = current + script.rsplit(";", 1)[-1]
    if rest.strip():
        out.append(rest.strip() + ";")  # a last statement written without its ";"
    return out
