"""The values the vault hands out: frozen dataclasses, no I/O.

Every interface (CLI, MCP, HTTP) renders these; ``to_dict`` gives the JSON
shape they share so that the three faces agree on field names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ...core.words import counted
from .links import wikilink
from .origin import Origin

__all__ = [
    "Brief",
    "BrokenNote",
    "DoctorReport",
    "FilledNote",
    "Handoff",
    "HandoffPage",
    "HandoffStatus",
    "Memory",
    "MemoryPage",
    "MemoryStatus",
    "Origin",
    "ReindexReport",
    "Repair",
    "SearchHit",
    "SearchHits",
    "SearchPage",
    "SkippedNote",
]

HandoffStatus = Literal["pending", "read"]
"""A handoff is ``pending`` until read, acknowledged or superseded; then ``read``."""
MemoryStatus = Literal["live", "superseded", "forgotten"]
"""A memory is ``live`` (searched, briefed, listed) until a newer version replaces it
(``superseded``, kept as history) or it is forgotten (``forgotten``, kept and restorable)."""


@dataclass(frozen=True, slots=True)
class Handoff:
    """One handoff note.

    >>> h = Handoff(id="3l6qyvzp7ns2c", namespace="project/harbor-api", sender="claude-code",
    ...             recipient="codex", summary="Batch it", context="Start with 1000 rows.",
    ...             status="pending", created_at="2026-01-01T00:00:00.000Z")
    >>> print(h.text)
    ## Summary
    Batch it
    <BLANKLINE>
    ## Full Context
    Start with 1000 rows.
    """

    id: str
    """A TID; also the note's file name (``<id>.md``)."""
    namespace: str
    """Path-like, e.g. ``project/harbor-api``; the folder the note lives under."""
    sender: str
    """The agent that wrote it (frontmatter ``from``)."""
    recipient: str
    """The agent it is for (frontmatter ``to``), matched exactly."""
    summary: str
    context: str
    status: HandoffStatus
    created_at: str
    """RFC 3339, UTC, milliseconds, ``Z``."""
    read_at: str | None = None
    """When it became read; absent while pending (reopen removes it)."""
    supersedes: tuple[str, ...] = ()
    """Ids of older handoffs this one replaces."""
    superseded_by: str | None = None
    """Id of the newer handoff that replaced this one."""
    path: str = ""
    """The note's path relative to the vault, with ``/`` separators."""
    origin: Origin | None = None
    """Who wrote its text, where a view of this one note looked (None: not looked, or
    the note names nobody)."""

    @property
    def read(self) -> bool:
        """Frontmatter ``read``: true once read, acknowledged or superseded."""
        return self.status == "read"

    @property
    def text(self) -> str:
        """What ``read_handoff`` gives an agent: ``## Summary\\n…\\n\\n## Full Context\\n…``."""
        return f"## Summary\n{self.summary}\n\n## Full Context\n{self.context}"

    @property
    def heading(self) -> str:
        """Who left it, for whom, when, and its id: the line an agent (or a person) reads
        above ``text``, so that a handoff never arrives without its sender.

        >>> Handoff(id="3l6qyvzp7ns2c", namespace="p", sender="claude-code", recipient="codex",
        ...         summary="s", context="c", status="pending",
        ...         created_at="2026-01-01T00:00:00.000Z").heading
        'Handoff 3l6qyvzp7ns2c from claude-code to codex, 2026-01-01T00:00:00.000Z'
        """
        to = self.recipient or "any agent"
        line = f"Handoff {self.id} from {self.sender} to {to}, {self.created_at}"
        return line if self.origin is None else f"{line}\n{self.origin.line}"

    def to_dict(self) -> dict[str, Any]:
        """JSON shape shared by the CLI's ``--json``, MCP and HTTP (``from``/``to`` as on disk)."""
        return {
            "id": self.id,
            "namespace": self.namespace,
            "from": self.sender,
            "to": self.recipient,
            "status": self.status,
            "read": self.read,
            "created_at": self.created_at,
            "read_at": self.read_at,
            "supersedes": list(self.supersedes),
            "superseded_by": self.superseded_by,
            "summary": self.summary,
            "context": self.context,
            "path": self.path,
        } | _written_by(self.origin)


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory note: a decision, note, task or risk worth keeping."""

    id: str
    namespace: str
    title: str
    content: str
    kind: str
    """``decision``, ``note``, ``task``, ``risk``, or another lowercase word."""
    created_at: str
    tags: tuple[str, ...] = ()
    agent: str | None = None
    """Who saved it, if known."""
    path: str = ""
    supersedes: tuple[str, ...] = ()
    """Ids of the earlier versions this one replaced (``update_memory``)."""
    superseded_by: str | None = None
    """Id of the newer version that replaced this one; it stays readable as history."""
    forgotten_at: str | None = None
    """When it was forgotten (``forget_memory``): out of search, the brief and the
    default listing until ``restore_memory``."""
    origin: Origin | None = None
    """Who wrote its text, where a view of this one memory looked (see ``Handoff``)."""

    @property
    def status(self) -> MemoryStatus:
        """``forgotten``, else ``superseded`` when a newer version replaced it, else ``live``."""
        if self.forgotten_at is not None:
            return "forgotten"
        if self.superseded_by is not None:
            return "superseded"
        return "live"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["origin"]
        data["tags"] = list(self.tags)
        data["supersedes"] = list(self.supersedes)
        data["status"] = self.status
        return data | _written_by(self.origin)


def _written_by(origin: Origin | None) -> dict[str, Any]:
    """``written_by`` in a note's JSON, where a view looked: present only then, so the
    shape of a listing stays as it was."""
    return {} if origin is None else {"written_by": origin.to_dict()}


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A memory found by ``search_memory``, best first."""

    memory: Memory
    score: float
    """Higher is better: BM25 from SQLite FTS5 in ``fts`` mode, the fused
    reciprocal-rank score in ``hybrid`` mode."""
    snippet: str
    """A short excerpt with the matched words between ``[`` and ``]``."""
    match: str = "words"
    """How it was found: ``words`` (full text), ``meaning`` (vector) or ``both``."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory.to_dict(),
            "score": self.score,
            "snippet": self.snippet,
            "match": self.match,
        }


def _next_offset(offset: int, shown: int, total: int) -> int | None:
    """The offset of the page after one that shows ``shown`` items from ``offset``, or None."""
    end = offset + shown
    return end if end < total else None


class _Page:
    """What every page of a listing says besides its items: how many match in all, where
    it starts, and the ``offset`` of the next page (``None`` on the last one)."""

    __slots__ = ()
    total: int
    offset: int

    def _shown(self) -> int:
        raise NotImplementedError

    @property
    def next_offset(self) -> int | None:
        return _next_offset(self.offset, self._shown(), self.total)

    @property
    def more(self) -> bool:
        return self.next_offset is not None

    def _paging(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "offset": self.offset,
            "more": self.more,
            "next_offset": self.next_offset,
        }


class SearchHits(list[SearchHit], _Page):
    """The hits of one search, best first, and which mode answered it.

    ``mode`` is ``hybrid`` (full text and meaning, fused) or ``fts`` (full
    text only); ``reason`` says why a search fell back to ``fts``.
    """

    def __init__(
        self,
        hits: list[SearchHit],
        *,
        mode: str,
        reason: str | None = None,
        total: int | None = None,
        offset: int = 0,
    ) -> None:
        super().__init__(hits)
        self.mode = mode
        self.reason = reason
        # Paging: ``total`` counts every matching memory.
        self.offset = offset
        self.total = offset + len(hits) if total is None else total

    def _shown(self) -> int:
        return len(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "reason": self.reason,
            "count": len(self),
            "hits": [hit.to_dict() for hit in self],
            **self._paging(),
        }


@dataclass(frozen=True, slots=True)
class Brief:
    """What an agent loads at the start of a session for one namespace."""

    namespace: str
    notes: str
    """The human-editable part: the body of ``<namespace>/_brief.md`` (may be empty)."""
    decisions: tuple[Memory, ...]
    """The most recent ``decision`` memories, newest first."""
    pending: tuple[Handoff, ...]
    """Pending handoffs in the namespace, newest first."""
    path: str = ""
    origin: Origin | None = None
    """Who last changed the brief note's text, where that is known."""
    quarantined: int = 0
    """Pending handoffs left out: written outside the team (policy ``require``)."""

    @property
    def text(self) -> str:
        """The brief as Markdown, short enough to put in a prompt."""
        return render_brief(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "notes": self.notes,
            "decisions": [m.to_dict() for m in self.decisions],
            "pending": [h.to_dict() for h in self.pending],
            "path": self.path,
            **_written_by(self.origin),
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class BrokenNote:
    """A note the vault could not use; it is skipped, reported, and never overwritten."""

    path: str
    problem: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "problem": self.problem}


