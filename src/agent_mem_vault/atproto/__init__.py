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

from . import syntax
from .cbor import encode_dag_cbor, record_cid
from .lexicon import Lexicons, RecordValidationError, builtin_lexicons, validate_record
from .syntax import *  # noqa: F403  (its __all__, below)
from .tid import ParsedTid, next_tid, parse_tid

__all__ = [
    "Lexicons",
    "ParsedTid",
    "RecordValidationError",
    "builtin_lexicons",
    "encode_dag_cbor",
    "next_tid",
    "parse_tid",
    "record_cid",
    "validate_record",
]
# Every validator of syntax.py, as syntax.py lists them.
__all__ += syntax.__all__
