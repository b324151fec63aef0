"""What every vault operation stands on: the lock, the index, and writing notes.

``VaultBase`` holds one process's view of a vault folder. The operations
(``handoffs.py``, ``memories.py``, and ``Vault`` itself in ``service.py``)
are written on top of the few methods here, so that there is one way to take
the lock, one way to create a note and one way to record writes in the index.

A vault this user cannot write (a read-only disk, another user's folder) is
still read: every read works from an index in memory (``upkeep.py``), takes no
lock and writes nothing; every write is refused in one line that names the
folder (``vault_read_only``).

Locking has two levels: ``_held`` serialises the threads of this process (they
share one SQLite connection) and ``_locked`` takes the vault's file lock,
shared with other processes. A caller waits at most ``lock_timeout`` seconds
for the two together, however many threads queue before it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..core.clock import SYSTEM_CLOCK, Clock, format_datetime
from ..core.disk import sqlite_failure
from ..core.errors import AccessDeniedError, DataError, InvalidInputError, NotFoundError
from ..core.ids import TidGenerator
from .brief import brief_template
from .dashboard import DASHBOARD_PATH, backup_name, dashboard_state, render_dashboard
from .embeddings import EmbeddingSettings
from .files import (
    CallCancelled,
    LockBusy,
    Staged,
    VaultLock,
    atomic_write,
    fsync_dir,
    publish,
    stage,
)
from .index import Index
from .models import Handoff, Memory
from .notes import NoteError, ParsedNote, parse_text, render_note
from .records import FileRecord, Kind, classify, read_file
from .scan import Scope
from .semantic import SemanticState
from .upkeep import IndexUpkeep

if TYPE_CHECKING:
    from .sync.routes import Route

__all__ = [
    "DEFAULT_VAULT",
    "DOT_DIR",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "SYNC_CONFIG",
    "NewNote",
    "VaultBase",
    "check_limit",
    "check_offset",
    "flush_touched",
    "is_default_vault",
    "is_vault",
    "read_only_error",
    "vault_not_found",
]

DOT_DIR = ".agent-mem-vault"
INDEX_FILE = "index.sqlite3"
MAX_LIMIT = 1000
MAX_OFFSET = 2**63 - 1
"""Largest offset a page may start at: the largest integer SQLite (and PostgreSQL) hold."""
DEFAULT_VAULT = "~/agent-mem-vault"
"""The vault used when none is named (no ``--vault``, no ``AGENT_MEM_VAULT``)."""
_T = TypeVar("_T")
_INDEX_FAILED = "no note was changed (the index catches up with the notes by itself)"


def is_vault(path: str | os.PathLike[str]) -> bool:
    """Whether the folder at ``path`` is a vault: the one rule, for every command.

    A vault is a folder holding the vault's own folder ``.agent-mem-vault/``
    (index and lock) or its dashboard ``_dashboards/memory.base``; ``init``
    writes both, and so does the first write to the default vault. Either one
    is enough because each may be gone for a good reason: the index folder is
    derived and safe to delete (and a vault synced by git or a file-sync tool
    often leaves it out), while the dashboard is a note a person may delete.
    No other folder is one, however many Markdown files it holds: a command
    pointed at the wrong folder (a typo, an unset variable) must not start a
    second vault there that nobody reads.

    >>> is_vault("/tmp")  # doctest: +SKIP
    False
    """
    root = Path(path).expanduser()
    # lexists: an .agent-mem-vault *file* still claims the folder; the write
    # that finds it reports the damage (vault_damaged) instead of "no vault".
    return os.path.lexists(root / DOT_DIR) or (root / DASHBOARD_PATH).is_file()


def is_default_vault(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names the default vault, the one folder a first write may make."""
    here = Path(path).expanduser().absolute()
    default = Path(DEFAULT_VAULT).expanduser().absolute()
    return here == default or here.resolve() == default.resolve()


