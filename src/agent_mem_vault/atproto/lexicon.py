"""Lexicons: loading schema documents and checking records against them.

A lexicon document (``{"lexicon": 1, "id": NSID, "defs": {...}}``) names its
types; a record names its lexicon in ``$type`` and lives under a record key
whose kind (``tid``, ``nsid``, ``any``, ``literal:<value>``) the lexicon's
``main`` definition sets. :func:`validate_record` checks all three — the
``$type``, the key and the data — and raises :class:`RecordValidationError`
naming the first field that is wrong, so a caller can refuse a record before
storing or publishing anything.

The validator follows the Lexicon spec's data model in its JSON form (bytes as
``{"$bytes": base64}``, links as ``{"$link": cid}``, blobs as
``{"$type": "blob", ...}``) and agrees with the official
``record-data-{valid,invalid}.json`` vectors. Shipped lexicons live in
``lexicons/*.json``: the handoff lexicon ``garden.engram.agents.handoff`` exactly as
published, and ``garden.engram.agents.defs``, which *we* define because the
handoff schema refers to ``#generator`` and no definition of it was published.
"""

from __future__ import annotations

import base64
import binascii
import json
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import InvalidInputError
from . import syntax

__all__ = [
    "Lexicons",
    "RecordValidationError",
    "builtin_lexicons",
    "validate_record",
]

JSON = dict[str, Any]

_FORMATS: dict[str, Callable[[str], bool]] = {
    "at-identifier": syntax.is_valid_at_identifier,
    "at-uri": syntax.is_valid_at_uri,
    "cid": syntax.is_valid_cid,
    "datetime": syntax.is_valid_datetime,
    "did": syntax.is_valid_did,
    "handle": syntax.is_valid_handle,
    "language": syntax.is_valid_language,
    "nsid": syntax.is_valid_nsid,
    "record-key": syntax.is_valid_record_key,
    "tid": syntax.is_valid_tid,
    "uri": syntax.is_valid_uri,
}
_FORMAT_HINTS = {
    "datetime": "an RFC 3339 datetime with a timezone, such as 2026-01-01T12:00:00.000Z",
    "tid": "a TID: 13 characters of 234567a-z",
}


class RecordValidationError(InvalidInputError, code="invalid_record"):
    """A record does not match its lexicon; ``field`` names where (``toRun``, ``generator.name``).

    >>> try:
    ...     validate_record({"$type": "garden.engram.agents.handoff"})
    ... except RecordValidationError as exc:
    ...     exc.field
    'fromRun'
    """

    def __init__(self, message: str, *, field: str, **details: Any) -> None:
        super().__init__(message, field=field, **details)
        self.field = field


class Lexicons:
    """A set of lexicon documents, looked up by NSID.

    >>> lexicons = Lexicons()
    >>> lexicons.add({"lexicon": 1, "id": "com.example.thing", "defs": {}})
    >>> "com.example.thing" in lexicons
    True
    """

    def __init__(self, documents: Iterable[Mapping[str, Any]] = ()) -> None:
        self._docs: dict[str, JSON] = {}
        for doc in documents:
            self.add(doc)

    def add(self, document: Mapping[str, Any]) -> None:
        """Register one lexicon document; a malformed one is refused."""
        nsid = document.get("id")
        if document.get("lexicon") != 1 or not isinstance(nsid, str):
            raise InvalidInputError(
                'a lexicon document needs "lexicon": 1 and an "id"', field="lexicon"
            )
        if not syntax.is_valid_nsid(nsid):
            raise InvalidInputError(f"lexicon id {nsid!r} is not an NSID", field="id")
        if not isinstance(document.get("defs"), dict):
            raise InvalidInputError(f'lexicon {nsid} has no "defs" object', field="defs")
        self._docs[nsid] = dict(document)

    def add_file(self, path: str | Path) -> None:
        """Register a lexicon document stored as JSON."""
        self.add(json.loads(Path(path).read_text(encoding="utf-8")))

    def __contains__(self, nsid: object) -> bool:
        return nsid in self._docs

    def document(self, nsid: str) -> JSON:
        """The document for ``nsid``; ``KeyError`` if it is not here."""
        return self._docs[nsid]

    def resolve(self, ref: str, context: str) -> JSON | None:
        """The definition ``ref`` names: ``#name`` (in ``context``), ``nsid`` or ``nsid#name``."""
        nsid, _, name = ref.partition("#")
        doc = self._docs.get(nsid or context)
        if doc is None:
            return None
        definition = doc["defs"].get(name or "main")
        return definition if isinstance(definition, dict) else None


