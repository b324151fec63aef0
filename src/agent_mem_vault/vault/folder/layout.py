"""Where a vault keeps what is not a note, and which folder is a vault at all.

The names here are the vault's layout on disk (its own folder, its index, its
sync configuration, the default vault) and the one rule that says whether a
folder is a vault; the layers above ask here instead of spelling a path again.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...core.errors import AccessDeniedError, NotFoundError
from ..format.dashboard import DASHBOARD_PATH

__all__ = [
    "DEFAULT_VAULT",
    "DOT_DIR",
    "INDEX_FILE",
    "MODULES",
    "SYNC_CONFIG",
    "cannot_write",
    "is_default_vault",
    "is_vault",
    "read_only_error",
    "syncs",
    "vault_not_found",
]

DOT_DIR = ".agent-mem-vault"
"""The vault's own folder: the index and the lock (derived; safe to delete)."""
INDEX_FILE = "index.sqlite3"
DEFAULT_VAULT = "~/agent-mem-vault"
"""The vault used when none is named (no ``--vault``, no ``AGENT_MEM_VAULT``)."""
SYNC_CONFIG = ".agent-mem-vault-sync/config.json"
"""The file whose presence makes a vault synced (``sync/routes.py``; relative to the
vault). Looked for here, so that a vault without it imports no sync code."""
MODULES = "layers-1"
"""The layout of the package's own modules, stamped by its long-lived processes (the
keeper's ``code_key``, the syncer's lock file). Such a process outlives ``pip install
-U`` and imports some modules late, by their names at its start: one stamped with
another layout (or none, as releases before this one) is replaced by the next call
that meets it. Change it whenever a module those processes import moves."""


def syncs(root: str | os.PathLike[str]) -> bool:
    """Whether the vault at ``root`` has a sync route configured: one ``stat``."""
    return os.path.exists(f"{root}/{SYNC_CONFIG}")


def is_vault(path: str | os.PathLike[str]) -> bool:
    """Whether the folder at ``path`` is a vault: the one rule, for every command.

    A vault is a folder holding the vault's own folder ``.agent-mem-vault/``
    (index and lock) or its dashboard ``_dashboards/memory.base``; ``init``
    writes both, and so does the first write to the default vault. Either one
    is enough because each may be gone for a good reason: the index folder is
    derived and safe to delete (and a vault synced by git or a file-sync tool
    often leaves it out), while the dashboard is a note a person may delete.
    No other folder is one, however many Markdown files it holds: a command
    pointed at the wrong folder (a typo, an unset variable) must not start a
    second vault there that nobody reads.

    >>> is_vault("/tmp")  # doctest: +SKIP
    False
    """
    root = Path(path).expanduser()
    # lexists: an .agent-mem-vault *file* still claims the folder; the write
    # that finds it reports the damage (vault_damaged) instead of "no vault".
    return os.path.lexists(root / DOT_DIR) or (root / DASHBOARD_PATH).is_file()


def is_default_vault(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names the default vault, the one folder a first write may make."""
    here = Path(path).expanduser().absolute()
    default = Path(DEFAULT_VAULT).expanduser().absolute()
    return here == default or here.resolve() == default.resolve()


def vault_not_found(path: str | os.PathLike[str]) -> NotFoundError:
    """The error for a folder that is not a vault, with the command that makes one."""
    root = Path(path).expanduser().absolute()
    what = "no vault at" if not root.exists() else "not a vault:"
    return NotFoundError(
        f"{what} {root}; if this is the folder you meant, make it a vault with "
        f"'agent-mem-vault init --vault {root}', else pass the right --vault "
        "(or set AGENT_MEM_VAULT)",
        code="vault_not_found",
        path=str(root),
    )


def read_only_error(path: str | os.PathLike[str]) -> AccessDeniedError:
    """The error for a write to a vault this user can read but not write."""
    root = Path(path).expanduser().absolute()
    try:
        mounted = bool(os.statvfs(root).f_flag & os.ST_RDONLY)
    except OSError:
        mounted = False
    why = "its disk is mounted read-only" if mounted else "this user may not write there"
    return AccessDeniedError(
        f"cannot write to the vault {root}: {why}; reads work, but a write needs a vault "
        "you can write to (check the folder's owner and permissions, or pass another --vault)",
        code="vault_read_only",
        path=str(root),
    )


def cannot_write(root: Path) -> bool:
    """Whether this user can read the vault at ``root`` but not write it: its own folder
    ``.agent-mem-vault/`` (else the vault folder), or the lock or index files in it."""
    dot = root / DOT_DIR
    if not dot.is_dir():
        return root.is_dir() and not os.access(root, os.W_OK | os.X_OK)
    if not os.access(dot, os.W_OK | os.X_OK):
        return True
    files = ("lock", INDEX_FILE, f"{INDEX_FILE}-wal", f"{INDEX_FILE}-shm")
    return any(os.path.exists(dot / f) and not os.access(dot / f, os.W_OK) for f in files)