@dataclass(frozen=True, slots=True)
class FilledNote:
    """A note written by hand that lacks properties the vault reads: what the index took
    from the file instead. Information, not a problem: the note is used, and left as
    the person wrote it."""

    path: str
    filled: tuple[str, ...]
    """The properties taken from the file (``id``, ``namespace``, ``title``, ...)."""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "filled": list(self.filled)}


@dataclass(frozen=True, slots=True)
class SkippedNote:
    """A file the index leaves out on purpose (empty, or too large to read at every
    search); it stays as it is, and ``doctor`` names it."""

    path: str
    reason: str
    """Why, in words: ``empty file``, or the size and the limit."""
    size: int
    """Its size in bytes when it was looked at."""

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "size": self.size}


@dataclass(frozen=True, slots=True)
class Repair:
    """Something the vault repaired by itself: an index rebuilt from the notes, the temp
    file of a writer that was killed removed (``repairs.py`` keeps the record)."""

    at: str
    """When, RFC 3339."""
    what: str
    """``rebuilt`` (the index) or ``cleaned`` (a temp file removed)."""
    path: str
    """The file repaired or removed, relative to the vault."""
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "what": self.what, "path": self.path, "why": self.why}


@dataclass(frozen=True, slots=True)
class ReindexReport:
    """What a rescan or reindex found."""

    handoffs: int
    memories: int
    added: int = 0
    changed: int = 0
    removed: int = 0
    broken: tuple[BrokenNote, ...] = ()
    vectors: int = 0
    """Memories given a vector for search by meaning (``reindex`` with an embedder)."""
    dashboard: str = ""
    """What became of ``_dashboards/memory.base`` (see ``dashboard.DashboardOutcome``):
    ``written``, ``current``, ``kept`` (changed by a person, left alone) or ``rewritten``
    (with a backup); '' when it was not looked at."""
    dashboard_backup: str | None = None
    """Where the person's dashboard was kept when it was rewritten on request."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["broken"] = [b.to_dict() for b in self.broken]
        return data


@dataclass(frozen=True, slots=True)
class DoctorReport:
    """The health of a vault: counts and every problem found, each with a path."""

    path: str
    handoffs: int
    memories: int
    pending: int
    broken: tuple[BrokenNote, ...] = ()
    problems: tuple[str, ...] = field(default=())
    """Other problems: dangling ``supersedes`` links, a missing dashboard, …"""
    search: dict[str, Any] = field(default_factory=dict)
    """Search by meaning: backend, model, where the model is kept, vectors made and waiting."""
    filled: tuple[FilledNote, ...] = ()
    """Notes written by hand, with what the index took from their files (information)."""
    information: tuple[str, ...] = ()
    """Other things worth knowing that are not problems: a dashboard changed by hand,
    a vault this user can only read."""
    skipped: tuple[SkippedNote, ...] = ()
    """Files the index leaves out on purpose; information, not problems."""
    repairs: tuple[Repair, ...] = ()
    """What the vault repaired by itself lately (``repairs.SHOWN_FOR``); information."""
    sync: tuple[dict[str, Any], ...] = ()
    """Each route the vault syncs by (``Vault.sync_status``): remote, ahead/behind, the
    last error. Told, not a problem: the notes are safe here while a remote is away."""

    @property
    def ok(self) -> bool:
        return not self.broken and not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "handoffs": self.handoffs,
            "memories": self.memories,
            "pending": self.pending,
            "broken": [b.to_dict() for b in self.broken],
            "problems": list(self.problems),
            "filled": [f.to_dict() for f in self.filled],
            "information": list(self.information),
            "search": self.search,
            "skipped": [s.to_dict() for s in self.skipped],
            "repairs": [r.to_dict() for r in self.repairs],
            "sync": list(self.sync),
        }


@dataclass(frozen=True, slots=True)
class HandoffPage(_Page):
    """One page of a handoff listing, and how to get the next one.

    ``total`` counts every handoff the filters match; ``next_offset`` is the
    ``offset`` that gives the next page, or ``None`` when this page is the last.
    """

    handoffs: tuple[Handoff, ...]
    total: int
    offset: int
    quarantined: int = 0
    """Handoffs the filters match that are left out: written outside the team, on a
    route whose policy is ``require`` (a person reviews them: ``trust quarantine``)."""

    def _shown(self) -> int:
        return len(self.handoffs)

    def to_dict(self) -> dict[str, Any]:
        out = {"handoffs": [h.to_dict() for h in self.handoffs], **self._paging()}
        if self.quarantined:
            out["quarantined"] = self.quarantined
        return out


@dataclass(frozen=True, slots=True)
class MemoryPage(_Page):
    """One page of a memory listing, newest first, and how to get the next one
    (as ``HandoffPage``)."""

    memories: tuple[Memory, ...]
    total: int
    offset: int
    quarantined: int = 0
    """Memories of this page left out: written outside the team, on a route whose policy
    is ``require`` (``total`` counts them; the next page starts after them)."""

    def _shown(self) -> int:
        return len(self.memories) + self.quarantined

    def to_dict(self) -> dict[str, Any]:
        out = {
            "memories": [m.to_dict() for m in self.memories],
            "count": len(self.memories),
            **self._paging(),
        }
        if self.quarantined:
            out["quarantined"] = self.quarantined
        return out


@dataclass(frozen=True, slots=True)
class SearchPage(_Page):
    """One page of search hits, best first; ``total`` counts every matching memory.

    ``mode`` and ``reason`` say which search answered (see ``SearchHits``)."""

    hits: tuple[SearchHit, ...]
    total: int
    offset: int
    mode: str = "fts"
    reason: str | None = None
    quarantined: int = 0
    """Hits of this page left out, as ``MemoryPage.quarantined``."""

    def _shown(self) -> int:
        return len(self.hits) + self.quarantined

    def to_dict(self) -> dict[str, Any]:
        out = {
            "mode": self.mode,
            "reason": self.reason,
            "count": len(self.hits),
            "hits": [h.to_dict() for h in self.hits],
            **self._paging(),
        }
        if self.quarantined:
            out["quarantined"] = self.quarantined
        return out


_LINE = 160


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _LINE else line[: _LINE - 1] + "…"


def _without_title(notes: str, namespace: str) -> str:
    """The note without its title line ``# <namespace>`` (the one ``brief_template``
    writes): the brief's own heading already names the namespace, once."""
    first, _, rest = notes.partition("\n")
    if first.strip() == f"# {namespace}":
        return rest.strip()
    return notes


