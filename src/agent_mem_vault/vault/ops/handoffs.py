"""The handoff operations of ``Vault``: create, read, peek, list, get, ack, reopen.

What may follow what is decided by the pure rules in ``lifecycle.py``; this
module loads the notes a change needs from disk (the truth, not the index),
applies a rule and writes only what it returns, inside the vault lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ...core.errors import InvalidInputError, NotFoundError
from ..folder.files import atomic_write
from ..folder.records import FileRecord, read_file, twice_delivered
from ..format import lifecycle
from ..format.models import Handoff, HandoffPage, Origin
from ..format.namespaces import (
    check_page,
    check_status,
    not_found,
    validate_agent,
    validate_id,
    validate_namespace,
    validate_namespace_filter,
    validate_summary,
    validate_text,
)
from ..format.notes import (
    NoteError,
    ParsedNote,
    apply_handoff,
    handoff_meta,
    render_body,
    render_note,
)
from ..index.db import Index
from ..index.filters import HandoffFilter
from ..index.scan import Scope, listing_scope
from .views import view_of
from .writes import NoteWrites, damaged_note

__all__ = ["HandoffOps", "StatusFilter", "Taken"]

StatusFilter = Literal["pending", "read", "all"]


class HandoffOps(NoteWrites):
    """Handoffs: notes from one agent to another about work that should continue."""

    def create_handoff(
        self,
        *,
        to: str,
        summary: str,
        context: str,
        namespace: str,
        supersedes: Iterable[str] | None = (),
        from_: str | None = None,
        properties: Mapping[str, Any] | None = None,
    ) -> Handoff:
        """Leave a pending handoff for agent ``to`` in ``namespace``.

        Each id in ``supersedes`` (same namespace, not already superseded)
        becomes read and gets ``superseded_by``; on any refusal nothing is written.
        ``from_`` is the sending agent; ``None`` records it as ``unknown``.
        ``properties`` are extra note properties (an automatic handoff's
        ``origin``, say); they never replace the handoff's own ones, and stay
        through every later change of the note, as properties a person adds do.
        """
        recipient = validate_agent(to, field="to")
        sender = validate_agent("unknown" if from_ is None else from_, field="from")
        namespace = validate_namespace(namespace)
        summary = validate_summary(summary)
        context = validate_text(context, field="context")
        older_ids = _unique_ids(supersedes)
        with self._creating(namespace, "handoffs") as (idx, new):
            # Checks first: a refused supersede writes nothing.
            olds = [self._load_handoff(idx, older_id) for older_id in older_ids]
            for old, _note in olds:
                lifecycle.check_supersedable(old, namespace)
            handoff = Handoff(
                id=new.id,
                namespace=namespace,
                sender=sender,
                recipient=recipient,
                summary=summary,
                context=context,
                status="pending",
                created_at=self._now(),
                supersedes=tuple(older_ids),
                path=new.path,
            )
            meta = handoff_meta(handoff, {old.id: old.path for old, _note in olds})
            stamp, writer = self._stamped(namespace)
            meta.update(stamp)
            meta.update({k: v for k, v in (properties or {}).items() if k not in meta})
            text = render_note(meta, render_body(summary, context))
            new.records.append(self._write(new.path, text, "handoff", handoff=handoff))
            # The new note first: killed in between, the older one is still pending
            # (doctor reports the half-done supersede) rather than closed for nothing.
            for old, note in olds:
                updated = lifecycle.supersede(old, new.id, handoff.created_at)
                new.records.append(self._rewrite(old, note, updated))
        return handoff if writer is None else replace(handoff, origin=writer)

    def read_handoff(self, *, agent: str, namespace: str) -> Handoff | None:
        """Take the newest pending handoff for ``agent`` in ``namespace`` and mark it read.

        Returns ``None`` when nothing is pending. Two callers racing for the
        same handoff: exactly one gets it. In a namespace that travels with git
        (``vault/sync``), a read counts only once the remote took the claim, so
        that two machines never both get it (the sync's port: ``port.py``).
        """
        agent = validate_agent(agent)
        namespace = validate_namespace(namespace)
        sync = self._port()
        if sync.travels(namespace):
            taken = sync.claim(self, agent=agent, namespace=namespace)
        else:
            taken = self._read_here(agent, namespace)
        return None if taken is None else self._with_origin(taken)

    def _read_here(self, agent: str, namespace: str) -> Handoff | None:
        """``read_handoff`` on this machine alone: the vault lock makes it exclusive."""
        with self._writing(scope=[(namespace, "handoffs")]) as idx:
            taken = self._take(idx, agent, namespace)
        return None if taken is None else taken.handoff

    def peek_handoff(self, *, agent: str, namespace: str) -> Handoff | None:
        """The handoff ``read_handoff`` would return, without marking it read."""
        agent = validate_agent(agent)
        namespace = validate_namespace(namespace)
        guard = self._port().guard(namespace)

        def newest(idx: Index) -> Handoff | None:
            skip: list[str] = []
            while (found := idx.newest_pending(namespace, agent, skip)) is not None:
                if guard is None or not guard([found.path]):
                    return found
                skip.append(found.id)  # quarantined: the next one
            return None

        found = self._reading(newest, [(namespace, "handoffs")])
        return None if found is None else self._with_origin(found)

    def quarantined_handoffs(self, namespace: str | None = None) -> list[Handoff]:
        """The pending handoffs no agent may take or see (``namespace``, or every one):
        written outside the team, on a route whose policy is ``require``; each with who
        wrote it, for a person to review (``release_note``). Then the read ones an
        outsider's entry changed last: marked read (or superseded) to hide them from the
        team, for a person to reopen."""
        namespace = validate_namespace_filter(namespace)

        def run(idx: Index) -> list[Handoff]:
            spaces = [namespace] if namespace is not None else idx.handoff_namespaces()
            out: list[Handoff] = []
            for ns in spaces:
                for id, origin in self._quarantined(idx, ns, None).items():
                    found = idx.handoff(id)
                    if found is not None:
                        out.append(replace(found, origin=origin))
                for path, who in self._port().closed_outside(ns).items():
                    found = idx.handoff(path.rsplit("/", 1)[-1].removesuffix(".md"))
                    if found is not None and found.status == "read":
                        closed = Origin(who, verified=False, why="closed_outside", touched=who)
                        out.append(replace(found, origin=closed))
            return out

        return self._query(run)

    def count_quarantined(self, *, agent: str, namespace: str) -> int:
        """How many pending handoffs for ``agent`` in ``namespace`` no agent may take: what
        an agent is told when nothing else waits (never which)."""
        agent, namespace = validate_agent(agent), validate_namespace(namespace)
        return self._query(lambda idx: len(self._quarantined(idx, namespace, agent)))

    def is_quarantined(self, id: str) -> bool:
        """Whether handoff ``id`` waits for a person: written outside the team (``require``)."""
        handoff = self.get_handoff(id)
        guard = self._port().guard(handoff.namespace)
        return guard is not None and bool(guard([handoff.path]))

    def _quarantined(self, idx: Index, namespace: str, agent: str | None) -> dict[str, Origin]:
        """The pending handoffs of ``namespace`` (to ``agent``) no agent may take or see:
        written outside the team, on a route whose policy is ``require`` (id → who)."""
        return self._port().quarantined(namespace, lambda: idx.pending_paths(namespace, agent))

    def page_handoffs(
        self,
        *,
        namespace: str | None = None,
        status: StatusFilter = "pending",
        agent: str | None = None,
        sender: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> HandoffPage:
        """One page of ``list_handoffs``: the handoffs from ``offset``, the total, and the
        ``next_offset`` to pass for the next page (``None`` on the last one)."""
        namespace = validate_namespace_filter(namespace)
        check_status(status, ("pending", "read", "all"))
        if agent is not None:
            agent = validate_agent(agent)
        if sender is not None:
            sender = validate_agent(sender, field="sender")
        limit, offset = check_page(limit, offset)

        wanted = HandoffFilter(namespace, status, agent, sender)

        def run(idx: Index) -> HandoffPage:
            spaces = [namespace] if namespace is not None else idx.pending_namespaces()
            held = tuple(i for ns in spaces for i in self._quarantined(idx, ns, agent))
            shown = replace(wanted, exclude=held)
            found = idx.list_handoffs(shown, limit, offset)
            total = idx.count_listed(shown)
            left_out = idx.count_listed(wanted) - total if held else 0
            return HandoffPage(self._with_origins(found), total, offset, left_out)

        scope = listing_scope(namespace, "handoffs")
        return self._query_fresh(run, lambda page: [h.path for h in page.handoffs], scope)

    @view_of(page_handoffs)
    def list_handoffs(self, page: HandoffPage) -> list[Handoff]:
        """Handoffs, newest first: by ``status`` (pending, read or all), recipient ``agent``
        and ``sender``; all namespaces when ``namespace`` is None. ``page_handoffs``
        also says how many there are in all."""
        return list(page.handoffs)

    def get_handoff(self, id: str) -> Handoff:
        """One handoff by id; ``NotFoundError`` (``handoff_not_found``) if there is none."""
        validate_id(id)
        found = self._reading(lambda idx: idx.handoff(id))
        if found is None:
            raise _handoff_not_found(id)
        return self._with_origin(found)

    def ack_handoff(self, id: str) -> Handoff:
        """Mark a handoff read without taking it; already read: returned unchanged."""
        validate_id(id)
        return self._change(id, lambda h: lifecycle.mark_read(h, self._now()))

    def reopen_handoff(self, id: str) -> Handoff:
        """Make a read handoff pending again (``read_at`` removed); refused if superseded."""
        validate_id(id)
        return self._change(id, lifecycle.reopen)

    # -- internals -------------------------------------------------------------------

    def _reading(
        self, query: Callable[[Index], Handoff | None], scope: Sequence[Scope] = ()
    ) -> Handoff | None:
        """Run a one-handoff query and check the note on disk still says the same.

        If the note was edited or removed by hand since it was indexed, the
        index is corrected for it (under the lock) and the query runs again.
        """
        with self._held():
            self._require_vault()
            idx = self._upkeep.sync(scope)
            for _ in range(8):
                found = self._upkeep.query(query, idx)
                if (
                    found is None
                    or self._upkeep.vouches(found.path)
                    or self._upkeep.stamp_matches(idx, found.path)
                ):
                    return found
                with self._locked():
                    idx = self._upkeep.handle()
                    self._upkeep.refresh(idx, found.path)
            return self._upkeep.query(query)

    def _take(
        self,
        idx: Index,
        agent: str,
        namespace: str,
        extra: Mapping[str, Any] | None = None,
        skip: Sequence[str] = (),
        told: Callable[[Handoff], None] | None = None,
    ) -> Taken | None:
        """Mark the newest pending handoff for ``agent`` read, inside a locked section
        (``extra``: properties the note gets as well; ``skip``: ids not to take;
        ``told``: told which one, before its note is written); what it was, or None.
        A handoff written outside the team is passed by (``require``)."""
        skip = list(skip)
        guard = self._port().guard(namespace)
        while (candidate := idx.newest_pending(namespace, agent, skip)) is not None:
            if guard is not None and guard([candidate.path]):
                skip.append(candidate.id)  # quarantined: never an agent's
                continue
            # A claim may have to put the note back as it was (``_put_back``).
            found = read_file(self.path, candidate.path) if extra is not None else None
            current = self._fresh_from_disk(idx, candidate)
            if current is None or not _is_pending_for(current[0], agent, namespace):
                skip.append(candidate.id)
                continue
            handoff, note = current
            if told is not None:
                told(handoff)
            updated = lifecycle.mark_read(handoff, self._now())
            record = self._rewrite(handoff, note, updated, extra)
            self._commit(idx, [record])
            before = found[1] if found is not None else b""
            return Taken(updated, before, (record.mtime_ns, record.size))
        return None

    def _put_back(self, taken: Taken) -> bool:
        """Make a handoff ``_take`` marked read pending again, exactly as it was, if its
        note is still as ``_take`` wrote it (inside a locked section); True if so."""
        path = taken.handoff.path
        target = self.path / path
        try:
            st = target.stat()
        except FileNotFoundError:
            return False
        if (st.st_mtime_ns, st.st_size) != taken.stamp:
            return False  # changed since (an edit by hand): that is what stands now
        atomic_write(target, taken.before.decode("utf-8"), durable=self.durable)
        self._upkeep.refresh(self._upkeep.handle(), path)
        return True

    def _change(self, id: str, rule: Callable[[Handoff], Handoff]) -> Handoff:
        """ack / reopen: apply ``rule`` to the note as it is on disk; write only a change."""
        with self._writing() as idx:
            handoff, note = self._load_handoff(idx, id)
            updated = rule(handoff)
            if updated != handoff:
                self._commit(idx, [self._rewrite(handoff, note, updated)])
            return updated

    def _rewrite(
        self,
        handoff: Handoff,
        note: ParsedNote,
        updated: Handoff,
        extra: Mapping[str, Any] | None = None,
    ) -> FileRecord:
        """Write ``updated`` over ``handoff``'s note, keeping the body and added properties
        (``extra``: properties to set as well)."""
        meta = apply_handoff(note.meta, updated)
        meta.update(extra or {})
        text = render_note(meta, note.body)
        problem = twice_delivered(meta)
        return self._write(handoff.path, text, "handoff", handoff=updated, problem=problem)

    def _note_on_disk(self, idx: Index, path: str) -> tuple[Handoff, ParsedNote] | None:
        """The handoff its note holds now; None if gone. ``NoteError`` if it is damaged.

        A note whose size or mtime differ from the index is re-indexed, so the
        index follows what the caller is about to act on.
        """
        found = self._note_from_disk(idx, path)
        if found is None:
            return None
        record, note = found
        if record.handoff is None:
            raise NoteError("it is not a handoff note")
        return record.handoff, note

    def _fresh_from_disk(self, idx: Index, indexed: Handoff) -> tuple[Handoff, ParsedNote] | None:
        """The indexed handoff as its note says now; None if gone, damaged or not it any more."""
        try:
            found = self._note_on_disk(idx, indexed.path)
        except (NoteError, UnicodeDecodeError):
            return None
        if found is None or found[0].id != indexed.id:
            return None
        return found

    def _load_handoff(self, idx: Index, id: str) -> tuple[Handoff, ParsedNote]:
        """Read a handoff from its note for a change; refuses a note that is damaged."""
        indexed = idx.handoff(id)
        if indexed is None:
            raise _handoff_not_found(id)
        try:
            found = self._note_on_disk(idx, indexed.path)
        except (NoteError, UnicodeDecodeError) as exc:
            raise damaged_note("handoff", id, indexed.path, exc) from None
        if found is None or found[0].id != id:
            raise _handoff_not_found(id)
        return found


@dataclass(frozen=True, slots=True)
class Taken:
    """A handoff ``_take`` marked read, with what its note held before (to put it back)."""

    handoff: Handoff
    before: bytes
    stamp: tuple[int, int]
    """(mtime, size) of the note as ``_take`` wrote it."""


def _is_pending_for(handoff: Handoff, agent: str, namespace: str) -> bool:
    """Pending, in ``namespace``, and to ``agent`` or to any agent (no ``to``)."""
    return (
        handoff.status == "pending"
        and handoff.recipient in (agent, "")
        and handoff.namespace == namespace
    )


def _unique_ids(ids: Iterable[str] | str | None) -> list[str]:
    """``supersedes`` as validated ids in the order given, each once (one id or None is fine)."""
    if ids is None:
        return []
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, Iterable):
        raise InvalidInputError(
            f"supersedes must be a list of handoff ids, not {ids!r}",
            code="invalid_id",
            field="supersedes",
        )
    out: list[str] = []
    for item in ids:
        validate_id(item, field="supersedes")
        if item not in out:
            out.append(item)
    return out


def _handoff_not_found(id: str) -> NotFoundError:
    return not_found("handoff", id, "list_handoffs", "agent-mem-vault handoffs --status all")
