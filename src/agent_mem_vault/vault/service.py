"""The ``Vault``: one method per operation, shared by the CLI, MCP and HTTP.

A vault is a folder of Markdown notes (the truth) with a derived SQLite index
in ``.agent-mem-vault/``. The service is built for many short-lived processes
as well as one long-lived server:

- every write takes the vault lock, re-reads the notes it changes from disk,
  writes them atomically and updates the index, all inside the lock;
- reads use the index after a cheap check of folder mtimes, and verify the one
  note they return against its size and mtime, so a note edited by hand is
  never served stale;
- a full rescan (one ``stat`` per note) runs every ``rescan_interval``
  seconds, on ``rescan()``, and when the index is new; ``reindex()`` rebuilds
  the index from nothing, as happens by itself when it is missing or damaged.

Layout::

    <vault>/
      .agent-mem-vault/index.sqlite3, lock   derived; safe to delete
      _dashboards/memory.base                 Obsidian Bases dashboard
      <namespace>/_brief.md                   the human-editable brief
      <namespace>/handoffs/<id>.md
      <namespace>/memories/<id>.md
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..core.clock import SYSTEM_CLOCK, Clock, format_datetime
from ..core.errors import DataError, InvalidInputError, NotFoundError
from ..core.ids import TidGenerator
from . import lifecycle
from .brief import MAX_DECISIONS, MAX_PENDING, brief_template
from .dashboard import DASHBOARD_PATH, render_dashboard
from .files import VaultLock, atomic_write, fsync_dir
from .index import Index
from .models import (
    Brief,
    DoctorReport,
    Handoff,
    Memory,
    ReindexReport,
    SearchHit,
)
from .namespaces import (
    validate_agent,
    validate_id,
    validate_kind,
    validate_namespace,
    validate_summary,
    validate_tags,
    validate_text,
    validate_title,
)
from .notes import (
    NoteError,
    ParsedNote,
    apply_handoff,
    handoff_from_note,
    handoff_meta,
    memory_meta,
    parse_note,
    render_body,
    render_note,
)
from .records import FileRecord
from .scan import ScanStats
from .upkeep import IndexUpkeep

__all__ = ["DOT_DIR", "StatusFilter", "Vault"]

StatusFilter = Literal["pending", "read", "all"]
DOT_DIR = ".agent-mem-vault"
INDEX_FILE = "index.sqlite3"
MAX_LIMIT = 1000
_WORD = re.compile(r"\w+", re.UNICODE)


class Vault:
    """A vault folder of Markdown notes, with a derived SQLite index.

    >>> vault = Vault("/tmp/v")  # doctest: +SKIP
    >>> vault.init()  # doctest: +SKIP
    >>> h = vault.create_handoff(to="codex", summary="Batch the backfill",
    ...     context="Start with 1000 rows.", namespace="project/harbor-api",
    ...     from_="claude-code")  # doctest: +SKIP
    >>> vault.read_handoff(agent="codex", namespace="project/harbor-api").text  # doctest: +SKIP
    '## Summary\\nBatch the backfill\\n\\n## Full Context\\nStart with 1000 rows.'

    ``durable=False`` skips fsync (writes survive a killed process, not a
    power cut). ``rescan_interval=None`` turns the periodic full rescan off.
    A ``Vault`` may be shared by threads; open one per process.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = SYSTEM_CLOCK,
        lock_timeout: float = 5.0,
        durable: bool = True,
        rescan_interval: float | None = 60.0,
    ) -> None:
        self.path = Path(path).expanduser().absolute()
        self.clock = clock
        self.lock_timeout = lock_timeout
        self.durable = durable
        self._lock = VaultLock(self.path / DOT_DIR / "lock", timeout=lock_timeout)
        self._mutex = threading.RLock()
        self._upkeep = IndexUpkeep(
            self.path, self.path / DOT_DIR / INDEX_FILE, clock, self._locked, rescan_interval
        )
        self._pid = os.getpid()
        self._tids = TidGenerator(clock)
        self._dashboard_checked = False
        # Records written inside the current locked section but not yet in the index.
        self._pending_records: list[FileRecord] = []

    def __repr__(self) -> str:
        return f"Vault({str(self.path)!r})"

    @property
    def rescan_interval(self) -> float | None:
        """Seconds between full rescans (one ``stat`` per note); ``None``: only on request."""
        return self._upkeep.rescan_interval

    @rescan_interval.setter
    def rescan_interval(self, value: float | None) -> None:
        self._upkeep.rescan_interval = value

    def close(self) -> None:
        """Close the index connection (it reopens on the next call)."""
        with self._mutex:
            self._upkeep.close()

    # == handoffs ======================================================================

    def create_handoff(
        self,
        *,
        to: str,
        summary: str,
        context: str,
        namespace: str,
        supersedes: Iterable[str] = (),
        from_: str | None = None,
    ) -> Handoff:
        """Leave a pending handoff for agent ``to`` in ``namespace``.

        Each id in ``supersedes`` (same namespace, not already superseded)
        becomes read and gets ``superseded_by``; on any refusal nothing is written.
        ``from_`` is the sending agent; ``None`` records it as ``unknown``.
        """
        recipient = validate_agent(to, field="to")
        sender = validate_agent("unknown" if from_ is None else from_, field="from")
        namespace = validate_namespace(namespace)
        summary = validate_summary(summary)
        context = validate_text(context, field="context")
        if isinstance(supersedes, str):
            supersedes = [supersedes]
        older_ids: list[str] = []
        for item in supersedes:
            validate_id(item, field="supersedes")
            if item not in older_ids:
                older_ids.append(item)
        folder = f"{namespace}/handoffs"
        created = self._make_folder(folder)
        try:
            with self._writing() as idx:
                # Checks first: a refused supersede writes nothing.
                olds = [self._load_handoff(idx, older_id) for older_id in older_ids]
                for old, _note in olds:
                    lifecycle.check_supersedable(old, namespace)
                new_id = self._new_id(folder)
                path = f"{folder}/{new_id}.md"
                handoff = Handoff(
                    id=new_id,
                    namespace=namespace,
                    sender=sender,
                    recipient=recipient,
                    summary=summary,
                    context=context,
                    status="pending",
                    created_at=self._now(),
                    supersedes=tuple(older_ids),
                    path=path,
                )
                touched = self._ensure_brief(idx, namespace)
                text = render_note(handoff_meta(handoff), render_body(summary, context))
                records = [self._write_handoff(path, text, handoff)]
                for old, note in olds:
                    updated = lifecycle.supersede(old, new_id, handoff.created_at)
                    text = render_note(apply_handoff(note.meta, updated), note.body)
                    records.append(self._write_handoff(old.path, text, updated))
                self._commit(idx, records, touched | {r.dir for r in records})
        except BaseException:
            self._unmake_folders(created)
            raise
        return handoff

    def read_handoff(self, *, agent: str, namespace: str) -> Handoff | None:
        """Take the newest pending handoff for ``agent`` in ``namespace`` and mark it read.

        Returns ``None`` when nothing is pending. Two callers racing for the
        same handoff: exactly one gets it.
        """
        agent = validate_agent(agent)
        namespace = validate_namespace(namespace)
        with self._writing() as idx:
            skip: list[str] = []
            while True:
                candidate = idx.newest_pending(namespace, agent, skip)
                if candidate is None:
                    return None
                current = self._fresh_from_disk(idx, candidate)
                if (
                    current is None
                    or current.handoff.status != "pending"
                    or current.handoff.recipient != agent
                    or current.handoff.namespace != namespace
                ):
                    skip.append(candidate.id)
                    continue
                handoff, note = current.handoff, current.note
                updated = lifecycle.mark_read(handoff, self._now())
                text = render_note(apply_handoff(note.meta, updated), note.body)
                record = self._write_handoff(handoff.path, text, updated)
                self._commit(idx, [record], {record.dir})
                return updated

    def peek_handoff(self, *, agent: str, namespace: str) -> Handoff | None:
        """The handoff ``read_handoff`` would return, without marking it read."""
        agent = validate_agent(agent)
        namespace = validate_namespace(namespace)
        return self._reading(lambda idx: idx.newest_pending(namespace, agent))

    def list_handoffs(
        self,
        *,
        namespace: str | None = None,
        status: StatusFilter = "pending",
        agent: str | None = None,
        sender: str | None = None,
        limit: int = 50,
    ) -> list[Handoff]:
        """Handoffs, newest first: by ``status`` (pending, read or all), recipient ``agent``
        and ``sender``; all namespaces when ``namespace`` is None."""
        if namespace is not None:
            namespace = validate_namespace(namespace)
        if status not in ("pending", "read", "all"):
            raise InvalidInputError(
                f"status {status!r} is not one of pending, read, all",
                code="invalid_status",
                field="status",
            )
        if agent is not None:
            agent = validate_agent(agent)
        if sender is not None:
            sender = validate_agent(sender, field="sender")
        limit = _check_limit(limit)
        with self._mutex:
            self._upkeep.sync()
            return self._upkeep.query(
                lambda idx: idx.list_handoffs(
                    namespace=namespace, status=status, agent=agent, sender=sender, limit=limit
                )
            )

    def get_handoff(self, id: str) -> Handoff:
        """One handoff by id; ``NotFoundError`` (``handoff_not_found``) if there is none."""
        validate_id(id)
        found = self._reading(lambda idx: idx.handoff(id))
        if found is None:
            raise _handoff_not_found(id)
        return found

    def ack_handoff(self, id: str) -> Handoff:
        """Mark a handoff read without taking it; already read: returned unchanged."""
        validate_id(id)
        return self._change(id, lambda h: lifecycle.mark_read(h, self._now()))

    def reopen_handoff(self, id: str) -> Handoff:
        """Make a read handoff pending again (``read_at`` removed); refused if superseded."""
        validate_id(id)
        return self._change(id, lifecycle.reopen)

    # == memories and the brief =======================================================

    def save_memory(
        self,
        *,
        namespace: str,
        title: str,
        content: str,
        kind: str = "note",
        tags: Iterable[str] = (),
        agent: str | None = None,
    ) -> Memory:
        """Keep a decision, note, task or risk; it is searchable at once."""
        namespace = validate_namespace(namespace)
        title = validate_title(title)
        content = validate_text(content, field="content")
        kind = validate_kind(kind)
        tag_tuple = validate_tags(tags)
        if agent is not None:
            agent = validate_agent(agent)
        folder = f"{namespace}/memories"
        created = self._make_folder(folder)
        try:
            with self._writing() as idx:
                new_id = self._new_id(folder)
                path = f"{folder}/{new_id}.md"
                memory = Memory(
                    id=new_id,
                    namespace=namespace,
                    title=title,
                    content=content,
                    kind=kind,
                    created_at=self._now(),
                    tags=tag_tuple,
                    agent=agent,
                    path=path,
                )
                touched = self._ensure_brief(idx, namespace)
                text = render_note(memory_meta(memory), render_body(title, content))
                st = atomic_write(self.path / path, text, durable=self.durable)
                record = FileRecord(path, st.st_mtime_ns, st.st_size, "memory", memory=memory)
                self._commit(idx, [record], touched | {folder})
        except BaseException:
            self._unmake_folders(created)
            raise
        return memory

    def search_memory(
        self, *, query: str, namespace: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Full-text search of memories (title, content, tags), best first.

        All words must match; when no memory has them all, memories with any
        of them are returned. ``namespace`` includes the namespaces below it.
        When more than 5,000 memories match, the newest 5,000 are ranked.
        """
        words = _WORD.findall(query) if isinstance(query, str) else []
        if not words:
            raise InvalidInputError(
                "query has no words to search for", code="missing_field", field="query"
            )
        if namespace is not None:
            namespace = validate_namespace(namespace)
        limit = _check_limit(limit)
        terms = ['"' + w.replace('"', "") + '"' for w in words[:32]]
        with self._mutex:
            self._upkeep.sync()
            rows = self._upkeep.query(lambda idx: idx.search(" AND ".join(terms), namespace, limit))
            if not rows and len(terms) > 1:
                rows = self._upkeep.query(
                    lambda idx: idx.search(" OR ".join(terms), namespace, limit)
                )
        return [SearchHit(memory=m, score=score, snippet=snip) for m, score, snip in rows]

    def get_project_brief(self, *, namespace: str) -> Brief:
        """The brief note, recent decisions and pending handoffs of ``namespace``."""
        namespace = validate_namespace(namespace)
        with self._mutex:
            self._upkeep.sync()
            path = self._upkeep.query(lambda idx: idx.brief_path(namespace))
            decisions = self._upkeep.query(
                lambda idx: idx.recent_memories(namespace, "decision", MAX_DECISIONS)
            )
            pending = self._upkeep.query(
                lambda idx: idx.list_handoffs(
                    namespace=namespace,
                    status="pending",
                    agent=None,
                    sender=None,
                    limit=MAX_PENDING,
                )
            )
        notes = ""
        if path is not None:
            try:
                parsed = parse_note((self.path / path).read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, NoteError):
                parsed = None
            if parsed is not None:
                notes = parsed.body
        return Brief(
            namespace=namespace,
            notes=notes,
            decisions=tuple(decisions),
            pending=tuple(pending),
            path=path or "",
        )

    # == the vault itself ================================================================

    def init(self) -> ReindexReport:
        """Create the vault folder, its index and dashboard; safe to run again."""
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / DOT_DIR).mkdir(exist_ok=True)
        self._ensure_dashboard()
        return self.rescan()

    def rescan(self) -> ReindexReport:
        """Pick up every note added, edited or deleted by hand (one stat per note)."""
        with self._writing(sync=False) as idx:
            stats = ScanStats()
            self._upkeep.full_scan(idx, stats)
            return self._report(idx, stats)

    def reindex(self) -> ReindexReport:
        """Rebuild the index from the notes alone; also clears temp files a crash left."""
        with self._mutex, self._locked():
            self._clear_temp_files()
            idx = self._upkeep.rebuild()
            self._ensure_dashboard()
            return self._report(idx, ScanStats(added=idx.count_handoffs() + idx.count_memories()))

    def doctor(self) -> DoctorReport:
        """Rescan, then report broken notes, dangling links and leftovers; changes no note."""
        self._require_vault()
        self.rescan()
        problems: list[str] = []
        with self._mutex:
            idx = self._upkeep.handle()
            if not (self.path / DASHBOARD_PATH).is_file():
                problems.append(f"{DASHBOARD_PATH} is missing; run 'agent-mem-vault init'")
            for newer_id, raw in idx.handoffs_with_supersedes():
                for older_id in json.loads(raw):
                    older = idx.handoff(older_id)
                    if older is None:
                        problems.append(
                            f"handoff {newer_id} supersedes {older_id}, which is missing"
                        )
                    elif older.superseded_by != newer_id:
                        problems.append(
                            f"handoff {newer_id} supersedes {older_id}, but {older_id} has "
                            f"superseded_by {older.superseded_by!r}"
                        )
            for temp in self._temp_files():
                problems.append(
                    f"{temp} is a temp file left by an interrupted write; "
                    "'agent-mem-vault reindex' removes it"
                )
            try:
                check = idx.conn.execute("PRAGMA quick_check").fetchone()[0]
            except sqlite3.DatabaseError as exc:
                check = str(exc)
            if check != "ok":
                problems.append(f"index check failed ({check}); run 'agent-mem-vault reindex'")
            return DoctorReport(
                path=str(self.path),
                handoffs=idx.count_handoffs(),
                memories=idx.count_memories(),
                pending=idx.count_handoffs("pending"),
                broken=tuple(idx.broken()),
                problems=tuple(problems),
            )

    # == internals: locking and the index ==================================================

    def _require_vault(self) -> None:
        if not self.path.is_dir():
            raise NotFoundError(
                f"no vault at {self.path}; create it with 'agent-mem-vault init --vault "
                f"{self.path}' (or pass --vault / set AGENT_MEM_VAULT)",
                code="vault_not_found",
                path=str(self.path),
            )
        dot = self.path / DOT_DIR
        if not dot.is_dir():
            dot.mkdir(exist_ok=True)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._require_vault()
        with self._lock:
            yield

    @contextmanager
    def _writing(self, *, sync: bool = True) -> Iterator[Index]:
        with self._mutex, self._locked():
            idx = self._upkeep.sync() if sync else self._upkeep.handle()
            if not self._dashboard_checked:
                self._ensure_dashboard()
            yield idx

    def _reading(self, query: Callable[[Index], Handoff | None]) -> Handoff | None:
        """Run a one-handoff query and check the note on disk still says the same.

        If the note was edited or removed by hand since it was indexed, the
        index is corrected for it (under the lock) and the query runs again.
        """
        with self._mutex:
            idx = self._upkeep.sync()
            for _ in range(8):
                found = self._upkeep.query(query)
                if found is None or self._upkeep.stamp_matches(idx, found.path):
                    return found
                with self._locked():
                    self._upkeep.refresh(self._upkeep.handle(), found.path)
            return self._upkeep.query(query)

    # == internals: notes on disk ==========================================================

    def _now(self) -> str:
        return format_datetime(self.clock.now())

    def _new_id(self, folder: str) -> str:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._tids.reseed()
        while True:
            new_id = self._tids.next()
            if not (self.path / folder / f"{new_id}.md").exists():
                return new_id

    def _make_folder(self, folder: str) -> list[Path]:
        """Create a note folder (and its parents) if needed; no lock is needed for that.

        The next locked section finds the new folders through their parents'
        mtimes, like any folder made by hand.
        """
        self._require_vault()
        created: list[Path] = []
        if (self.path / folder).is_dir():
            return created
        parts = folder.split("/")
        for depth in range(1, len(parts) + 1):
            current = self.path.joinpath(*parts[:depth])
            if not current.is_dir():
                current.mkdir(exist_ok=True)
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

    def _ensure_brief(self, idx: Index, namespace: str) -> set[str]:
        """Write the namespace's brief note the first time; returns the folders touched."""
        brief = f"{namespace}/_brief.md"
        if idx.brief_path(namespace) is not None or (self.path / brief).exists():
            return set()
        text = render_note({"type": "brief", "namespace": namespace}, brief_template(namespace))
        st = atomic_write(self.path / brief, text, durable=self.durable)
        self._pending_records.append(
            FileRecord(brief, st.st_mtime_ns, st.st_size, "brief", namespace=namespace)
        )
        return {namespace}

    def _write_handoff(self, path: str, text: str, handoff: Handoff) -> FileRecord:
        st = atomic_write(self.path / path, text, durable=self.durable)
        return FileRecord(
            path, st.st_mtime_ns, st.st_size, "handoff", handoff=replace(handoff, path=path)
        )

    def _commit(self, idx: Index, records: list[FileRecord], touched: set[str]) -> None:
        """Record what was just written, and the folders' new mtimes, in one transaction."""
        extra, self._pending_records = self._pending_records, []
        with idx.transaction():
            for record in [*extra, *records]:
                idx.put(record)
            for rel in sorted(touched):
                st = os.stat(self.path / rel if rel else self.path)
                idx.set_dir(rel, st.st_mtime_ns)

    def _fresh_from_disk(self, idx: Index, indexed: Handoff) -> _Loaded | None:
        """The handoff as its note says now; the index is corrected if it was stale."""
        full = self.path / indexed.path
        try:
            raw = full.read_bytes()
            st = os.stat(full)
        except FileNotFoundError:
            self._upkeep.refresh(idx, indexed.path)
            return None
        try:
            note = parse_note(raw.decode("utf-8"))
            if note is None or note.meta.get("type") != "handoff":
                raise NoteError("it is no longer a handoff note (no 'type: handoff' property)")
            handoff = handoff_from_note(note, indexed.path)
        except (NoteError, UnicodeDecodeError):
            self._upkeep.refresh(idx, indexed.path)
            return None
        if idx.file_stamp(indexed.path) != (st.st_mtime_ns, st.st_size) or handoff.id != indexed.id:
            self._upkeep.refresh(idx, indexed.path)
            if handoff.id != indexed.id:
                return None
        return _Loaded(handoff, note)

    def _load_handoff(self, idx: Index, id: str) -> tuple[Handoff, ParsedNote]:
        """Read a handoff from its note for a change; refuses a note that is damaged."""
        indexed = idx.handoff(id)
        if indexed is None:
            raise _handoff_not_found(id)
        full = self.path / indexed.path
        try:
            raw = full.read_bytes()
        except FileNotFoundError:
            self._upkeep.refresh(idx, indexed.path)
            raise _handoff_not_found(id) from None
        try:
            note = parse_note(raw.decode("utf-8"))
            if note is None or note.meta.get("type") != "handoff":
                raise NoteError("it has no 'type: handoff' frontmatter")
            handoff = handoff_from_note(note, indexed.path)
        except (NoteError, UnicodeDecodeError) as exc:
            self._upkeep.refresh(idx, indexed.path)
            raise DataError(
                f"the note for handoff {id} ({indexed.path}) is damaged: {exc}; "
                "fix it by hand (see 'agent-mem-vault doctor'); it was not changed",
                code="note_damaged",
                id=id,
                path=indexed.path,
            ) from None
        if handoff.id != id:
            self._upkeep.refresh(idx, indexed.path)
            raise _handoff_not_found(id)
        return handoff, note

    def _change(self, id: str, rule: Callable[[Handoff], Handoff]) -> Handoff:
        with self._writing() as idx:
            handoff, note = self._load_handoff(idx, id)
            updated = rule(handoff)
            if updated == handoff:
                return handoff
            text = render_note(apply_handoff(note.meta, updated), note.body)
            record = self._write_handoff(handoff.path, text, updated)
            self._commit(idx, [record], {record.dir})
            return updated

    def _ensure_dashboard(self) -> None:
        target = self.path / DASHBOARD_PATH
        text = render_dashboard()
        try:
            current = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != text:
            target.parent.mkdir(exist_ok=True)
            atomic_write(target, text, durable=self.durable)
        self._dashboard_checked = True

    def _temp_files(self) -> list[str]:
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames[:] = [d for d in dirnames if d != DOT_DIR]
            for name in filenames:
                if name.startswith(".") and name.endswith(".tmp"):
                    out.append(os.path.relpath(os.path.join(dirpath, name), self.path))
        return sorted(out)

    def _clear_temp_files(self) -> None:
        for rel in self._temp_files():
            (self.path / rel).unlink(missing_ok=True)

    def _report(self, idx: Index, stats: ScanStats) -> ReindexReport:
        return ReindexReport(
            handoffs=idx.count_handoffs(),
            memories=idx.count_memories(),
            added=stats.added,
            changed=stats.changed,
            removed=stats.removed,
            broken=tuple(idx.broken()),
        )


@dataclass(frozen=True, slots=True)
class _Loaded:
    """A handoff read from its note, with the parsed note kept for rewriting."""

    handoff: Handoff
    note: ParsedNote


def _check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(
            f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}",
            code="invalid_limit",
            field="limit",
        )
    return limit


def _handoff_not_found(id: str) -> NotFoundError:
    return NotFoundError(
        f"no handoff with id {id}; 'agent-mem-vault handoffs --status all' lists them",
        code="handoff_not_found",
        id=id,
    )
