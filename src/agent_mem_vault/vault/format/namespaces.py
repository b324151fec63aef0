"""Validation of what callers name: namespaces, agents, ids, kinds, tags, sizes, pages.

Namespaces become folders, so a bad one could escape the vault (``..``, an
absolute path) or collide with the vault's own folders. Everything is checked
before anything is written, and each error names the field and the rule.

Limits (documented in docs/vault.md):

- namespace: 1–8 segments joined by ``/``, each 1–64 of ``A-Z a-z 0-9 . _ -``
  (ASCII: a segment is a folder on every filesystem and a word in every shell),
  starting with a letter or digit, not ``handoffs``/``memories`` and not ending
  in ``.md``; 200 characters in all. ``ascii_segment`` makes any name one.
- agent name: 1–128 of ``A-Z a-z 0-9 . _ ~ : @ -``, starting with a letter or digit
  (``core.names.validate_agent``, shared with runs).
- summary: 1–2,000 characters; handoff context: up to 200,000 characters.
- memory title: 1–200 characters, one line; content: up to 200,000 characters.
- kind: a lowercase word (``decision``, ``note``, ``task``, ``risk``, …), up to 32.
- tags: at most 20, each 1–64 of ``A-Z a-z 0-9 _ - /``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from ...core.errors import InvalidInputError, NotFoundError
from ...core.ids import decode_tid
from ...core.names import validate_agent

__all__ = [
    "MAX_CONTENT",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "MAX_SUMMARY",
    "MAX_TITLE",
    "ascii_segment",
    "check_limit",
    "check_offset",
    "check_page",
    "check_status",
    "not_found",
    "validate_agent",
    "validate_id",
    "validate_kind",
    "validate_namespace",
    "validate_namespace_filter",
    "validate_summary",
    "validate_tags",
    "validate_text",
    "validate_title",
]

MAX_SUMMARY = 2_000
MAX_CONTENT = 200_000
MAX_TITLE = 200
MAX_TAGS = 20
MAX_NAMESPACE = 200
MAX_SEGMENTS = 8
RESERVED_SEGMENTS = frozenset({"handoffs", "memories"})

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_TAG = re.compile(r"[A-Za-z0-9_/-]{1,64}")


def validate_namespace(value: object, *, field: str = "namespace") -> str:
    """Return ``value`` if it is a safe, path-like namespace.

    >>> validate_namespace("project/harbor-api")
    'project/harbor-api'
    """
    if not isinstance(value, str) or not value:
        raise _bad_namespace(
            field,
            f"{field} is missing: give a path-like name such as 'project/harbor-api'",
        )
    if len(value) > MAX_NAMESPACE:
        raise _bad_namespace(
            field,
            f"{field} is {len(value)} characters; the limit is {MAX_NAMESPACE}",
        )
    if value.startswith("/") or "\\" in value:
        raise _bad_namespace(
            field,
            f"{field} {value!r} must be relative, with '/' between segments "
            "(e.g. 'project/harbor-api')",
        )
    segments = value.split("/")
    if len(segments) > MAX_SEGMENTS:
        raise _bad_namespace(
            field,
            f"{field} {value!r} has {len(segments)} segments; the limit is {MAX_SEGMENTS}",
        )
    for segment in segments:
        if not segment:
            raise _bad_namespace(
                field,
                f"{field} {value!r} has an empty segment; remove the doubled or trailing '/'",
            )
        if segment in (".", ".."):
            raise _bad_namespace(
                field,
                f"{field} {value!r} may not contain '.' or '..' segments",
            )
        if not _SEGMENT.fullmatch(segment):
            hint = (
                "" if segment.isascii() else f" ({segment!r} in ASCII: {ascii_segment(segment)!r})"
            )
            raise _bad_namespace(
                field,
                f"{field} segment {segment!r} is not allowed: use 1-64 ASCII letters, digits, "
                f"'.', '_' or '-', starting with a letter or digit{hint}",
            )
        if segment in RESERVED_SEGMENTS or segment.lower().endswith(".md"):
            raise _bad_namespace(
                field,
                f"{field} segment {segment!r} is reserved for the vault's own folders and files; "
                "pick another name",
            )
    return value


def validate_namespace_filter(value: object) -> str | None:
    """A filter by namespace: None takes every namespace, anything else must be one."""
    return None if value is None else validate_namespace(value)


_NOT_SEGMENT = re.compile(r"[^A-Za-z0-9._-]+")
MAX_SEGMENT = 64


def ascii_segment(name: str) -> str:
    """``name`` (a folder's, a repository's) as one namespace segment: readable ASCII that
    keeps what the name says. Other scripts and emoji are transliterated (``Café`` →
    ``Cafe``, ``東京`` → ``DongJing``, ``🚀`` → ``rocket``), and runs of anything else
    become ``-``. Where nothing readable is left, a short suffix from the name itself
    keeps two such names apart (``repository-3f9a2c``), so unrelated repositories never
    share a namespace through it.

    >>> ascii_segment("Café Ünicode 🚀")
    'Cafe-Unicode-rocket'
    >>> ascii_segment("_My Repo (copy)")
    'My-Repo-copy'
    >>> ascii_segment("handoffs")
    'handoffs-repo'
    """
    text = name
    if not name.isascii():
        from anyascii import anyascii  # only for names that need it: imports stay light

        text = anyascii(name)
    slug = _NOT_SEGMENT.sub("-", text).strip("._-")[:MAX_SEGMENT].rstrip("._-")
    if not slug:
        return f"repository-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:6]}"
    if slug in RESERVED_SEGMENTS or slug.lower().endswith(".md"):
        return f"{slug[: MAX_SEGMENT - 5]}-repo"
    return slug


def _bad_namespace(field: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, code="invalid_namespace", field=field)


def validate_id(value: object, *, field: str = "id") -> str:
    """Return ``value`` if it is a TID (13 characters of base32-sortable)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string id", code="invalid_id", field=field)
    try:
        decode_tid(value)
    except ValueError:
        raise InvalidInputError(
            f"{field} {value!r} is not a handoff or memory id (ids are 13-character TIDs, "
            "as 'agent-mem-vault handoffs' shows them)",
            code="invalid_id",
            field=field,
        ) from None
    return value


