"""TIDs as the AT Protocol names them: the project's one TID implementation, re-exported.

``core/ids.py`` holds the generator (monotonic, never repeating, even when the
clock stands still or steps back); this module is the AT Protocol face of it,
so that ``agent_mem_vault.atproto`` is complete on its own.
"""

from __future__ import annotations

from ..core.errors import InvalidInputError
from ..core.ids import ParsedTid, TidGenerator, decode_tid, encode_tid, next_tid
from .syntax import is_valid_tid

__all__ = ["ParsedTid", "TidGenerator", "encode_tid", "next_tid", "parse_tid"]


def parse_tid(tid: str) -> ParsedTid:
    """When a TID was minted (UTC, to the microsecond) and by which clock id (0–1023).

    >>> parsed = parse_tid("3jzfcijpj2z2a")
    >>> parsed.timestamp.isoformat(), parsed.clock_id
    ('2023-06-30T15:03:01.887007+00:00', 6)
    """
    if not is_valid_tid(tid):
        raise InvalidInputError(
            f"{tid!r} is not a TID: expected 13 characters of 234567a-z, the first one 2-7 or a-j",
            code="invalid_tid",
            field="tid",
        )
    return decode_tid(tid)
