"""The vault keeper: one process per vault that watches the notes, so other processes need not.

Without it, every fresh process (a CLI command, a session hook, an MCP server
starting) must ``stat`` each note of the namespace it reads to see notes a
person edited in place (Obsidian saves in place, which leaves the folder's
mtime alone): 10,000 notes cost 30–50 ms on a small machine, at every session
start. The keeper pays for that once: it watches every folder of the vault
(``watch.NoteWatcher``, inotify / FSEvents), applies what changes to the index
as it happens, and answers each process that asks whether the index is
current.

The answer must cover every change made before the question, and an event
can sit in the operating system's queue for a moment before the watcher
reads it. So every look at the watch is a *barrier* (``NoteWatcher._drain``):
on Linux a non-blocking read of the inotify queue, which holds every change
made before the read; elsewhere the watcher makes a file with a new name in a
watched folder of its own, and reads events until that file's event arrives
(the queue is in order, so every change made before the question has been read
by then, and none is dropped: watchfiles drops what it gathered when a wait
times out, so no wait is left to time out). The keeper applies them all to the index
(under the vault lock) and answers ``{"ok": true}``. If the lock is held (by
the asking process itself, inside a write, or by another writer) the keeper
answers with the notes and folders still to apply, and the asking process
applies them under its own lock. Until its first full check of the vault is
done, and while a new folder waits to be watched (a new namespace: a moment,
see ``watch.py``), it answers ``{"ok": false}`` and the caller checks by
``stat`` itself.

Started by the first process that paid for a namespace of at least
``START_FROM`` notes (detached, in its own session); it leaves after
``IDLE_ENV`` seconds without a question (default 1800), or when its socket or
the vault goes. ``agent-mem-vault keeper`` runs one in the foreground, shows
it, or stops it. ``AGENT_MEM_VAULT_KEEPER=off`` turns it off: then nothing
connects or starts one. A process asks it only where a question is cheaper
than checking by ``stat`` (``ASK_FROM``).

The keeper holds an ``flock`` on ``.agent-mem-vault/keeper.lock`` for its life
(so there is one per vault, and a killed one is seen at once) and writes its
pid there. It listens in the user's private runtime folder (``core.runtime``),
on a socket named after the vault's path: a process asks only there, so only a
keeper of its own user can answer, and trusts only an answer that names its
own vault folder (device and inode) and its own version (``code_key``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.clock import SYSTEM_CLOCK
from ...core.errors import UnavailableError
from ..folder.files import VaultLock
from ..folder.layout import INDEX_FILE
from .keeper_link import (
    ASK_TIMEOUT,
    LOCK_NAME,
    Told,
    _dot,
    _identity,
    code_key,
    socket_for,
)
from .scan import ScanStats, apply_told, folder_signature, sync_changed
from .upkeep import IndexUpkeep
from .watch import NoteWatcher, watchable

if TYPE_CHECKING:
    import socket

__all__ = ["IDLE_ENV", "run_keeper"]

IDLE_ENV = "AGENT_MEM_VAULT_KEEPER_IDLE"
"""Seconds the keeper waits for a question before it leaves (default 1800)."""
WATCH_SETUP_LIMIT = 60.0
"""Seconds the keeper waits for its watch to be set up before it gives up and leaves."""
QUIET_TICK = 4.0
"""The longest the keeper goes without a look at the watch when nothing changes."""
TICK = 0.25
"""Seconds between the keeper's looks at the watcher when nobody asks."""

CHECK_EVERY = 600.0
"""Seconds of use between two checks of every note against the index: a safety net
for events the operating system lost."""
BURST = 1000
"""Changes told within ``BURST_WINDOW`` seconds from which the keeper checks
everything again: a burst that fills the kernel's queue of events (16,384 by
default on Linux) loses events, and watchfiles does not pass that notice on."""
BURST_WINDOW = 2.0

_UNSURE = -2
"""``ready_gen`` after a burst: no watch generation matches it."""


