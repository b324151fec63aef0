"""The notes of a route made from every machine's log, the same bytes everywhere.

In layout 2 (design/team-remote.md §4.2) each machine pushes its own log of
entries. An entry names, for each note it changes, the blob its writer had
(the base) and the blob it set. A reader folds every entry of a path in one
order, (lamport, machine, seq), from nothing: an entry made on the version it
meets is taken as it is; a removal meets a later change and the change stays;
anything else is merged by fields (``merge_notes``) with its base as the common
version. The order is the same on every machine and ``merge_notes`` is
symmetric, so the same entries give the same note, whatever order they came in.

The fold does not start from nothing each time. ``FoldStore`` keeps the entries
already applied, in a SQLite file beside the route's state. New entries of a
path that all sort after the ones stored are applied to the note as the
caller's ``fetched`` tree holds it. A late one (a machine back from offline,
with a lower Lamport) makes the path fold again from the start. The file is
disposable: lost, it is rebuilt by reading the logs again.

Texts are read only for merges, and in rounds: every path that needs a merge
asks for its texts in one call, so a fold of many paths calls git a few times,
not once per note.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..format.merge import merge_notes

__all__ = ["Change", "FoldStore", "Folded", "NoteTexts", "Tip"]

_VERSION = 1
"""The schema's version (``PRAGMA user_version``): a file of another is made again."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    machine TEXT NOT NULL, seq INTEGER NOT NULL, lamport INTEGER NOT NULL,
    "commit" TEXT NOT NULL, path TEXT NOT NULL, base TEXT, new TEXT,
    PRIMARY KEY (machine, seq, path)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_of_path ON entries (path, lamport, machine, seq);
