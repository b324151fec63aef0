"""The life of a memory, as ``Vault`` methods: list, get, update, forget, restore.

A decision that changed must leave the brief and search, and a secret written
by mistake must leave the disk. What may follow what is decided by the pure
rules in ``lifecycle.py``; this module reads the notes a change needs from disk
(the truth, not the index), applies a rule and writes what it returns, inside
the vault lock, through the same note writes as every other change.

- ``update_memory`` writes a new version (a new note, with ``supersedes``) and
  marks the old one ``superseded_by`` it: the old stays readable as history,
  and only the new one is live, as a handoff thread has one live handoff.
- ``forget_memory`` adds ``forgotten_at`` to the note: out of search, the
  brief and the default listing, the file kept; ``restore_memory`` takes it
  away again. With ``purge`` the note is deleted instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Literal

from ...core.errors import InvalidInputError, NotFoundError
from ..folder.records import FileRecord
from ..format import lifecycle
from ..format.models import Handoff, Memory, MemoryPage
from ..format.namespaces import (
    check_page,
    check_status,
    not_found,
    validate_agent,
    validate_id,
    validate_kind,
    validate_namespace_filter,
    validate_tags,
    validate_text,
    validate_title,
)
from ..format.notes import (
    PRIVATE,
    NoteError,
    ParsedNote,
    apply_memory,
    memory_meta,
    render_body,
    render_note,
)
from ..index.db import Index
from ..index.filters import MemoryFilter
from ..index.scan import listing_scope
from .views import view_of
from .writes import NoteWrites, damaged_note

__all__ = ["MemoryLifeOps", "MemoryStatusFilter"]

MemoryStatusFilter = Literal["live", "superseded", "forgotten", "all"]
_STATUSES = ("live", "superseded", "forgotten", "all")


class MemoryLifeOps(NoteWrites):
    """Memories after they are saved: listed, read, corrected, forgotten, restored."""

    def page_memories(
        self,
        *,
        namespace: str | None = None,
        status: MemoryStatusFilter = "live",
        kind: str | None = None,
        tags: Iterable[str] = (),
        limit: int = 50,
        offset: int = 0,
    ) -> MemoryPage:
        """One page of ``list_memories``: the memories from ``offset``, the total, and the
        ``next_offset`` to pass for the next page (``None`` on the last one). Those written
        outside the team on a route whose policy is ``require`` are left out, and counted
        (``quarantined``)."""
        namespace = validate_namespace_filter(namespace)
        check_status(status, _STATUSES)
        if kind is not None:
            kind = validate_kind(kind)
        tag_tuple = validate_tags(tags)
        limit, offset = check_page(limit, offset)

        wanted = MemoryFilter(namespace, status, kind, tag_tuple)

        def run(idx: Index) -> MemoryPage:
            total, found = idx.list_memories(wanted, limit, offset)
            held = self.quarantined_paths(found)
            shown = tuple(m for m in found if m.path not in held)
            return MemoryPage(self._with_origins(shown), total, offset, len(held))

        scope = listing_scope(namespace, "memories")
        return self._query_fresh(run, lambda page: [m.path for m in page.memories], scope)

    @view_of(page_memories)
    def list_memories(self, page: MemoryPage) -> list[Memory]:
        """Memories, newest first: live ones unless ``status`` says otherwise, in
        ``namespace`` (every namespace when None), of ``kind``, carrying all ``tags``.
        ``page_memories`` also says how many there are in all."""
        return list(page.memories)

    def get_memory(self, id: str) -> Memory:
        """One memory by id, whatever its status (a superseded version is history, still
        readable); ``NotFoundError`` (``memory_not_found``) if there is none."""
        validate_id(id)
        found = self._query_fresh(
            lambda idx: idx.memory(id), lambda m: [] if m is None else [m.path]
        )
        if found is None:
            raise _memory_not_found(id)
        return self._with_origin(found)

    def quarantined_memories(self, namespace: str | None = None) -> list[Memory]:
        """The live memories no agent is given (``namespace``, or every one): written outside
        the team, on a route whose policy is ``require``; each with who wrote it, for a
        person to review (``release_note``, ``vouch_notes``)."""
        namespace = validate_namespace_filter(namespace)
        held = self._port().untrusted_memories(namespace)

        def run(idx: Index) -> list[Memory]:
            out = []
            for path, origin in sorted(held.items()):
                found = idx.memory(path.rsplit("/", 1)[-1].removesuffix(".md"))
                if found is not None and found.path == path and found.status == "live":
                    out.append(replace(found, origin=origin))
            return out

        return self._query(run) if held else []

    def get_note(self, id: str) -> Handoff | Memory:
        """The handoff or the memory with this id, for a caller that holds just an id
        (``agent-mem-vault show ID``); ``NotFoundError`` (``note_not_found``) if neither."""
        validate_id(id)
        kind = self._query(lambda idx: idx.note_kind(id))
        if kind == "handoff":
            found: Handoff | Memory | None = self._query_fresh(
                lambda idx: idx.handoff(id), lambda h: [] if h is None else [h.path]
            )
        elif kind == "memory":
            found = self._query_fresh(
                lambda idx: idx.memory(id), lambda m: [] if m is None else [m.path]
            )
        else:
            found = None
        if found is None:
            raise NotFoundError(
                f"no handoff or memory with id {id}; 'agent-mem-vault handoffs --status all' "
                "and 'agent-mem-vault memory list --status all' show the ids there are",
                code="note_not_found",
                id=id,
            )
        return self._with_origin(found)

    def update_memory(
        self,
        id: str,
        *,
        title: str | None = None,
        content: str | None = None,
        kind: str | None = None,
        tags: Iterable[str] | None = None,
        agent: str | None = None,
    ) -> Memory:
        """Correct a memory: a new version with what is given (the rest as it was) replaces
        it, and the old one stays readable as history (``superseded_by`` the new one).
        Only the live version can be updated. Returns the new version."""
        validate_id(id)
        changes = {
            "title": None if title is None else validate_title(title),
            "content": None if content is None else validate_text(content, field="content"),
            "kind": None if kind is None else validate_kind(kind),
        }
        tag_tuple = None if tags is None else validate_tags(tags)
        if agent is not None:
            agent = validate_agent(agent)
        if all(v is None for v in changes.values()) and tag_tuple is None:
            raise InvalidInputError(
                "nothing to update: give a new title, content, kind or tags",
                code="missing_field",
                field="content",
            )
        namespace = self._query(lambda idx: _indexed(idx, id)).namespace
        with self._creating(namespace, "memories") as (idx, new):
            old, note, _record = self._load_memory(idx, id)
            if old.namespace != namespace:  # moved by hand a moment ago: not where we write
                raise _memory_not_found(id)
            lifecycle.check_updatable(old)
            newer = Memory(
                id=new.id,
                namespace=old.namespace,
                title=changes["title"] or old.title,
                content=changes["content"] or old.content,
                kind=changes["kind"] or old.kind,
                created_at=self._now(),
                tags=old.tags if tag_tuple is None else tag_tuple,
                agent=agent or old.agent,
                path=new.path,
                supersedes=(old.id,),
            )
            meta = memory_meta(newer, {old.id: old.path})
            stamp, writer = self._stamped(old.namespace)
            meta.update(stamp)
            if note.meta.get(PRIVATE) is True:  # a private memory's new version stays home too
                meta[PRIVATE] = True
            text = render_note(meta, render_body(newer.title, newer.content))
            # The new version first: killed in between, the old one is still live
            # (two live versions, both found) rather than lost.
            new.records.append(self._write(new.path, text, "memory", memory=newer))
            new.records.append(self._rewrite_memory(note, lifecycle.retire(old, new.id)))
        return newer if writer is None else replace(newer, origin=writer)

    def forget_memory(self, id: str, *, purge: bool = False) -> Memory:
        """Take a memory out of search, the brief and the default listing; its note is
        kept, and ``restore_memory`` brings it back. With ``purge`` the note is deleted
        instead, for good (a secret written by mistake; earlier versions, if any, are
        other notes: purge them too if they hold it). Returns the memory as it is now
        (as it was, for a purge)."""
        validate_id(id)
        if purge is not True and purge is not False:
            raise InvalidInputError(
                f"purge must be true or false, not {purge!r}", code="invalid_input", field="purge"
            )
        if not purge:
            return self._change_memory(id, lambda memory: lifecycle.forget(memory, self._now()))
        with self._writing() as idx:
            memory, _note, _record = self._load_memory(idx, id)
            self._delete(idx, memory.path)
            return memory

    def restore_memory(self, id: str) -> Memory:
        """Bring a forgotten memory back into search, the brief and the listing."""
        validate_id(id)
        return self._change_memory(id, lifecycle.restore)

    # -- internals -------------------------------------------------------------------

    def _change_memory(self, id: str, rule: Callable[[Memory], Memory]) -> Memory:
        """forget / restore: apply ``rule`` to the note as it is on disk; write only a change."""
        with self._writing() as idx:
            memory, note, _record = self._load_memory(idx, id)
            updated = rule(memory)
            if updated != memory:
                self._commit(idx, [self._rewrite_memory(note, updated)])
            return updated

    def _rewrite_memory(self, note: ParsedNote, updated: Memory) -> FileRecord:
        """Write ``updated``'s properties over its note, keeping the body byte for byte and
        every property a person added."""
        text = render_note(apply_memory(note.meta, updated), note.body)
        return self._write(updated.path, text, "memory", memory=updated)

    def _load_memory(self, idx: Index, id: str) -> tuple[Memory, ParsedNote, FileRecord]:
        """A memory read from its note for a change; refuses a note that is damaged."""
        indexed = _indexed(idx, id)
        try:
            found = self._note_from_disk(idx, indexed.path)
        except (NoteError, UnicodeDecodeError) as exc:
            raise damaged_note("memory", id, indexed.path, exc) from None
        if found is None or found[0].memory is None or found[0].memory.id != id:
            raise _memory_not_found(id)
        record, note = found
        assert record.memory is not None
        return record.memory, note, record


def _indexed(idx: Index, id: str) -> Memory:
    found = idx.memory(id)
    if found is None:
        raise _memory_not_found(id)
    return found


def _memory_not_found(id: str) -> NotFoundError:
    return not_found("memory", id, "list_memories", "agent-mem-vault memory list --status all")
