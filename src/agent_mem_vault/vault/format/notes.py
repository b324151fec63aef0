"""Notes as text: flat YAML frontmatter plus a ``## Summary`` / ``## Full Context`` body.

Pure functions, no I/O. Markdown is the source of truth, so parsing must
accept what Obsidian writes back (any valid YAML), while rendering writes one
plain, stable style. The frontmatter we write is parsed by a small fast path
(it matters when 200,000 notes are reindexed); anything else goes to PyYAML.

A lifecycle change rewrites only the frontmatter values it owns and keeps the
body and any properties a person added, byte for byte.

Reading takes ``FileFacts`` (``hand_notes.py``): where a note written by hand
is silent, its file gives the value, and the facts record which. Without them
a missing property is a ``NoteError``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

from ...core.clock import format_datetime
from ...core.ids import decode_tid
from .hand_notes import FileFacts, path_id, title_from_body
from .links import link_id, wikilink
from .models import Handoff, Memory

__all__ = [
    "PRIVATE",
    "NoteError",
    "ParsedNote",
    "apply_memory",
    "handoff_from_note",
    "handoff_meta",
    "memory_from_note",
    "memory_meta",
    "needs_repair",
    "parse_note",
    "parse_text",
    "private_properties",
    "render_body",
    "render_note",
    "split_body",
]

PRIVATE = "private"
"""The property that keeps a note on its machine (``private: true``): sync never sends
a version of it that says so (``vault/sync/gate.py``)."""
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_PLAIN_SAFE = re.compile(r"[A-Za-z_][A-Za-z0-9._/@-]*")
_INT = re.compile(r"[-+]?[0-9]+")
_YAML_WORDS = frozenset(
    {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}
)  # YAML 1.1 reads these as booleans or null, so strings equal to them are quoted
# Characters YAML does not allow raw in a file; JSON-style escapes work in both.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_SUMMARY = "## Summary"
_CONTEXT = "## Full Context"

try:  # the C loader is ~10x faster; fall back where libyaml is absent
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


class NoteError(ValueError):
    """A note that cannot be used as it stands; ``str()`` says what is wrong."""


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """A note split into its properties (in file order) and its body."""

    meta: dict[str, Any]
    body: str


# -- frontmatter ------------------------------------------------------------------


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _PLAIN_SAFE.fullmatch(text) and text.lower() not in _YAML_WORDS:
        return text
    return _UNPRINTABLE.sub(_escape, json.dumps(text, ensure_ascii=False))


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def render_note(meta: dict[str, Any], body: str) -> str:
    """Frontmatter (flat: scalars and lists of scalars) between ``---`` lines, then the body.

    >>> print(render_note({"type": "handoff", "tags": ["a"]}, "hi\\n"), end="")
    ---
    type: handoff
    tags:
      - a
    ---
    hi
    """
    lines = ["---"]
    for key, value in meta.items():
        if isinstance(value, list | tuple):
            if value:
                lines.append(f"{key}:")
                lines.extend(f"  - {_scalar(item)}" for item in value)
            else:
                lines.append(f"{key}: []")
        else:
            lines.append(f"{key}: {_scalar(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n" + body


def _fast_value(raw: str) -> tuple[bool, Any]:
    """Parse one scalar the way we write them; (False, None) means 'not ours, ask YAML'."""
    if not raw:
        return True, None
    first = raw[0]
    if first == '"':
        if "\\" not in raw and raw[-1] == '"' and '"' not in raw[1:-1]:
            return True, raw[1:-1]
        try:
            return True, json.loads(raw)
        except ValueError:
            return False, None
    if raw in ("true", "false"):
        return True, raw == "true"
    if raw in ("null", "~"):
        return True, None
    if raw == "[]":
        return True, []
    if _INT.fullmatch(raw):
        return True, int(raw)
    if _PLAIN_SAFE.fullmatch(raw) and raw.lower() not in _YAML_WORDS:
        return True, raw
    return False, None


def _fast_frontmatter(lines: list[str]) -> dict[str, Any] | None:
    meta: dict[str, Any] = {}
    current_list: list[Any] | None = None
    bare: list[str] = []
    for line in lines:
        if line[0] == " " or line[0] == "-":
            if current_list is None or not (line.startswith("  - ") or line.startswith("- ")):
                return None
            ok, value = _fast_value(line.split("- ", 1)[1].strip())
            if not ok:
                return None
            current_list.append(value)
            continue
        key, sep, rest = line.partition(":")
        if not sep or key in meta or not _KEY.fullmatch(key):
            return None
        rest = rest.strip()
        if not rest:
            current_list = []
            meta[key] = current_list
            bare.append(key)
            continue
        current_list = None
        ok, value = _fast_value(rest)
        if not ok:
            return None
        meta[key] = value
    for key in bare:
        # A key with no value and no items is YAML null, not an empty list.
        if not meta[key]:
            meta[key] = None
    return meta


def _normalise(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_datetime(value) if value.tzinfo else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def parse_note(text: str) -> ParsedNote | None:
    """Split ``text`` into properties and body; ``None`` if it has no frontmatter at all.

    Raises ``NoteError`` when the frontmatter is there but broken.
    """
    if not text.startswith("---"):
        return None
    text = text.replace("\r\n", "\n")
    first_end = text.find("\n")
    if first_end < 0 or text[:first_end].strip() != "---":
        return None
    end = text.find("\n---", first_end)
    while end >= 0:
        after = end + 4
        if after == len(text) or text[after] == "\n":
            break
        end = text.find("\n---", after)
    if end < 0:
        raise NoteError("frontmatter has no closing '---' line")
    block = text[first_end + 1 : end]
    body = text[end + 5 :] if end + 4 < len(text) else ""
    lines = [line for line in block.split("\n") if line.strip() and not line.startswith("#")]
    meta = _fast_frontmatter(lines)
    if meta is None:
        try:
            loaded = yaml.load(block, Loader=_Loader)
        except yaml.YAMLError as exc:
            problem = str(exc).splitlines()[0]
            raise NoteError(f"frontmatter is not valid YAML: {problem}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise NoteError("frontmatter is not a set of properties (key: value lines)")
        meta = {str(k): _normalise(v) for k, v in loaded.items()}
    return ParsedNote(meta=meta, body=body)


def parse_text(text: str) -> ParsedNote:
    """``parse_note``, with a note that has no frontmatter read as properties-less
    (all of it is the body), as a note written by hand often is."""
    note = parse_note(text)
    return ParsedNote(meta={}, body=text) if note is None else note


# -- body ---------------------------------------------------------------------------


def render_body(summary: str, context: str) -> str:
    """The body we write: exactly ``Handoff.text`` plus a final newline."""
    return f"{_SUMMARY}\n{summary}\n\n{_CONTEXT}\n{context}\n"


def split_body(body: str) -> tuple[str, str]:
    """(summary, context) from a body; lenient, since people edit bodies by hand.

    Without a ``## Summary`` heading the summary is empty; without a
    ``## Full Context`` heading the context is everything after the summary.
    """
    text = body.replace("\r\n", "\n")
    head = text.find(_SUMMARY + "\n")
    if head < 0 and text.rstrip("\n").endswith(_SUMMARY):
        head = text.rfind(_SUMMARY)
    if head < 0:
        marker = text.find(_CONTEXT + "\n")
        if marker < 0:
            return "", text.strip("\n")
        return "", text[marker + len(_CONTEXT) + 1 :].rstrip("\n")
    rest = text[head + len(_SUMMARY) + 1 :]
    marker = rest.find("\n" + _CONTEXT + "\n")
    if marker < 0 and rest.rstrip("\n").endswith("\n" + _CONTEXT):
        marker = rest.rstrip("\n").rfind("\n" + _CONTEXT)
    if marker < 0:
        return rest.strip("\n"), ""
    summary = rest[:marker].strip("\n")
    context = rest[marker + len(_CONTEXT) + 2 :].rstrip("\n")
    return summary, context


# -- typed notes --------------------------------------------------------------------


def _links(ids: tuple[str, ...], paths: Mapping[str, str] | None) -> list[str]:
    """``ids`` as wikilinks (``links.wikilink``), each to its note's path when known."""
    known = paths or {}
    return [wikilink(known.get(i, ""), i) for i in ids]