@cache
def builtin_lexicons() -> Lexicons:
    """The lexicons this package ships (``garden.engram.agents.*``)."""
    folder = resources.files(__package__).joinpath("lexicons")
    docs = [
        json.loads(entry.read_text(encoding="utf-8"))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    ]
    return Lexicons(docs)


def validate_record(
    record: Mapping[str, Any], rkey: str | None = None, *, lexicons: Lexicons | None = None
) -> None:
    """Check a record against the lexicon its ``$type`` names, and its record key if given.

    Raises :class:`RecordValidationError` naming the first wrong field; returns
    None when the record is valid.

    >>> validate_record(
    ...     {"$type": "garden.engram.agents.handoff", "fromRun": "3kznmn7xqxl22",
    ...      "toRun": "3kznmn7xqxl23", "createdAt": "2026-01-01T00:00:00.000Z"},
    ...     rkey="3kznmn7xqxl23",
    ... )
    """
    lexicons = lexicons if lexicons is not None else builtin_lexicons()
    if not isinstance(record, Mapping):
        raise RecordValidationError("a record must be a JSON object", field="$type")
    nsid = record.get("$type")
    if not isinstance(nsid, str) or not nsid:
        raise RecordValidationError(
            'the record has no "$type": name its lexicon, e.g. garden.engram.agents.handoff',
            field="$type",
        )
    main = lexicons.resolve(nsid, nsid) if nsid in lexicons else None
    if main is None or main.get("type") != "record":
        raise RecordValidationError(
            f'"$type" {nsid!r} is not a record lexicon known here: use one of the shipped '
            "record types (garden.engram.agents.handoff) or add its lexicon with Lexicons.add",
            field="$type",
        )
    _Validator(lexicons).check(main["record"], record, "", nsid)
    if rkey is not None:
        _check_key(str(main.get("key", "any")), rkey)


def _check_key(kind: str, rkey: str) -> None:
    ok: bool
    if kind == "tid":
        ok, want = syntax.is_valid_tid(rkey), "a TID"
    elif kind == "nsid":
        ok, want = syntax.is_valid_nsid(rkey), "an NSID"
    elif kind.startswith("literal:"):
        ok, want = rkey == kind[len("literal:") :], repr(kind[len("literal:") :])
    else:
        ok, want = syntax.is_valid_record_key(rkey), "a record key"
    if not ok:
        raise RecordValidationError(
            f"record key {rkey!r} is not {want}, as this record type requires", field="rkey"
        )


