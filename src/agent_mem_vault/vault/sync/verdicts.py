"""Each entry checked once as it arrives, its verdict kept; and who wrote each note's text.

A route that checks signatures (``signers.py``) keeps, beside its fold store, a
SQLite file of its own (``<route>.trust.sqlite``):

- ``entries``: every entry judged, with the time this machine first saw it. That
  time is what a key's validity is judged at (``verify.py``), and no later fetch
  can rebuild it, so this file is kept, unlike the fold store. When the signers
  list changes, every entry is judged again at its first-seen time;
- ``changes``: for each note, the entries that changed its **text** (``text_of``:
  not its lifecycle, tags or writer pair; a teammate's read does not make a note
  theirs). Its writer is the last of them in fold order; an earlier one not
  verified is named too, since its words may still be in it;
- ``notes``: the digest of each note's text as the fold left it, so a view can tell
  the note it reads from one changed here since (not sent, so nobody checked it);
  a note the fold started from a checkpoint with has no writer here yet
  (``before_signers``).

Every view of one note asks ``origin_of`` (one indexed query).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..format.models import Origin
from ..format.notes import NoteError, parse_note
from ..format.writer import origin_in, text_of
from .routes import SYNC_DIR
from .verify import AllowedSigners, verify_commit

if TYPE_CHECKING:
    from .engine import RouteSync
    from .entries import LogEntry
    from .routes import Route

__all__ = ["VerdictStore", "judge", "origin_of", "origins_of", "store_path", "text_digest"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries(
    commit_id TEXT PRIMARY KEY, machine TEXT NOT NULL, seq INTEGER NOT NULL,
    author TEXT NOT NULL, verified INTEGER NOT NULL, why TEXT, key TEXT, principal TEXT,
    first_seen REAL NOT NULL);
CREATE TABLE IF NOT EXISTS changes(
    path TEXT NOT NULL, lamport INTEGER NOT NULL, machine TEXT NOT NULL, seq INTEGER NOT NULL,
    commit_id TEXT NOT NULL, PRIMARY KEY(path, commit_id));
CREATE TABLE IF NOT EXISTS notes(path TEXT PRIMARY KEY, text TEXT);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS released(
    path TEXT PRIMARY KEY, text TEXT NOT NULL, by TEXT NOT NULL, at REAL NOT NULL);
"""


def store_path(root: Path, route: Route) -> Path:
    return root / SYNC_DIR / f"{route.key}.trust.sqlite"


