"""What every vault operation stands on: the lock, the index, and the port to sync.

``VaultBase`` holds one process's view of a vault folder. The operations
(``handoffs.py``, ``memories.py``, and ``Vault`` itself in ``service/vault.py``)
are written on top of the few methods here and in ``writes.py``, so that there
is one way to take the lock, one way to create a note and one way to record
writes in the index and tell the vault's sync (``_port``, ``port.py``).

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
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.disk import sqlite_failure
from ...core.errors import DataError
from ...core.ids import TidGenerator
from ..folder.files import (
    CallCancelled,
    LockBusy,
    Staged,
    VaultLock,
    atomic_write,
    fsync_dir,
)
from ..folder.layout import (
    DOT_DIR,
    INDEX_FILE,
    cannot_write,
    is_default_vault,
    is_vault,
    read_only_error,
    vault_not_found,
)
from ..format.dashboard import DASHBOARD_PATH, backup_name, dashboard_state, render_dashboard
from ..format.models import Handoff, Memory, Origin
from ..format.writer import writer_properties
from ..index.db import Index
from ..index.embeddings import EmbeddingSettings
from ..index.scan import Scope
from ..index.semantic import SemanticState
from ..index.upkeep import IndexUpkeep
from .port import NO_SYNC, SyncPort

__all__ = ["VaultBase"]

_T = TypeVar("_T")
N = TypeVar("N", bound=Handoff | Memory)
_INDEX_FAILED = "no note was changed (the index catches up with the notes by itself)"


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
        from ..index.watch import NoteWatcher, watchable

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
            self._read_only = cannot_write(self.path)
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
        every edit by hand a check found) are told to the vault's sync (``_port``):
        the one place every write passes."""
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
                self._feed()
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

    def held_back(self, path: str) -> str | None:
        """Why the note at ``path`` (relative to the vault, as ``Handoff.path`` and
        ``Memory.path`` give it) stays on this machine rather than going to its remote,
        in one line for whoever wrote it: a secret it gained here, until
        ``agent-mem-vault redact`` takes it out. None: it may travel, nothing does, or
        it stays because it says ``private: true``, as asked."""
        port = self._port()
        if port is NO_SYNC:
            return None
        try:
            text = (self.path / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return port.hold_back(self, path, text)

    def _stamped(self, namespace: str) -> tuple[dict[str, str], Origin | None]:
        """The writer pair a note created now in ``namespace`` carries (``format/writer.py``)
        and who that is: the person and machine where it travels, nothing where not."""
        writer = self._port().writer(namespace)
        return writer_properties(writer), writer

    def _with_origin(self, note: N) -> N:
        """``note`` (a handoff or a memory a view shows alone) with who wrote its text."""
        origin = self._port().origin(note.path)
        return note if origin is None else replace(note, origin=origin)

    def _with_origins(self, notes: Sequence[N]) -> tuple[N, ...]:
        """``notes`` (a listing) each with who wrote its text, where somebody is known."""
        found = self._port().origins([n.path for n in notes]) if notes else {}
        return tuple(
            n if found.get(n.path) is None else replace(n, origin=found[n.path]) for n in notes
        )

    def quarantined_paths(self, notes: Sequence[Handoff | Memory]) -> set[str]:
        """The paths of ``notes`` no agent is given: on a route whose policy is ``require``,
        arrived with a text no listed key stands behind (``Origin.trusted``). A note
        changed here and not sent yet is this machine's own writing, and is given."""
        spaces: dict[str, list[str]] = {}
        for note in notes:
            spaces.setdefault(note.namespace, []).append(note.path)
        out: set[str] = set()
        for namespace, paths in spaces.items():
            guard = self._port().guard(namespace)
            if guard is not None:
                out.update(p for p, origin in guard(paths).items() if origin.sent)
        return out

    def _port(self) -> SyncPort:
        """What the operations ask of the vault's sync and tell it (``port.py``). Here:
        ``NO_SYNC``; the service plugs sync in where a route is configured
        (``vault/plug.py``), so this layer never imports it."""
        return NO_SYNC

    def _feed(self) -> None:
        """Tell the sync the notes the index stored or removed since the last call (the
        caller holds the vault lock)."""
        idx = self._upkeep.current
        if idx is None or not idx.touched:
            return
        touched = idx.take_touched()
        if touched:
            self._port().changed(touched)

    def _discard_staged(self) -> None:
        """Remove the temp files of a change that failed before it was published."""
        staged, self._staged = self._staged, []
        for _path, item in staged:
            item.temp.unlink(missing_ok=True)

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
