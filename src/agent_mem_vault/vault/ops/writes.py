"""How an operation writes notes: new ones, changed ones, deleted ones, all inside the lock.

``NoteWrites`` is the half of ``VaultBase`` that changes the folder: one way to
create a note (``_creating``), to write a changed one (``_write``, then
``_commit`` with the others of the same change), to read the note a change
starts from (``_note_from_disk``: the disk is the truth, not the index) and to
delete one. A change of several notes is staged whole before any of it is
renamed into place, so a failed one leaves nothing behind.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ...core.clock import format_datetime
from ...core.errors import DataError
from ..folder.files import fsync_dir, publish, stage
from ..folder.records import FileRecord, Kind, classify, read_file
from ..format.brief import brief_template
from ..format.models import Handoff, Memory
from ..format.notes import NoteError, ParsedNote, parse_text, render_note
from ..index.db import Index
from .base import VaultBase

__all__ = ["NewNote", "NoteWrites", "damaged_note"]


def damaged_note(kind: str, id: str, path: str, exc: Exception) -> DataError:
    """The error for a change refused because the note of ``kind`` ``id`` at ``path`` does
    not parse (``exc`` says why): a person's edit is theirs to fix, so nothing is written."""
    return DataError(
        f"the note for {kind} {id} ({path}) is damaged: {exc}; "
        "fix it by hand (see 'agent-mem-vault doctor'); it was not changed",
        code="note_damaged",
        id=id,
        path=path,
    )


@dataclass(slots=True)
class NewNote:
    """A note being created inside the lock: where it goes and what was written."""

    id: str
    folder: str
    records: list[FileRecord] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.id}.md"


class NoteWrites(VaultBase):
    """Writing notes, for the operations (see the module)."""

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

    def _replace_text(self, idx: Index, path: str, text: str) -> None:
        """Write ``text`` over the note at ``path`` and index it as what it now is (a
        handoff, a memory, another note): a change of a note in place, whole
        (``redact``, ``private``), that the sync is told of like any other."""
        made = classify(path, 0, len(text), text)
        record = self._write(
            path,
            text,
            made.kind,
            handoff=made.handoff,
            memory=made.memory,
            namespace=made.namespace,
            problem=made.problem,
        )
        self._commit(idx, [record])

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
