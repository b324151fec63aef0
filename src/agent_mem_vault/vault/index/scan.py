"""Bringing the index up to date with the folder: what people did in Obsidian.

Three checks, from cheapest to dearest; no call pays for the whole vault:

- ``changed_dirs``: one ``stat`` per known folder. Adding, deleting or renaming
  a note (and the atomic save that most editors do) changes its folder's
  mtime, so this finds them for the price of a few system calls (it grows
  with the number of namespaces, not of notes). Every call runs it.
- ``stale_dirs``: one ``stat`` per note of the folders a call reads (its
  namespace), compared as one sum with what the index holds for each folder.
  It finds notes edited in place (Obsidian saves in place, which leaves the
  folder's mtime alone). A call runs it for its own namespace only.
- ``scan_tree`` from the root: one ``stat`` per note of the vault. This is
  ``Vault.rescan`` (and ``doctor``); no ordinary call runs it.

Only notes whose size or mtime differ are read and parsed again. Folders whose
names start with ``.`` (the index, Obsidian's settings, temp files) and the
top-level ``_dashboards`` are skipped, as are symbolic links.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Generator, Iterable
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from stat import S_ISREG

from ..folder.copies import merge_copy
from ..folder.files import atomic_write
from ..folder.records import FileRecord, read_record
from .db import Index
from .rows import pack

__all__ = [
    "Progress",
    "ScanStats",
    "Scope",
    "Stamps",
    "apply_told",
    "changed_dirs",
    "folder_signature",
    "listing_scope",
    "merged_copy",
    "rebuild_tree",
    "repaired",
    "reread",
    "reread_freed",
    "scan_dir",
    "scan_tree",
    "signature",
    "stale_dirs",
    "stamp_dir",
    "sync_changed",
]

SKIP_TOP = frozenset({"_dashboards"})


def skipped(top: bool, name: str) -> bool:
    """Whether a folder entry is outside the vault's notes: dot-entries (the index,
    temp files, Obsidian's settings) and, at the top, ``SKIP_TOP``. The one rule
    for the scan and the file watcher: a folder one skipped and the other read
    would go stale."""
    return name[0] == "." or (top and name in SKIP_TOP)


@dataclass(slots=True)
class ScanStats:
    added: int = 0
    changed: int = 0
    removed: int = 0


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def changed_dirs(root: Path, index: Index) -> list[str] | None:
    """Folders whose mtime differs from the index (or that are gone); ``None`` if none known."""
    known = index.dirs()
    if not known:
        return None
    out: list[str] = []
    base = str(root)
    for directory, mtime in known.items():
        try:
            st = os.stat(f"{base}/{directory}" if directory else base)
        except FileNotFoundError:
            out.append(directory)
            continue
        if st.st_mtime_ns != mtime:
            out.append(directory)
    return out


def signature(stamps: list[tuple[str, int, int]]) -> tuple[int, int]:
    """What ``Index.dir_signatures`` computes, from the files on disk."""
    return len(stamps), sum(m % 4294967291 + size * 65537 for _p, m, size in stamps)


Stamps = tuple[int, list[str], list[tuple[str, int, int]]]
"""A folder on disk: (its mtime, its subfolders, (path, mtime, size) of each note)."""


def _entries(root: Path, directory: str) -> tuple[int, list[str], list[os.DirEntry[str]]] | None:
    """One folder on disk: (its mtime, its subfolders, its notes); None if it is gone.

    Dot-entries, symbolic links and the top-level ``_dashboards`` are left out.
    """
    full = f"{root}/{directory}" if directory else str(root)
    try:
        mtime = os.stat(full).st_mtime_ns
        entries = list(os.scandir(full))
    except FileNotFoundError:
        return None
    prefix = f"{directory}/" if directory else ""
    subdirs: list[str] = []
    notes: list[os.DirEntry[str]] = []
    for entry in entries:
        name = entry.name
        if skipped(not directory, name):
            continue
        if entry.is_dir(follow_symlinks=False):
            subdirs.append(prefix + name)
        elif name.endswith(".md") and entry.is_file(follow_symlinks=False):
            notes.append(entry)
    return mtime, subdirs, notes


def stamp_dir(root: Path, directory: str) -> Stamps | None:
    """Look at one folder on disk: its mtime, subfolders and each note's size and mtime."""
    listing = _entries(root, directory)
    if listing is None:
        return None
    mtime, subdirs, notes = listing
    prefix = f"{directory}/" if directory else ""
    stamps: list[tuple[str, int, int]] = []
    for entry in notes:
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        stamps.append((prefix + entry.name, st.st_mtime_ns, st.st_size))
    return mtime, subdirs, stamps


Scope = tuple[str, str]
"""What a call reads: (a namespace's folder, ``handoffs`` or ``memories``)."""


