"""The index's answers: handoffs, memories and searches read back from their rows.

``IndexQueries`` is the reading half of ``db.Index`` (which keeps the rows as the
notes change): every query the operations ask, and how a row becomes a
``Handoff`` or a ``Memory`` again.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..format.models import BrokenNote, Handoff, Memory, SkippedNote
from ..format.snippets import snippet
from .filters import HandoffFilter, MemoryFilter, search_from
from .rows import MEMORY_COLUMNS, join_path, memory_from_row, unpack

__all__ = ["IndexQueries"]

_T = TypeVar("_T")


_PHRASE = re.compile(r'"((?:[^"]|"")*)"')
"""A quoted phrase of an FTS5 match expression (the words a search highlights)."""

_HANDOFF_COLUMNS = (
    "id, namespace, sender, recipient, status, created_at, read_at, supersedes, "
    "superseded_by, summary, context, path"
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
        context=unpack(row[10]),
        path=row[11],
    )


class IndexQueries:
    """What the index answers (mixed into ``db.Index``, which owns ``conn``)."""

    conn: sqlite3.Connection

    def _one(self, sql: str, id: str, read: Callable[[Sequence[Any]], _T]) -> _T | None:
        """The note the query of one ``id`` finds, as ``read`` makes it of its row; None
        if there is none."""
        row = self.conn.execute(sql, (id,)).fetchone()
        return None if row is None else read(row)

    def handoff(self, id: str) -> Handoff | None:
        return self._one(f"SELECT {_HANDOFF_COLUMNS} FROM handoffs WHERE id=?", id, _handoff)

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

    def handoff_namespaces(self) -> list[str]:
        """The namespaces that have handoffs."""
        rows = self.conn.execute("SELECT DISTINCT namespace FROM handoffs")
        return sorted(r[0] for r in rows)

    def pending_namespaces(self) -> list[str]:
        """The namespaces that have pending handoffs."""
        rows = self.conn.execute("SELECT DISTINCT namespace FROM handoffs WHERE status='pending'")
        return sorted(r[0] for r in rows)

    def pending_paths(self, namespace: str, agent: str | None = None) -> dict[str, str]:
        """Every pending handoff of ``namespace`` (to ``agent`` or to any agent; None:
        to anyone): id → path."""
        sql = "SELECT id, path FROM handoffs WHERE namespace=? AND status='pending'"
        args: list[Any] = [namespace]
        if agent is not None:
            sql += " AND recipient IN (?, '')"
            args.append(agent)
        return dict(self.conn.execute(sql, args).fetchall())

    def newest_pending_ids(self, namespace: str, agent: str, limit: int) -> list[str]:
        """The ids of the ``limit`` newest pending handoffs to ``agent`` or to any agent,
        newest first (what a busy team's reader chooses among)."""
        rows: list[Any] = []
        for who in (agent, ""):
            rows.extend(
                self.conn.execute(
                    "SELECT created_at, id FROM handoffs WHERE namespace=? AND recipient=? "
                    "AND status='pending' ORDER BY created_at DESC, id DESC LIMIT ?",
                    (namespace, who, limit),
                )
            )
        return [row[1] for row in sorted(rows, reverse=True)[:limit]]

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

    def list_handoffs(self, wanted: HandoffFilter, limit: int, offset: int = 0) -> list[Handoff]:
        """The handoffs ``wanted`` from ``offset``, at most ``limit``, newest first."""
        order = " ORDER BY created_at DESC, id DESC"
        if wanted.agent is None:
            where, args = wanted.where()
            sql = f"SELECT {_HANDOFF_COLUMNS} FROM handoffs{where}{order} LIMIT ? OFFSET ?"
            return [_handoff(row) for row in self.conn.execute(sql, [*args, limit, offset])]
        # To the agent, or to any agent: each read in order from the queue's index (as
        # far as the page reaches), then the two merged, never a sort of all of them.
        parts: list[str] = []
        args = []
        for who in (wanted.agent, ""):
            where, part_args = replace(wanted, agent=None).where()
            where += (" AND " if where else " WHERE ") + "recipient=?"
            parts.append(
                f"SELECT * FROM (SELECT {_HANDOFF_COLUMNS} FROM handoffs{where}{order} LIMIT ?)"
            )
            args.extend([*part_args, who, limit + offset])
        sql = f"SELECT * FROM ({' UNION ALL '.join(parts)}){order} LIMIT ? OFFSET ?"
        return [_handoff(row) for row in self.conn.execute(sql, [*args, limit, offset])]

    def count_listed(self, wanted: HandoffFilter) -> int:
        """How many handoffs ``list_handoffs`` of ``wanted`` has in all."""
        where, args = wanted.where()
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
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.namespace=? AND m.kind=? "
            "AND m.state='live' ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
            (namespace, kind, limit),
        ).fetchall()
        return [memory_from_row(r) for r in rows]

    def memory(self, id: str) -> Memory | None:
        """One memory by id, whatever its state."""
        return self._one(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id=?", id, memory_from_row
        )

    def list_memories(
        self, wanted: MemoryFilter, limit: int, offset: int = 0
    ) -> tuple[int, list[Memory]]:
        """(how many match in all, the page from ``offset``), newest first, of the memories
        ``wanted``. The index ``memories_list`` serves a namespace's live memories in
        order, ``memories_time`` the whole vault's."""
        where, args = wanted.where()
        rows = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories m{where} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        if wanted == MemoryFilter(None, "live"):
            # Every memory less the few retired: SQLite counts a whole table from its
            # pages (0.2 ms at 100,000), where counting the live ones walks an index.
            retired = self.conn.execute(
                "SELECT count(*) FROM memories WHERE state IN ('superseded', 'forgotten')"
            ).fetchone()[0]
            return self.count_memories() - int(retired), [memory_from_row(r) for r in rows]
        total = self.conn.execute(f"SELECT count(*) FROM memories m{where}", args).fetchone()[0]
        return int(total), [memory_from_row(r) for r in rows]

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
        return [(join_path(d, n), tuple(f.split(","))) for d, n, f in rows]

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
        where, args = search_from(match, namespace, kind, tags)
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
                memory = memory_from_row(row[1:13])
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
        where, args = search_from(match, namespace, kind, tags)
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
            BrokenNote(path=join_path(d, name), problem=problem or "unreadable")
            for d, name, problem in rows
        ]

    def skipped(self) -> list[SkippedNote]:
        """Files left out on purpose (empty, or over ``records.MAX_NOTE_BYTES``)."""
        rows = self.conn.execute(
            "SELECT dir, name, size, problem FROM files WHERE kind='skipped' ORDER BY dir, name"
        ).fetchall()
        return [
            SkippedNote(path=join_path(d, name), reason=problem or "skipped", size=int(size))
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
        return [(join_path(d, n), str(p)) for d, n, p in rows]

    def handoffs_with_supersedes(self) -> list[tuple[str, str]]:
        return [
            (r[0], r[1])
            for r in self.conn.execute("SELECT id, supersedes FROM handoffs WHERE supersedes!='[]'")
        ]
