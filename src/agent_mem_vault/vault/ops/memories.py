"""The memory operations of ``Vault``: save and search memories, and the project brief."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...core.errors import InvalidInputError
from ..format.brief import MAX_DECISIONS, MAX_PENDING
from ..format.models import Brief, Handoff, Memory, SearchHit, SearchHits, SearchPage
from ..format.namespaces import (
    check_page,
    validate_agent,
    validate_kind,
    validate_namespace,
    validate_namespace_filter,
    validate_tags,
    validate_text,
    validate_title,
)
from ..format.notes import NoteError, memory_meta, parse_note, render_body, render_note
from ..index.db import Index
from ..index.embeddings import Embedder, EmbeddingUnavailable
from ..index.filters import HandoffFilter
from ..index.scan import listing_scope
from ..index.vectors import (
    ensure_vector_schema,
    memories_by_rowid,
    pending_texts,
    rrf_fuse,
    store_vectors,
    vector_schema_exists,
)
from .views import view_of
from .writes import NoteWrites

__all__ = ["MemoryOps"]

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_WORDS = 32
SEARCH_MODES = ("auto", "fts", "hybrid")
CANDIDATES = 50
"""Each of the two rankings (words, meaning) contributes this many candidates to fusion."""
EMBED_BATCH = 32
PENDING_BUDGET = 2.0
"""Seconds a search spends embedding memories still waiting for a vector."""


@dataclass(frozen=True)
class _WordMatches:
    """What a hybrid search found by words: the FTS5 ``match`` it settled on (all
    the words, or any of them when no memory has all), how many memories match
    it in all, the best-ranked ``rows``, and ``loose`` to rank them when only
    some of the words matched (then ``rows`` is empty until it is called)."""

    match: str
    total: int
    rows: list[tuple[Memory, float, str]]
    loose: Callable[[], list[tuple[Memory, float, str]]] | None


def _excerpt(content: str, words: int = 24) -> str:
    """The start of a memory found by meaning only (no matched words to show); only the
    start is looked at, whatever the memory's size."""
    parts = content[: words * 40].split(maxsplit=words)
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