class _Keeper:
    """The watcher, the index and the questions of one keeper process."""

    def __init__(
        self, root: Path, sock_path: Path, idle: float, feed: Callable[[set[str]], None]
    ) -> None:
        self.root = root
        self.feed = feed
        self.root_id = _identity(root)
        self.sock_path = sock_path
        self.idle = idle
        self.lock = VaultLock(_dot(root) / "lock", timeout=5.0)
        self.upkeep = IndexUpkeep(root, _dot(root) / INDEX_FILE, SYSTEM_CLOCK, self._locked, None)
        self.watcher = NoteWatcher(root)
        self.pending = Told()
        self.ready_gen = -1
        """The watch generation whose start the index was checked against; ready when
        it is the watcher's current one."""
        self.checked_at = 0.0
        self.bursts = 0
        self.recent: deque[tuple[float, int]] = deque()
        """(when, how many) changes each look at the watcher found, for ``BURST``."""
        self.checks = 0
        self.checking = False
        self.last_question = time.monotonic()
        self.stopping = False
        self.answered = 0

    @contextlib.contextmanager
    def _locked(self, wait: float | None = None) -> Iterator[None]:
        self.lock.acquire(wait)
        try:
            yield
        finally:
            try:
                # What the watch applied travels too, in a synced vault (``feed``).
                idx = self.upkeep.current
                if idx is not None and idx.touched:
                    self.feed(idx.take_touched())
            finally:
                self.lock.release()

    @property
    def checked(self) -> bool:
        """Watching, checked since the watch began, no check running or due."""
        return (
            self.watcher.active
            and self.ready_gen == self.watcher.generation
            and not self.checking
            and time.monotonic() < self.checked_at + CHECK_EVERY
        )

    @property
    def ready(self) -> bool:
        """Checked, and no new folder waits to be watched (then it is told and applied)."""
        return self.checked and self.watcher.settled

    # -- keeping the index current ---------------------------------------------------

    def check_everything(self, listener: socket.socket) -> None:
        """Every folder and note compared with the index (one ``stat`` each, without
        the lock), then what differs synced under it: when the watch (re)starts,
        after a burst of changes, and every ``CHECK_EVERY`` seconds of use.

        Questions are answered between folders meanwhile, "not ready" (a caller
        checks by ``stat`` rather than wait for this).
        """
        gen = self.watcher.generation
        self.drain()  # changes told from now on are applied on top
        bursts = self.bursts
        self.checking = True
        try:
            idx = self.upkeep.handle()
            known = idx.dirs()
            signatures = idx.dir_signatures()
            stale = []
            for directory, mtime in known.items():
                self.answer_waiting(listener)
                on_disk = folder_signature(self.root, directory, mtime)
                if on_disk != signatures.get(directory, (0, 0)):
                    stale.append(directory)
            with self._locked_soon(listener):
                idx = self.upkeep.handle()
                if not known or not idx.dirs():
                    self.upkeep.full_scan(idx, ScanStats())
                elif stale:
                    with idx.transaction():
                        sync_changed(self.root, idx, stale, ScanStats())
        finally:
            self.checking = False
        self.checked_at = time.monotonic()
        self.checks += 1
        if self.bursts == bursts:  # else a burst came meanwhile: check again
            self.ready_gen = gen

    @contextlib.contextmanager
    def _locked_soon(self, listener: socket.socket) -> Iterator[None]:
        """The vault lock, asked for again and again (answering questions meanwhile)
        rather than waited on: a caller may hold it while it asks."""
        deadline = time.monotonic() + 30
        while True:
            try:
                self.lock.acquire(0.0)
                break
            except UnavailableError:
                if time.monotonic() > deadline:
                    raise
                self.answer_waiting(listener)
                time.sleep(0.02)
        try:
            yield
        finally:
            self.lock.release()

    def drain(self) -> bool:
        """Add what the watcher has told since the last look to ``pending``; False if
        the watch broke."""
        changes = self.watcher.take()
        if changes is None:
            return False
        files, dirs = changes
        self.pending.files |= files
        self.pending.dirs |= dirs
        now = time.monotonic()
        if files or dirs:
            self.recent.append((now, len(files) + len(dirs)))
        while self.recent and self.recent[0][0] < now - BURST_WINDOW:
            self.recent.popleft()
        if sum(n for _t, n in self.recent) >= BURST:
            # The kernel's queue of events may have overflowed (watchfiles drops that
            # notice): vouch for nothing until everything is checked again.
            self.recent.clear()
            self.ready_gen = _UNSURE
            self.bursts += 1
        return True

    def apply(self, wait: float) -> bool:
        """Apply ``pending`` to the index if the vault lock comes within ``wait`` seconds."""
        if not self.pending.files and not self.pending.dirs:
            return True
        try:
            with self._locked(wait):
                idx = self.upkeep.handle()
                with idx.transaction():
                    apply_told(self.root, idx, self.pending.dirs, self.pending.files)
        except UnavailableError:
            return False
        self.pending = Told()
        return True

    def catch_up(self, wait: float) -> Told | None:
        """Everything changed before now: applied (an empty ``Told``), left for the
        caller (the lock was taken), or None if this keeper cannot vouch for it."""
        if self.checked and not self.watcher.settled:
            self.drain()  # a new watch may be in place to take over (and tell new folders)
        # Each look at the watcher is a barrier (``NoteWatcher.take``).
        if not self.ready or not self.drain() or not self.ready:
            return None
        if self.apply(wait):
            return Told()
        return Told(set(self.pending.files), set(self.pending.dirs))

    # -- the loop ----------------------------------------------------------------

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("stop"):
            self.stopping = True
            return {"ok": True}
        if request.get("status"):
            self.drain()  # a folder made just now makes it unready: say so
            return {
                "ok": True,
                "ready": self.ready,
                "answered": self.answered,
                "checks": self.checks,
                "key": code_key(),
            }
        self.last_question = time.monotonic()
        self.answered += 1
        told = self.catch_up(wait=0.0)
        if told is None:
            return {"ok": False}
        return {
            "ok": True,
            "key": code_key(),
            "root": self.root_id,
            "files": sorted(told.files),
            "dirs": sorted(told.dirs),
        }

    def still_wanted(self, inode: int) -> bool:
        """False once the keeper should leave: stopped, idle, or its socket or vault gone."""
        if self.stopping or time.monotonic() - self.last_question > self.idle:
            return False
        try:
            same_socket = os.stat(self.sock_path).st_ino == inode
        except OSError:
            return False
        return same_socket and _dot(self.root).is_dir() and _identity(self.root) == self.root_id

    def serve(self, listener: socket.socket, inode: int) -> None:
        import select

        inactive_since: float | None = None
        quiet = TICK
        while self.still_wanted(inode):
            if not self.watcher.active and not self.watcher.start(wait=TICK):
                # Being set up (at first, or again after it broke): answer "not ready".
                inactive_since = inactive_since or time.monotonic()
                if time.monotonic() - inactive_since > WATCH_SETUP_LIMIT:
                    return  # no watch possible here: callers check by stat
                self.answer_waiting(listener)
                continue
            inactive_since = None
            if not self.checked:
                # A long write (``reindex``?) holding the vault: try again next time round.
                with contextlib.suppress(UnavailableError):
                    self.check_everything(listener)
                continue
            # While new folders wait for the new watch, look at it more often; when
            # nothing changes, less and less often (each look makes a mark file).
            tick = quiet if self.watcher.settled else TICK / 10
            readable, _w, _x = select.select([listener], [], [], tick)
            if readable:
                self.answer_one(listener)
                continue
            before = len(self.pending.files) + len(self.pending.dirs)
            if not self.drain():
                return
            if len(self.pending.files) + len(self.pending.dirs) > before:
                quiet = TICK
            else:
                quiet = min(quiet * 2, QUIET_TICK)
            if self.pending.files or self.pending.dirs:
                # Apply as changes come, so that a question finds nothing left to do.
                self.apply(wait=0.0)

    def answer_waiting(self, listener: socket.socket) -> None:
        """Answer the questions already waiting, without waiting for more."""
        import select

        while select.select([listener], [], [], 0)[0]:
            self.answer_one(listener)

    def answer_one(self, listener: socket.socket) -> None:
        try:
            conn, _addr = listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(ASK_TIMEOUT)
            try:
                data = b""
                while not data.endswith(b"\n") and len(data) < 4096:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                request = json.loads(data)
                reply = self.answer(request if isinstance(request, dict) else {})
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except (OSError, ValueError):
                return


