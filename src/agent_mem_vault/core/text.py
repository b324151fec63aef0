r"""Characters no stored text may hold, and where a value holds one.

A NUL cannot be stored in PostgreSQL text and ends a string in many readers
of a Markdown note; a lone surrogate cannot be written as UTF-8 at all. HTTP
bodies and MCP tool arguments are checked with the same rule, before any
service sees them, so a value refused on one interface is refused on all.

>>> unstorable_char({"title": "a\x00b"})
('title', '\x00')
>>> unstorable_char(["fine", {"tags": ["ok"]}]) is None
True
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["describe_char", "unstorable_char"]

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_char(value: Any) -> tuple[str, str] | None:
    """The first (path, character) in ``value`` that cannot be stored, else None.

    ``path`` names where it is, as ``field.0.key`` ('' for ``value`` itself);
    keys are checked as well as values. The walks are flat, so no depth of
    nesting can exhaust the stack; paths are spelled out only for a value that
    holds such a character (the common clean value costs one pass, no strings).
    """
    if not _holds_unstorable(value):
        return None
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            bad = _UNSTORABLE.search(item)
            if bad is not None:
                return path, bad.group()
        elif isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                where = f"{path}.{key}" if path else str(key)
                stack.append((where, inner))
                stack.append((where, key))
        elif isinstance(item, list | tuple):
            for index in reversed(range(len(item))):
                stack.append((f"{path}.{index}" if path else str(index), item[index]))
    return None


def _holds_unstorable(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            # A lone surrogate is never ASCII; "in" is a C search: most strings cost ~nothing.
            if ("\x00" in item or not item.isascii()) and _UNSTORABLE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def describe_char(char: str) -> str:
    """``U+0000 (a NUL)`` or ``U+D800 (a lone surrogate)``: the character, for a message."""
    kind = "a NUL" if char == "\x00" else "a lone surrogate"
    return f"U+{ord(char):04X} ({kind})"