CREATE TABLE IF NOT EXISTS tips (
    machine TEXT PRIMARY KEY, "commit" TEXT NOT NULL, seq INTEGER NOT NULL,
    lamport INTEGER NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Change:
    """One entry's change to one path."""

    lamport: int
    machine: str
    seq: int
    commit: str
    """The entry commit's id."""
    path: str
    base: str | None
    """The blob the writer had; None: it had no note there."""
    new: str | None
    """The blob it set; None: it removed the note."""

    @property
    def key(self) -> tuple[int, str, int]:
        """Where it stands in the fold: (lamport, machine, seq)."""
        return (self.lamport, self.machine, self.seq)


@dataclass(frozen=True, slots=True)
class Tip:
    """A machine's newest applied entry."""

    commit: str
    seq: int
    lamport: int


class NoteTexts(Protocol):
    """Where the fold reads and writes note texts (the route's git objects)."""

    def texts(self, blobs: Sequence[str]) -> dict[str, str]:
        """Blob id -> its text (utf-8), for every one of ``blobs``."""
        ...

    def write(self, text: str) -> str:
        """Store ``text``; its blob id."""
        ...


@dataclass(slots=True)
class Folded:
    """What a fold made, and what its merges set aside or found."""

    blobs: dict[str, str | None] = field(default_factory=dict)
    """Every path the new changes touch -> its folded blob (None: no note)."""
    kept: dict[str, list[str]] = field(default_factory=dict)
    """Path -> the whole text of each side that lost a merge, in fold order."""
    superseded: list[tuple[str, str, str]] = field(default_factory=list)
    """(path, the newer handoff, the other one): two supersedes of one handoff."""
    twice: list[str] = field(default_factory=list)
    """Paths where a merge found a second delivery."""
    refolded: list[str] = field(default_factory=list)
    """Paths folded again from the start, for a late entry."""


class FoldStore:
    """The entries a route has applied and each machine's tip, in a SQLite file.

    Each call is one transaction: a crash leaves all of it or none of it.
    """

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None)
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version == _VERSION:
            return  # made before: a claim opens it, and its schema script is a write
        if version != 0:  # disposable: made again, then filled again
            self._db.executescript("DROP TABLE IF EXISTS entries; DROP TABLE IF EXISTS tips;")
        self._db.executescript(f"{_SCHEMA}PRAGMA user_version = {_VERSION};")

    def tips(self) -> dict[str, Tip]:
        """Machine -> its newest applied entry."""
        rows = self._db.execute('SELECT machine, "commit", seq, lamport FROM tips')
        return {m: Tip(commit, seq, lamport) for m, commit, seq, lamport in rows}

    def applied(self, commits: Sequence[str]) -> set[str]:
        """Which of ``commits`` are entries folded here."""
        found: set[str] = set()
        unique = list(dict.fromkeys(commits))
        for at in range(0, len(unique), 500):
            chunk = unique[at : at + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f'SELECT DISTINCT "commit" FROM entries WHERE "commit" IN ({marks})', chunk
            )
            found.update(row[0] for row in rows)
        return found

    def count(self) -> int:
        """The entries folded here (since the checkpoint the store started from)."""
        (found,) = self._db.execute(
            "SELECT count(*) FROM (SELECT DISTINCT machine, seq FROM entries)"
        ).fetchone()
        return int(found)

    def max_lamport(self) -> int:
        """The greatest Lamport applied here; 0 when nothing is."""
        (found,) = self._db.execute(
            "SELECT max(l) FROM (SELECT max(lamport) AS l FROM entries"
            " UNION ALL SELECT max(lamport) FROM tips)"
        ).fetchone()
        return int(found or 0)

    def fold(
        self,
        changes: Sequence[Change],
        tips: Mapping[str, Tip],
        current: Callable[[Sequence[str]], Mapping[str, str | None]],
        notes: NoteTexts,
        start: Callable[[Sequence[str]], Mapping[str, str | None]] | None = None,
    ) -> Folded:
        """Fold ``changes`` into the notes; store them and ``tips``.

        ``current(paths)`` gives the blob the caller's ``fetched`` tree holds at each
        path (a path it leaves out has none); ``start(paths)``, the blob each path held
        before every entry (the remote's checkpoint; none without one), where a path is
        folded again. Changes stored already are left out.
        """
        db = self._db
        out = Folded()
        with self._transaction():
            fresh = self._fresh(changes)
            queues: dict[str, list[Change]] = {}
            fast: list[str] = []
            for path in sorted(fresh):
                new = sorted(fresh[path], key=_key)
                last = self._last_key(path)
                if last is None or new[0].key > last:
                    fast.append(path)
                    queues[path] = new
                else:
                    queues[path] = sorted([*self._stored(path), *new], key=_key)
                    out.refolded.append(path)
            now = current(fast) if fast else {}
            values = {p: now.get(p) for p in fast}
            first = start(out.refolded) if start is not None and out.refolded else {}
            values.update({p: first.get(p) for p in out.refolded})
            _fold(values, queues, notes, out)
            out.blobs = {p: values[p] for p in sorted(values)}
            db.executemany(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    (c.machine, c.seq, c.lamport, c.commit, c.path, c.base, c.new)
                    for path in sorted(fresh)
                    for c in fresh[path]
                ),
            )
            db.executemany(
                "INSERT OR REPLACE INTO tips VALUES (?, ?, ?, ?)",
                ((m, t.commit, t.seq, t.lamport) for m, t in sorted(tips.items())),
            )
        return out

    def reset(self) -> None:
        """Forget every entry and tip (a log went back: the caller folds all again)."""
        with self._transaction():
            self._db.execute("DELETE FROM entries")
            self._db.execute("DELETE FROM tips")

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """All of the block or nothing of it."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _fresh(self, changes: Sequence[Change]) -> dict[str, list[Change]]:
        """Path -> its changes not stored yet (each once)."""
        seen: set[tuple[str, int, str]] = set()
        fresh: dict[str, list[Change]] = {}
        for c in changes:
            ident = (c.machine, c.seq, c.path)
            if ident in seen:
                continue
            seen.add(ident)
            stored = self._db.execute(
                "SELECT 1 FROM entries WHERE machine = ? AND seq = ? AND path = ?", ident
            ).fetchone()
            if stored is None:
                fresh.setdefault(c.path, []).append(c)
        return fresh

    def _last_key(self, path: str) -> tuple[int, str, int] | None:
        row = self._db.execute(
            "SELECT lamport, machine, seq FROM entries WHERE path = ?"
            " ORDER BY lamport DESC, machine DESC, seq DESC LIMIT 1",
            (path,),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def _stored(self, path: str) -> list[Change]:
        rows = self._db.execute(
            'SELECT lamport, machine, seq, "commit", path, base, new FROM entries WHERE path = ?',
            (path,),
        )
        return [Change(*row) for row in rows]


def _key(change: Change) -> tuple[int, str, int]:
    return change.key


def _fold(
    values: dict[str, str | None],
    queues: Mapping[str, Sequence[Change]],
    notes: NoteTexts,
    out: Folded,
) -> None:
    """Apply each path's queue to ``values`` in place, in rounds: a round goes as far as
    it can without texts, then reads the texts of every merge it stopped at at once."""
    texts: dict[str, str] = {}
    at = dict.fromkeys(queues, 0)
    open_paths = sorted(queues)
    while open_paths:
        stopped: list[str] = []
        needed: set[str] = set()
        for path in open_paths:
            queue, value, i = queues[path], values[path], at[path]
            while i < len(queue):
                c = queue[i]
                if c.new == value or (c.new is None and c.base != value):
                    pass  # the same note, or removed there and changed here since
                elif c.base == value or value is None:
                    value = c.new  # made on this version, or removed here: as it is
                else:
                    break  # both changed it: a merge
                i += 1
            values[path], at[path] = value, i
            if i < len(queue):
                stopped.append(path)
                c = queue[i]
                needed.update(b for b in (c.base, value, c.new) if b is not None)
        missing = sorted(needed - texts.keys())
        if missing:
            texts.update(notes.texts(missing))
        for path in stopped:
            c, value = queues[path][at[path]], values[path]
            assert value is not None and c.new is not None
            merged = merge_notes(
                texts[c.base] if c.base is not None else _generated(path),
                texts[value],
                texts[c.new],
            )
            blob = notes.write(merged.text)
            texts[blob] = merged.text
            values[path] = blob
            at[path] += 1
            if merged.kept is not None:
                out.kept.setdefault(path, []).append(merged.kept)
            if merged.superseded is not None:
                out.superseded.append((path, *merged.superseded))
            if merged.twice and path not in out.twice:
                out.twice.append(path)
        open_paths = stopped


def _generated(path: str) -> str | None:
    """The text the vault writes itself at ``path``, as the base of two notes made apart."""
    from .arrivals import _generated as generated  # only a merge needs it

    return generated(path)