def _by(note: Handoff | Memory) -> str:
    """` — Ada Lovelace on laptop-3f2a` (and its mark) where the writer is known."""
    return "" if note.origin is None else f" — {note.origin.short}"


def render_brief(brief: Brief, *, pending: bool = True) -> str:
    """Markdown: the note, then decisions, then pending handoffs (with ids to read or ack).

    Each entry links its note (``[[id]]``, or ``[[path|id]]`` for a note written by
    hand), so a brief kept in the vault shows its threads in Obsidian, and the
    id an agent passes on is in the link. ``pending=False`` leaves the pending
    handoffs out, for a caller that lists them its own way (the session hook lists
    the agent's own), so no list shows twice."""
    parts = [f"# Project brief: {brief.namespace}"]
    notes = _without_title(brief.notes.strip(), brief.namespace)
    if notes and brief.origin is not None and brief.origin.mark:
        notes = f"(last changed by {brief.origin.short})\n{notes}"
    if notes:
        parts.append(notes)
    if brief.decisions:
        lines = [
            f"- {m.created_at[:10]} {_one_line(m.title)} {wikilink(m.path, m.id)}{_by(m)}"
            for m in brief.decisions
        ]
        parts.append("## Recent decisions\n" + "\n".join(lines))
    else:
        parts.append("## Recent decisions\n(none yet)")
    if not pending:
        return "\n\n".join(parts)
    held = (
        f"\n({counted(brief.quarantined, 'handoff')} left out: written outside the team; a "
        "person reviews them with 'agent-mem-vault trust quarantine')"
        if brief.quarantined
        else ""
    )
    if brief.pending:
        lines = [
            f"- {wikilink(h.path, h.id)} from {h.sender} to {h.recipient or 'any agent'}: "
            f"{_one_line(h.summary)}{_by(h)}"
            for h in brief.pending
        ]
        parts.append("## Pending handoffs\n" + "\n".join(lines) + held)
    else:
        parts.append("## Pending handoffs\n(none)" + held)
    return "\n\n".join(parts)
