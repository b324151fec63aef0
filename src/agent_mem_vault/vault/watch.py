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
``stat`` once more, as at the start.
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
        files, dirs = self._sort(path for _kind, path in changes)
        if any(os.path.isdir(self.root / d) for d in dirs):
            # A folder made (or renamed) here is not watched yet: watch again. The
            # changes told so far are still applied; the new generation makes the
            # caller check every folder by stat once, for what falls in between.
            self._restart(notify)
        return files, dirs

    def _restart(self, notify: Any) -> None:
        self._notify = None
        notify.close()
        self._ready.clear()
        self._thread = threading.Thread(target=self._setup, name="vault-watch", daemon=True)
        self._thread.start()

    def _folders(self) -> list[str]:
        """The vault's folders (as ``scan.py`` sees them: no dot-folders, no top-level
        ``_dashboards``, no symbolic links), listed without a ``stat`` per note."""
        root = str(self.root)
        out, stack = [root], [root]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                name = entry.name
                if name[0] == "." or (folder == root and name == "_dashboards"):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    out.append(entry.path)
                    stack.append(entry.path)
        return out

    def _setup(self) -> None:
        try:
            from watchfiles._rust_notify import RustNotify

            notify: Any = RustNotify(self._folders(), False, False, 300, False, True)
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