def text_digest(text: str) -> str:
    """What a note says (``text_of``), as a digest: equal for two versions that differ
    only in lifecycle, tags or writer pair."""
    try:
        parsed = parse_note(text)
    except NoteError:
        parsed = None
    said = text if parsed is None else text_of(parsed.meta, parsed.body)
    return hashlib.sha256(said.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class VerdictStore:
    """The verdicts and writers of one route. Each method is one transaction."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        if read_only:
            uri = f"file:{quote(str(path))}?mode=ro"  # a vault's path may hold '?' or '#'
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
        else:
            self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def known(self, commits: Sequence[str]) -> set[str]:
        out: set[str] = set()
        for i in range(0, len(commits), 500):
            part = commits[i : i + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT commit_id FROM entries WHERE commit_id IN ({marks})", part
            )
            out.update(r[0] for r in rows)
        return out

    def first_seen(self) -> dict[str, float]:
        return dict(self._db.execute("SELECT commit_id, first_seen FROM entries"))

    def put_entries(self, rows: Iterable[tuple[Any, ...]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )

    def put_changes(
        self, changes: Iterable[tuple[str, int, str, int, str]], texts: Mapping[str, str | None]
    ) -> None:
        """Record text changes; then each note's text as the fold left it (None: no note,
        and its history goes with it)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR IGNORE INTO changes VALUES (?, ?, ?, ?, ?)", changes)
            for path, text in texts.items():
                if text is None:
                    self._db.execute("DELETE FROM changes WHERE path = ?", (path,))
                    self._db.execute("DELETE FROM notes WHERE path = ?", (path,))
                else:
                    self._db.execute("INSERT OR REPLACE INTO notes VALUES (?, ?)", (path, text))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def put_held(self, paths: Iterable[str]) -> None:
        """Notes a checkpoint brought, whose writers no entry here names."""
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO notes VALUES (?, NULL)", ((p,) for p in paths)
            )

    def note(self, path: str) -> tuple[str | None, tuple[Any, ...] | None, str | None] | None:
        """(its text digest, its writer's entry row, an earlier unverified writer) of a
        note the fold left, or None."""
        found = self._db.execute("SELECT text FROM notes WHERE path = ?", (path,)).fetchone()
        if found is None:
            return None
        rows = self._db.execute(
            "SELECT e.author, e.machine, e.verified, e.why, e.principal, c.commit_id "
            "FROM changes c JOIN entries e USING (commit_id) WHERE c.path = ? "
            "ORDER BY c.lamport DESC, c.machine DESC, c.seq DESC",
            (path,),
        ).fetchall()
        if not rows:
            return found[0], None, None
        earlier = next((r[0] for r in reversed(rows[1:]) if not r[2]), None)
        return found[0], rows[0], earlier

    def release(self, path: str, text: str, by: str) -> None:
        """Let the text ``text`` (a digest) of ``path`` steer agents here, as ``by`` said."""
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO released VALUES (?, ?, ?, ?)", (path, text, by, time.time())
            )

    def released(self, path: str) -> tuple[str, str] | None:
        """(the text digest, who) of the release of ``path``, if any."""
        try:
            row = self._db.execute(
                "SELECT text, by FROM released WHERE path = ?", (path,)
            ).fetchone()
        except sqlite3.OperationalError:  # a store written before releases
            return None
        return None if row is None else (str(row[0]), str(row[1]))

    def counts(self) -> dict[str, int]:
        """Entries judged: ``verified``, and each reason not."""
        rows = self._db.execute(
            "SELECT CASE WHEN verified THEN 'verified' ELSE why END, count(*) FROM entries "
            "GROUP BY 1"
        )
        return {str(k): int(n) for k, n in rows}

    def unverified_notes(self, limit: int = 20) -> list[tuple[str, str, str, str]]:
        """(path, writer, machine, why) of notes whose last text change is not verified."""
        rows = self._db.execute(
            "SELECT c.path, e.author, e.machine, e.why FROM changes c "
            "JOIN entries e USING (commit_id) JOIN notes n USING (path) "
            "WHERE NOT EXISTS (SELECT 1 FROM changes d WHERE d.path = c.path AND "
            "(d.lamport, d.machine, d.seq) > (c.lamport, c.machine, c.seq)) "
            "AND NOT e.verified ORDER BY c.path LIMIT ?",
            (limit,),
        )
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]


# -- judging what arrives -----------------------------------------------------------


def judge(
    sync: RouteSync,
    signers: AllowedSigners,
    entries: Sequence[LogEntry],
    finals: Mapping[str, str | None],
    held: Iterable[str] = (),
) -> None:
    """Judge ``entries`` (those not judged yet), record which of their changes changed a
    note's text, and note each of ``finals`` (path → the blob the fold left) as its text,
    and ``held`` as notes a checkpoint brought. Called by the fetch, after the fold, with
    the route's turn held."""
    store = VerdictStore(store_path(sync.root, sync.route))
    try:
        now = time.time()
        if store.meta("signers") != signers.digest:  # a new list: every entry judged again
            seen = store.first_seen()
            store.put_entries(_judged(sync, signers, seen))
            store.set_meta("signers", signers.digest)
        commits = [e.commit for e in entries]
        known = store.known(commits)
        store.put_entries(_judged(sync, signers, {c: now for c in commits if c not in known}))
        blobs = {b for e in entries for b in (*e.changed.values(), *e.base.values())}
        blobs.update(b for b in finals.values() if b is not None)
        digests = {b: text_digest(t) for b, t in sync.blobs(sorted(blobs)).items()}
        changes = [
            (c.path, c.lamport, c.machine, c.seq, c.commit)
            for e in entries
            for c in e.changes()
            if c.new is not None
            and sync.config.covers(sync.route, c.path)
            and (c.base is None or digests.get(c.new) != digests.get(c.base))
        ]
        texts = {p: None if b is None else digests.get(b) for p, b in finals.items()}
        store.put_changes(changes, texts)
        store.put_held(held)
    finally:
        store.close()


