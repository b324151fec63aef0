"""The memory operations of ``Vault``: save and search memories, and the project brief."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..core.errors import InvalidInputError
from .base import VaultBase, check_limit, check_offset
from .brief import MAX_DECISIONS, MAX_PENDING
from .index import Index
from .models import Brief, Memory, SearchHit, SearchPage
from .namespaces import (
    validate_agent,
    validate_kind,
    validate_namespace,
    validate_tags,
    validate_text,
    validate_title,
)
from .notes import NoteError, memory_meta, parse_note, render_body, render_note

__all__ = ["MemoryOps"]

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_WORDS = 32


class MemoryOps(VaultBase):
    """Memories (decisions, notes, tasks, risks) and the brief that gathers them."""

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
        with self._creating(namespace, "memories") as (_idx, new):
            memory = Memory(
                id=new.id,
                namespace=namespace,
                title=title,
                content=content,
                kind=kind,
                created_at=self._now(),
                tags=tag_tuple,
                agent=agent,
                path=new.path,
            )
            text = render_note(memory_meta(memory), render_body(title, content))
            new.records.append(self._write(new.path, text, "memory", memory=memory))
        return memory

    def search_memory(
        self, *, query: str, namespace: str | None = None, limit: int = 10, offset: int = 0
    ) -> list[SearchHit]:
        """Full-text search of memories (title, content, tags), best first.

        All words must match; when no memory has them all, memories with any
        of them are returned. ``namespace`` includes the namespaces below it.
        Every matching memory is ranked by BM25. ``search_page`` also says how
        many matched in all.
        """
        page = self.search_page(query=query, namespace=namespace, limit=limit, offset=offset)
        return list(page.hits)

    def search_page(
        self, *, query: str, namespace: str | None = None, limit: int = 10, offset: int = 0
    ) -> SearchPage:
        """One page of ``search_memory``: the hits ranked from ``offset``, the total number
        of matching memories, and the ``next_offset`` for the next page."""
        words = _WORD.findall(query) if isinstance(query, str) else []
        if not words:
            raise InvalidInputError(
                "query has no words to search for; give one or more words, e.g. 'backfill'",
                code="missing_field",
                field="query",
            )
        if namespace is not None:
            namespace = validate_namespace(namespace)
        limit = check_limit(limit)
        offset = check_offset(offset)
        # Each word quoted: FTS5 syntax in a query is taken as words, never as operators.
        terms = ['"' + w.replace('"', "") + '"' for w in words[:MAX_QUERY_WORDS]]
        scope = [] if namespace is None else [(namespace, "memories")]

        def run(idx: Index) -> SearchPage:
            match = " AND ".join(terms)
            total = idx.count_matches(match, namespace)
            if total == 0 and len(terms) > 1:
                match = " OR ".join(terms)
                total = idx.count_matches(match, namespace)
            rows = idx.search(match, namespace, limit, offset) if total > offset else []
            hits = tuple(SearchHit(memory=m, score=sc, snippet=sn) for m, sc, sn in rows)
            return SearchPage(hits, total, offset)

        return self._query_fresh(run, lambda page: [h.memory.path for h in page.hits], scope)

    def get_project_brief(self, *, namespace: str) -> Brief:
        """The brief note, recent decisions and pending handoffs of ``namespace``."""
        namespace = validate_namespace(namespace)
        with self._held():
            path = self._query(
                lambda idx: idx.brief_path(namespace),
                [(namespace, "memories"), (namespace, "handoffs")],
            )
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
        return Brief(
            namespace=namespace,
            notes=self._brief_notes(path),
            decisions=tuple(decisions),
            pending=tuple(pending),
            path=path or "",
        )

    def _brief_notes(self, path: str | None) -> str:
        """The body of the brief note; '' if there is none or it cannot be read."""
        if path is None:
            return ""
        try:
            text = (self.path / path).read_text(encoding="utf-8")
            parsed = parse_note(text)
        except (OSError, UnicodeDecodeError, NoteError):
            return ""
        # A brief written by hand may have no frontmatter: then all of it is the body.
        return text if parsed is None else parsed.body
