"""Which handoffs or memories a listing takes, and the SQL that picks them.

A listing is asked twice with the same filters, once for a page and once for
how many there are in all; a :class:`HandoffFilter` or :class:`MemoryFilter`
is those filters as one value, so the two questions cannot differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["HandoffFilter", "MemoryFilter", "search_from"]


def _clause(where: list[str]) -> str:
    """The ``WHERE`` clause (with a leading space) of the conditions, or empty."""
    return " WHERE " + " AND ".join(where) if where else ""


@dataclass(frozen=True, slots=True)
class HandoffFilter:
    """Handoffs by ``namespace`` (None: all), ``status`` (pending, read or all),
    recipient ``agent`` and ``sender``.

    ``agent`` is matched exactly, and handoffs to any agent (``recipient`` empty: a
    note written by hand with no ``to``) are for every agent too."""

    namespace: str | None
    status: str
    agent: str | None = None
    sender: str | None = None
    exclude: tuple[str, ...] = ()
    """Ids left out (quarantined: written outside the team)."""

    def where(self) -> tuple[str, list[Any]]:
        """The ``WHERE`` clause (with a leading space, or empty) over ``handoffs``, and its
        args."""
        where: list[str] = []
        args: list[Any] = []
        for column, value in (
            ("namespace", self.namespace),
            ("recipient", self.agent),
            ("sender", self.sender),
        ):
            if value is not None:
                where.append("recipient IN (?, '')" if column == "recipient" else f"{column}=?")
                args.append(value)
        if self.status != "all":
            where.append("status=?")
            args.append(self.status)
        if self.exclude:
            where.append(f"id NOT IN ({','.join('?' * len(self.exclude))})")
            args.extend(self.exclude)
        return _clause(where), args


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Memories by ``namespace`` (exactly; None: all), ``status`` (live, superseded,
    forgotten or all), ``kind`` and ``tags`` (all of them)."""

    namespace: str | None
    status: str
    kind: str | None = None
    tags: tuple[str, ...] = ()

    def where(self) -> tuple[str, list[Any]]:
        """The ``WHERE`` clause (with a leading space, or empty) over ``memories m``, and
        its args."""
        where: list[str] = []
        args: list[Any] = []
        if self.namespace is not None:
            where.append("m.namespace=?")
            args.append(self.namespace)
        if self.status != "all":
            where.append("m.state=?")
            args.append(self.status)
        _kind_and_tags(self.kind, self.tags, where, args)
        return _clause(where), args


def _kind_and_tags(
    kind: str | None, tags: Sequence[str], where: list[str], args: list[Any]
) -> None:
    """Add the conditions on ``memories m`` of a ``kind`` and of all ``tags``, and their
    args, to a listing's or a search's."""
    if kind is not None:
        where.append("m.kind=?")
        args.append(kind)
    for tag in tags:
        where.append("EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)")
        args.append(tag)


def search_from(
    match: str,
    namespace: str | None,
    kind: str | None = None,
    tags: Sequence[str] = (),
) -> tuple[str, list[Any]]:
    """The ``FROM … WHERE`` of a search: the match, the namespace with those below
    it, and the ``kind`` and ``tags`` filters.

    The matches drive the query (``CROSS JOIN`` keeps them outermost); each is
    then tested on its ``memories`` row, found by rowid. That costs one lookup
    per match, where a list of the namespace's rowids would cost one per memory
    of the namespace, and FTS5 never fetches a match's text to test it.
    """
    conditions: list[str] = []
    args: list[Any] = []
    if namespace is not None:
        # The range is the namespace's children ("ns/..."): '/' + 1 is '0'.
        conditions.append("(m.namespace = ? OR (m.namespace >= ? AND m.namespace < ?))")
        args.extend([namespace, namespace + "/", namespace + "0"])
    _kind_and_tags(kind, tags, conditions, args)
    if not conditions:
        return "memories_fts WHERE memories_fts MATCH ?", [match]
    return (
        "memories_fts CROSS JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {' AND '.join(conditions)}",
        [match, *args],
    )
