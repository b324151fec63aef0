"""Whether a command a client will run can run, and whether a path will last.

``install`` refuses to register a command that the client could not start (a
bare name not on PATH, a relative path, a file that is gone or not executable),
and ``doctor`` reports one that stopped resolving since; both ask here, so they
agree. A vault pinned under a temporary folder works today and is gone after
the next reboot or clean-up, taking every client that starts the server with
it: ``install`` asks before pinning one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["ON_PATH", "runs_from", "temporary_folder_of", "unrunnable"]

ON_PATH = (
    "put agent-mem-vault on PATH for every shell (uv tool install . or pipx install . "
    "in your agent-mem-vault folder)"
)
"""The fix for a bare ``agent-mem-vault`` that a shell does not find."""

_TEMPORARY = ("/tmp", "/var/tmp", "/dev/shm")


def runs_from(word: str, cwd: Path | None = None, path: str | None = None) -> Path | None:
    """The executable ``word`` names, as a client started in ``cwd`` would find it.

    A bare name is looked up on ``path`` (this process's PATH when None); a
    relative path resolves against ``cwd``. None when nothing runs.
    """
    if "/" not in word and os.sep not in word:
        found = shutil.which(word, path=path)
        return Path(found) if found else None
    target = Path(word).expanduser()
    if not target.is_absolute():
        if cwd is None:
            return None
        target = cwd / target
    return target if target.is_file() and os.access(target, os.X_OK) else None


def unrunnable(word: str) -> str | None:
    """Why a client could not run ``word`` from anywhere, or None when it can.

    A client starts its servers and hooks from wherever it was started, so a
    relative path is refused outright; a bare name must be on this PATH now.
    """
    if "/" in word or os.sep in word:
        if not Path(word).expanduser().is_absolute():
            return f"{word} is a relative path, which a client resolves from wherever it starts"
        if runs_from(word) is None:
            return f"{word} does not exist or is not executable"
        return None
    if runs_from(word) is None:
        return f"{word} is not on PATH in this shell"
    return None


def temporary_folder_of(path: Path) -> Path | None:
    """The temporary folder ``path`` lies under (``$TMPDIR``, /tmp, /var/tmp, /dev/shm)."""
    resolved = path.expanduser().resolve()
    roots = {Path(tempfile.gettempdir()).resolve(), *(Path(p).resolve() for p in _TEMPORARY)}
    for root in sorted(roots, key=lambda p: len(p.parts), reverse=True):
        if resolved == root or root in resolved.parents:
            return root
    return None