def validate_text(value: object, *, field: str, limit: int = MAX_CONTENT) -> str:
    """Strip surrounding whitespace and check the size; empty is an error."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{field} is missing or empty", code="missing_field", field=field)
    value = value.strip()
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{field} is not valid Unicode text (it has a lone surrogate)",
            code="invalid_text",
            field=field,
        ) from None
    if len(value) > limit:
        raise InvalidInputError(
            f"{field} is {len(value):,} characters; the limit is {limit:,}. "
            "Shorten it or move the detail into a file and refer to it",
            code="too_large",
            field=field,
            limit=limit,
        )
    return value


def validate_summary(value: object, *, field: str = "summary") -> str:
    """A summary: non-empty, at most ``MAX_SUMMARY``, and no ``## `` heading line of its own.

    A heading line would make the note's ``## Summary`` / ``## Full Context``
    sections ambiguous when it is read back.
    """
    text = validate_text(value, field=field, limit=MAX_SUMMARY)
    if any(line.startswith("## ") for line in text.splitlines()):
        raise InvalidInputError(
            f"{field} may not contain a '## ' heading line; put structure in the context",
            code="invalid_summary",
            field=field,
        )
    return text


def validate_title(value: object, *, field: str = "title") -> str:
    text = validate_text(value, field=field, limit=MAX_TITLE)
    if "\n" in text or "\r" in text:
        raise InvalidInputError(f"{field} must be one line", code="invalid_title", field=field)
    return text


def validate_kind(value: object) -> str:
    if not isinstance(value, str) or not _KIND.fullmatch(value):
        raise InvalidInputError(
            f"kind {value!r} is not valid: use a lowercase word such as "
            "'decision', 'note', 'task' or 'risk'",
            code="invalid_kind",
            field="kind",
        )
    return value


def validate_tags(values: Iterable[object] | None) -> tuple[str, ...]:
    """Tags in the order given, duplicates dropped."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        if not isinstance(value, str) or not _TAG.fullmatch(value):
            raise InvalidInputError(
                f"tag {value!r} is not valid: use 1-64 letters, digits, '_', '-' or '/'",
                code="invalid_tag",
                field="tags",
            )
        if value not in out:
            out.append(value)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(
            f"{len(out)} tags given; the limit is {MAX_TAGS}", code="too_large", field="tags"
        )
    return tuple(out)


MAX_LIMIT = 1000
MAX_OFFSET = 2**63 - 1
"""Largest offset a page may start at: the largest integer SQLite (and PostgreSQL) hold."""


def check_limit(limit: object) -> int:
    """``limit`` if it is a whole number from 1 to ``MAX_LIMIT``."""
    return _whole_number("limit", limit, 1, MAX_LIMIT)


def check_offset(offset: object) -> int:
    """``offset`` if it is a whole number from 0 to ``MAX_OFFSET`` (where a page starts)."""
    return _whole_number("offset", offset, 0, MAX_OFFSET)


def check_page(limit: object, offset: object) -> tuple[int, int]:
    """A listing's ``limit`` and ``offset``, in the order every listing checks them last."""
    return check_limit(limit), check_offset(offset)


def _whole_number(field: str, value: object, low: int, high: int) -> int:
    # A bool is an int to Python, but True is no page size: refused like any other type.
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(
            f"{field} must be a whole number from {low} to {high}, not {value!r}",
            code=f"invalid_{field}",
            field=field,
        )
    return value


def check_status(status: object, allowed: Sequence[str]) -> str:
    """``status`` if it is one of ``allowed`` (a listing's status filter)."""
    if not isinstance(status, str) or status not in allowed:
        raise InvalidInputError(
            f"status {status!r} is not one of {', '.join(allowed)}",
            code="invalid_status",
            field="status",
        )
    return status


def not_found(kind: str, id: str, tool: str, command: str) -> NotFoundError:
    """The error for an id that names no ``kind`` (``handoff_not_found``,
    ``memory_not_found``), with the MCP ``tool`` and CLI ``command`` that list the ids."""
    return NotFoundError(
        f"no {kind} with id {id}; {tool} with status 'all' (or '{command}') shows the ids "
        "there are",
        code=f"{kind}_not_found",
        id=id,
    )