def listing_scope(namespace: str | None, folder: str) -> list[Scope]:
    """What a listing of ``folder`` notes reads: one namespace's folder, or none for a
    listing of every namespace (None), whose notes are then not each checked by ``stat``
    (``IndexUpkeep.sync``)."""
    return [] if namespace is None else [(namespace, folder)]


def repaired(root: Path, record: FileRecord) -> FileRecord:
    """Write a note's repaired text (see ``FileRecord.repair``); the caller holds the lock.

    The note is rewritten atomically, keeping its permission bits, and only if
    it is still the file that was read (same size and mtime): an edit a person
    saves meanwhile is never written over; it is read at the next call instead.
    """
    if record.repair is None:
        return record
    target = root / record.path
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return replace(record, repair=None)
    if (st.st_mtime_ns, st.st_size) != (record.mtime_ns, record.size):
        return replace(record, repair=None)
    new = atomic_write(target, record.repair, mode=st.st_mode & 0o7777)
    return replace(record, mtime_ns=new.st_mtime_ns, size=new.st_size, repair=None)


def stale_dirs(
    root: Path,
    index: Index,
    scope: Scope,
    looked: dict[str, Stamps] | None = None,
    counted: list[int] | None = None,
) -> list[str]:
    """Folders of ``scope`` whose notes differ from the index (one stat per note).

    ``scope`` is a namespace folder and a leaf name: the folders checked are
    ``<folder>/<leaf>`` and those of namespaces below it. A folder is stale
    when it is gone, is new, or its mtime or the sum over its notes' sizes and
    mtimes differs from what the index holds. With ``looked``, what was seen of a
    stale folder whose mtime matched (a note edited in place) is kept there, so
    that ``scan_dir`` need not ``stat`` its notes a second time. The number of
    notes looked at is appended to ``counted``.
    """
    folder, leaf = scope
    known = index.dirs_under(folder)
    if folder not in known:
        exists = os.path.isdir(f"{root}/{folder}")
        return [folder] if exists or known else []
    out: list[str] = []
    for directory, mtime in known.items():
        if directory.rpartition("/")[2] != leaf:
            continue
        seen: list[tuple[str, int, int]] | None = [] if looked is not None else None
        on_disk = folder_signature(root, directory, mtime, seen)
        if counted is not None and on_disk is not None:
            counted.append(on_disk[0])
        if on_disk != index.dir_signature(directory):
            out.append(directory)
            if looked is not None and on_disk is not None and seen is not None:
                looked[directory] = (mtime, index.child_dirs(directory), seen)
    return out


def folder_signature(
    root: Path, directory: str, mtime: int, keep: list[tuple[str, int, int]] | None = None
) -> tuple[int, int] | None:
    """``signature`` of a folder's notes on disk, or None if the folder is gone or its
    mtime is not ``mtime`` (then it is stale whatever its notes say).

    This is the one check whose cost grows with the notes of a namespace, so it
    is kept to the bare system calls: a name listing (no ``scandir`` objects)
    and one ``stat`` per note, relative to the folder's descriptor. Each note's
    (path, mtime, size) is appended to ``keep`` if given.
    """
    if os.stat not in os.supports_dir_fd:  # Windows: no folder descriptors
        looked = stamp_dir(root, directory)
        if looked is None or looked[0] != mtime:
            return None
        if keep is not None:
            keep.extend(looked[2])
        return signature(looked[2])
    full = f"{root}/{directory}" if directory else str(root)
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        if os.fstat(fd).st_mtime_ns != mtime:
            return None
        prefix = f"{directory}/" if directory else ""
        names = os.listdir(fd)
        count = total = 0
        stat, isreg = os.stat, S_ISREG
        for name in names:
            if name[0] == "." or not name.endswith(".md"):
                continue
            try:
                st = stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if isreg(st.st_mode):
                count += 1
                total += st.st_mtime_ns % 4294967291 + st.st_size * 65537
                if keep is not None:
                    keep.append((prefix + name, st.st_mtime_ns, st.st_size))
        return count, total
    finally:
        os.close(fd)