class _Validator:
    def __init__(self, lexicons: Lexicons) -> None:
        self._lexicons = lexicons

    def fail(self, path: str, problem: str) -> RecordValidationError:
        return RecordValidationError(f"record field {path!r} {problem}", field=path)

    def check(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        kind = schema.get("type")
        handler = getattr(self, "_" + str(kind).replace("-", "_"), None)
        if handler is None:
            raise self.fail(path or "$type", f"has a schema of unknown type {kind!r}")
        handler(schema, value, path, context)

    # -- containers --------------------------------------------------------
    def _object(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not isinstance(value, dict):
            raise self.fail(path or "$type", "must be an object")
        nullable = set(schema.get("nullable", ()))
        for name in schema.get("required", ()):
            if name not in value:
                raise self.fail(_join(path, name), "is required")
        for name, prop in schema.get("properties", {}).items():
            if name not in value:
                continue
            item = value[name]
            if item is None:
                if name in nullable:
                    continue
                raise self.fail(_join(path, name), "must not be null")
            self.check(prop, item, _join(path, name), context)

    def _array(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not isinstance(value, list):
            raise self.fail(path, "must be an array")
        _bounds(self, path, len(value), schema, "minLength", "maxLength", "items")
        for i, item in enumerate(value):
            self.check(schema["items"], item, f"{path}[{i}]", context)

    def _ref(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        ref = str(schema.get("ref", ""))
        target = self._lexicons.resolve(ref, context)
        if target is None:
            raise self.fail(path, f"refers to {ref!r}, which no known lexicon defines")
        target_nsid = ref.partition("#")[0] or context
        if target.get("type") == "token":
            full = ref if ref.partition("#")[0] else f"{context}{ref}"
            if value != full:
                raise self.fail(path, f"must be the token {full!r}")
            return
        self.check(target, value, path, target_nsid)

    def _union(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not isinstance(value, dict):
            raise self.fail(path, 'must be an object with a "$type"')
        type_ = value.get("$type")
        if not isinstance(type_, str) or not type_:
            raise self.fail(path, 'must name its type in "$type"')
        refs = {_full_ref(r, context): r for r in schema.get("refs", ())}
        chosen = _full_ref(type_, type_.partition("#")[0])
        if chosen not in refs:
            if schema.get("closed"):
                raise self.fail(path, f'has "$type" {type_!r}, not one of {sorted(refs)}')
            return  # open unions accept types they do not know
        self._ref({"type": "ref", "ref": refs[chosen]}, value, path, context)

    def _unknown(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not isinstance(value, dict) or "$bytes" in value or "$link" in value:
            raise self.fail(path, "must be an object")
        if value.get("$type") == "blob":
            raise self.fail(path, "must be an object, not a blob")

    # -- scalars -----------------------------------------------------------
    def _boolean(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not isinstance(value, bool):
            raise self.fail(path, "must be a boolean")
        _const(self, path, value, schema)

    def _integer(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if isinstance(value, bool) or not (
            isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        ):
            raise self.fail(path, "must be an integer")
        value = int(value)
        _const(self, path, value, schema)
        if "minimum" in schema and value < schema["minimum"]:
            raise self.fail(path, f"must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise self.fail(path, f"must be at most {schema['maximum']}")

    def _string(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not isinstance(value, str):
            raise self.fail(path, "must be a string")
        _const(self, path, value, schema)
        if "minLength" in schema or "maxLength" in schema:
            # Lexicon string lengths count UTF-8 bytes.
            _bounds(
                self, path, len(value.encode("utf-8")), schema, "minLength", "maxLength", "bytes"
            )
        if "minGraphemes" in schema or "maxGraphemes" in schema:
            count = grapheme_count(value)
            _bounds(self, path, count, schema, "minGraphemes", "maxGraphemes", "graphemes")
        fmt = schema.get("format")
        if fmt is not None:
            check = _FORMATS.get(str(fmt))
            if check is None:
                raise self.fail(path, f"has an unknown string format {fmt!r}")
            if not check(value):
                hint = _FORMAT_HINTS.get(str(fmt), f"a valid {fmt}")
                raise self.fail(path, f"must be {hint}, got {value!r}")

    def _bytes(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not (isinstance(value, dict) and set(value) == {"$bytes"}):
            raise self.fail(path, 'must be bytes, written {"$bytes": "<base64>"}')
        raw = decode_base64(value["$bytes"])
        if raw is None:
            raise self.fail(path, 'must hold base64 in "$bytes"')
        _bounds(self, path, len(raw), schema, "minLength", "maxLength", "bytes")

    def _cid_link(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not (
            isinstance(value, dict)
            and set(value) == {"$link"}
            and isinstance(value["$link"], str)
            and syntax.is_valid_cid(value["$link"])
        ):
            raise self.fail(path, 'must be a link, written {"$link": "<cid>"}')

    def _blob(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if not (
            isinstance(value, dict)
            and value.get("$type") == "blob"
            and isinstance(value.get("mimeType"), str)
            and isinstance(value.get("size"), int)
            and not isinstance(value.get("size"), bool)
        ):
            raise self.fail(path, 'must be a blob: {"$type": "blob", ref, mimeType, size}')
        self._cid_link({}, value.get("ref"), _join(path, "ref"), context)
        if "maxSize" in schema and value["size"] > schema["maxSize"]:
            raise self.fail(path, f"is larger than {schema['maxSize']} bytes")
        accept = schema.get("accept")
        if accept and not any(_mime_matches(p, value["mimeType"]) for p in accept):
            raise self.fail(path, f"has type {value['mimeType']!r}, not one of {accept}")

    def _null(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        if value is not None:
            raise self.fail(path, "must be null")

    def _token(self, schema: Mapping[str, Any], value: Any, path: str, context: str) -> None:
        raise self.fail(path, "is a token; refer to it from a string field instead")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _full_ref(ref: str, context: str) -> str:
    nsid, _, name = ref.partition("#")
    return f"{nsid or context}#{name or 'main'}"


def _const(v: _Validator, path: str, value: Any, schema: Mapping[str, Any]) -> None:
    if "const" in schema and value != schema["const"]:
        raise v.fail(path, f"must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        raise v.fail(path, f"must be one of {schema['enum']!r}")


def _bounds(
    v: _Validator, path: str, size: int, schema: Mapping[str, Any], lo: str, hi: str, unit: str
) -> None:
    if lo in schema and size < schema[lo]:
        raise v.fail(path, f"is too short: {size} {unit}, at least {schema[lo]}")
    if hi in schema and size > schema[hi]:
        raise v.fail(path, f"is too long: {size} {unit}, at most {schema[hi]}")


def _mime_matches(pattern: str, mime: str) -> bool:
    if pattern == "*/*":
        return True
    if pattern.endswith("/*"):
        return mime.startswith(pattern[:-1])
    return pattern == mime


def decode_base64(text: Any) -> bytes | None:
    """Bytes from the data model's base64 (padding optional, standard alphabet); None if not."""
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


# Characters that never start a grapheme cluster of their own: combining
# marks, zero-width joiner, variation selectors, emoji skin tones and tags.
_EXTEND_CATEGORIES = frozenset({"Mn", "Me", "Mc"})


def _extends(ch: str) -> bool:
    cp = ord(ch)
    return (
        unicodedata.category(ch) in _EXTEND_CATEGORIES
        or cp == 0x200D
        or 0xFE00 <= cp <= 0xFE0F
        or 0x1F3FB <= cp <= 0x1F3FF
        or 0xE0020 <= cp <= 0xE007F
    )


def grapheme_count(text: str) -> int:
    """User-perceived characters: a close reading of Unicode's extended grapheme clusters.

    Handles what records carry in practice — combining marks, emoji joined by
    ZWJ, variation selectors, skin tones, tag sequences, flag pairs and CR LF —
    without a full UAX #29 table (the standard library has none).

    >>> grapheme_count("e\\u0301"), grapheme_count("\\U0001F1E9\\U0001F1EA")
    (1, 1)
    """
    count = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        i += 1
        count += 1
        if ch == "\r" and i < n and text[i] == "\n":
            i += 1
            continue
        if 0x1F1E6 <= ord(ch) <= 0x1F1FF and i < n and 0x1F1E6 <= ord(text[i]) <= 0x1F1FF:
            i += 1  # a regional-indicator pair is one flag
        while i < n:
            nxt = text[i]
            if _extends(nxt):
                i += 1
                if ord(nxt) == 0x200D and i < n:
                    i += 1  # the character joined by ZWJ belongs to this cluster
                continue
            break
    return count