def _judged(
    sync: RouteSync, signers: AllowedSigners, seen: Mapping[str, float]
) -> list[tuple[Any, ...]]:
    """Rows for ``entries``: each commit (id → first seen) judged at its first-seen time."""
    out = []
    raws = sync.objects(list(seen), "commit")
    for commit, raw in raws.items():
        verdict = verify_commit(raw, signers, seen[commit], digits=len(commit))
        machine, seq = _entry_name(raw)
        out.append(
            (
                commit,
                machine,
                seq,
                _author(raw),
                int(verdict.verified),
                verdict.why,
                verdict.key,
                verdict.principal,
                seen[commit],
            )
        )
    return out


def _author(raw: bytes) -> str:
    """The commit's author as ``Name <email>``."""
    for line in raw.partition(b"\n\n")[0].split(b"\n"):
        if line.startswith(b"author "):
            return line[7:].decode("utf-8", "replace").rsplit(" ", 2)[0]
    return ""


def _entry_name(raw: bytes) -> tuple[str, int]:
    from .layout import message_facts

    facts = message_facts(raw.partition(b"\n\n")[2].decode("utf-8", "replace"))
    machine, seq = facts.get("machine"), facts.get("seq")
    return (str(machine or ""), seq if isinstance(seq, int) else 0)


# -- what a view shows --------------------------------------------------------------


def origin_of(root: Path, route: Route, path: str, text: str) -> Origin:
    """Who wrote the text of the note at ``path`` (whose file says ``text``), as the
    route's checks found."""
    return origins_of(root, route, {path: text})[path]


def origins_of(root: Path, route: Route, texts: Mapping[str, str]) -> dict[str, Origin]:
    """``origin_of`` for each path → text of ``texts``, with one look at the store."""
    where = store_path(root, route)
    if not where.exists():
        return {p: _unsent(_claimed(t)) for p, t in texts.items()}
    store = VerdictStore(where, read_only=True)
    try:
        return {p: _origin(store, p, t) for p, t in texts.items()}
    finally:
        store.close()


def _origin(store: VerdictStore, path: str, text: str) -> Origin:
    claimed = _claimed(text)
    try:
        found = store.note(path)
        released = store.released(path)
    except sqlite3.Error:
        return _unsent(claimed)
    if found is None:
        return _unsent(claimed)
    digest, writer, earlier = found
    here = text_digest(text)
    if digest is not None and digest != here:
        return _unsent(claimed)
    by = released[1] if released is not None and released[0] == here else None
    if writer is None:
        return Origin(claimed.author, claimed.machine, False, why="before_signers", released=by)
    author, machine, verified, why, principal, _commit = writer
    return Origin(
        author or None,
        machine or None,
        bool(verified),
        signer=principal if verified else None,
        why=None if verified else why,
        earlier=earlier if verified else None,
        released=by,
    )


def _claimed(text: str) -> Origin:
    try:
        parsed = parse_note(text)
    except NoteError:
        parsed = None
    return (None if parsed is None else origin_in(parsed.meta)) or Origin()


def _unsent(claimed: Origin) -> Origin:
    return Origin(claimed.author, claimed.machine, None, sent=False)