class MemoryOps(NoteWrites):
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
        properties: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Keep a decision, note, task or risk; it is searchable at once. ``properties``
        are extra note properties (``private: true`` keeps it on this machine), as for
        ``create_handoff``: they never replace the memory's own ones."""
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
            meta = memory_meta(memory)
            stamp, writer = self._stamped(namespace)
            meta.update(stamp)
            meta.update({k: v for k, v in (properties or {}).items() if k not in meta})
            text = render_note(meta, render_body(title, content))
            new.records.append(self._write(new.path, text, "memory", memory=memory))
        return memory if writer is None else replace(memory, origin=writer)

    @property
    def search_may_embed(self) -> bool:
        """Whether a search may run an embedding model (load it, embed the query and
        memories without a vector): milliseconds to seconds, where a search by
        words alone takes about one. False once the model could not be had."""
        return self.embeddings.backend != "off" and not self._semantic.failed

    def search_page(
        self,
        *,
        query: str,
        namespace: str | None = None,
        limit: int = 10,
        offset: int = 0,
        kind: str | None = None,
        tags: Iterable[str] = (),
        mode: str = "auto",
    ) -> SearchPage:
        """One page of ``search_memory``: the hits ranked from ``offset``, the total number
        of matching memories, the ``next_offset`` for the next page, and the mode.

        In ``hybrid`` mode the total counts every memory that matches by its words
        (all of them, or any when none has all) and, besides those, the ones found
        by meaning. A memory still waiting for its vector counts by its words like
        any other, so the total never depends on how far the model has got; only
        where a hit ranks, and the hits found by meaning alone, do."""
        words = _WORD.findall(query) if isinstance(query, str) else []
        if not words:
            raise InvalidInputError(
                "query has no words to search for; give one or more words, e.g. 'backfill'",
                code="missing_field",
                field="query",
            )
        if mode not in SEARCH_MODES:
            raise InvalidInputError(
                f"mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}",
                code="invalid_mode",
                field="mode",
            )
        namespace = validate_namespace_filter(namespace)
        if kind is not None:
            kind = validate_kind(kind)
        tag_tuple = validate_tags(tags)
        limit, offset = check_page(limit, offset)
        # Before the model is looked for (and perhaps fetched): no vault, no search.
        self._require_vault()
        embedder: Embedder | None = None
        reason: str | None = "full-text search was asked for"
        if mode != "fts":
            embedder, reason = self._semantic.embedder(self.embeddings)
            if embedder is None and mode == "hybrid":
                raise InvalidInputError(
                    f"hybrid search is not available here: {reason}",
                    code="embeddings_unavailable",
                    field="mode",
                )
        # Each word quoted: FTS5 syntax in a query is taken as words, never as operators.
        terms = ['"' + w.replace('"', "") + '"' for w in words[:MAX_QUERY_WORDS]]
        scope = listing_scope(namespace, "memories")
        if embedder is not None:
            try:
                return self._leave_out(
                    self._hybrid_page(
                        embedder, query, terms, namespace, kind, tag_tuple, limit, offset, scope
                    )
                )
            except EmbeddingUnavailable as exc:
                reason = str(exc)
                if mode == "hybrid":
                    raise InvalidInputError(
                        f"hybrid search failed: {reason}",
                        code="embeddings_unavailable",
                        field="mode",
                    ) from exc

        def run(idx: Index) -> SearchPage:
            match = " AND ".join(terms)
            total, rows = idx.search_page(
                match, namespace, limit, offset, kind=kind, tags=tag_tuple
            )
            if total == 0 and len(terms) > 1:
                match = " OR ".join(terms)
                total, rows = idx.search_page(
                    match, namespace, limit, offset, kind=kind, tags=tag_tuple
                )
            hits = tuple(SearchHit(memory=m, score=sc, snippet=sn) for m, sc, sn in rows)
            return SearchPage(hits, total, offset, mode="fts", reason=reason)

        found = self._query_fresh(run, lambda page: [h.memory.path for h in page.hits], scope)
        return self._leave_out(found)

    def _leave_out(self, page: SearchPage) -> SearchPage:
        """``page`` without the hits no agent is given (``quarantined_paths``), counted."""
        held = self.quarantined_paths([h.memory for h in page.hits])
        if not held:
            return page
        hits = tuple(h for h in page.hits if h.memory.path not in held)
        return replace(page, hits=hits, quarantined=len(held))

    @view_of(search_page)
    def search_memory(self, page: SearchPage) -> SearchHits:
        """Search memories (title, content, tags), best first; the result says which mode
        answered, and (``total``, ``next_offset``) how to get the next page.

        ``fts``: full text. All words must match; when no memory has them all,
        memories with any of them are returned. Every matching memory is ranked
        by BM25. ``hybrid``: the same, fused by reciprocal rank with the
        memories nearest in meaning (see ``vectors.py``). ``auto`` (the default)
        is ``hybrid`` when an embedder is available (``embeddings.py``) and
        ``fts`` otherwise, with the reason. ``namespace`` includes the
        namespaces below it; ``kind`` and ``tags`` (all of them) narrow the
        memories before ranking. ``search_page`` gives the same as a ``SearchPage``.
        """
        return SearchHits(
            list(page.hits),
            mode=page.mode,
            reason=page.reason,
            total=page.total,
            offset=page.offset,
        )

    def _hybrid_page(
        self,
        embedder: Embedder,
        query: str,
        terms: list[str],
        namespace: str | None,
        kind: str | None,
        tags: tuple[str, ...],
        limit: int,
        offset: int,
        scope: list[tuple[str, str]],
    ) -> SearchPage:
        """The full-text candidates of a hybrid search, then ``_hybrid`` fuses them."""
        pool = max(offset + limit, CANDIDATES)

        def ranked(
            match: str, checked: list[tuple[str, str]]
        ) -> tuple[int, list[tuple[Memory, float, str]]]:
            return self._query(
                lambda idx: idx.search_page(match, namespace, pool, kind=kind, tags=tags), checked
            )

        # The namespace's notes are checked for edits by hand once per search
        # (one stat per note), before the first query, not again for the second.
        match = " AND ".join(terms)
        words, rows = ranked(match, scope)
        loose: Callable[[], list[tuple[Memory, float, str]]] | None = None
        if not rows and len(terms) > 1:
            # Memories with some of the words: in hybrid mode they only fill up
            # behind the meaning ranking, so they are ranked only if needed; but
            # they are counted, whether they have a vector yet or not.
            match = " OR ".join(terms)
            words = self._query(
                lambda idx: idx.count_matches(match, namespace, kind=kind, tags=tags)
            )

            def loose() -> list[tuple[Memory, float, str]]:
                return ranked(match, [])[1]

        found = _WordMatches(match, words, rows, loose)
        return self._hybrid(embedder, query, found, namespace, kind, tags, limit, offset)

    def embed_pending(self, *, budget: float | None = None) -> int:
        """Compute the vectors memories are waiting for, newest first; returns how many.

        The model runs outside the vault lock; only storing each batch takes
        it. ``budget`` (seconds) stops early, leaving the rest for later.
        Does nothing (returns 0) when no embedder is available.
        """
        embedder, _reason = self._semantic.embedder(self.embeddings)
        if embedder is None:
            return 0
        return self._embed_pending(embedder, budget)

    def _embed_pending(
        self, embedder: Embedder, budget: float | None, query: str | None = None
    ) -> int:
        """``embed_pending``; a ``query`` not yet embedded rides along with the first
        batch (one model run for a just-saved memory and the search after it)."""
        started = time.monotonic()
        model = embedder.model
        if query is not None and self._semantic.cached_query(embedder, query) is not None:
            query = None

        def waiting(idx: Index) -> list[tuple[int, str]] | None:
            """The next batch to embed; ``None`` if the vector tables need making first."""
            if not vector_schema_exists(idx.conn) or idx.get_meta("vectors_model") != model:
                return None
            return pending_texts(idx.conn, EMBED_BATCH)

        done = 0
        while True:
            batch = self._query(waiting)
            if batch is None:
                self._ensure_vectors(model)
                batch = self._query(lambda idx: pending_texts(idx.conn, EMBED_BATCH))
            if not batch:
                return done
            texts = [text for _rowid, text in batch]
            if query is not None:
                vectors = embedder.embed([*texts, query])
                self._semantic.keep_query(embedder, query, vectors[-1])
                vectors = vectors[:-1]
                query = None
            else:
                vectors = embedder.embed(texts)
            with self._held(), self._locked():
                idx = self._upkeep.handle()
                with idx.transaction():
                    ensure_vector_schema(idx.conn, model)
                    kept = store_vectors(idx.conn, model, [r for r, _t in batch], vectors)
            done += len(batch)
            if kept == 0 and done >= len(batch) * 4:
                return done  # another process keeps changing the model: stop
            if budget is not None and time.monotonic() - started >= budget:
                return done

    def _ensure_vectors(self, model: str) -> None:
        """Make the vector tables for ``model`` (under the lock; a no-op if they exist)."""
        with self._held(), self._locked():
            idx = self._upkeep.handle()
            with idx.transaction():
                ensure_vector_schema(idx.conn, model)

    def _hybrid(
        self,
        embedder: Embedder,
        query: str,
        words: _WordMatches,
        namespace: str | None,
        kind: str | None,
        tags: tuple[str, ...],
        limit: int,
        offset: int = 0,
    ) -> SearchPage:
        """The memories that match by ``words`` (ranked by BM25) fused with the
        nearest memories by meaning.

        When no memory has all the words, ``words.loose`` ranks those with some
        of them; measured on bench_search.py, fusing those drowns the meaning
        ranking (recall@5 on paraphrased questions 0.22 vs 0.68), so they only
        follow it, and are ranked only when meaning found too few. The total is
        every word match plus the memories found by meaning alone.
        """
        rows, loose = words.rows, words.loose
        # Memories saved since the last search get their vectors first (bounded,
        # so a vault that was just reindexed answers while it catches up).
        self._embed_pending(embedder, PENDING_BUDGET, query)
        vector = self._semantic.query_vector(embedder, query)
        settings = self.embeddings

        def nearest(idx: Index) -> tuple[list[tuple[int, float]], dict[int, Memory]]:
            near = self._semantic.cache.nearest(
                idx.conn,
                vector,
                namespace=namespace,
                kind=kind,
                tags=tags,
                limit=max(offset + limit, CANDIDATES),
                min_similarity=settings.min_similarity,
            )
            return near, memories_by_rowid(idx.conn, [rowid for rowid, _s in near])

        near, near_memories = self._query(nearest)
        # Which of the memories found by meaning match by words too: they are
        # among ``words.total`` already.
        also_words = self._query(
            lambda idx: idx.matching_rowids(words.match, [rowid for rowid, _s in near])
        )
        meaning_only = sum(
            1 for rowid, _s in near if rowid in near_memories and rowid not in also_words
        )
        by_id: dict[str, tuple[Memory, str]] = {m.id: (m, snip) for m, _s, snip in rows}
        meaning: list[str] = []
        for rowid, _similarity in near:
            memory = near_memories.get(rowid)
            if memory is not None:
                meaning.append(memory.id)
                by_id.setdefault(memory.id, (memory, _excerpt(memory.content)))
        meaning_set = set(meaning)
        if loose is not None:
            fused = rrf_fuse([meaning])
            if len(fused) < offset + limit:
                rows = loose()
                for m, _s, snip in rows:
                    by_id.setdefault(m.id, (m, snip))
                fused += [(m.id, 0.0) for m, _s, _snip in rows if m.id not in meaning_set]
        else:
            fused = rrf_fuse([[m.id for m, _s, _snip in rows], meaning])
        word_set = {m.id for m, _s, _snip in rows}
        hits = []
        for memory_id, score in fused[offset : offset + limit]:
            memory, snippet = by_id[memory_id]
            found = (
                "both"
                if memory_id in word_set and memory_id in meaning_set
                else "words"
                if memory_id in word_set
                else "meaning"
            )
            hits.append(SearchHit(memory=memory, score=score, snippet=snippet, match=found))
        return SearchPage(tuple(hits), words.total + meaning_only, offset, mode="hybrid")

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

            def waiting(idx: Index) -> tuple[list[Handoff], int]:
                held = tuple(
                    self._port().quarantined(namespace, lambda: idx.pending_paths(namespace))
                )
                wanted = HandoffFilter(namespace, "pending", exclude=held)
                return idx.list_handoffs(wanted, MAX_PENDING), len(held)

            pending, quarantined = self._upkeep.query(waiting)
        port = self._port()
        # Under ``require``, what no listed key signed is not put before an agent: the
        # decisions are left out, the brief note's body is named, not shown.
        untrusted = port.quarantined(
            namespace,
            lambda: {m.id: m.path for m in decisions} | ({"": path} if path else {}),
        )
        notes = self._brief_notes(path)
        if "" in untrusted and notes.strip():
            notes = (
                f"(The brief note {path} was last changed outside the team, and no listed key "
                "signed it: a person reviews it before agents read it.)"
            )
        return Brief(
            namespace=namespace,
            notes=notes,
            decisions=self._with_origins([m for m in decisions if m.id not in untrusted]),
            pending=self._with_origins(pending),
            path=path or "",
            origin=None if path is None else port.origin(path),
            quarantined=quarantined,
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
