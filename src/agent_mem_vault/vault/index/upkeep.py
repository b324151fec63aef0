"""Keeping one process's index handle usable and in step with the folder.

The service asks for the index through ``IndexUpkeep`` and never opens it
itself, so that one place decides when to migrate, when to rebuild (missing,
damaged, or written by a newer version), when a cheap folder check is enough
and when a full rescan is due. A forked child gets a fresh connection. No
ordinary call scans the whole vault: see ``scan.py`` for what each checks.

A vault this user may read but not write (a read-only disk, another user's
folder) is read all the same: ``read_only`` makes the index a copy in this
process's memory, kept up to date from the notes by the same checks, with no
lock taken, no keeper asked or started, and nothing written beside the notes.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from ...core.clock import Clock, format_datetime
from ..folder import repairs
from ..folder.records import read_record
from .db import Index, IndexDamaged, is_damage
from .keeper_link import ASK_FROM, START_FROM, KeeperLink, Told
from .scan import (
    Progress,
    ScanStats,
    Scope,
    Stamps,
    apply_told,
    changed_dirs,
    rebuild_tree,
    reread,
    reread_freed,
    scan_tree,
    stale_dirs,
    sync_changed,
)
from .watch import NoteWatcher

__all__ = ["IndexUpkeep"]

_T = TypeVar("_T")
_ALL = "all"
"""In ``_checked``: the keeper vouched for every folder since the watcher began."""


class IndexUpkeep:
    """The index of one vault, for one process.

    ``locked`` is the vault's lock as a context manager (re-entrant within a
    thread); every change to the index happens inside it.
    """

    def __init__(
        self,
        root: Path,
        db_path: Path,
        clock: Clock,
        locked: Callable[[], AbstractContextManager[None]],
        rescan_interval: float | None,
    ) -> None:
        self.root = root
        self.db_path = db_path
        self.clock = clock
        self.locked = locked
        self.rescan_interval = rescan_interval
        self._index: Index | None = None
        self._file_id: tuple[int, int] | None = None
        self._pid = os.getpid()
        self._last_full_scan: datetime | None = None
        self._rescan_now = False
        self.watcher: NoteWatcher | None = None
        self.keeper = KeeperLink(root)
        self._checked: set[Scope | str | None] = set()
        """What was checked by stat since the watcher (of ``_checked_gen``) began."""
        self._checked_gen = -1
        self.look: set[Scope] | None = None
        """Inside ``Vault.one_look``: the scopes checked by stat since the look began."""
        self._vouching = False
        """Whether the last ``sync`` was answered by a settled watch (see ``vouches``)."""
        self.read_only = False
        """This user cannot write the vault: the index lives in memory (see above)."""

    @property
    def current(self) -> Index | None:
        """The index this process has open, if any (not opened for asking)."""
        return self._index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None

    def handle(self) -> Index:
        """The open index, migrated; rebuilt if missing, damaged or from a newer version."""
        if self.read_only:
            return self._index_in_memory()
        if self._index is not None and self._pid == os.getpid():
            if self._same_file():
                return self._index
            # ``reindex`` in another process replaced the file: this connection
            # would go on reading (and writing) the old one, unseen by all others.
            self._index.close()
            self._index = None
        if self._pid != os.getpid():
            # A forked child must not use its parent's SQLite connection.
            self._pid = os.getpid()
            self._index = None
        # Which file this is, seen before it is opened: if ``reindex`` replaces it
        # meanwhile, the next call sees a different file and opens it again.
        file_id = self._stat_file()
        idx, rebuilt = self._open()
        if not rebuilt:
            self._opened(idx, file_id)
        return idx

    def _index_in_memory(self) -> Index:
        """The index of a vault this user cannot write: the index file copied into memory
        (or, if there is none to read, built from the notes), migrated here."""
        if self._index is not None and self._pid == os.getpid():
            return self._index
        self._pid = os.getpid()
        idx, _rebuilt = self._open()
        self._index = idx
        return idx

    def _open(self) -> tuple[Index, bool]:
        """The index opened (in memory when ``read_only``) and migrated; (its handle,
        True) when it had to be rebuilt from the notes instead (``rebuild`` has kept it)."""
        try:
            idx = Index(self.db_path, in_memory=self.read_only)
            if idx.pending_migrations():
                with self.locked():
                    idx.migrate(format_datetime(self.clock.now()))
                    if not idx.dirs():
                        with idx.transaction():
                            rebuild_tree(self.root, idx, ScanStats())
                            self.mark_full_scan(idx)
        except (IndexDamaged, sqlite3.DatabaseError) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and not is_damage(exc):
                raise  # a full disk, an I/O error: reported, and the index kept
            with self.locked():
                return self.rebuild(why=_why(exc)), True
        return idx, False

    def _opened(self, idx: Index, file_id: tuple[int, int] | None = None) -> None:
        self._index = idx
        self._file_id = file_id or self._stat_file()

    def _stat_file(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db_path)
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino)

    def _same_file(self) -> bool:
        """Whether the index file is still the one this process opened."""
        current = self._stat_file()
        return current is not None and current == self._file_id

    def rebuild(self, progress: Progress | None = None, *, why: str | None = None) -> Index:
        """Build the index again from the notes (the caller holds the lock).

        It is built in a file of its own, ``index.sqlite3.new``, and renamed over the
        index only once complete: a rebuild that fails (a full disk, a killed
        process) leaves the index as it was, never empty. ``why`` (an automatic
        rebuild: the index was damaged) is recorded for ``doctor``. Read-only: a new
        index in memory, not a copy of the file (it may be what failed).
        """
        if self.read_only:
            self.close()
            idx = self._built(Index(self.db_path, in_memory=True, copy=False), progress)
            self._opened(idx)
            return idx
        scratch = Path(f"{self.db_path}.new")
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{scratch}{suffix}").unlink(missing_ok=True)
        try:
            self._built(Index(scratch, scratch=True), progress).close()
        except BaseException:
            scratch.unlink(missing_ok=True)
            raise
        self.close()
        # The old write-ahead log belongs to the old file: it goes first, so that no
        # connection ever reads its pages into the new one.
        for suffix in ("-wal", "-shm"):
            Path(f"{self.db_path}{suffix}").unlink(missing_ok=True)
        os.replace(scratch, self.db_path)
        if why is not None:
            rel = self.db_path.relative_to(self.root).as_posix()
            repairs.record(self.root, self.clock, "rebuilt", rel, why)
        idx = Index(self.db_path)
        self._opened(idx)
        return idx

    def _built(self, idx: Index, progress: Progress | None) -> Index:
        """``idx`` (new and empty) migrated and filled from every note; closed if that fails."""
        try:
            idx.migrate(format_datetime(self.clock.now()))
            with idx.transaction():
                rebuild_tree(self.root, idx, ScanStats(), progress)
                self.mark_full_scan(idx)
        except BaseException:
            idx.close()
            raise
        return idx

    def query(self, run: Callable[[Index], _T], idx: Index | None = None) -> _T:
        """Run a query; if the index turns out damaged, rebuild it and run it on the new one.

        ``idx`` is the index ``sync`` returned a moment ago in the same call: whether
        another process replaced the file was looked at then, and is not again.
        """
        try:
            return run(self.handle() if idx is None else idx)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            why = _why(exc)
        with self.locked():
            return run(self.rebuild(why=why))

    def sync(self, scope: Sequence[Scope] = ()) -> Index:
        """Bring the index up to date for a call that reads the folders in ``scope``.

        Every call checks the mtime of each known folder (notes added, deleted
        or saved atomically anywhere); the notes of the folders in ``scope``
        (the namespace the call reads) are also checked one ``stat`` each, for
        notes edited in place. A full rescan runs only when the index is new,
        after a failed index write, or every ``rescan_interval`` seconds if
        one was set (none by default).
        """
        idx = self.handle()
        self._vouching = False
        try:
            if self.full_scan_due(idx):
                with self.locked():
                    if self.full_scan_due(idx):
                        self.full_scan(idx, ScanStats())
                return idx
            watcher = self.watcher
            changes = watcher.take() if watcher is not None else None
            if watcher is not None and changes is not None:
                self._sync_watched(idx, watcher, changes, scope)
                self._vouching = watcher.settled
                return idx
            if self.look is not None:
                scope = [s for s in scope if s not in self.look]
            asking = scope and not self.read_only and self._worth_asking(idx, scope)
            told = self.keeper.ask() if asking else None
            if told is not None:
                self._apply_told(idx, told)
            else:
                self._sync_by_stat(idx, scope)
            if self.look is not None:
                self.look.update(scope)
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise
            with self.locked():
                idx = self.rebuild(why=_why(exc))
        return idx

    def wrote(self, temps: dict[str, str]) -> None:
        """Notes (relative path → the temp file renamed onto it) this process just wrote
        and indexed: the watcher's report of them is not read back (see
        ``NoteWatcher.wrote``)."""
        if self.watcher is not None and temps:
            self.watcher.wrote(temps)

    def _worth_asking(self, idx: Index, scope: Sequence[Scope], folders: bool = True) -> bool:
        """Whether asking the keeper is cheaper than checking by ``stat``: a check by
        stat makes one per known folder (with ``folders``) and one per note of the
        folders of ``scope`` (as the index knows them); from ``ASK_FROM`` of them the
        keeper is asked (at every check if ``AGENT_MEM_VAULT_KEEPER=always``)."""
        if self.keeper.always:
            return True
        work = idx.dir_count() if folders else 0
        for folder, leaf in scope:
            for directory in idx.dirs_under(folder):
                if work >= ASK_FROM:
                    return True
                if directory.rpartition("/")[2] == leaf:
                    work += idx.dir_signature(directory)[0]
        return work >= ASK_FROM

    def _sync_by_stat(self, idx: Index, scope: Sequence[Scope]) -> None:
        """Without a watcher or a keeper: folder mtimes, and one ``stat`` per note of
        the folders in ``scope``; a keeper is started if that was many notes."""
        looked: dict[str, Stamps] = {}
        counted: list[int] = []
        dirs = changed_dirs(self.root, idx)
        if dirs is not None:
            for folder in scope:
                found = stale_dirs(self.root, idx, folder, looked, counted)
                dirs.extend(d for d in found if d not in dirs)
        if dirs is None or dirs:
            with self.locked():
                self._sync_locked(idx, dirs, looked)
        if sum(counted) >= START_FROM and not self.read_only:
            self.keeper.start()

    def _apply_told(self, idx: Index, told: Told) -> None:
        """Apply what the keeper could not (it found the vault lock taken)."""
        if told.files or told.dirs:
            with self.locked(), idx.transaction():
                apply_told(self.root, idx, told.dirs, told.files)

    def _sync_watched(
        self,
        idx: Index,
        watcher: NoteWatcher,
        changes: tuple[set[str], set[str]],
        scope: Sequence[Scope],
    ) -> None:
        """``sync`` with a watcher: apply the changes it reported; check by stat only
        what was not checked since it began (the vault's folders once, each
        namespace a call reads once).

        A new folder is reported once the watch covers it (then synced whole, like
        any folder reported); until then (``settled`` is False, a moment) a
        namespace checked by stat is not counted as checked, nor what the keeper
        vouched for: a note made in a folder not yet watched would go unseen.
        """
        if watcher.generation != self._checked_gen:
            self._checked, self._checked_gen = set(), watcher.generation
        settled = watcher.settled
        files, folders = changes
        todo = [s for s in scope if s not in self._checked]
        first = None not in self._checked
        if _ALL in self._checked:
            first, todo = False, []
        worth = (
            (first or todo) and not self.read_only and self._worth_asking(idx, todo, folders=first)
        )
        told = self.keeper.ask() if worth else None
        if told is not None:
            # The keeper vouches for everything before now, this watcher for
            # everything since it began: nothing is left to check by stat.
            files = files | told.files
            folders = folders | told.dirs
            first, todo = False, []
            if settled:
                self._checked.add(_ALL)
        dirs = changed_dirs(self.root, idx) if first else []
        if dirs is None:
            dirs = [""]
        counted: list[int] = []
        for item in todo:
            found = stale_dirs(self.root, idx, item, counted=counted)
            dirs.extend(d for d in found if d not in dirs)
        if sum(counted) >= START_FROM and not self.read_only:
            self.keeper.start()  # for the next process that starts
        files = {f for f in files if not self._held_as_is(idx, f)}
        if dirs or files or folders:
            try:
                with self.locked(), idx.transaction():
                    sync_changed(self.root, idx, [d for d in dirs if d not in folders], ScanStats())
                    apply_told(self.root, idx, folders, files)
            except BaseException:
                # Told again at the next call, and every folder checked by stat again.
                watcher.tell_again(files, folders)
                self._checked.clear()
                raise
        if settled:
            self._checked.update(todo)
        self._checked.add(None)

    def _held_as_is(self, idx: Index, path: str) -> bool:
        """Whether the note the watch told of at ``path`` is in the index as it is now
        on disk, so nothing is to be written for it (looked at without the lock).

        Another server's write is told to every server watching the vault, and that
        writer indexed it before it let go of the lock: read here, the note says
        what the index holds, and the lock (which every other writer waits for) is
        not taken for it. The note is read, not just stat'ed: an edit within the
        mtime clock's tick, same size, is told by the watch and differs in content.
        """
        try:
            record = read_record(self.root, path)
        except (OSError, ValueError):
            return False  # read again under the lock, which reports what is wrong
        if record is None:
            return idx.file_stamp(path) is None
        return record.repair is None and idx.holds(record)

    def _sync_locked(
        self,
        idx: Index,
        found: list[str] | None,
        looked: dict[str, Stamps],
    ) -> None:
        """Apply, under the lock, the changes ``sync`` found (``found``; ``None``: the
        index knows no folder yet, so everything is scanned).

        The folders are not checked again: syncing a folder compares each note with
        the index, so one another process synced meanwhile costs little, and a folder
        whose mtime moved since it was looked at (``looked``) is looked at afresh.
        """
        if found is None or not idx.dirs():
            self.full_scan(idx, ScanStats())
            return
        with idx.transaction():
            sync_changed(self.root, idx, found, ScanStats(), looked)

    def full_scan(self, idx: Index, stats: ScanStats) -> None:
        """One ``stat`` per note; reads only notes whose size or mtime changed (under the lock)."""
        with idx.transaction():
            scan_tree(self.root, idx, "", stats)
            reread_freed(self.root, idx)
            self.mark_full_scan(idx)

    def rescan_soon(self) -> None:
        """Make the next ``sync`` a full rescan (an index update failed after a write)."""
        self._rescan_now = True

    def full_scan_due(self, idx: Index) -> bool:
        if self._rescan_now:
            return True
        if self.rescan_interval is None:
            return False
        now = self.clock.now()
        last = self._last_full_scan
        if last is not None and (now - last).total_seconds() < self.rescan_interval:
            return False
        # Another process may have scanned since this one last looked.
        stored = idx.get_meta("last_full_scan")
        if stored is None:
            return True
        self._last_full_scan = datetime.fromisoformat(stored.replace("Z", "+00:00"))
        return (now - self._last_full_scan).total_seconds() >= self.rescan_interval

    def mark_full_scan(self, idx: Index) -> None:
        now = self.clock.now()
        self._last_full_scan = now
        self._rescan_now = False
        idx.set_meta("last_full_scan", format_datetime(now))

    def vouches(self, path: str) -> bool:
        """Whether the last ``sync`` leaves nothing to check about the note at ``path``.

        True when that sync was answered by a settled watch, and the note's folder was
        checked (by stat, or by the keeper) since the watch began: what happened to it
        before is in the index, what happened since was reported and applied. A
        ``stat`` of the note would tell nothing more.
        """
        if not self._vouching:
            return False
        checked = self._checked
        if _ALL in checked:
            return True
        directory = path.rpartition("/")[0]
        leaf = directory.rpartition("/")[2]
        for item in checked:
            if isinstance(item, tuple) and item[1] == leaf:
                folder = item[0]
                if not folder or directory.startswith(folder + "/"):
                    return True
        return False

    def stamp_matches(self, idx: Index, path: str) -> bool:
        """True if the note at ``path`` has the size and mtime the index read it at."""
        try:
            st = os.stat(self.root / path)
        except FileNotFoundError:
            return False
        return idx.file_stamp(path) == (st.st_mtime_ns, st.st_size)

    def refresh(self, idx: Index, path: str) -> None:
        """Read one note again and store what it says now (the caller holds the lock)."""
        with idx.transaction():
            reread(self.root, idx, path)
            reread_freed(self.root, idx)


def _why(exc: BaseException) -> str:
    """Why the index was rebuilt, for ``doctor``: what SQLite said of it."""
    if isinstance(exc, IndexDamaged) and ("migrations" in str(exc) or "layout" in str(exc)):
        return f"it was written by a newer or older version ({exc})"
    return f"it was damaged ({' '.join(str(exc).split())})"
