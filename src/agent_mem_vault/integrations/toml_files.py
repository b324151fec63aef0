"""Editing TOML settings (Codex's config.toml) without losing comments or order.

tomlkit keeps the person's formatting; a file that does not parse is never
overwritten, and one whose meaning does not change keeps its bytes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ..core.errors import DataError
from .config_files import FileChange

__all__ = ["parse_toml", "toml_change"]


def parse_toml(path: Path, text: str | None) -> Any:
    """The tomlkit document of ``text`` (empty when the file is missing)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise DataError(
            f"{path} is not valid TOML ({exc}); fix it and run again. Nothing was changed",
            path=str(path),
        ) from exc


def toml_change(path: Path, before: str | None, doc: Any) -> FileChange:
    """The change that makes ``path`` hold ``doc``; unchanged meaning keeps the old bytes."""
    import tomlkit

    after = tomlkit.dumps(doc)
    if before is not None and tomllib.loads(before) == tomllib.loads(after):
        return FileChange(path, before, before)
    # tomlkit leaves a blank line where it removed or appended a table at the end.
    after = after.rstrip("\n") + "\n" if after.strip() else ""
    if not after:
        return FileChange(path, before, None)
    return FileChange(path, before, after)
