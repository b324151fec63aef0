"""A file watcher for long-lived processes (the MCP server): changes told, not looked for.

A fresh process checks the folders it reads one ``stat`` per note (see
``scan.py``). A server that answers many calls a minute would pay that on every
call, so it watches the vault instead (inotify on Linux, FSEvents on macOS,
through ``watchfiles``, a Rust library): the operating system tells it which
notes changed, and the next call reads just those.

The watcher only replaces the per-note checks of folders it has seen since it
started: the first call that reads a namespace after the watcher is ready still
checks that namespace's notes once (changes made before the watch began are
found that way). If the watcher cannot start or stops (too many folders for
inotify, a removed vault), every call goes back to the checks of ``scan.py``.

Each folder is watched on its own, not the tree recursively: a recursive watch
walks every file of the vault while holding the GIL (0.6 s at 200,000 notes,
during which the server could not answer ``initialize``). A folder made later
(a new namespace) restarts the watch, which makes every folder be checked by
``stat`` once more, as at the start; an event on a folder already watched (a sync
tool touching it) does not. A folder made while the watch is being set up is caught
by listing the folders again once it is in place, and a folder removed meanwhile
makes the setup try again with a fresh listing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .scan import skipped

__all__ = ["NoteWatcher"]

SETUP_TRIES = 5
"""Listings tried before giving up when folders keep appearing or vanishing during setup."""

_MODIFIED = 2  # watchfiles' Change.modified; 1 is added, 3 deleted


class NoteWatcher:
    """The notes and folders changed under ``root``, as the operating system reports them.

    The watch itself runs in ``watchfiles``' own thread, which gathers events
    the moment the kernel queues them; ``take`` drains what it gathered (a
    millisecond when nothing changed), so the next call sees a note saved just
    before it. Setting the watch up walks the folder tree, so ``start`` does it
    in a background thread and the checks by ``stat`` serve until it is ready.
    """

    def __init__(self, root: Path, marks: Path | None = None) -> None:
        self.root = root
        self._prefix = str(root) + os.sep
        self._marks = None if marks is None else str(marks) + os.sep
        """A folder outside the notes, also watched: the names of files made there are
        kept in ``marks_seen`` (the keeper's barrier, see ``keeper.py``)."""
        self.marks_seen: set[str] = set()
        self._notify: Any = None
        self._ready = threading.Event()
        self._generation = 0
        self._thread: threading.Thread | None = None
        self._watched: frozenset[str] = frozenset()
        """The folders (relative to ``root``, ``""`` for it) the current watch was given."""
        self._behind = False
        """Set up while folders kept appearing: restart on the next ``take``."""

    def start(self, wait: float = 0.0) -> bool:
        """Start setting up the watch; True if it is in place within ``wait`` seconds."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._setup, name="vault-watch", daemon=True)
            self._thread.start()
        self._ready.wait(wait)
        return self.active

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=30)
        notify, self._notify = self._notify, None
        if notify is not None:
            notify.close()

    @property
    def active(self) -> bool:
        """True while every change under ``root`` is being reported."""
        return self._notify is not None

    @property
    def generation(self) -> int:
        """Changes each time the watch (re)starts; what was checked before must be again."""
        return self._generation

    def take(self) -> tuple[set[str], set[str]] | None:
        """(notes, folders) changed since the last call, relative to ``root``; ``None``
        if the watch has broken (then the caller checks by ``stat``)."""
        notify = self._notify
        if notify is None:
            return None
        try:
            changes = notify.watch(1, 1, 1, None)
        except Exception:  # the watch broke (the vault was removed?)
            self._notify = None
            notify.close()
            return None
        if not isinstance(changes, set):
            changes = set()
        files, dirs, new = self._sort(changes)
        if self._behind or any(os.path.isdir(self.root / d) for d in new):
            # A folder made (or renamed, or removed and made again) here is not
            # watched yet: watch again. The changes told so far are still applied;
            # the new generation makes the caller check every folder by stat once,
            # for what falls in between.
            self._restart(notify)
        return files, dirs

    def _restart(self, notify: Any) -> None:
        self._notify = None
        notify.close()
        self._ready.clear()
        self._thread = threading.Thread(target=self._setup, name="vault-watch", daemon=True)
        self._thread.start()

    def _folders(self) -> list[str]:
        """The vault's folders as ``scan.py`` sees them (see ``scan.skipped``; no symbolic
        links), listed without a ``stat`` per note."""
        root = str(self.root)
        out, stack = [root], [root]
        if self._marks is not None:
            out.append(self._marks.rstrip(os.sep))
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
        over (a few times at most; then the next ``take`` restarts it). A listed
        folder removed before it is watched is skipped by watchfiles 1.x (older
        versions raise ``FileNotFoundError``: then the listing is taken afresh).
        """
        try:
            from watchfiles._rust_notify import RustNotify
        except ImportError:
            self._ready.set()
            return
        notify: Any = None
        folders: list[str] = []
        for attempt in range(SETUP_TRIES):
            folders = self._folders()
            try:
                notify = RustNotify(folders, False, False, 300, False, True)
            except FileNotFoundError:  # a folder listed is gone: list again
                continue
            except Exception:  # no watch possible here: the callers keep checking by stat
                break
            # A folder made meanwhile may be unwatched: start over; if folders keep
            # appearing, keep the last watch and let the next ``take`` start it again.
            self._behind = not set(folders).issuperset(self._folders())
            if not self._behind or attempt == SETUP_TRIES - 1:
                break
            notify.close()  # folders made while it was set up: start over
            notify = None
        if notify is not None:
            cut = len(self._prefix)
            self._watched = frozenset(
                "" if f == str(self.root) else f[cut:].replace(os.sep, "/") for f in folders
            )
            self._generation += 1
            self._notify = notify
        self._ready.set()

    def _sort(self, changes: Iterable[tuple[int, str]]) -> tuple[set[str], set[str], set[str]]:
        """(notes, folders, folders maybe not watched) among ``changes``.

        A folder is maybe not watched if the watch was not given it or it was
        reported added or deleted (removed and made again: the old watch went with
        it); a folder only modified (its mode or times changed) is watched still.
        """
        files: set[str] = set()
        dirs: set[str] = set()
        new: set[str] = set()
        marks = self._marks
        for kind, path in changes:
            if marks is not None and path.startswith(marks):
                self.marks_seen.add(path[len(marks) :])
                continue
            if not path.startswith(self._prefix):
                continue
            rel = path[len(self._prefix) :].replace(os.sep, "/")
            parts = rel.split("/")
            if skipped(True, parts[0]) or any(skipped(False, part) for part in parts[1:]):
                continue
            if rel.endswith(".md"):
                files.add(rel)
            else:
                dirs.add(rel)  # a folder made, removed or renamed: look at it whole
                if kind != _MODIFIED or rel not in self._watched:
                    new.add(rel)
        return files, dirs, new