def run_keeper(
    root: Path, idle: float | None = None, feed: Callable[[set[str]], None] | None = None
) -> int:
    """Keep the index of the vault at ``root`` current until idle, stopped or gone;
    ``feed`` is told the notes each locked section of it stored or removed (the
    vault's sync, wired by ``vault/plug.py``; none: nobody is told).

    Returns 0 when it leaves, 0 at once if another keeper holds the vault, 1 if
    the vault or a private runtime folder is missing.
    """
    import signal
    import socket

    root = root.expanduser().absolute()
    if idle is None:
        idle = float(os.environ.get(IDLE_ENV, "1800"))
    dot = _dot(root)
    if not dot.is_dir():
        print(f"agent-mem-vault keeper: no vault at {root}", file=sys.stderr)
        return 1
    if not watchable(root):
        print(
            f"agent-mem-vault keeper: {root} is not on a local filesystem; a watch would "
            "miss changes made from other machines, so calls check by stat",
            file=sys.stderr,
        )
        return 1
    lock_fd = os.open(dot / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # A moment's grace: someone probing the lock (``keeper_status``) holds it briefly.
        for _ in range(10):
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                time.sleep(0.01)
        else:
            return 0  # another keeper has this vault
        try:
            sock_path = socket_for(root, create=True)
        except PermissionError as exc:
            print(f"agent-mem-vault keeper: {exc}", file=sys.stderr)
            return 1
        sock_path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(sock_path))
        listener.listen(64)
        inode = os.stat(sock_path).st_ino
        # The pid only: a process finds the socket from the vault's path in its own
        # private folder (``socket_for``), never from a file others could write.
        info = json.dumps({"pid": os.getpid()}).encode()
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, info, 0)
        keeper = _Keeper(root, sock_path, idle, feed or _nobody)
        # Handlers that only ask the loop to end: one that raised (SIGINT's default)
        # would make watchfiles drop the changes it gathered.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: setattr(keeper, "stopping", True))
        try:
            keeper.serve(listener, inode)
        finally:
            os.ftruncate(lock_fd, 0)
            listener.close()
            with contextlib.suppress(OSError):
                if os.stat(sock_path).st_ino == inode:
                    sock_path.unlink()
            keeper.watcher.stop()
            keeper.upkeep.close()
        return 0
    finally:
        os.close(lock_fd)


def _nobody(paths: set[str]) -> None:
    """The feed of a keeper that nobody above listens to."""
