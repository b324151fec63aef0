"""Reading other tools' settings only to look at them, never to write them back.

What is installed, and which plugins a client has enabled, is read from files
a person may have edited by hand: a file that is missing, unreadable or not
valid in its dialect reads as empty, so a look never fails on it. The parsers
are imported when a file is read, which keeps the CLI's start quick.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["read_json", "read_toml"]


def read_json(path: Path) -> dict[str, Any]:
    """A settings file's object, comments and trailing commas allowed; else {}."""
    from .jsonc import LENIENT

    try:
        data = LENIENT.load(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML settings file's table; {} when it is missing or does not parse."""
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