def scan_dir(
    root: Path,
    index: Index,
    directory: str,
    stats: ScanStats,
    known: tuple[dict[str, int], dict[str, tuple[int, int]]] | None = None,
    looked: Stamps | None = None,
) -> tuple[list[str], list[str]]:
    """Sync one folder's notes; returns (all subfolders, subfolders the index did not know).

    With ``known`` (folder mtimes and signatures from the index, as a full
    rescan passes them), a folder whose mtime and signature both match is
    left alone without reading its rows from the index. ``looked`` is what
    ``stale_dirs`` just saw of the folder: used if the folder's mtime is still
    the same (no note added, removed or replaced since), else it is looked at again.
    """
    reused = False
    if looked is not None:
        try:
            same = os.stat(f"{root}/{directory}" if directory else root).st_mtime_ns == looked[0]
        except FileNotFoundError:
            same = False
        if not same:
            looked = None
        reused = same
    if looked is None:
        looked = stamp_dir(root, directory)
    if looked is None:
        stats.removed += index.remove_dir_tree(directory)
        return [], []
    dir_mtime, subdirs, stamps = looked
    if known is not None:
        dir_mtimes, signatures = known
        if dir_mtimes.get(directory) == dir_mtime and signatures.get(
            directory, (0, 0)
        ) == signature(stamps):
            return subdirs, []
    known_files = index.files_in(directory)
    for path, mtime, size in stamps:
        old = known_files.pop(path, None)
        if old is not None and old == (mtime, size):
            continue
        record = read_record(root, path)
        if record is not None and record.copy_of is not None:
            record = merged_copy(root, index, record)
            dir_mtime = os.stat(f"{root}/{directory}" if directory else str(root)).st_mtime_ns
        if record is not None and record.repair is not None:
            record = repaired(root, record)
            dir_mtime = os.stat(f"{root}/{directory}" if directory else str(root)).st_mtime_ns
        if record is None:
            if old is not None:
                index.remove_file(path)
                stats.removed += 1
            continue
        index.put(record)
        if old is None:
            stats.added += 1
        else:
            stats.changed += 1
    for path in known_files:
        # A reused listing can miss a note another process added (and indexed,
        # under the lock) within the same tick of the folder's mtime clock.
        if reused and os.path.lexists(f"{root}/{path}"):
            continue
        index.remove_file(path)
        stats.removed += 1
    known_children = set(index.child_dirs(directory))
    present = set(subdirs)
    for gone in known_children - present:
        stats.removed += index.remove_dir_tree(gone)
    index.set_dir(directory, dir_mtime)
    return subdirs, [d for d in subdirs if d not in known_children]


def scan_tree(root: Path, index: Index, directory: str, stats: ScanStats) -> None:
    """Sync a folder and everything under it, skipping folders that show no change.

    One ``stat`` per note is nearly all the cost. (Spreading the folders over
    threads was measured slower: the loop around each ``stat`` holds the GIL.)
    """
    known = (index.dirs(), index.dir_signatures())
    stack = [directory]
    while stack:
        subdirs, _new = scan_dir(root, index, stack.pop(), stats, known)
        stack.extend(subdirs)


Progress = Callable[[int, int], None]
"""Called as notes are indexed: (notes done, notes in all)."""


PARALLEL_FROM = 4000
"""Notes from which ``rebuild_tree`` parses in worker processes (below, starting
them costs more than it saves)."""
_BATCH = 256


Parsed = tuple[FileRecord | None, str | bytes | None]
"""A note read by ``_records``: its record and its text packed for the index, if done."""


def _read_batch(root: str, paths: list[str]) -> list[Parsed]:
    """Read, parse and pack a batch of notes (in a worker process)."""
    base = Path(root)
    out: list[Parsed] = []
    for path in paths:
        record = read_record(base, path)
        text = None
        if record is not None and record.handoff is not None:
            text = record.handoff.context
        elif record is not None and record.memory is not None:
            text = record.memory.content
        out.append((record, None if text is None else pack(text)))
    return out


def _records(root: Path, notes: list[str], workers: int) -> Generator[Parsed, None, None]:
    """Every note read and parsed, in order; by ``workers`` processes if more than one.

    Parsing is Python (it holds the GIL), so threads would take turns; processes
    use every core. Workers are spawned, not forked: the caller holds an open
    SQLite connection and may run other threads. If the pool breaks (a worker
    killed, or one that could not start), the rest is parsed here; closing the
    generator early cancels what the workers have not started.
    """
    done = 0
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        batches = [notes[i : i + _BATCH] for i in range(0, len(notes), _BATCH)]
        pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn")
        )
        try:
            for batch in pool.map(_read_batch, [str(root)] * len(batches), batches):
                done += len(batch)
                yield from batch
            return
        except BrokenProcessPool:
            pass  # parse what is left in this process
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    for path in notes[done:]:
        yield read_record(root, path), None


def _workers_can_start() -> bool:
    """Whether worker processes may be spawned from this program.

    A spawned worker runs the main script's top level again (as ``__mp_main__``),
    so in a script without an ``if __name__ == "__main__":`` guard it would
    repeat the script's work, writes included, before failing. The CLI, pytest
    and an interactive session are safe; a script without the guard is parsed
    in one process.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return True
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return _MAIN_GUARD.search(source) is not None


_MAIN_GUARD = re.compile(r"""__name__\s*==\s*['"]__main__['"]""")