def handoff_meta(handoff: Handoff, paths: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The properties of a handoff note, in the order Obsidian shows them.

    ``supersedes`` and ``superseded_by`` are wikilinks (``paths``: the note path of
    an id, for a note not named by its id). ``to`` is left out for a handoff to
    any agent (a note written by hand without one).
    """
    meta: dict[str, Any] = {
        "type": "handoff",
        "id": handoff.id,
        "namespace": handoff.namespace,
        "from": handoff.sender,
        "to": handoff.recipient,
        "status": handoff.status,
        "read": handoff.read,
        "created_at": handoff.created_at,
    }
    if not handoff.recipient:
        del meta["to"]
    if handoff.read_at is not None:
        meta["read_at"] = handoff.read_at
    meta["supersedes"] = _links(handoff.supersedes, paths)
    if handoff.superseded_by is not None:
        meta["superseded_by"] = _links((handoff.superseded_by,), paths)[0]
    meta["tags"] = ["handoff"]
    return meta


def _kept_links(meta: dict[str, Any], out: dict[str, Any]) -> None:
    """Links a note already holds stay as written when they name the same ids (a link
    to a note written by hand names its path, which ids alone cannot rebuild)."""
    for key in ("supersedes", "superseded_by"):
        if key not in meta or key not in out:
            continue
        old, new = meta[key], out[key]
        if isinstance(new, list) and isinstance(old, list):
            if [link_id(v) for v in old] == [link_id(v) for v in new]:
                out[key] = old
        elif link_id(old) == link_id(new):
            out[key] = old


def _merged(meta: dict[str, Any], out: dict[str, Any], owned: set[str]) -> dict[str, Any]:
    """``out`` (the vault's properties), then every property a person added to ``meta``."""
    if "tags" in meta:
        out["tags"] = meta["tags"]
    _kept_links(meta, out)
    for key, value in meta.items():
        if key not in out and key not in owned:
            out[key] = value
    return out


def apply_handoff(
    meta: dict[str, Any], handoff: Handoff, paths: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``meta`` with the lifecycle properties of ``handoff``; properties a person added are kept."""
    owned = {"read_at", "superseded_by", "to"}
    if not handoff.read:
        owned.add("read_on")  # the machine a synced vault's read took it on: a reading's
    return _merged(meta, handoff_meta(handoff, paths), owned)


def apply_memory(
    meta: dict[str, Any], memory: Memory, paths: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``meta`` with the properties of ``memory`` (its versions, whether it is forgotten);
    properties a person added are kept. A note written by hand gets the id, namespace
    and time the index gave it, so they stay the same once the file has changed."""
    owned = {"superseded_by", "forgotten_at", "supersedes", "agent"}
    return _merged(meta, memory_meta(memory, paths), owned)


def memory_meta(memory: Memory, paths: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The properties of a memory note; its versions as wikilinks (see ``handoff_meta``)."""
    meta: dict[str, Any] = {
        "type": "memory",
        "id": memory.id,
        "namespace": memory.namespace,
        "title": memory.title,
        "kind": memory.kind,
        "created_at": memory.created_at,
    }
    if memory.agent is not None:
        meta["agent"] = memory.agent
    if memory.supersedes:
        meta["supersedes"] = _links(memory.supersedes, paths)
    if memory.superseded_by is not None:
        meta["superseded_by"] = _links((memory.superseded_by,), paths)[0]
    if memory.forgotten_at is not None:
        meta["forgotten_at"] = memory.forgotten_at
    meta["tags"] = list(memory.tags)
    return meta


def _str(meta: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = meta.get(key)
    if value is None or value == "":
        if required:
            raise NoteError(f"property {key!r} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise NoteError(f"property {key!r} must be text, not {type(value).__name__}")
    return str(value)


def _str_list(meta: dict[str, Any], key: str) -> tuple[str, ...]:
    value = meta.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise NoteError(f"property {key!r} must be a list of text values")
    return tuple(value)


def _link_list(meta: dict[str, Any], key: str) -> tuple[str, ...]:
    """Ids named by a list of links (or bare ids); one unquoted ``[[id]]`` is one link."""
    value = meta.get(key)
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return tuple(link_id([v]) for v in value)  # - [[a]] unquoted: lists in a list
    one = link_id(value)
    if isinstance(one, str) and not isinstance(value, list):
        return (one,) if one else ()
    return tuple(link_id(v) for v in _str_list(meta, key))


def _link(meta: dict[str, Any], key: str) -> str | None:
    value = link_id(meta.get(key))
    if isinstance(value, list):
        raise NoteError(f"property {key!r} must be one link or id")
    return _str({key: value}, key, required=False)


def _tid(meta: dict[str, Any], key: str, facts: FileFacts | None = None) -> str:
    value = _str(meta, key, required=facts is None)
    if value is not None:
        try:
            decode_tid(value)
        except ValueError:
            if facts is None:
                raise NoteError(f"property {key!r} is not a TID: {value!r}") from None
        else:
            return value
    assert facts is not None
    facts.take(key)
    return path_id(facts.path)


def _filled(meta: dict[str, Any], key: str, facts: FileFacts | None, value: str) -> str:
    """The property ``key``, or (with ``facts``) ``value`` taken from the file instead."""
    given = _str(meta, key, required=facts is None)
    if given is not None:
        return given
    assert facts is not None
    facts.take(key)
    return value


@functools.lru_cache(maxsize=4096)
def _checked_namespace(value: str) -> str | None:
    """The problem with a namespace property, or None; cached, since notes share namespaces."""
    from ...core.errors import InvalidInputError
    from .namespaces import validate_namespace

    try:
        validate_namespace(value)
    except InvalidInputError as exc:
        return str(exc)
    return None


def _namespace(meta: dict[str, Any], facts: FileFacts | None = None) -> str:
    value = _str(meta, "namespace", required=facts is None or facts.namespace is None)
    if value is None:
        assert facts is not None and facts.namespace is not None
        problem = _checked_namespace(facts.namespace)
        if problem is not None:
            raise NoteError(f"its folder {facts.namespace!r} is not a namespace: {problem}")
        facts.take("namespace")
        return facts.namespace
    problem = _checked_namespace(value)
    if problem is not None:
        raise NoteError(f"property 'namespace': {problem}")
    return value


def _lifecycle(
    meta: dict[str, Any], read_hint: str | None, facts: FileFacts | None = None
) -> tuple[str, str | None]:
    """(status, read_at) as a person meant them, from properties that may disagree.

    The ``read`` checkbox is what a person ticks in Obsidian, so when it is a
    boolean it wins over ``status``: ticked means read, unticked pending. A
    read handoff without ``read_at`` gets ``read_hint`` (when the note was
    last saved), and a pending one loses its ``read_at``.
    """
    raw = meta.get("status")
    status = raw.strip().lower() if isinstance(raw, str) else None
    if status not in ("pending", "read"):
        status = None
    read = meta.get("read")
    if isinstance(read, bool):
        status = "read" if read else "pending"
    elif status is None and facts is not None and raw is None and read is None:
        facts.take("status")  # written by hand without one: waiting to be read
        return "pending", None
    elif status is None:
        raise NoteError(
            f"property 'status' must be pending or read, not {raw!r} (or tick the 'read' checkbox)"
        )
    if status == "pending":
        return status, None
    read_at = _str(meta, "read_at", required=False)
    return status, read_at or read_hint or _str(meta, "created_at", required=False)


def handoff_from_note(
    note: ParsedNote,
    path: str,
    *,
    read_hint: str | None = None,
    facts: FileFacts | None = None,
) -> Handoff:
    """A ``Handoff`` from a parsed note; ``NoteError`` naming the property that is wrong.

    Lifecycle properties that disagree (see ``_lifecycle``) are read the way a
    person meant them; ``needs_repair`` says whether the note should be
    rewritten so that they agree. With ``facts`` (a note written by hand, see
    ``hand_notes.py``) what the note lacks comes from its file: no ``from`` is
    ``unknown``, no ``to`` is a handoff any agent may read, no ``## Summary``
    section makes the first heading (or the file name) the summary.
    """
    meta = note.meta
    status, read_at = _lifecycle(meta, read_hint, facts)
    summary, context = split_body(note.body)
    if facts is not None and not summary and "## Summary" not in note.body:
        summary, context = title_from_body(note.body, path)
        facts.take("summary")
    created_at = _filled(meta, "created_at", facts, facts.modified if facts else "")
    return Handoff(
        id=_tid(meta, "id", facts),
        namespace=_namespace(meta, facts),
        sender=_filled(meta, "from", facts, "unknown"),
        recipient=_filled(meta, "to", facts, ""),
        summary=summary,
        context=context,
        status="read" if status == "read" else "pending",
        created_at=created_at,
        read_at=read_at,
        supersedes=_link_list(meta, "supersedes"),
        superseded_by=_link(meta, "superseded_by"),
        path=path,
    )


def needs_repair(meta: dict[str, Any], handoff: Handoff) -> bool:
    """True when the note's ``status``, ``read`` or ``read_at`` differ from ``handoff``'s."""
    return (
        meta.get("status") != handoff.status
        or meta.get("read") is not handoff.read
        or meta.get("read_at") != handoff.read_at
    )


def memory_from_note(note: ParsedNote, path: str, *, facts: FileFacts | None = None) -> Memory:
    """A ``Memory`` from a parsed note; ``NoteError`` naming the property that is wrong.

    With ``facts`` (see ``handoff_from_note``) a note without a ``title`` takes its
    first heading or its file name, and a body without the vault's sections is
    all content.
    """
    meta = note.meta
    _summary, content = split_body(note.body)
    title = _str(meta, "title", required=facts is None)
    if facts is not None and "## Full Context" not in note.body:
        # A body of the person's own: its first heading is the title, not content
        # (still so once an agent has written the title into the properties).
        heading, rest = title_from_body(note.body, path)
        if title is None:
            title = heading
            facts.take("title")
        if heading == title:
            content = rest
    assert title is not None  # required without facts; with them, taken from the file
    kind = _str(meta, "kind", required=False) or "note"
    return Memory(
        id=_tid(meta, "id", facts),
        namespace=_namespace(meta, facts),
        title=title,
        content=content,
        kind=kind,
        created_at=_filled(meta, "created_at", facts, facts.modified if facts else ""),
        tags=_str_list(meta, "tags"),
        agent=_str(meta, "agent", required=False),
        path=path,
        supersedes=_link_list(meta, "supersedes"),
        superseded_by=_link(meta, "superseded_by"),
        forgotten_at=_str(meta, "forgotten_at", required=False),
    )


def private_properties(private: bool) -> dict[str, Any] | None:
    """The extra note properties a write that asks to stay on this machine gives
    (``create --private``, the MCP tools' ``private``); None for any other write."""
    return {PRIVATE: True} if private else None
