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
  (``before_signers``);
- ``vouches``: the texts a listed person vouched for with an entry of their own
  (``team_vouch.py``), which count while that entry is verified.

Every view asks ``origins.origins_of`` (an indexed query a note).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..format.hand_notes import folder_kind
from ..format.lifecycle import status_in
from ..format.models import Origin
from ..format.notes import NoteError, parse_note
from ..format.writer import origin_in, text_of
from .entries import OID, LogEntry
from .judging import as_listed, judged_rows
from .routes import SYNC_DIR
from .verify import AllowedSigners

if TYPE_CHECKING:
    from .engine import RouteSync
    from .routes import Route

__all__ = [
    "VerdictStore",
    "judge",
    "said_by",
    "stamp_path",
    "store_path",
    "text_digest",
]

# WITHOUT ROWID: every table is looked up by its text key alone, and a machine that joins
# a large team inserts a few hundred thousand rows at once (a third faster so).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries(
    commit_id TEXT PRIMARY KEY, machine TEXT NOT NULL, seq INTEGER NOT NULL,
    author TEXT NOT NULL, verified INTEGER NOT NULL, why TEXT, key TEXT, principal TEXT,
    first_seen REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes(
    path TEXT NOT NULL, lamport INTEGER NOT NULL, machine TEXT NOT NULL, seq INTEGER NOT NULL,
    commit_id TEXT NOT NULL, PRIMARY KEY(path, commit_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS notes(path TEXT PRIMARY KEY, text TEXT, blob TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS touches(
    path TEXT PRIMARY KEY, lamport INTEGER NOT NULL, machine TEXT NOT NULL,
    seq INTEGER NOT NULL, commit_id TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS versions(
    path TEXT NOT NULL, text TEXT NOT NULL, PRIMARY KEY(path, text)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS released(
    path TEXT PRIMARY KEY, text TEXT NOT NULL, by TEXT NOT NULL, at REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outside(
    path TEXT NOT NULL, commit_id TEXT NOT NULL, before TEXT NOT NULL, after TEXT NOT NULL,
    PRIMARY KEY(path, commit_id)) WITHOUT ROWID;
DROP TABLE IF EXISTS closed;
CREATE TABLE IF NOT EXISTS taken(path TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vouches(
    path TEXT NOT NULL, text TEXT NOT NULL, blob TEXT NOT NULL, commit_id TEXT NOT NULL,
    lamport INTEGER NOT NULL, machine TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY(path, text, commit_id)) WITHOUT ROWID;
"""


def store_path(root: Path, route: Route) -> Path:
    return root / SYNC_DIR / f"{route.key}.trust.sqlite"


def stamp_path(store: Path) -> Path:
    """A file rewritten after every change to the store at ``store``: a view that kept
    what it found compares this file's state, without opening the store."""
    return store.with_name(store.name + ".stamp")


def text_digest(text: str) -> str:
    """What a note says (``text_of``), as a digest: equal for two versions that differ
    only in lifecycle, tags or writer pair."""
    return said_by(text)[0]


def said_by(text: str) -> tuple[str, Origin]:
    """A note's text digest, and who its properties say wrote it: one parse for both."""
    try:
        parsed = parse_note(text)
    except NoteError:
        parsed = None
    said = text if parsed is None else text_of(parsed.meta, parsed.body)
    digest = hashlib.sha256(said.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return digest, (None if parsed is None else origin_in(parsed.meta)) or Origin()


class VerdictStore:
    """The verdicts and writers of one route. Each method is one transaction."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        if read_only:
            uri = f"file:{quote(str(path))}?mode=ro"  # a vault's path may hold '?' or '#'
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None)
        else:
            self._db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)

    def __enter__(self) -> VerdictStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        changed = self._db.total_changes
        self._db.close()
        if changed:  # what views found before may have changed: said by the stamp
            stamp_path(self.path).write_text(f"{time.time_ns()}\n")

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

    def _transaction(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(sql, rows)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def put_entries(self, rows: Iterable[tuple[Any, ...]]) -> None:
        self._transaction("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def put_changes(
        self,
        changes: Iterable[tuple[str, int, str, int, str]],
        notes: Mapping[str, tuple[str | None, str] | None],
        versions: Iterable[tuple[str, str]] = (),
        touches: Iterable[tuple[str, int, str, int, str]] = (),
        vouches: Iterable[tuple[str, str, str, str, int, str, int]] = (),
        outside: Iterable[tuple[str, str, str, str]] = (),
        taken: Iterable[str] = (),
        made: Iterable[tuple[str, int, str, int, str]] = (),
        gone: Mapping[str, str] | None = None,
        dismissed: Iterable[str] = (),
    ) -> None:
        """Record text changes, each note as the fold left it (path → its text digest and
        blob; None: no note, and its history goes with it), texts notes had (path,
        digest), the last change of any kind to each note, and texts vouched for (path,
        digest, blob, the entry and its name), notes whose lifecycle, tags or writer pair
        alone an unverified entry changed from what a verified one left (path, the entry,
        the blob before, the blob after), and handoffs a verified entry marked read
        (paths: never made pending by a machine, whatever comes after); ``made``: the
        change that made each note as the fold left it, its last touch whatever its
        Lamport number says (an entry's writer sets that number); ``gone``: each note an
        unverified entry removed, and the digest of the text it had, kept with its history
        until it is written back (``outside_changes.py``); ``dismissed``: notes a verified
        entry removed as well, whose history goes."""
        outside = list(outside)
        kept = dict(gone or {})
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR IGNORE INTO changes VALUES (?, ?, ?, ?, ?)", changes)
            self._db.executemany(
                "INSERT OR IGNORE INTO vouches VALUES (?, ?, ?, ?, ?, ?, ?)", vouches
            )
            self._db.executemany("INSERT OR IGNORE INTO outside VALUES (?, ?, ?, ?)", outside)
            self._db.executemany("INSERT OR IGNORE INTO taken VALUES (?)", ((p,) for p in taken))
            self._db.executemany(
                "INSERT INTO touches VALUES (?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
                "lamport = excluded.lamport, machine = excluded.machine, seq = excluded.seq, "
                "commit_id = excluded.commit_id WHERE (excluded.lamport, excluded.machine, "
                "excluded.seq) > (touches.lamport, touches.machine, touches.seq)",
                touches,
            )
            self._db.executemany("INSERT OR REPLACE INTO touches VALUES (?, ?, ?, ?, ?)", made)
            self._db.executemany("INSERT OR IGNORE INTO versions VALUES (?, ?)", versions)
            for path, note in notes.items():
                if note is None and path in kept:  # no file: its text, for who wrote it
                    self._db.execute(
                        "INSERT OR REPLACE INTO notes VALUES (?, ?, NULL)", (path, kept[path])
                    )
                elif note is None:
                    self._forget(path)
                else:
                    self._db.execute("INSERT OR REPLACE INTO notes VALUES (?, ?, ?)", (path, *note))
            for path in dismissed:
                if path not in kept and notes.get(path) is None:
                    self._forget(path)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _forget(self, path: str) -> None:
        for table in ("changes", "notes", "versions", "touches", "vouches", "outside"):
            self._db.execute(f"DELETE FROM {table} WHERE path = ?", (path,))

    def revalidate(self, current: Mapping[str, str], start: Mapping[str, str | None]) -> None:
        """After the fold started again (a new checkpoint, a log gone back): keep what is
        recorded of each note whose blob is still the one recorded, or the one it had
        where the fold started (``start``: the entries being judged change it), forget
        the rest, and note each of ``current`` (path → blob) not recorded as having no
        known writer."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            rows = self._db.execute("SELECT path, blob FROM notes").fetchall()
            kept = {p for p, b in rows if b is not None and b in (current.get(p), start.get(p))}
            for path, _blob in rows:
                if path not in kept:
                    self._forget(path)
            self._db.executemany(
                "INSERT INTO notes VALUES (?, NULL, ?)",
                ((p, b) for p, b in current.items() if p not in kept),
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def table(self, name: str) -> list[tuple[Any, ...]]:
        """Every row of table ``name`` ([] where the store predates it): what a checkpoint
        carries (``checkpoint_verdicts.py``)."""
        try:
            return self._db.execute(f"SELECT * FROM {name}").fetchall()
        except sqlite3.OperationalError:
            return []

    def add_rows(self, rows: Mapping[str, Sequence[tuple[Any, ...]]]) -> None:
        """Add ``rows`` (table → rows) in one transaction; a row the store holds stays."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for name, values in rows.items():
                if values:
                    marks = ", ".join("?" * len(values[0]))
                    self._db.executemany(f"INSERT OR IGNORE INTO {name} VALUES ({marks})", values)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def verdicts(self, commits: Iterable[str]) -> dict[str, bool]:
        """Whether each judged entry of ``commits`` is verified."""
        out = {}
        for commit in commits:
            row = self._db.execute(
                "SELECT verified FROM entries WHERE commit_id = ?", (commit,)
            ).fetchone()
            if row is not None:
                out[commit] = bool(row[0])
        return out

    def versions(self, paths: Iterable[str]) -> set[tuple[str, str]]:
        """(path, text digest) of each text these notes had here."""
        out: set[tuple[str, str]] = set()
        for path in paths:
            rows = self._db.execute("SELECT text FROM versions WHERE path = ?", (path,))
            out.update((path, r[0]) for r in rows)
        return out

    def origin(self, path: str, here: str, claimed: Origin) -> Origin | None:
        """Who wrote the text ``here`` (a digest) of ``path``, as recorded; None: no record
        of that text. ``claimed``: who the note's properties name, shown for a note that
        nothing recorded wrote (``before_signers``)."""
        try:
            return self._origin(path, here, claimed)
        except sqlite3.OperationalError:  # a store written by a release before some tables
            return None

    def _origin(self, path: str, here: str, claimed: Origin) -> Origin | None:
        found = self._db.execute("SELECT text, blob FROM notes WHERE path = ?", (path,)).fetchone()
        if found is None or (found[0] is not None and found[0] != here):
            return None
        rows = self._db.execute(
            "SELECT e.author, e.machine, e.verified, e.why, e.principal, c.commit_id "
            "FROM changes c JOIN entries e USING (commit_id) WHERE c.path = ? "
            "ORDER BY c.lamport DESC, c.machine DESC, c.seq DESC",
            (path,),
        ).fetchall()
        writer = rows[0] if rows else None
        earlier = next((r[0] for r in reversed(rows[1:]) if not r[2]), None)
        touch = self._db.execute(
            "SELECT e.author, e.verified, t.commit_id, t.lamport, t.machine, t.seq "
            "FROM touches t JOIN entries e USING (commit_id) WHERE t.path = ?",
            (path,),
        ).fetchone()
        # The last change of any kind, where an unlisted key made it and it is not the
        # text's own change: an outsider's read, or a status set again.
        touched = None
        if touch is not None and not touch[1] and (writer is None or touch[2] != writer[5]):
            touched = str(touch[0])
        released = self._db.execute(
            "SELECT by FROM released WHERE path = ? AND text = ?", (path, here)
        ).fetchone()
        # A verified vouch for these words; it answers for the status too only where the note
        # is the very blob vouched for and nothing changed it after the vouch (a blob an
        # outsider sets again later is judged as any change).
        key = (-1, "", -1) if touch is None else (touch[3], touch[4], touch[5])
        vouch = self._db.execute(
            "SELECT e.author, v.blob = ? AND (v.lamport, v.machine, v.seq) > (?, ?, ?) "
            "FROM vouches v JOIN entries e USING (commit_id) "
            "WHERE v.path = ? AND v.text = ? AND e.verified "
            "ORDER BY 2 DESC, v.lamport DESC, v.machine DESC, v.seq DESC LIMIT 1",
            (found[1], *key, path, here),
        ).fetchone()
        vouched = None if vouch is None else str(vouch[0])
        if vouch is not None:
            earlier = None
            touched = None if vouch[1] else touched
        by = None if released is None else str(released[0])
        if writer is None:
            return Origin(
                claimed.author,
                claimed.machine,
                False,
                why="before_signers",
                released=by,
                touched=touched,
                vouched=vouched,
            )
        author, machine, verified, why, principal, _commit = writer
        return Origin(
            author or None,
            machine or None,
            bool(verified),
            signer=principal if verified else None,
            why=None if verified else why,
            earlier=earlier if verified else None,
            released=by,
            touched=touched,
            vouched=vouched,
        )

    def touched_by_team(self, paths: Sequence[str]) -> dict[str, bool]:
        """Whether a verified entry made the last change of any kind to each of ``paths``
        (False: an unverified one, or none recorded)."""
        out: dict[str, bool] = {}
        for path in paths:
            row = self._db.execute(
                "SELECT e.verified FROM touches t JOIN entries e USING (commit_id) "
                "WHERE t.path = ?",
                (path,),
            ).fetchone()
            out[path] = bool(row and row[0])
        return out

    def changed_outside(self) -> list[tuple[str, str, str, bool]]:
        """(path, blob before, blob after, taken) of each note whose last change of any
        kind was an entry no listed key signed that changed its lifecycle, tags or writer
        pair alone, or removed it (blob after ``""``), from a version a verified entry had
        left; ``taken``: a verified entry ever marked that handoff read."""
        try:
            rows = self._db.execute(
                "SELECT o.path, o.before, o.after, o.path IN (SELECT path FROM taken) "
                "FROM outside o JOIN touches t ON t.path = o.path AND t.commit_id = o.commit_id "
                "JOIN entries e ON e.commit_id = o.commit_id WHERE NOT e.verified "
                "ORDER BY o.path"
            ).fetchall()
        except sqlite3.OperationalError:  # a store written before these were kept
            return []
        return [(str(p), str(b), str(a), bool(t)) for p, b, a, t in rows]

    def untrusted(self) -> dict[str, str]:
        """The route's notes that no listed key or person stands behind as they are, as every
        view judges them (``origin``): path → blob."""
        try:
            rows = self._db.execute(
                "SELECT n.path, n.blob, n.text FROM notes n WHERE n.blob IS NOT NULL AND ("
                "n.text IS NULL OR NOT EXISTS (SELECT 1 FROM changes c WHERE c.path = n.path) "
                "OR EXISTS (SELECT 1 FROM changes c JOIN entries e USING (commit_id) "
                "  WHERE c.path = n.path AND NOT e.verified) "
                "OR EXISTS (SELECT 1 FROM touches t JOIN entries e USING (commit_id) "
                "  WHERE t.path = n.path AND NOT e.verified)) ORDER BY n.path"
            ).fetchall()
        except sqlite3.OperationalError:
            return {}
        out = {}
        for path, blob, text in rows:  # the few that may not be: judged as a view would
            found = self.origin(path, text, Origin()) if text is not None else None
            if found is None or not found.trusted:
                out[str(path)] = str(blob)
        return out

    def release(self, path: str, text: str, by: str) -> None:
        """Let the text ``text`` (a digest) of ``path`` steer agents here, as ``by`` said."""
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO released VALUES (?, ?, ?, ?)", (path, text, by, time.time())
            )

    def counts(self) -> dict[str, int]:
        """Entries judged: ``verified``, and each reason not."""
        rows = self._db.execute(
            "SELECT CASE WHEN verified THEN 'verified' ELSE why END, count(*) FROM entries "
            "GROUP BY 1"
        )
        return {str(k): int(n) for k, n in rows}

    def touched_outside(self, prefix: str) -> dict[str, str]:
        """Notes under ``prefix`` whose last change of any kind came from an entry no listed
        key signed: path → its author."""
        rows = self._db.execute(
            "SELECT t.path, e.author FROM touches t JOIN entries e USING (commit_id) "
            "WHERE NOT e.verified AND t.path >= ? AND t.path < ?",
            (prefix, prefix + "\U0010ffff"),
        )
        return {str(p): str(a) for p, a in rows}

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
    before: Mapping[str, str | None],
    finals: Mapping[str, str | None],
    held: Mapping[str, str] | None = None,
) -> None:
    """Judge ``entries`` (those not judged yet) and record which of their changes changed
    a note's text, and the last change of any kind to each; then note each of ``finals``
    (path → the blob the fold left). ``held`` (path → blob, every other note of the
    fold): the fold started again, so what is recorded of each note is kept only where
    its blob is still the one recorded. Called after a fetch or push, with the route's
    turn held.

    Whether a change changed the text is judged against what the note said before it
    here (``before``: path → blob before these entries, then each change in fold
    order). The ``base`` an entry names counts only where it is a version the note had
    here, or the entry is verified: a read of a merge this machine folds in the same
    fetch names a version seen only on the reader's machine."""
    with VerdictStore(store_path(sync.root, sync.route)) as store:
        now = time.time()
        if store.meta("signers") != signers.digest:  # a new list: every entry judged again
            seen = store.first_seen()
            rows = judged_rows(sync, signers, seen)
            read = {r[0] for r in rows}
            rows += [as_listed(r, signers) for r in store.table("entries") if r[0] not in read]
            store.put_entries(rows)
            store.set_meta("signers", signers.digest)
        commits = [e.commit for e in entries]
        judged = store.known(commits)
        store.put_entries(judged_rows(sync, signers, {c: now for c in commits if c not in judged}))
        if held is not None:
            store.revalidate({**held, **{p: b for p, b in finals.items() if b is not None}}, before)
        good = store.verdicts(commits)
        ordered = sorted(
            (c for e in entries for c in e.changes() if sync.config.covers(sync.route, c.path)),
            key=lambda c: (c.lamport, c.machine, c.seq),
        )
        vouched = [
            (p, b, e)
            for e in entries
            for p, b in e.vouch.items()
            if sync.config.covers(sync.route, p)
        ]
        blobs = {b for c in ordered for b in (c.new, c.base) if b is not None and OID.match(b)}
        blobs.update(b for b in (*before.values(), *finals.values()) if b is not None)
        blobs.update(b for _p, b, _c in vouched)
        texts = sync.blobs(sorted(blobs))
        digests = {b: text_digest(t) for b, t in texts.items()}
        blob_had = dict(before)
        had = {p: None if b is None else digests.get(b) for p, b in before.items()}
        known = store.versions(had)
        known.update((p, d) for p, d in had.items() if d is not None)
        changes, touches = [], []
        outside: list[tuple[str, str, str, str]] = []
        taken: list[str] = []
        made: dict[str, tuple[str, int, str, int, str]] = {}
        # Whether the team's own entry made each note as it stands before these: an
        # outsider's read, supersede or forget is undone only where it changes what the
        # team left.
        teams = store.touched_by_team([p for p in blob_had if folder_kind(p) is not None])
        dismissed: set[str] = set()
        for c in ordered:
            name = (c.path, c.lamport, c.machine, c.seq, c.commit)
            was = blob_had.get(c.path)
            if c.new is None and was is None and good.get(c.commit):
                # The team removed it too: an outsider's removal before it is not undone.
                dismissed.add(c.path)
                outside = [o for o in outside if o[0] != c.path]
            if c.new != was:
                touches.append(name)
                if c.new is not None and finals.get(c.path) == c.new:
                    made[c.path] = name
                if was is not None and c.new is not None:
                    if good.get(c.commit):
                        if "/handoffs/" in c.path and _marks_read(
                            texts.get(was, ""), texts.get(c.new, "")
                        ):
                            taken.append(c.path)
                    elif (
                        teams.get(c.path)
                        and folder_kind(c.path) is not None
                        and digests.get(was, 1) == digests.get(c.new, 2)
                    ):
                        outside.append((c.path, c.commit, was, c.new))
                elif (
                    was is not None
                    and not good.get(c.commit)
                    and teams.get(c.path)
                    and folder_kind(c.path) is not None
                ):
                    outside.append((c.path, c.commit, was, ""))  # removed: no blob after
                teams[c.path] = bool(good.get(c.commit))
            blob_had[c.path] = c.new
            said = None if c.new is None else digests.get(c.new, c.new)
            based = None if c.base is None else digests.get(c.base)
            # A change counts as the text's when it says something the note did not say
            # here before it, unless it kept the text of the version it was made on, and
            # that version is one this note had here or the entry is verified: a base an
            # outsider made up never keeps him from being named.
            kept = (
                based is not None
                and said == based
                and ((c.path, based) in known or good.get(c.commit, False))
            )
            if said is not None and said != had.get(c.path) and not (had.get(c.path) and kept):
                changes.append(name)
            had[c.path] = said
            if said is not None:
                known.add((c.path, said))
        notes = {p: None if b is None else (digests.get(b), b) for p, b in finals.items()}
        vouches = [
            (p, digests[b], b, e.commit, e.lamport, e.machine, e.seq)
            for p, b, e in vouched
            if b in digests
        ]
        gone = {p: digests[b] for p, _c, b, after in outside if after == "" and b in digests}
        store.put_changes(
            changes,
            notes,
            sorted(known),
            touches,
            vouches,
            outside,
            taken,
            made.values(),
            gone=gone,
            dismissed=dismissed,
        )


def _marks_read(before: str, after: str) -> bool:
    """Whether a change from ``before`` to ``after`` marks a pending handoff read (a read,
    an ack or a supersede)."""
    return status_in(before)[0] == "pending" and status_in(after)[0] == "read"
