"""A request body as JSON, checked for the limits before anything can recurse on it.

Python's ``json`` parser (and pydantic after it) recurses once per level of
nesting: 1,100 levels of ``[`` in 2 KB end in ``RecursionError``, a 500. So a
body is first scanned *flat* by one regular expression that walks its strings
and brackets, counting the depth and the length of every array and object;
only a body within the limits is parsed. The parser then refuses what JSON
allows but nothing here can use: duplicate keys (which one wins is up to the
reader), ``NaN``/``Infinity`` and numbers beyond a float, integers longer than
a 64-bit id, and strings with lone surrogates or NUL characters (they cannot be
written as UTF-8, nor stored in PostgreSQL; the rule is
:func:`~agent_mem_vault.core.text.unstorable_char`, which MCP tool arguments
share). Every refusal is an
:class:`~agent_mem_vault.core.errors.InvalidInputError` whose code names what
was wrong (``body_too_deep``, ``body_too_wide``, ``duplicate_key``, …).

>>> parse_json_body(b'{"text": "hi"}')
{'text': 'hi'}
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..core.errors import InvalidInputError
from ..core.text import describe_char, unstorable_char
from .errors import BodyTooDeepError, BodyTooWideError, MalformedJsonError

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_ITEMS", "is_json_media_type", "parse_json_body"]

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted; the API's bodies need 4."""

MAX_ITEMS = 1_000
"""Most elements in one array, or members in one object, accepted."""

MAX_INT_DIGITS = 20
"""Longest integer accepted, in digits (a 64-bit integer has at most 20)."""

# A string (unrolled so a long one is one fast match) or one structural character.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]', re.DOTALL)
_JSON_TYPE = re.compile(r"application/(?:[a-z0-9.+-]+\+)?json", re.IGNORECASE)


def is_json_media_type(content_type: str | None) -> bool:
    """True for ``application/json`` (or ``application/…+json``), any parameters."""
    if not content_type:
        return False
    return _JSON_TYPE.fullmatch(content_type.split(";", 1)[0].strip()) is not None


def parse_json_body(raw: bytes, *, max_depth: int = MAX_DEPTH, max_items: int = MAX_ITEMS) -> Any:
    """Parse ``raw`` (UTF-8 JSON) after checking its depth and widths; errors say which."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJsonError(
            f"the request body is not UTF-8 (byte {exc.start}); send JSON encoded as UTF-8"
        ) from None
    check_shape(text, max_depth=max_depth, max_items=max_items)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except InvalidInputError:
        raise
    except ValueError as exc:
        raise MalformedJsonError(f"the request body is not valid JSON: {exc}") from None
    _check_strings(value)
    return value


def check_shape(text: str, *, max_depth: int, max_items: int) -> None:
    """Refuse nesting deeper than ``max_depth`` or a collection longer than ``max_items``.

    Flat on purpose: a stack of comma counts, one entry per open bracket. A
    string that never ends stops the scan early, which is safe: the parser
    then fails on that string, never deeper than what was counted before it.
    """
    # Fast path: too few brackets to nest that deep, too few commas to be that wide
    # (str.count is a C loop; the scan below costs about 7 ns a character).
    if text.count("[") + text.count("{") <= max_depth and text.count(",") < max_items:
        return
    commas: list[int] = []
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            commas.append(0)
            if len(commas) > max_depth:
                raise BodyTooDeepError(
                    f"the request body nests arrays/objects deeper than {max_depth} levels "
                    f"(at character {match.start()})",
                    limit=max_depth,
                )
        elif token in "]}":
            if commas:
                commas.pop()
        elif token == "," and commas:
            commas[-1] += 1
            if commas[-1] >= max_items:
                raise BodyTooWideError(
                    f"an array or object in the request body has more than {max_items} "
                    f"items (at character {match.start()})",
                    limit=max_items,
                )


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise MalformedJsonError(
                f"the request body has the key {json.dumps(key)} twice in one object; "
                "send each key once",
                code="duplicate_key",
                key=key,
            )
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise MalformedJsonError(
        f"the request body holds {name}, which is not JSON; send a finite number",
        code="number_out_of_range",
    )


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise MalformedJsonError(
            f"the number {text[:40]} in the request body is beyond a 64-bit float",
            code="number_out_of_range",
        )
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise MalformedJsonError(
            f"an integer in the request body has more than {MAX_INT_DIGITS} digits",
            code="number_out_of_range",
        )
    return int(text)


def _check_strings(value: Any) -> None:
    found = unstorable_char(value)
    if found is not None:
        path, char = found
        raise MalformedJsonError(
            f"a string in the request body ({path or 'the body'}) holds {describe_char(char)}, "
            "which cannot be stored; remove it",
            code="invalid_string",
            field=path,
        )
