"""AT Protocol formats: TIDs, string syntax, lexicons, DAG-CBOR and CIDs, PDS publishing.

>>> from agent_mem_vault.atproto import next_tid, is_valid_tid, parse_tid
>>> tid = next_tid()
>>> is_valid_tid(tid), parse_tid(tid).clock_id < 1024
(True, True)

Validators are ``str -> bool`` and agree with the official interop vectors.
``validate_record`` checks a record against the lexicon its ``$type`` names
(the shipped ``garden.engram.agents.*`` ones by default) and raises
``RecordValidationError`` naming the field. The PDS client lives in
``agent_mem_vault.atproto.pds`` (imported on demand: it loads httpx).
"""

from __future__ import annotations

from .cbor import encode_dag_cbor, record_cid
from .lexicon import Lexicons, RecordValidationError, builtin_lexicons, validate_record
from .syntax import (
    is_valid_at_identifier,
    is_valid_at_uri,
    is_valid_cid,
    is_valid_datetime,
    is_valid_did,
    is_valid_handle,
    is_valid_language,
    is_valid_nsid,
    is_valid_record_key,
    is_valid_tid,
    is_valid_uri,
)
from .tid import ParsedTid, next_tid, parse_tid

__all__ = [
    "Lexicons",
    "ParsedTid",
    "RecordValidationError",
    "builtin_lexicons",
    "encode_dag_cbor",
    "is_valid_at_identifier",
    "is_valid_at_uri",
    "is_valid_cid",
    "is_valid_datetime",
    "is_valid_did",
    "is_valid_handle",
    "is_valid_language",
    "is_valid_nsid",
    "is_valid_record_key",
    "is_valid_tid",
    "is_valid_uri",
    "next_tid",
    "parse_tid",
    "record_cid",
    "validate_record",
]
