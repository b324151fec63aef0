"""DAG-CBOR and CIDs for records, via libipld.

A record travels as JSON (``{"$link": ...}`` for links, ``{"$bytes": ...}``
for bytes) but is hashed as DAG-CBOR, so the same record always has the same
CID, here and in any PDS. :func:`to_ipld` turns the JSON form into libipld's
values, :func:`encode_dag_cbor` encodes it and :func:`record_cid` names it:
CIDv1, codec dag-cbor, sha2-256, base32 — the form repositories use.

libipld encodes a ``bytes`` value that happens to parse as a binary CID as a
link (it represents both kinds as ``bytes``); such a ``$bytes`` value is
refused rather than silently hashed as something else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..core.errors import InvalidInputError
from .lexicon import decode_base64

__all__ = ["decode_dag_cbor", "encode_dag_cbor", "record_cid", "to_ipld", "to_json"]

_CID_PREFIX = bytes([0x01, 0x71, 0x12, 0x20])
"""A record's CID before its digest: CIDv1, codec dag-cbor, multihash sha2-256 of 32 bytes."""


def _libipld() -> Any:
    # Imported on first use so that the CLI starts without loading the extension.
    import libipld

    return libipld


def to_ipld(value: Any, path: str = "") -> Any:
    """The data model value of a JSON value: links become CIDs, ``$bytes`` bytes.

    Floats are refused (the AT Protocol data model has none) unless they are
    whole numbers, which JSON cannot tell from integers.
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise InvalidInputError(
            f"{path or 'the value'} is the float {value!r}; records hold integers only",
            field=path or "value",
        )
    if isinstance(value, list):
        return [to_ipld(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, Mapping):
        if "$link" in value:
            return _link(value, path)
        if "$bytes" in value:
            return _bytes(value, path)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"{path}: object keys must be text", field=path)
            if key == "$type" and (not isinstance(item, str) or not item):
                raise InvalidInputError(
                    f"{_join(path, key)} must be a non-empty string", field=_join(path, key)
                )
            out[key] = to_ipld(item, _join(path, key))
        if out.get("$type") == "blob":
            _check_blob(out, path)
        return out
    raise InvalidInputError(
        f"{path or 'the value'} has type {type(value).__name__}, which JSON records cannot hold",
        field=path or "value",
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _link(value: Mapping[str, Any], path: str) -> bytes:
    text = value["$link"]
    if set(value) != {"$link"} or not isinstance(text, str):
        raise InvalidInputError(f'{path}: a link is exactly {{"$link": "<cid>"}}', field=path)
    try:
        decoded = _libipld().decode_cid(text)
    except ValueError as exc:
        raise InvalidInputError(f"{path}: {text!r} is not a CID", field=path) from exc
    if decoded["version"] != 1:
        raise InvalidInputError(f"{path}: {text!r} is a CIDv0; links are CIDv1", field=path)
    # A CIDv1 string is its binary form in a multibase encoding.
    _base, binary = _libipld().decode_multibase(text)
    return bytes(binary)


def _bytes(value: Mapping[str, Any], path: str) -> bytes:
    raw = decode_base64(value["$bytes"])
    if set(value) != {"$bytes"} or raw is None:
        raise InvalidInputError(f'{path}: bytes are exactly {{"$bytes": "<base64>"}}', field=path)
    if _libipld().encode_dag_cbor(raw)[:1] == b"\xd8":
        raise InvalidInputError(
            f"{path}: these bytes parse as a CID, and libipld would encode them as a link; "
            'store them as a {"$link"} or change them',
            field=path,
        )
    return raw


def _check_blob(blob: Mapping[str, Any], path: str) -> None:
    size = blob.get("size")
    if (
        not isinstance(blob.get("ref"), bytes)
        or not isinstance(blob.get("mimeType"), str)
        or not isinstance(size, int)
        or isinstance(size, bool)
    ):
        raise InvalidInputError(
            f'{path}: a blob needs ref ({{"$link"}}), mimeType (text) and size (integer)',
            field=path,
        )


def to_json(value: Any) -> Any:
    """The JSON form of a decoded data model value (the inverse of :func:`to_ipld`).

    libipld decodes links and bytes both as ``bytes``; a value that is a valid
    binary CID is taken for a link.
    """
    if isinstance(value, bytes):
        if value.startswith(b"\x01"):
            try:
                return {"$link": _libipld().encode_cid(value)}
            except ValueError:
                pass
        return {"$bytes": _b64(value)}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode("ascii").rstrip("=")


def encode_dag_cbor(value: Any) -> bytes:
    """Canonical DAG-CBOR bytes of a JSON-form value (a record, usually).

    >>> encode_dag_cbor({"b": 1, "a": "x"}).hex()
    'a261616178616201'
    """
    data = to_ipld(value)
    if not isinstance(data, dict):
        raise InvalidInputError("a record must be a JSON object", field="record")
    encoded: bytes = _libipld().encode_dag_cbor(data)
    return encoded


def decode_dag_cbor(data: bytes) -> Any:
    """The JSON form of DAG-CBOR bytes; ``InvalidInputError`` if they are not strict DAG-CBOR."""
    try:
        return to_json(_libipld().decode_dag_cbor(data))
    except ValueError as exc:
        raise InvalidInputError(f"not DAG-CBOR: {exc}", field="data") from exc


def record_cid(record: Mapping[str, Any]) -> str:
    """The CID of a record: CIDv1, dag-cbor, sha2-256, in base32 (``bafyrei…``).

    >>> record_cid({"$type": "com.example.blah", "a": 1})[:7]
    'bafyrei'
    """
    digest = hashlib.sha256(encode_dag_cbor(record)).digest()
    cid: str = _libipld().encode_cid(_CID_PREFIX + digest)
    return cid
