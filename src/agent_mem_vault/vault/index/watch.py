"""A file watcher for long-lived processes (the MCP server): changes told, not looked for.

A fresh process checks the folders it reads one ``stat`` per note (see
``scan.py``). A server that answers many calls a minute would pay that on every
call, so it watches the vault instead (inotify on Linux, read directly, see
``inotify.py``; FSEvents on macOS, through ``watchfiles``, a Rust library): the
operating system tells it which notes changed, and the next call reads just
those.

The watcher only replaces the per-note checks of folders it has seen since it
started: the first call that reads a namespace after the watcher is ready still
checks that namespace's notes once (changes made before the watch began are
found that way). If the watcher cannot start or stops (too many folders for
inotify, a removed vault), every call goes back to the checks of ``scan.py``.

Each folder is watched on its own, not the tree recursively: a recursive watch
walks every file of the vault while holding the GIL (0.6 s at 200,000 notes,
during which the server could not answer ``initialize``). A folder made later
(a new namespace) is watched by setting the watch up again, in a background
thread, *without a gap*: the old watch keeps reporting until the new one is in
place, and only then is it closed (a change both report is told once: they are
sets). The new folders themselves are held back until the new watch covers
them, so that a caller's look at a new folder comes after the folder is
watched: a note made there between the look and the watch would otherwise be
missed. A folder made while the watch is being set up is caught by listing the
folders again once it is in place (or held back for the next setup), and a
folder removed meanwhile makes the setup try again with a fresh listing.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import inotify
from .scan import skipped

__all__ = [
    "LOCAL_FILESYSTEMS",
    "NoteWatcher",
    "filesystem_of",
    "unwatched",
    "watch_problem",
    "watchable",
]

MARKS_FOLDER = ".agent-mem-vault/marks"
"""Where each watcher (one per process) has a folder for its marks (see ``_drain``)."""
DRAIN_TIMEOUT = 2.0
"""Seconds a look at the watch waits for its own mark before taking the watch as broken."""
RETRY_AFTER = 30.0
"""Seconds between attempts to set a broken watch up again."""
SETUP_TRIES = 5
"""Listings tried before giving up when folders keep appearing or vanishing during setup."""

USE_INOTIFY = True
"""On Linux, read inotify directly (``inotify.py``): a look at the watch then needs no
mark and no wait. Elsewhere (macOS), or with this off, ``watchfiles`` watches."""

_MODIFIED = 2  # watchfiles' Change.modified; 1 is added, 3 deleted


def _abandoned(folder: Path) -> bool:
    """Whether another watcher's marks folder is left over: its ``held`` file is not
    locked (or, a minute after it was made, missing)."""
    try:
        fd = os.open(folder / "held", os.O_RDWR)
    except FileNotFoundError:
        try:
            return time.time() - folder.stat().st_mtime > 60  # else being made now
        except OSError:
            return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its watcher is alive
    finally:
        os.close(fd)
    return True


LOCAL_FILESYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "f2fs", "tmpfs", "bcachefs", "jfs", "reiserfs"}
)
"""Where every change is made through this machine's kernel, so a watch sees it all.
Not network or FUSE filesystems (NFS, SMB, sshfs, WSL's ``/mnt/c``): a change made
from another machine there is seen by ``stat`` but sends no event."""


def watchable(root: Path) -> bool:
    """Whether a watch sees every change under ``root``: a local filesystem on Linux
    (read from ``/proc/self/mountinfo``); on macOS, where FSEvents reports local
    volumes, a path under ``/Volumes`` is taken as possibly remote."""
    if sys.platform == "darwin":
        return not str(root.resolve()).startswith("/Volumes/")
    try:
        mounts = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return filesystem_of(str(root.resolve()), mounts) in LOCAL_FILESYSTEMS


def filesystem_of(target: str, mountinfo: str) -> str:
    """The filesystem type of the mount holding ``target``, from ``/proc/self/mountinfo``."""
    best, fstype = "", ""
    for line in mountinfo.splitlines():
        left, _sep, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, fstype = point, right.split()[0]
    return fstype


def unwatched(exc: BaseException) -> str:
    """What a long-lived process says when it cannot watch the vault: why (for inotify's
    limits, the setting that raises them: ``inotify.refusal``), and that it goes on."""
    return (
        f"the vault is not watched: {exc}. The server keeps working: each call checks "
        "the notes it reads by stat (slower with many notes, nothing missed), and tries "
        f"the watch again at most every {RETRY_AFTER:g} s."
    )


def watch_problem(root: Path, wait: float = 60.0) -> str | None:
    """Why ``serve`` could not watch the vault at ``root`` now (``unwatched``), or None
    if it could; for ``doctor``. Sets the watch up as ``serve`` does and closes it:
    inotify's limits are met only when trying (other programs share them)."""
    if not watchable(root):
        return None  # not watched on purpose: calls check by stat (see ``Vault.watch``)
    watcher = NoteWatcher(root)
    try:
        if watcher.start(wait):
            return None
        return watcher.failure or f"the watch could not be set up within {wait:g} s"
    finally:
        watcher.stop()


class WatchLost(Exception):
    """The watch may have lost events: it is taken as broken."""


class NoteWatcher:
    """The notes and folders changed under ``root``, as the operating system reports them.

    On Linux ``take`` reads inotify's queue itself (microseconds when nothing
    changed); elsewhere the watch runs in ``watchfiles``' own thread, which
    gathers events the moment the kernel queues them, and ``take`` drains what
    it gathered (a millisecond when nothing changed). Either way the next call
    sees a note saved just before it. Setting the watch up walks the folder
    tree, so ``start`` does it in a background thread and the checks by
    ``stat`` serve until it is ready.
    """

    def __init__(self, root: Path, report: Callable[[str], None] | None = None) -> None:
        # The real path: FSEvents reports events under it, whatever path was given.
        self.root = root.resolve()
        self._prefix = str(self.root) + os.sep
        self._marks_dir = self.root / MARKS_FOLDER / f"{os.getpid()}-{os.urandom(4).hex()}"
        """This watcher's own folder, also watched: ``_drain`` makes a file there and
        reads events until that file's arrives (see ``_drain``). Not made when inotify
        is read directly: a read of its queue is the barrier."""
        self._direct = USE_INOTIFY and inotify.available()
        """inotify read directly (no marks), else ``watchfiles``."""
        self._mark = 0
        self._lock = threading.Lock()
        """Taken by ``take`` and ``stop``, and by a setup handing its watch over."""
        self._notify: Any = None
        self._ready = threading.Event()
        self._generation = 0
        self._thread: threading.Thread | None = None
        self._watched: frozenset[str] = frozenset()
        """The folders (relative to ``root``, ``""`` for it) the current watch was given."""
        self._next: tuple[Any, frozenset[str], set[str]] | None = None
        """A restart's new watch, ready to take over: (watch, folders, folders it missed)."""
        self._restarting = False
        """A new watch is being set up while the current one keeps reporting."""
        self._held: set[str] = set()
        """New folders not yet covered by a watch: told once one covers them."""
        self._asked: set[str] = set()
        """The folders held when the current restart began (its listing should find them)."""
        self._stopped = False
        self._broke_at = 0.0
        self._marks_fd: int | None = None
        self.handovers = 0
        """Restarts for new folders whose new watch took over without a gap."""
        self._own: dict[str, str] = {}
        """Notes this process wrote and indexed since the last ``take`` (full path →
        the full path of the temp file renamed onto it)."""
        self._again: tuple[set[str], set[str]] = (set(), set())
        """What a ``take`` returned and its caller could not apply (``tell_again``)."""
        self.failure: str | None = None
        """Why the last setup could not watch the vault (see ``unwatched``); None once a
        watch is in place."""
        self._report = report
        """Told each new ``failure`` (the same one again, at each retry, is not told)."""

    def start(self, wait: float = 0.0) -> bool:
        """Start setting up the watch; True if it is in place within ``wait`` seconds."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._setup, name="vault-watch", daemon=True)
            self._thread.start()
        self._ready.wait(wait)
        return self.active

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._lock:
            self._break()
            shutil.rmtree(self._marks_dir, ignore_errors=True)
            if self._marks_fd is not None:
                os.close(self._marks_fd)
                self._marks_fd = None

    @property
    def active(self) -> bool:
        """True while every change under ``root`` is being reported (folders held back
        included: they are told once watched)."""
        return self._notify is not None

    @property
    def settled(self) -> bool:
        """False while new folders are held back (not watched yet, so not told yet):
        until then, what is in them may change unreported."""
        return self._notify is not None and not self._held

    @property
    def generation(self) -> int:
        """Changes when the watch starts with nothing reported before it: its first start,
        and a restart that could not keep the old watch running until the new one was
        in place (the old one broke meanwhile). What was checked before must be again.

        A restart for new folders keeps the generation (the old watch reported until the
        new one took over; the new folders are told once watched). A watch that broke
        (``take`` returns None) or a restart that failed leaves the watcher inactive,
        and the callers check by ``stat`` from then on.
        """
        return self._generation

    def wrote(self, temps: dict[str, str]) -> None:
        """Notes (relative path → the temp file renamed onto it, relative too: see
        ``files.temp_path``) this process wrote and indexed just now.

        The next ``take`` leaves out such a note if the last event about it is that
        rename (from that very temp file: ``Inotify.moved_in``): nothing changed it
        since, and what it holds is indexed already, so the call after a write need
        not read it back. Any later change to it (an edit, a rename over it) comes
        after that event, and the note is told as usual.
        """
        with self._lock:
            for rel, temp in temps.items():
                self._own[self._prefix + rel] = self._prefix + temp

    def take(self) -> tuple[set[str], set[str]] | None:
        """(notes, folders) changed since the last call, relative to ``root``; ``None``
        if the watch has broken (then the caller checks by ``stat``).

        A new folder is told only once a watch covers it (see ``settled``).
        """
        with self._lock:
            if self._stopped:
                return None
            notify = self._notify
            if notify is None:
                self._set_up_again()
                return None
            handover = self._restarting and self._ready.is_set()
            if handover and self._next is None:
                self._break()  # the new watch could not be set up: check by stat
                return None
            try:
                # During a restart this is the old watch; on the handover, its last
                # drain, after the new watch is in place.
                files, dirs, new = self._sort(self._drain(notify), self._watched)
            except Exception:  # the watch broke (the vault was removed?)
                self._broken()
                return None
            if handover:
                try:
                    new = self._hand_over(files, dirs, new)
                except Exception:  # the new watch broke at once
                    self._break()
                    return None
            own, self._own = self._own, {}
            if own and not handover and isinstance(notify, inotify.Inotify):
                moved = notify.moved_in
                files = {
                    f for f in files if moved.get(self._prefix + f, "") != own.get(self._prefix + f)
                }
            self._held |= {d for d in new if self._is_folder(d)}
            dirs -= self._held
            if self._held and not self._restarting:
                self._restart()
            again, self._again = self._again, (set(), set())
            return files | again[0], dirs | again[1]

    def tell_again(self, files: set[str], dirs: set[str]) -> None:
        """Changes a ``take`` returned that its caller could not apply (the vault's lock
        did not come in time): the next ``take`` returns them again, with what came
        since. An edit a ``stat`` cannot see (same size, same mtime) is not lost."""
        with self._lock:
            self._again[0].update(files)
            self._again[1].update(dirs)

    def _set_up_again(self) -> None:
        """A watch that broke (or a restart that failed) is set up anew, as a new
        generation, at most every ``RETRY_AFTER`` seconds: a long-lived server is not
        left checking by ``stat`` for the rest of its life after one bad moment."""
        thread = self._thread
        if thread is None or thread.is_alive():
            return  # never started (``start`` does that), or being set up
        if time.monotonic() - self._broke_at < RETRY_AFTER:
            return
        self._broke_at = time.monotonic()
        self._ready.clear()
        self._thread = threading.Thread(target=self._setup, name="vault-watch", daemon=True)
        self._thread.start()

    def _hand_over(self, files: set[str], dirs: set[str], new: set[str]) -> set[str]:
        """Make the restart's watch the current one (its events added to ``files`` and
        ``dirs``); the folders it does not cover are returned, to be held back still.

        The folders it was given are covered, unless it reported them made again
        (the watch went with the old folder) or missed them (made during its setup).
        A folder held since before the setup began but not given to it could not be
        listed (an unreadable parent): it is told unwatched rather than set up for
        again and again.
        """
        assert self._next is not None
        fresh, watched, missed = self._next
        more_files, more_dirs, unsure = self._sort(self._drain(fresh), watched)
        self._notify.close()
        self._notify, self._watched, self._next = fresh, watched, None
        self._restarting = False
        self.handovers += 1
        files |= more_files
        dirs |= more_dirs
        told = self._held | new | unsure | missed
        self._held = set()
        dirs |= told  # those held still are taken out again by ``take``
        return (told - watched - self._asked) | unsure | missed

    def _broken(self) -> None:
        """The current watch raised: a restart's new watch takes over, as a new generation
        (nothing told what changed meanwhile); else the watcher stops."""
        self._notify.close()
        self._notify = None
        self._held = set()
        if self._next is not None:
            fresh, watched, missed = self._next
            self._install(fresh, watched, missed)
        elif not self._restarting:
            self._break()
        # else the restart's setup, once done, installs its watch (``_setup``)

    def _break(self) -> None:
        """No watch from now on: the callers check by ``stat``."""
        for notify in (self._notify, self._next[0] if self._next is not None else None):
            if notify is not None:
                notify.close()
        self._notify, self._next = None, None
        self._restarting = False
        self._held = set()
        self._broke_at = time.monotonic()

    def _install(self, notify: Any, watched: frozenset[str], missed: set[str]) -> None:
        """Make ``notify`` the watch, with nothing reported before it: a new generation."""
        self._notify, self._watched, self._next = notify, watched, None
        self._restarting = False
        self._held = set(missed)
        self._generation += 1

    def _restart(self) -> None:
        """Set a new watch up in the background; the current one reports until it is ready."""
        self._restarting = True
        self._asked = set(self._held)
        self._ready.clear()
        self._thread = threading.Thread(target=self._setup, name="vault-watch", daemon=True)
        self._thread.start()

    def _drain(self, notify: Any) -> set[tuple[int, str]]:
        """Every change ``notify`` was told of before this call, none lost.

        Read directly, inotify's queue holds every change made before the read
        (see ``inotify.py``): nothing to wait for. With ``watchfiles``, a file is
        made in this watcher's marks folder and events are read until its own
        arrives: the kernel queues events in order, so every change made before
        the call has been read by then. ``RustNotify.watch`` is only ever left with
        changes in hand: when it gives up ("timeout") it clears what it gathered,
        and an event that came in that instant would be lost unseen. If the mark
        does not come within ``DRAIN_TIMEOUT`` the watch is taken as broken.
        """
        if isinstance(notify, inotify.Inotify):
            try:
                return notify.changes()
            except inotify.QueueOverflow as exc:
                raise WatchLost(str(exc)) from exc
        self._mark += 1
        mark = self._marks_dir / str(self._mark)
        mark.touch()
        wanted = str(mark)
        out: set[tuple[int, str]] = set()
        deadline = time.monotonic() + DRAIN_TIMEOUT
        try:
            while True:
                left = max(1, int((deadline - time.monotonic()) * 1000))
                changes = notify.watch(1, 1, left, None)
                if not isinstance(changes, set):  # "timeout" (or "signal"): events may be lost
                    raise WatchLost(f"the watch did not report its mark within {DRAIN_TIMEOUT} s")
                out |= changes
                if any(path == wanted for _kind, path in changes):
                    return out
                if time.monotonic() > deadline:  # a busy vault, and the mark lost
                    raise WatchLost(f"the watch did not report its mark within {DRAIN_TIMEOUT} s")
        finally:
            mark.unlink(missing_ok=True)

    def _make_marks(self) -> bool:
        """Make this watcher's marks folder, held (``flock`` on its ``held`` file) for
        the watcher's life, and remove the folders of watchers gone: those whose
        lock can be taken (not guessed from pids, which other hosts and containers
        sharing the vault do not share)."""
        if self._marks_fd is not None:
            if (self._marks_dir / "held").exists():
                return True
            os.close(self._marks_fd)  # removed by someone: made again
            self._marks_fd = None
        parent = self._marks_dir.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            for entry in os.scandir(parent):
                if entry.path != str(self._marks_dir) and _abandoned(Path(entry.path)):
                    shutil.rmtree(entry.path, ignore_errors=True)
            self._marks_dir.mkdir(exist_ok=True)
            fd = os.open(self._marks_dir / "held", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a read-only vault: no watch, the callers check by stat
        self._marks_fd = fd
        return True

    def _is_folder(self, rel: str) -> bool:
        """Whether ``rel`` is a folder a watch would be given (see ``_folders``)."""
        path = self.root / rel
        return path.is_dir() and not path.is_symlink()

    def _rel(self, path: str) -> str:
        return "" if path == str(self.root) else path[len(self._prefix) :].replace(os.sep, "/")

    def _folders(self) -> list[str]:
        """The vault's folders as ``scan.py`` sees them (see ``scan.skipped``; no symbolic
        links), listed without a ``stat`` per note."""
        root = str(self.root)
        out, stack = [root] if self._direct else [root, str(self._marks_dir)], [root]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if skipped(folder == root, entry.name):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    out.append(entry.path)
                    stack.append(entry.path)
        return out

    def _setup(self) -> None:
        """Watch every folder listed; list again once the watch is in place.

        A folder made after its parent was listed but before the parent was watched
        would never be reported: the second listing finds it, and the watch starts
        over (a few times at most; then the folders still missed are held back and
        the next ``take`` sets the watch up again). A listed folder removed before
        it is watched is skipped by watchfiles 1.x (older versions raise
        ``FileNotFoundError``: then the listing is taken afresh).
        """
        opener: Any
        if self._direct:
            opener = inotify.Inotify
        else:
            try:
                from watchfiles._rust_notify import RustNotify
            except ImportError:
                self._ready.set()  # no watch, as when a restart fails (see ``take``)
                return
            if self._stopped or not self._make_marks():
                self._ready.set()
                return

            def opener(folders: list[str]) -> Any:
                # ``ignore_permission_denied`` off: with it on, watchfiles ignores
                # every error adding a folder (inotify's watch limit too), and the
                # watch would cover only some folders without saying so.
                return RustNotify(folders, False, False, 300, False, False)

        if self._stopped:
            self._ready.set()
            return
        notify: Any = None
        folders: list[str] = []
        missed: set[str] = set()
        failure: str | None = None
        for attempt in range(SETUP_TRIES):
            folders = self._folders()
            try:
                notify = opener(folders)
            except FileNotFoundError:  # a folder listed is gone: list again
                continue
            except Exception as exc:  # no watch possible here: the callers keep checking by stat
                failure = unwatched(exc)
                break
            # A folder made meanwhile may be unwatched: start over; if folders keep
            # appearing, keep the last watch and hold back those it missed.
            missed = set(self._folders()) - set(folders)
            if not missed or attempt == SETUP_TRIES - 1:
                break
            notify.close()  # folders made while it was set up: start over
            notify = None
        with self._lock:
            told, self.failure = self.failure, failure if notify is None else None
            if notify is None:
                pass  # a restart that failed: ``take`` stops the old watch too
            elif self._stopped:
                notify.close()
            else:
                watched = frozenset(self._rel(f) for f in folders)
                lost = {self._rel(f) for f in missed}
                if self._notify is None:  # the first start, or the old watch broke
                    self._install(notify, watched, lost)
                else:
                    self._next = (notify, watched, lost)
            self._ready.set()
        if failure is not None and failure != told and self._report is not None:
            self._report(failure)

    def _sort(
        self, changes: Iterable[tuple[int, str]], watched: frozenset[str]
    ) -> tuple[set[str], set[str], set[str]]:
        """(notes, folders, folders maybe not watched) among ``changes``, reported by the
        watch that was given the folders ``watched``.

        A folder is maybe not watched if the watch was not given it or it was
        reported added or deleted (removed and made again: the old watch went with
        it); a folder only modified (its mode or times changed) is watched still.
        """
        files: set[str] = set()
        dirs: set[str] = set()
        new: set[str] = set()
        for kind, path in changes:
            if not path.startswith(self._prefix):
                continue  # the marks folder is inside the skipped dot folder, too
            rel = path[len(self._prefix) :].replace(os.sep, "/")
            parts = rel.split("/")
            if skipped(True, parts[0]) or any(skipped(False, part) for part in parts[1:]):
                continue
            if rel.endswith(".md") and not os.path.isdir(path):
                files.add(rel)
                if not os.path.lexists(path):
                    dirs.add(rel)  # perhaps a folder named like a note, moved away
            elif kind != _MODIFIED or rel not in watched:
                # A folder made, removed or renamed: looked at whole. (One watched and
                # only touched or chmod'ed holds the same notes: nothing to tell.)
                dirs.add(rel)
                new.add(rel)
        return files, dirs, new
