"""String formats of the AT Protocol: TID, datetime, record key, NSID, AT-URI, DID, handle.

Each validator is ``str -> bool`` and agrees with every line of the official
interop vectors (``atproto-interop-tests/syntax``). They never strip or
normalise: a trailing space or newline makes a value invalid, which is why
every pattern is applied with ``fullmatch`` (``$`` would accept a final
newline) and with ``re.ASCII`` (``\\d`` and friends would accept other
scripts' digits).
"""

from __future__ import annotations

import re

__all__ = [
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
]

_TID = re.compile(r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}", re.ASCII)

# RFC 3339 restricted to the ISO 8601 intersection the AT Protocol accepts:
# upper-case T and Z, a mandatory timezone, no "-00:00" (unknown offset).
_DATETIME = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"T(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})(?:\.[0-9]{1,20})?"
    r"(?P<tz>Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

_RECORD_KEY = re.compile(r"[A-Za-z0-9_~.:-]{1,512}", re.ASCII)

# NSID: a reversed domain (first segment starts with a letter, later ones may
# start with a digit, no hyphen at either end of a segment) and a name
# (letters and digits, starting with a letter).
_NSID = re.compile(
    r"[a-zA-Z](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
    r"(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+"
    r"\.[a-zA-Z][a-zA-Z0-9]{0,62}",
    re.ASCII,
)
_NSID_MAX = 317

_DID = re.compile(r"did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]", re.ASCII)
_DID_MAX = 2048

_HANDLE = re.compile(
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+"
    r"[a-zA-Z](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?",
    re.ASCII,
)
_HANDLE_MAX = 253

_AT_URI = re.compile(
    r"at://(?P<authority>[a-zA-Z0-9._:%-]+)"
    r"(?:/(?P<collection>[a-zA-Z0-9.-]+)(?:/(?P<rkey>[a-zA-Z0-9._~:-]+))?)?",
    re.ASCII,
)
_AT_URI_MAX = 8192

_CID = re.compile(r"[a-zA-Z0-9+=]{8,256}", re.ASCII)
_LANGUAGE = re.compile(r"(?:i|[a-z]{2,3}|[xX])(?:-[a-zA-Z0-9]{1,8})*", re.ASCII)
_URI = re.compile(r"[a-z][a-z.-]{0,80}:[!-~]+", re.ASCII)
_URI_MAX = 8192


def is_valid_tid(value: str) -> bool:
    """13 base32-sortable characters whose top bit is 0.

    >>> is_valid_tid("3jzfcijpj2z2a"), is_valid_tid("3jzfcijpj2z21")
    (True, False)
    """
    return isinstance(value, str) and _TID.fullmatch(value) is not None


def is_valid_datetime(value: str) -> bool:
    """An AT Protocol ``datetime``: RFC 3339 and ISO 8601 at once, with a timezone.

    Checks the calendar too (no month 13, no 30 February) and refuses
    instants before year 0 once the offset is applied.

    >>> is_valid_datetime("1985-04-12T23:20:50.123Z"), is_valid_datetime("1985-04-12T23:20:50")
    (True, False)
    """
    if not isinstance(value, str) or len(value) > 64:
        return False
    m = _DATETIME.fullmatch(value)
    if m is None:
        return False
    year, month, day = int(m["y"]), int(m["mo"]), int(m["d"])
    hour, minute, second = int(m["h"]), int(m["mi"]), int(m["s"])
    if not (1 <= month <= 12 and hour <= 23 and minute <= 59 and second <= 59):
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= _DAYS_IN_MONTH[month - 1] + (1 if month == 2 and leap else 0):
        return False
    tz = m["tz"]
    if tz == "Z":
        return True
    if tz == "-00:00":
        return False  # RFC 3339's "offset unknown", which ISO 8601 does not have
    off_h, off_m = int(tz[1:3]), int(tz[4:6])
    if off_h > 23 or off_m > 59:
        return False
    if tz[0] == "+" and year == 0 and month == 1 and day == 1:
        # Converting to UTC subtracts the offset: on the first day of year 0
        # that can leave the representable range.
        return hour * 60 + minute >= off_h * 60 + off_m
    return True


def is_valid_record_key(value: str) -> bool:
    """1–512 characters of ``A-Za-z0-9_~.:-``, but not ``.`` or ``..``.

    >>> is_valid_record_key("self"), is_valid_record_key("..")
    (True, False)
    """
    return (
        isinstance(value, str)
        and _RECORD_KEY.fullmatch(value) is not None
        and value not in (".", "..")
    )


def is_valid_nsid(value: str) -> bool:
    """A namespaced identifier such as ``garden.engram.agents.handoff``.

    >>> is_valid_nsid("garden.engram.agents.handoff"), is_valid_nsid("example.com")
    (True, False)
    """
    return isinstance(value, str) and len(value) <= _NSID_MAX and _NSID.fullmatch(value) is not None


def is_valid_did(value: str) -> bool:
    """``did:<method>:<identifier>``, at most 2048 characters.

    >>> is_valid_did("did:plc:7iza6de2dwap2sbkpav7c6c6"), is_valid_did("did:method:val%")
    (True, False)
    """
    return isinstance(value, str) and len(value) <= _DID_MAX and _DID.fullmatch(value) is not None


def is_valid_handle(value: str) -> bool:
    """A domain name with at least two segments whose last one starts with a letter.

    >>> is_valid_handle("john.test"), is_valid_handle("john.0")
    (True, False)
    """
    return (
        isinstance(value, str)
        and len(value) <= _HANDLE_MAX
        and _HANDLE.fullmatch(value) is not None
    )


def is_valid_at_identifier(value: str) -> bool:
    """A handle or a DID: what names a repository."""
    if not isinstance(value, str):
        return False
    return is_valid_did(value) if value.startswith("did:") else is_valid_handle(value)


def is_valid_at_uri(value: str) -> bool:
    """``at://<did or handle>[/<nsid>[/<record key>]]``, strict Lexicon form, no fragment.

    >>> is_valid_at_uri("at://did:plc:asdf123/com.atproto.feed.post/3jzfcijpj2z2a")
    True
    """
    if not isinstance(value, str) or len(value) > _AT_URI_MAX:
        return False
    m = _AT_URI.fullmatch(value)
    if m is None or not is_valid_at_identifier(m["authority"]):
        return False
    if m["collection"] is not None and not is_valid_nsid(m["collection"]):
        return False
    return m["rkey"] is None or is_valid_record_key(m["rkey"])


def is_valid_cid(value: str) -> bool:
    """A CID in text form, by syntax only (v0 ``Qm…`` CIDs are not allowed)."""
    return (
        isinstance(value, str)
        and _CID.fullmatch(value) is not None
        and not (value.startswith("Qm") and len(value) == 46)
    )


def is_valid_language(value: str) -> bool:
    """A BCP 47 language tag, by a loose syntax check (``en``, ``pt-BR``, ``i-default``)."""
    return isinstance(value, str) and _LANGUAGE.fullmatch(value) is not None


def is_valid_uri(value: str) -> bool:
    """A URI with a scheme and no whitespace, at most 8 KiB."""
    return isinstance(value, str) and len(value) <= _URI_MAX and _URI.fullmatch(value) is not None