def rebuild_tree(
    root: Path, index: Index, stats: ScanStats, progress: Progress | None = None
) -> None:
    """Fill an empty index from every note (the caller holds the lock and a transaction).

    The folders are listed first (no ``stat``), so that ``progress`` knows the
    total; then the notes are parsed by worker processes (two per core) while
    this process writes what they return to the index.
    """
    folders: list[tuple[str, int, list[str]]] = []
    stack = [""]
    while stack:
        directory = stack.pop()
        listing = _entries(root, directory)
        if listing is None:
            continue
        mtime, subdirs, entries = listing
        prefix = f"{directory}/" if directory else ""
        # Notes are named by TID, so name order is creation order.
        folders.append((directory, mtime, sorted(prefix + entry.name for entry in entries)))
        subdirs.sort(reverse=True)
        stack.extend(subdirs)
    notes = [path for _d, _m, paths in folders for path in paths]
    total = len(notes)
    done = 0
    if progress is not None:
        progress(0, total)
    # Two per core: reading a note from disk overlaps with parsing another.
    workers = 1
    if total >= PARALLEL_FROM and _workers_can_start():
        workers = min(2 * (os.cpu_count() or 1), 8)
    records = _records(root, notes, workers)
    copies: list[FileRecord] = []
    with closing(records), index.bulk() as loader:
        for directory, mtime, paths in folders:
            index.set_dir(directory, mtime)
            repairs = False
            for _path in paths:
                record, packed = next(records)
                done += 1
                if progress is not None and done % 500 == 0:
                    progress(done, total)
                if record is not None and record.copy_of is not None:
                    copies.append(record)  # merged once the notes are all in
                elif record is not None:
                    if record.repair is not None:
                        record = repaired(root, record)
                        repairs = True
                    loader.add(record, packed)
                    stats.added += 1
            if repairs:
                index.set_dir(directory, os.stat(f"{root}/{directory}").st_mtime_ns)
    for copy in copies:
        kept = merged_copy(root, index, copy)
        if kept is not None:
            index.put(kept)
        folder = copy.dir
        index.set_dir(folder, os.stat(f"{root}/{folder}" if folder else str(root)).st_mtime_ns)
    if progress is not None:
        progress(total, total)


def sync_changed(
    root: Path,
    index: Index,
    dirs: list[str],
    stats: ScanStats,
    looked: dict[str, Stamps] | None = None,
) -> None:
    """Sync the folders ``changed_dirs`` (or ``stale_dirs``, which filled ``looked``)
    found; new subfolders are scanned whole."""
    for directory in sorted(dirs):
        seen = looked.get(directory) if looked is not None else None
        _subdirs, new = scan_dir(root, index, directory, stats, looked=seen)
        for sub in new:
            scan_tree(root, index, sub, stats)
    reread_freed(root, index)


def reread_freed(root: Path, index: Index) -> None:
    """Read again the notes kept as copies of an id whose holder is gone (a note
    renamed or moved by hand: see ``Index.freed_duplicates``)."""
    for path in index.freed_duplicates():
        reread(root, index, path)


def reread(root: Path, index: Index, path: str) -> None:
    """Read one note again and store what it says now, repaired if it needs it (the
    caller holds the lock and a transaction)."""
    record = read_record(root, path)
    if record is not None and record.copy_of is not None:
        record = merged_copy(root, index, record)
    if record is not None and record.repair is not None:
        record = repaired(root, record)
    if record is None:
        index.remove_file(path)
    else:
        index.put(record)


def merged_copy(root: Path, index: Index, record: FileRecord) -> FileRecord | None:
    """Merge a file-sync tool's conflict copy into the note beside it (``copies.py``;
    the caller holds the lock and a transaction): None once merged (the copy is gone,
    the notes written are read again), else the file as a plain note that only looks
    like a copy."""
    written = merge_copy(root, record.path)
    if written is None:
        return replace(record, copy_of=None)
    for path in written:
        reread(root, index, path)
    return None


def apply_told(root: Path, index: Index, dirs: Iterable[str], files: Iterable[str]) -> None:
    """Apply what a watcher told: folders made, removed or renamed (``dirs``) synced
    whole, with every folder the index knows below them; notes read again (the
    caller holds the lock and a transaction).

    A folder moved in where another was may hold subfolders the index knows
    (``project/x/handoffs`` of the old ``project/x``) that sent no event of their
    own: they are synced too. A note told is read even if its size and mtime are
    what the index holds: an edit within the mtime clock's tick, or a tool that
    restores the mtime, is exactly what a watch sees and a ``stat`` does not.
    """
    told = set(dirs)
    known = index.dirs() if told else {}
    below = {k for k in known for d in told if k.startswith(f"{d}/")}
    folders = told | below
    existing = [d for d in sorted(folders) if d in known or os.path.isdir(f"{root}/{d}")]
    sync_changed(root, index, existing, ScanStats())
    for path in sorted(set(files)):
        reread(root, index, path)
    reread_freed(root, index)