def vault_not_found(path: str | os.PathLike[str]) -> NotFoundError:
    """The error for a folder that is not a vault, with the command that makes one."""
    root = Path(path).expanduser().absolute()
    what = "no vault at" if not root.exists() else "not a vault:"
    return NotFoundError(
        f"{what} {root}; if this is the folder you meant, make it a vault with "
        f"'agent-mem-vault init --vault {root}', else pass the right --vault "
        "(or set AGENT_MEM_VAULT)",
        code="vault_not_found",
        path=str(root),
    )


def read_only_error(path: str | os.PathLike[str]) -> AccessDeniedError:
    """The error for a write to a vault this user can read but not write."""
    root = Path(path).expanduser().absolute()
    try:
        mounted = bool(os.statvfs(root).f_flag & os.ST_RDONLY)
    except OSError:
        mounted = False
    why = "its disk is mounted read-only" if mounted else "this user may not write there"
    return AccessDeniedError(
        f"cannot write to the vault {root}: {why}; reads work, but a write needs a vault "
        "you can write to (check the folder's owner and permissions, or pass another --vault)",
        code="vault_read_only",
        path=str(root),
    )


def _cannot_write(root: Path) -> bool:
    """Whether this user can read the vault at ``root`` but not write it: its own folder
    ``.agent-mem-vault/`` (else the vault folder), or the lock or index files in it."""
    dot = root / DOT_DIR
    if not dot.is_dir():
        return root.is_dir() and not os.access(root, os.W_OK | os.X_OK)
    if not os.access(dot, os.W_OK | os.X_OK):
        return True
    files = ("lock", INDEX_FILE, f"{INDEX_FILE}-wal", f"{INDEX_FILE}-shm")
    return any(os.path.exists(dot / f) and not os.access(dot / f, os.W_OK) for f in files)


@dataclass(slots=True)
class NewNote:
    """A note being created inside the lock: where it goes and what was written."""

    id: str
    folder: str
    records: list[FileRecord] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.id}.md"


