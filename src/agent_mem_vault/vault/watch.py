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
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["NoteWatcher"]


class NoteWatcher:
    """The notes and folders changed under ``root``, as the operating system reports them.

    The watch itself runs in ``watchfiles``' own thread, which gathers events
    the moment the kernel queues them; ``take`` drains what it gathered (a
    millisecond when nothing changed), so the next call sees a note saved just
    before it. Setting the watch up walks the folder tree, so ``start`` does it
    in a background thread and the checks by ``stat`` serve until it is ready.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = str(root) + os.sep
        self._notify: Any = None
        self._ready = threading.Event()
        self._generation = 0
        self._thread: threading.Thread | None = None

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
            return set(), set()
        return self._sort(path for _kind, path in changes)

    def _setup(self) -> None:
        try:
            from watchfiles._rust_notify import RustNotify

            notify: Any = RustNotify([str(self.root)], False, False, 300, True, True)
        except Exception:  # no watch possible here: the callers keep checking by stat
            self._ready.set()
            return
        self._generation += 1
        self._notify = notify
        self._ready.set()

    def _sort(self, paths: Iterable[str]) -> tuple[set[str], set[str]]:
        files: set[str] = set()
        dirs: set[str] = set()
        for path in paths:
            if not path.startswith(self._prefix):
                continue
            rel = path[len(self._prefix) :].replace(os.sep, "/")
            parts = rel.split("/")
            if any(part.startswith(".") for part in parts) or parts[0] == "_dashboards":
                continue  # the index, temp files, Obsidian's settings, the dashboard
            if rel.endswith(".md"):
                files.add(rel)
            else:
                dirs.add(rel)  # a folder made, removed or renamed: look at it whole
        return files, dirs