class VaultBase:
    """One process's handle on a vault folder: lock, index and note writes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = SYSTEM_CLOCK,
        lock_timeout: float = 5.0,
        durable: bool = True,
        rescan_interval: float | None = None,
        embeddings: EmbeddingSettings | None = None,
    ) -> None:
        self.path = Path(path).expanduser().absolute()
        self.clock = clock
        self.lock_timeout = lock_timeout
        self.durable = durable
        self._lock = VaultLock(self.path / DOT_DIR / "lock", timeout=lock_timeout, clock=clock)
        self._mutex = threading.RLock()
        self._lock_budget: float | None = None
        self._upkeep = IndexUpkeep(
            self.path, self.path / DOT_DIR / INDEX_FILE, clock, self._locked, rescan_interval
        )
        self._pid = os.getpid()
        self._tids = TidGenerator(clock)
        self._dashboard_checked = False
        self._read_only: bool | None = None
        """Whether this user cannot write the vault (``_is_read_only``); None: not looked at."""
        self._staged: list[tuple[str, Staged]] = []
        """Notes written to their temp files and not yet published (``_write``, ``_commit``):
        (the note's path relative to the vault, its temp file)."""
        self._on_loop = False
        """Inside ``at_once``: a call must not wait (for the network, say) here."""
        self._cancelled: Callable[[], bool] | None = None
        """Inside ``in_turn``, until the call's first locked section: whether its client
        gave up on it (``_locked`` asks, once it has the lock)."""
        # Search by meaning (memories.py): settings from the environment unless given.
        self.embeddings = EmbeddingSettings.from_env() if embeddings is None else embeddings
        self._semantic = SemanticState()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    @property
    def rescan_interval(self) -> float | None:
        """Seconds between full rescans (one ``stat`` per note); ``None``: only on request."""
        return self._upkeep.rescan_interval

    @rescan_interval.setter
    def rescan_interval(self, value: float | None) -> None:
        self._upkeep.rescan_interval = value

    def close(self) -> None:
        """Close the index connection (it reopens on the next call) and stop watching."""
        self.stop_watching()
        with self._held():
            self._upkeep.close()

    def watch(self, wait: float = 0.0, report: Callable[[str], None] | None = None) -> bool:
        """Watch the folder for notes changed by hand (for a long-lived process such as
        the MCP server): calls then read just the notes the watcher reports instead
        of checking their namespace's notes one ``stat`` each. The watch is set up in
        the background; True if it is in place within ``wait`` seconds. Until it is
        (or where it cannot be: a vault on a network or FUSE filesystem, see
        ``watch.watchable``), calls keep checking by ``stat``. ``report`` is told,
        from the watcher's thread, why a watch could not be set up (inotify's limits:
        the setting to raise; see ``watch.unwatched``), once per new reason."""
        from .watch import NoteWatcher, watchable

        if not watchable(self.path):
            return False  # a network or FUSE filesystem: edits from elsewhere send no event
        if self._upkeep.watcher is None:
            self._upkeep.watcher = NoteWatcher(self.path, report)
        return self._upkeep.watcher.start(wait)

    def stop_watching(self) -> None:
        watcher, self._upkeep.watcher = self._upkeep.watcher, None
        if watcher is not None:
            watcher.stop()

    # -- locking ---------------------------------------------------------------------

    def _require_vault(self, *, make: bool = False, make_default: bool = False) -> None:
        """Refuse a folder that is not a vault (``is_vault``), writing nothing there,
        unless ``make`` (``init``) or ``make_default`` and it is the default vault
        (a write: the first one makes it). Finds out, once, whether this user may write
        the vault (see ``read_only_error``)."""
        if os.path.isdir(f"{self.path}/{DOT_DIR}"):
            self._is_read_only()
            return  # the vault's own folder: a vault, and nothing to make (one stat)
        if not (self.path.is_dir() and is_vault(self.path)):
            if not (make or (make_default and is_default_vault(self.path))):
                raise vault_not_found(self.path)
            self.path.mkdir(parents=True, exist_ok=True)
        elif self._is_read_only():
            return  # a vault without its index folder, which this user cannot make
        dot = self.path / DOT_DIR
        if dot.is_dir():
            return
        try:
            dot.mkdir()
        except FileExistsError:
            raise DataError(
                f"{dot} is a file, but the vault keeps its index and lock in a folder of that "
                "name; move the file away and run the command again",
                code="vault_damaged",
                path=str(dot),
            ) from None

    def _is_read_only(self) -> bool:
        """Whether this user cannot write the vault, looked at once per ``Vault``; if so,
        the index is kept in memory from then on (``IndexUpkeep.read_only``)."""
        if self._read_only is None:
            self._read_only = _cannot_write(self.path)
            if self._read_only:
                with self._held():
                    self._upkeep.close()
                    self._upkeep.read_only = True
        return self._read_only

    def _refuse_if_read_only(self) -> None:
        if self._is_read_only():
            raise read_only_error(self.path)

    @contextmanager
    def _held(self) -> Iterator[None]:
        """This process's turn at the vault (threads share the index connection).

        The time spent waiting here is taken off each wait for the file lock in
        the section, so a caller queued behind other threads still gets its
        error after ``lock_timeout`` seconds, not after the sum of their waits.
        """
        start = time.monotonic()
        if not self._mutex.acquire(timeout=self.lock_timeout):
            raise self._lock.timeout_error()
        outer = self._lock_budget
        if outer is None:
            self._lock_budget = max(0.0, self.lock_timeout - (time.monotonic() - start))
        try:
            yield
        except sqlite3.Error as exc:
            # The one place an index error leaves the vault, as an error of the tree
            # (a full disk is ``no_space``), never as a bug.
            raise sqlite_failure(exc, self._upkeep.db_path, what=_INDEX_FAILED) from exc
        finally:
            self._lock_budget = outer
            self._mutex.release()

    def at_once(self, fn: Callable[[], _T]) -> _T:
        """``fn()`` with this process's turn and the vault's file lock taken first,
        without waiting: ``LockBusy`` before ``fn`` starts (so nothing is changed)
        if another thread or process holds either, if the vault folder is not
        made yet (the first write makes it, the usual way), or if the lock file
        cannot be opened or locked (the usual path reports why, after checking
        the call's input first).

        For a caller that must not block, such as an event loop: it runs the call
        here when that costs no wait, and otherwise hands it to a thread that
        waits as usual. Inside ``fn`` every lock the vault takes is already held
        (both are re-entrant), so the call never waits for a writer; it still
        pays for its fsyncs, and a read of the index waits for SQLite only if
        something outside this package writes it (every writer of the index
        holds the vault lock), for at most the index's busy timeout (10 s).

        A call that would wait for the network (a read in a namespace that travels
        with git, which needs the remote's answer: ``sync/claim.py``) raises
        ``LockBusy`` too, before it changes anything (``_on_loop``).
        """
        if not os.path.isdir(f"{self.path}/{DOT_DIR}"):
            raise LockBusy(self.path)
        if not self._mutex.acquire(blocking=False):
            raise LockBusy(self.path)
        try:
            try:
                got = self._lock.try_acquire()
            except OSError:
                got = False  # the usual path meets the same refusal, and reports it in turn
            if not got:
                raise LockBusy(self.path)
            self._on_loop = True
            try:
                return fn()
            finally:
                self._on_loop = False
                self._lock.release()
        finally:
            self._mutex.release()

    def in_turn(self, fn: Callable[[], _T], cancelled: Callable[[], bool]) -> _T:
        """``fn()`` in this process's turn, and in the vault's file lock as any write
        waits for it (at most ``lock_timeout``); if ``cancelled()`` is true once they
        are had, nothing is changed and ``CallCancelled`` is raised.

        For a caller whose client may give up while the call waits behind
        another writer: a call given up before its write began must not be
        written later, when the lock frees and nobody waits for its answer
        (the client may already have sent it again). Once the write has begun it
        finishes, and what it wrote stays, as any write does.

        The question is asked when ``fn``'s first locked section has the file lock
        (every write takes it before it changes anything), not by holding the lock
        across all of ``fn``: a call that waits for the network between its locked
        sections (a read in a namespace that travels, ``sync/claim.py``) must not
        hold up the other writers of this machine meanwhile.
        """
        with self._held():
            if cancelled():
                raise CallCancelled
            outer, self._cancelled = self._cancelled, cancelled
            try:
                return fn()
            finally:
                self._cancelled = outer

    @contextmanager
    def one_look(self) -> Iterator[None]:
        """Several reads answered as one call: each namespace folder is checked for
        notes edited by hand once, by the first read that needs it.

        A session hook reads a namespace's brief and then its pending handoffs;
        without a watcher each read costs one ``stat`` per note of the folders it
        reads, so at 100,000 notes checking twice doubles the session's wait. A
        note edited by hand while the look lasts is seen by the next call, as if
        the edit came just after this one. Other threads wait for the look.
        """
        with self._held():
            outer = self._upkeep.look
            if outer is None:
                self._upkeep.look = set()
            try:
                yield
            finally:
                if outer is None:
                    self._upkeep.look = None

    @contextmanager
    def _locked(self, *, checked: bool = False) -> Iterator[None]:
        """The vault's file lock (the caller is inside ``_held``); ``checked``: the
        caller has just made sure the folder is a vault (``_require_vault``).

        Before it is let go, the notes the index took in meanwhile (every write, and
        every edit by hand a check found) are handed to the vault's sync, if it has
        one (``flush_touched``): the one place every write passes."""
        if not checked:
            self._require_vault()
        if self._read_only:
            yield  # the index is this process's own, in memory: nothing to share
            return
        self._lock.acquire(self._lock_budget)
        # The first section of a call ``in_turn`` runs: given up on while it waited?
        check, self._cancelled = self._cancelled, None
        if check is not None and check():
            self._lock.release()
            raise CallCancelled
        try:
            yield
        finally:
            try:
                flush_touched(self.path, self._upkeep.current)
            finally:
                self._lock.release()

    @contextmanager
    def _writing(
        self, *, sync: bool = True, scope: Sequence[Scope] = (), dashboard: bool = True
    ) -> Iterator[Index]:
        """Both locks and the index, brought up to date first (for the folders in
        ``scope``, see ``IndexUpkeep.sync``) unless ``sync=False``; the dashboard is
        written if it differs, unless ``dashboard=False`` (``doctor`` only reports)."""
        with self._held():
            # The first write to the default vault makes it; any other folder is made
            # a vault by init alone.
            self._require_vault(make_default=True)
            self._refuse_if_read_only()
            with self._locked(checked=True):
                try:
                    idx = self._upkeep.sync(scope) if sync else self._upkeep.handle()
                    if dashboard and not self._dashboard_checked:
                        self._ensure_dashboard()
                    yield idx
                finally:
                    self._discard_staged()  # a change that failed: nothing of it shows

    def _query(self, run: Callable[[Index], _T], scope: Sequence[Scope] = ()) -> _T:
        """A read from the index, after the checks for notes changed by hand in ``scope``."""
        with self._held():
            self._require_vault()  # a read never makes a vault (nor its index)
            return self._upkeep.query(run, self._upkeep.sync(scope))

    def _query_fresh(
        self,
        run: Callable[[Index], _T],
        paths: Callable[[_T], Iterable[str]],
        scope: Sequence[Scope] = (),
    ) -> _T:
        """``_query``, then each note the answer names (``paths``) is checked against the
        size and mtime it was indexed at; notes changed by hand are read again (under
        the lock) and the query re-run, so a listing never shows a stale note. A note
        the watch answers for (``IndexUpkeep.vouches``) needs no such check."""
        with self._held():
            self._require_vault()
            idx = self._upkeep.sync(scope)
            for _ in range(4):
                result = self._upkeep.query(run, idx)
                upkeep = self._upkeep
                stale = [
                    p
                    for p in paths(result)
                    if not (upkeep.vouches(p) or upkeep.stamp_matches(idx, p))
                ]
                if not stale:
                    return result
                with self._locked():
                    idx = self._upkeep.handle()
                    for path in stale:
                        self._upkeep.refresh(idx, path)
            return self._upkeep.query(run)

    def _sync_route(self, namespace: str) -> Route | None:
        """The route ``namespace``'s notes travel by (``sync/routes.py``), or None; a
        vault that does not sync pays one ``stat`` and imports nothing for it."""
        if not os.path.exists(f"{self.path}/{SYNC_CONFIG}"):
            return None
        from .sync.routes import load_config

        config = load_config(self.path)
        return None if config is None else config.route_for(namespace)

    # -- writing notes ---------------------------------------------------------------

    def _now(self) -> str:
        return format_datetime(self.clock.now())

    @contextmanager
    def _creating(self, namespace: str, kind: str) -> Iterator[tuple[Index, NewNote]]:
        """The locked section that creates one note in ``<namespace>/<kind>/``.

        The body of the ``with`` checks what it must, then writes with
        ``_write`` and adds the records to ``new.records``; on leaving, the
        namespace's brief note is made if it has none, and every record is put
        in the index. If the body raises, folders made for the note are removed
        again (they are empty), so a refused create leaves nothing behind.
        Folders are made inside the lock so that a refused create can never
        remove one that another writer is about to use.
        """
        folder = f"{namespace}/{kind}"
        with self._writing() as idx:
            created = self._make_folders(folder)
            try:
                new = NewNote(self._new_id(folder), folder)
                yield idx, new
                brief = self._ensure_brief(idx, namespace)
                if brief is not None:
                    new.records.append(brief)
            except BaseException:
                self._discard_staged()  # first: a folder with a temp file in it stays
                self._unmake_folders(created)
                raise
            made = {p.relative_to(self.path).as_posix() for p in created}
            made |= {p.parent.relative_to(self.path).as_posix() for p in created}
            self._commit(idx, new.records, frozenset("" if d == "." else d for d in made))

    def _new_id(self, folder: str) -> str:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._tids.reseed()
        while True:
            new_id = self._tids.next()
            if not (self.path / folder / f"{new_id}.md").exists():
                return new_id

    def _make_folders(self, folder: str) -> list[Path]:
        """Create a note folder and its parents if needed; returns the ones made."""
        created: list[Path] = []
        if os.path.isdir(f"{self.path}/{folder}"):
            return created  # there already, as for every note after a folder's first
        parts = folder.split("/")
        for depth in range(1, len(parts) + 1):
            current = self.path.joinpath(*parts[:depth])
            if not current.is_dir():
                current.mkdir()
                created.append(current)
                if self.durable:
                    fsync_dir(current.parent)
        return created

    @staticmethod
    def _unmake_folders(created: list[Path]) -> None:
        """Remove folders made for a write that was refused (only if still empty)."""
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                return

    def _ensure_brief(self, idx: Index, namespace: str) -> FileRecord | None:
        """Write the namespace's brief note the first time; its record, or None."""
        brief = f"{namespace}/_brief.md"
        if idx.brief_path(namespace) is not None or (self.path / brief).exists():
            return None
        text = render_note({"type": "brief", "namespace": namespace}, brief_template(namespace))
        return self._write(brief, text, "brief", namespace=namespace)

    def _write(
        self,
        path: str,
        text: str,
        kind: Kind,
        *,
        handoff: Handoff | None = None,
        memory: Memory | None = None,
        namespace: str | None = None,
        problem: str | None = None,
    ) -> FileRecord:
        """Write one note to its temp file (``files.stage``); ``_commit`` renames it into
        place with the others of the same change. The record of it, for ``_commit``
        (``problem``: see ``FileRecord.problem``).

        A change of several notes (a create that supersedes, with the namespace's
        first brief) is written whole before any of it is renamed: on a full disk
        it fails with nothing to show for it, never half made."""
        staged = stage(self.path / path, text, durable=self.durable)
        self._staged.append((path, staged))
        st = staged.stat
        return FileRecord(
            path,
            st.st_mtime_ns,
            st.st_size,
            kind,
            handoff=handoff,
            memory=memory,
            namespace=namespace,
            problem=problem,
        )

    def _publish(self) -> dict[str, str]:
        """Rename every staged note into place, in the order written; (note → its temp
        file, relative to the vault), for the watcher."""
        staged, self._staged = self._staged, []
        temps: dict[str, str] = {}
        try:
            while staged:
                path, item = staged[0]
                publish(self.path / path, item.temp, durable=False)
                temps[path] = item.temp.relative_to(self.path).as_posix()
                staged.pop(0)
        finally:
            self._staged = staged  # what was not renamed is removed by ``_writing``
        if self.durable:
            for folder in sorted({(self.path / p).parent for p in temps}):
                fsync_dir(folder)
        return temps

    def _discard_staged(self) -> None:
        """Remove the temp files of a change that failed before it was published."""
        staged, self._staged = self._staged, []
        for _path, item in staged:
            item.temp.unlink(missing_ok=True)

    def _note_from_disk(self, idx: Index, path: str) -> tuple[FileRecord, ParsedNote] | None:
        """What the note at ``path`` is now, read from disk (the truth) for a change, with
        its properties and body; None if it is gone. ``NoteError`` (or
        ``UnicodeDecodeError``) if it cannot be understood. A note whose size or mtime
        differ from the index is re-indexed, so the index follows what the caller is
        about to act on (the caller holds the lock)."""
        found = read_file(self.path, path)
        if found is None:
            self._upkeep.refresh(idx, path)
            return None
        stamp, raw = found
        try:
            text = raw.decode("utf-8")
            record = classify(path, stamp.st_mtime_ns, stamp.st_size, text)
            note = parse_text(text)
        except (NoteError, UnicodeDecodeError):
            self._upkeep.refresh(idx, path)
            raise
        if idx.file_stamp(path) != (stamp.st_mtime_ns, stamp.st_size):
            self._upkeep.refresh(idx, path)
        return record, note

    def _delete(self, idx: Index, path: str) -> None:
        """Delete one note for good (inside the locked section of a write), durably, and
        forget it in the index with its folder's new mtime."""
        target = self.path / path
        target.unlink()
        if self.durable:
            fsync_dir(target.parent)
        folder = path.rpartition("/")[0]
        try:
            with idx.transaction():
                idx.remove_file(path)
                idx.set_dir(folder, os.stat(target.parent).st_mtime_ns)
        except sqlite3.DatabaseError:
            self._upkeep.rescan_soon()  # the note is gone, which is the truth

    def _commit(
        self, idx: Index, records: list[FileRecord], folders: frozenset[str] = frozenset()
    ) -> None:
        """Publish the staged notes (``_write``), then record them, and the new mtimes of
        their folders (and of ``folders``, made for them), in one transaction."""
        temps = self._publish()
        folders = folders | {r.dir for r in records}
        try:
            with idx.transaction():
                for record in records:
                    idx.put(record)
                for rel in sorted(folders):
                    st = os.stat(self.path / rel if rel else self.path)
                    idx.set_dir(rel, st.st_mtime_ns)
            # Indexed as written: the watcher need not have them read back (see
            # ``NoteWatcher.wrote``).
            self._upkeep.wrote({r.path: temps[r.path] for r in records if r.path in temps})
        except sqlite3.DatabaseError:
            # The notes are written, and they are the truth: the caller gets its
            # answer (a handoff it read must not be lost to an index error), and
            # the index catches up from the notes at the next call.
            self._upkeep.rescan_soon()

    def _ensure_dashboard(self, *, rewrite: bool = False) -> tuple[str, str | None]:
        """Write the dashboard if it is missing or as an earlier version of the vault wrote
        it; leave one a person changed (``dashboard_state``), unless ``rewrite``: then
        theirs is kept beside it first. The caller holds the lock. Returns what was done
        (``written``, ``updated``, ``current``, ``kept`` or ``rewritten``) and where the
        person's was kept."""
        target = self.path / DASHBOARD_PATH
        try:
            current: str | None = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        except (UnicodeDecodeError, IsADirectoryError):
            current = ""  # not the vault's text, whatever it is: a person's
        state = dashboard_state(current)
        self._dashboard_checked = True
        if state == "current":
            return "current", None
        if state == "changed" and not rewrite:
            return "kept", None
        target.parent.mkdir(exist_ok=True)
        backup = None
        if state == "changed":
            taken = {p.name for p in target.parent.iterdir()}
            backup = f"{target.parent.name}/{backup_name(taken)}"
            try:
                os.link(target, self.path / backup)  # the very file, under a second name
            except OSError:  # a filesystem without hard links
                shutil.copy2(target, self.path / backup)
            if self.durable:
                fsync_dir(target.parent)
        atomic_write(target, render_dashboard(), durable=self.durable)
        outcome = "written" if state == "missing" else "rewritten" if backup else "updated"
        return outcome, backup


SYNC_CONFIG = ".agent-mem-vault-sync/config.json"
"""The file whose presence makes a vault synced (``sync/routes.py``; relative to the
vault). Looked for here, so that a vault without it imports no sync code."""


def flush_touched(root: Path, idx: Index | None) -> None:
    """Hand the notes ``idx`` stored or removed since the last call to the vault's sync
    (its journal, then its background syncer), if the vault has one; the caller holds
    the vault lock. A vault without sync pays one ``stat`` per locked section that
    changed the index, and nothing more."""
    if idx is None or not idx.touched:
        return
    touched, idx.touched = idx.touched, set()
    if not os.path.exists(f"{root}/{SYNC_CONFIG}"):
        return
    from .sync.journal import note_changes

    note_changes(root, touched)


def check_limit(limit: object) -> int:
    """``limit`` if it is a whole number from 1 to ``MAX_LIMIT``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(
            f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}",
            code="invalid_limit",
            field="limit",
        )
    return limit


def check_offset(offset: object) -> int:
    """``offset`` if it is a whole number from 0 to ``MAX_OFFSET`` (where a page starts)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise InvalidInputError(
            f"offset must be a whole number from 0 to {MAX_OFFSET}, not {offset!r}",
            code="invalid_offset",
            field="offset",
        )
    return offset
